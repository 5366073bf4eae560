"""A notebook on Spark Connect, as a process of its own: ``start_connector`` on a remote session.

The Spark Connect tests run it as a child process (a Spark Connect client and a classic session do not
share a Python process well, and a test can kill it mid-stream):

    python -m connect_spark.testing.connect_client URL SPEC_JSON

``SPEC_JSON`` holds ``worker`` and ``connector`` (dicts) and ``available_now``. The process prints one JSON
line — ``exit_code`` and ``error`` (the handle's ``exception()`` text, or what ``start_connector`` raised,
with ``exit_code`` null) — and exits 0 when the connector succeeded. With ``stop_after_records`` set (and ``records_file``), it stops the handle once that file has
that many lines, to test ``stop()``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    from pyspark.sql import SparkSession

    from connect_spark.notebook import start_connector

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    url, spec = argv[0], json.loads(argv[1])
    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        query = start_connector(spark, spec["connector"], worker=spec["worker"],
                                available_now=bool(spec.get("available_now")))
    except Exception as e:  # refused at start: the same JSON line, with what start_connector raised
        print(json.dumps({"exit_code": None, "error": f"{type(e).__name__}: {e}", "progress": False}), flush=True)
        return 1
    stop_after = spec.get("stop_after_records")
    if stop_after:
        records = Path(spec["records_file"])
        while query.isActive and (not records.exists() or len(records.read_text().splitlines()) < stop_after):
            time.sleep(0.2)
        query.stop()
    query.awaitTermination()
    error = query.exception()
    print(json.dumps({"exit_code": query.exit_code, "error": None if error is None else str(error),
                      "progress": query.lastProgress is not None}), flush=True)
    return 0 if query.succeeded else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
