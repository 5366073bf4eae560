"""Kafka Connect's REST API on the driver: routes (:mod:`.app`), JSON shapes (:mod:`.entities`), server (:mod:`.server`).

FastAPI and uvicorn are imported only by :mod:`.app` and :mod:`.server`, when a distributed worker starts.
"""
