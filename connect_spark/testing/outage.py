"""A recording sink whose target is "down" while a marker file exists: every ``put`` then fails.

For tests of the restart policy and of stall detection (``connect_spark.runtime.worker.restarts``,
``connect_spark.runtime.worker.stalls``): ``outage.marker`` names the file; while it exists each non-empty
``put`` raises a plain ``RuntimeError`` (the task FAILS, as with a database that is down), or, with
``outage.mode=block``, blocks until the file is gone (a hung sink). ``outage.fatal=true`` raises
:class:`~connect_spark.api.errors.NonRestartableException` instead. Everything delivered while the
target is up is recorded as :class:`~connect_spark.testing.recording.RecordingSinkTask` records it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Collection

from connect_spark.api import NonRestartableException, SinkRecord, SinkTask
from connect_spark.config.definition import ConfigDef, Importance, Type
from connect_spark.testing.recording import RecordingSinkConnector, RecordingSinkTask

__all__ = ["OutageSinkConnector", "OutageSinkTask"]

MARKER = "outage.marker"
MODE = "outage.mode"
FATAL = "outage.fatal"


class OutageSinkTask(RecordingSinkTask):
    """Fails (or blocks in) every non-empty ``put`` while the marker file exists."""

    def start(self, props: dict[str, str]) -> None:
        super().start(props)
        self.marker = Path(props[MARKER])
        self.mode = props.get(MODE, "fail")
        self.fatal = props.get(FATAL, "false").lower() == "true"

    def put(self, records: Collection[SinkRecord]) -> None:
        if records and self.marker.exists():
            if self.mode == "block":
                self._call("put_blocked", count=len(records))
                while self.marker.exists():
                    time.sleep(0.1)
            else:
                self._call("put_failed", count=len(records))
                error = NonRestartableException if self.fatal else RuntimeError
                raise error("the sink's target is down (outage marker present)")
        super().put(records)


class OutageSinkConnector(RecordingSinkConnector):
    task = OutageSinkTask

    def task_class(self) -> type[SinkTask]:
        return OutageSinkTask

    def config(self) -> ConfigDef:
        return (super().config()
                .define(MARKER, Type.STRING, importance=Importance.HIGH, doc="While this file exists the target is down.")
                .define(MODE, Type.STRING, "fail", importance=Importance.LOW, doc="fail or block while down.")
                .define(FATAL, Type.BOOLEAN, False, importance=Importance.LOW,
                        doc="Raise NonRestartableException instead of RuntimeError."))
