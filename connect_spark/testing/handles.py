"""A connector handle that runs no Spark query, for testing code that drives a herder (REST clients, operators).

``ScriptedHandle`` behaves like a connector whose tasks do nothing: it starts, ticks, pauses, resumes
and stops, records each call in :attr:`ScriptedHandle.calls`, and fails on command through its
connector's configuration:

* ``scripted.fail.start=true``: ``start`` raises (the connector becomes FAILED);
* ``scripted.fail.task=<n>``: the first ``tick`` after a start fails task ``n`` (it becomes FAILED).

Use it as the herder's handle factory: ``Herder(..., handle_factory=ScriptedHandle, ...)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from connect_spark.api.errors import ConnectException
from connect_spark.herder.handle import TaskFailure

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig

__all__ = ["ScriptedHandle"]


class ScriptedHandle:
    """A :class:`~connect_spark.herder.handle.ConnectorHandle` without Spark; see the module docstring."""

    def __init__(self, config: "ConnectorConfig") -> None:
        self.name = config.name
        self.config = config
        self.calls: list[str] = []
        props = config.resolved
        self._fail_start = str(props.get("scripted.fail.start", "false")).lower() == "true"
        fail_task = props.get("scripted.fail.task")
        self._fail_task = int(fail_task) if fail_task not in (None, "") else None
        self._started = False
        self.stalled: str | None = None

    def start(self) -> None:
        self.calls.append("start")
        if self._fail_start:
            raise ConnectException(f"scripted start failure of {self.name}")
        self._started = True

    def tick(self) -> bool:
        if self._fail_task is not None and self._started:
            self.calls.append("task-failed")
            self._started = False
            raise TaskFailure({self._fail_task: f"scripted failure of task {self._fail_task}"})
        return True

    def stall(self) -> str | None:
        """What a test set as :attr:`stalled` (a stall the herder shows in the status trace)."""
        return self.stalled

    def pause(self) -> None:
        self.calls.append("pause")

    def resume(self) -> None:
        self.calls.append("resume")
        if not self._started:
            self.start()

    def stop(self, failed: bool = False) -> None:
        self.calls.append("stop")
        self._started = False

    def task_configs(self) -> list[dict[str, str]]:
        base = {k: str(v) for k, v in self.config.resolved.items()}
        return [{**base, "task.id": str(i)} for i in range(self.config.tasks_max)]

    def task_ids(self) -> list[int]:
        return list(range(self.config.tasks_max))
