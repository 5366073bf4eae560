"""What Spark's real-time mode cannot run, said before a session exists: the refusals of ``task.execution.mode=realtime``.

Spark 4.2's real-time mode (``writeStream.trigger(realTime=...)``) admits Spark's Kafka source, projections and
filters, and the ``foreach`` sink, where a Python ``ForeachWriter`` receives rows as they arrive; it refuses
``foreachBatch`` and Python operators such as ``mapInArrow``, and it runs one task per Kafka partition for the
whole of each long batch. Measured in ``docs/performance.md`` ("Real-time mode (Spark 4.2)").

:func:`realtime_refusals` holds the conditions ``task.execution.mode=realtime`` refuses, each message naming the
key, the value and what is allowed. :func:`connect_spark.config.validation.validate_configs` calls it for every
connector in that mode before any SparkSession exists (without the partition count, which needs the cluster);
the real-time processor (:mod:`connect_spark.runtime.realtime.processor`) calls it again at start with the
session's task slots and the topics' partitions:

* a bulk DataFrame task (:class:`~connect_spark.api.bulk.DataFrameSinkTask`: Delta, Iceberg): its batch is a
  DataFrame, which needs ``foreachBatch``, refused by Spark in real-time queries (an
  :class:`~connect_spark.api.bulk.ArrowSinkTask` such as the JDBC sink can take small Arrow tables built from the
  rows a ``ForeachWriter`` receives, so it is not refused);
* a Spark older than 4.2: no real-time trigger in PySpark;
* fewer task slots than the topics' partitions: Spark does not refuse it, but a partition whose task finds
  no slot is not read while the batch runs;
* ``trigger=available-now``: a real-time query runs until stopped;
* offsets in a file (``offset.storage.file.filename``): the executors commit, and only a Kafka topic can
  take their commits (fenced per partition, see :mod:`connect_spark.runtime.realtime.commits`).

:func:`task_slots` reads how many tasks a session can run at once from its ``spark.*`` settings. Pure logic: no
pyspark import, unit-tested without a JVM.
"""

from __future__ import annotations

import os
import re
from typing import Mapping

from connect_spark.api.bulk import DataFrameSinkTask

__all__ = ["MODE_KEY", "REALTIME", "MINIMUM_SPARK", "realtime_refusals", "task_slots"]

#: The key a real-time mode would be chosen by, and its value.
MODE_KEY = "task.execution.mode"
REALTIME = "realtime"
#: The first Spark whose PySpark has ``trigger(realTime=...)``.
MINIMUM_SPARK = (4, 2)

_MICRO_BATCH_MODES = "executor or driver"
_LOCAL = re.compile(r"local\[(\d+|\*)(?:,\s*\d+)?\]$")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]$")


def _release(version: str) -> tuple[int, int]:
    """``"4.2.0"`` -> ``(4, 2)``; ``"4.2.0.dev1"`` and ``"4.2"`` too."""
    numbers = [int(re.match(r"\d*", piece).group() or 0) for piece in version.split(".")[:2]]
    return (numbers + [0, 0])[0], (numbers + [0, 0])[1]


def realtime_refusals(connector: str, task_class: type, spark_version: str, task_slots: int | None = None,
                      partitions: int | None = None, *, available_now: bool = False,
                      offsets_file: str | None = None) -> list[str]:
    """Every reason ``connector``'s tasks cannot run in real-time mode; empty when none applies.

    Args:
        connector: the connector's name, for the messages.
        task_class: its ``SinkConnector.task_class()``.
        spark_version: the running pyspark's version (``connect_spark.jvm.spark_versions.running_versions``).
        task_slots: how many tasks the session runs at once (:func:`task_slots`); ``None``: not known, not checked.
        partitions: how many Kafka partitions the connector's topics have; ``None``: not known, not checked.
        available_now: the worker's ``trigger`` is ``available-now``.
        offsets_file: the worker's ``offset.storage.file.filename`` when set.
    """
    refusals = []
    setting = f"{MODE_KEY}={REALTIME}"
    if issubclass(task_class, DataFrameSinkTask):
        refusals.append(
            f"{setting}: connector {connector} runs {task_class.__name__}, a bulk DataFrame task; real-time mode "
            f"runs record and Arrow tasks only, because a DataFrame batch needs foreachBatch, which Spark refuses "
            f"in real-time queries. Allowed for this connector: {_MICRO_BATCH_MODES}.")
    if _release(spark_version) < MINIMUM_SPARK:
        needed = ".".join(map(str, MINIMUM_SPARK))
        refusals.append(
            f"{setting}: connector {connector} needs Spark {needed} or newer (its real-time trigger); the running "
            f"pyspark is {spark_version}. Allowed with this Spark: {_MICRO_BATCH_MODES}.")
    if task_slots is not None and partitions is not None and task_slots < partitions:
        refusals.append(
            f"{setting}: connector {connector} reads {partitions} Kafka partitions, each by a task that runs for the "
            f"whole batch, but the session runs {task_slots} tasks at once: give it at least {partitions} task slots "
            f"(spark.master, spark.executor.instances x spark.executor.cores), or use {_MICRO_BATCH_MODES}.")
    if available_now:
        refusals.append(
            f"{setting}: connector {connector} cannot run with trigger=available-now: a real-time query reads until "
            f"it is stopped. Set trigger to an interval (the length of a real-time batch, e.g. 1s), or use "
            f"{_MICRO_BATCH_MODES}.")
    if offsets_file:
        refusals.append(
            f"{setting}: connector {connector} commits offsets from the Spark executors, which needs the Kafka offset "
            f"store; offset.storage.file.filename={offsets_file} keeps them in a file of the driver. Unset it (the "
            f"offsets go to offset.storage.topic), or use {_MICRO_BATCH_MODES}.")
    return refusals


def task_slots(spark_conf: Mapping[str, str]) -> int | None:
    """How many tasks a session with these ``spark.*`` settings runs at once, or ``None`` when they do not say.

    ``local[N]`` -> N, ``local[*]`` -> the machine's cores, ``local`` -> 1, ``local-cluster[W,C,M]`` -> W x C;
    another master: ``spark.executor.instances`` x ``spark.executor.cores`` when both are set, else
    ``spark.cores.max``; each divided by ``spark.task.cpus``.
    """
    master = spark_conf.get("spark.master", "").replace(" ", "")
    per_task = int(spark_conf.get("spark.task.cpus", "1"))
    cores = None
    if master == "local":
        cores = 1
    elif match := _LOCAL.match(master):
        cores = (os.cpu_count() or 1) if match.group(1) == "*" else int(match.group(1))
    elif match := _LOCAL_CLUSTER.match(master):
        cores = int(match.group(1)) * int(match.group(2))
    elif "spark.executor.instances" in spark_conf and "spark.executor.cores" in spark_conf:
        cores = int(spark_conf["spark.executor.instances"]) * int(spark_conf["spark.executor.cores"])
    elif "spark.cores.max" in spark_conf:
        cores = int(spark_conf["spark.cores.max"])
    return None if cores is None else cores // per_task
