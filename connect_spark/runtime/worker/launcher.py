"""Entry points shared by the CLI, ``jobs/`` and notebooks: validate, then run the standalone worker.

Validation happens first and completely, before any SparkSession exists: a bad configuration exits
with code 2 and every problem listed.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, Sequence

from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.validation import PropsSource, validate_configs
from connect_spark.runtime.worker.standalone import StandaloneWorker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["run_standalone", "EXIT_BAD_CONFIG", "install_signal_handlers"]

log = logging.getLogger(__name__)

EXIT_BAD_CONFIG = 2


def install_signal_handlers(worker: StandaloneWorker) -> None:
    """SIGINT and SIGTERM ask the worker for a graceful stop (main thread only), whether they reach this
    process or, under ``spark-submit``, Spark's driver JVM (installed once the worker has its session)."""
    if threading.current_thread() is not threading.main_thread():
        return
    worker.stop_on_jvm_signals = True

    def handler(signum: int, frame: Any) -> None:
        log.info("Received %s: stopping gracefully", signal.Signals(signum).name)
        worker.request_stop()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def run_standalone(
    worker_props: PropsSource,
    connector_props: Sequence[PropsSource],
    available_now: bool = False,
    spark: "SparkSession | None" = None,
) -> int:
    """Validate everything, then run the connectors until drained, failed or stopped; return the exit code.

    ``spark`` may be a classic or a Spark Connect session (see :mod:`connect_spark.runtime.processors.remote_batches`);
    without it a classic session is built from the worker's ``spark.*`` keys.
    """
    try:
        worker, connectors = validate_configs(worker_props, connector_props)
    except ConfigValidationError as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_CONFIG
    standalone = StandaloneWorker(worker, connectors, spark=spark, available_now=available_now)
    install_signal_handlers(standalone)
    return standalone.run()
