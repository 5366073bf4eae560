"""Where in the pipeline an error happened, and how many errors a connector tolerates.

Both enums keep Kafka Connect's names, because their names are visible to users: the stage is written
into the ``__connect.errors.stage`` dead letter queue header and into the error log line, and the
tolerance is the value of ``errors.tolerance``.
"""

from __future__ import annotations

import enum

__all__ = ["Stage", "ToleranceType", "TOLERATES_ANY_EXCEPTION"]


class Stage(enum.Enum):
    """A step of the sink pipeline an operation runs in.

    The conversion pipeline passes one to :meth:`ErrorHandler.execute` for every operation it runs;
    :meth:`ErrorHandler.report_put_error` always uses :attr:`TASK_PUT`. The value is the name, so
    ``Stage.KEY_CONVERTER.value == "KEY_CONVERTER"`` is what the DLQ header carries.
    """

    KEY_CONVERTER = "KEY_CONVERTER"
    """The key converter's ``to_connect_data``."""

    VALUE_CONVERTER = "VALUE_CONVERTER"
    """The value converter's ``to_connect_data``."""

    HEADER_CONVERTER = "HEADER_CONVERTER"
    """The header converter, over all headers of a record as one operation."""

    TRANSFORMATION = "TRANSFORMATION"
    """One transformation (with its predicate) of the chain."""

    TASK_PUT = "TASK_PUT"
    """``SinkTask.put``; only reached through the errant record reporter."""


#: Stages in which any ``Exception`` can be tolerated (skipped under ``errors.tolerance=all``). In every
#: other stage only a ``RetriableException`` is handled; anything else fails the task at once.
TOLERATES_ANY_EXCEPTION = frozenset(
    {Stage.KEY_CONVERTER, Stage.VALUE_CONVERTER, Stage.HEADER_CONVERTER, Stage.TRANSFORMATION}
)


class ToleranceType(enum.Enum):
    """The values of ``errors.tolerance``."""

    NONE = "none"
    """The first failed record fails the task (the default)."""

    ALL = "all"
    """Failed records are skipped (after being reported), and the task goes on."""
