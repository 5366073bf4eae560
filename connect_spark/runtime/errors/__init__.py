"""Error handling of sink tasks: retries, ``errors.tolerance``, the error log and the dead letter queue.

Kafka Connect's ``org.apache.kafka.connect.runtime.errors`` for connect_spark. Who uses what:

* whoever builds a task reads :meth:`ErrorHandlingConfig.from_connector_config`, builds the reporters
  with :func:`create_reporters` and one :class:`ErrorHandler` per task, where the task runs;
* the conversion pipeline runs each converter and transformation call through
  :meth:`ErrorHandler.execute` with the consumed :class:`RawRecord`;
* the task's context exposes a :class:`WorkerErrantRecordReporter`, which sends records ``put`` could
  not write to :meth:`ErrorHandler.report_put_error`;
* the task loop calls :meth:`ErrorHandler.await_reports` before every offset commit, and
  :meth:`ErrorHandler.close` at the end;
* :attr:`ErrorHandler.metrics` holds the ``task-error-metrics`` counters.

Inside the package, ``handler.py`` (:class:`ErrorHandler`) runs the operations; it takes the back-off
schedule from ``retry.py`` and tracks the reports not yet durable in ``pending.py``.
"""

from connect_spark.runtime.errors.config import ERROR_HANDLING_KEYS, ErrorHandlingConfig
from connect_spark.runtime.errors.context import ErrorContext, RawRecord
from connect_spark.runtime.errors.dead_letter_queue import (
    HEADER_PREFIX,
    DeadLetterQueueException,
    DeadLetterQueueReporter,
    context_headers,
    exception_class_name,
)
from connect_spark.runtime.errors.errant import WorkerErrantRecordReporter, converter_serializer, create_reporters
from connect_spark.runtime.errors.handler import (
    RETRIES_DELAY_MIN_MS,
    SINK_TASK_CLASS,
    ErrantRecordFuture,
    ErrorHandler,
    ToleranceExceededException,
)
from connect_spark.runtime.errors.metrics import METRIC_NAMES, ErrorMetrics
from connect_spark.runtime.errors.reporters import LogReporter, Reporter
from connect_spark.runtime.errors.stage import Stage, ToleranceType

__all__ = [
    "DeadLetterQueueException",
    "DeadLetterQueueReporter",
    "ERROR_HANDLING_KEYS",
    "ErrantRecordFuture",
    "ErrorContext",
    "ErrorHandler",
    "ErrorHandlingConfig",
    "ErrorMetrics",
    "HEADER_PREFIX",
    "LogReporter",
    "METRIC_NAMES",
    "RETRIES_DELAY_MIN_MS",
    "RawRecord",
    "Reporter",
    "SINK_TASK_CLASS",
    "Stage",
    "ToleranceExceededException",
    "ToleranceType",
    "WorkerErrantRecordReporter",
    "context_headers",
    "converter_serializer",
    "create_reporters",
    "exception_class_name",
]
