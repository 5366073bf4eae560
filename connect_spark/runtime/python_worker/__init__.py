"""Hooks into Spark's Python workers on executors: the worker daemon started warm, and zip archives
read once per worker."""
