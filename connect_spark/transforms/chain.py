"""TransformationChain: the configured transforms, each optionally guarded by a predicate.

Kafka's ``TransformationChain`` and ``TransformationStage``: stages run in the configured order; a
stage with a predicate runs only when ``negate ^ predicate.test(record)``, otherwise the record
passes through unchanged; a stage that returns ``None`` drops the record and ends the chain.

The runtime applies stages one at a time (:meth:`TransformationChain.apply_stage`) so that each is
wrapped by the error handler separately (stage ``TRANSFORMATION``), reporting
:attr:`TransformationStage.executing_class` (``org.apache.kafka.connect.transforms.Cast$Value``) as
the executing class, which the dead letter queue's ``__connect.errors.class.name`` header carries.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterable, Iterator, Union

from connect_spark.api.records import SinkRecord
from connect_spark.api.transforms import Predicate, Transformation

__all__ = ["TransformationStage", "TransformationChain", "executing_class_name"]

log = logging.getLogger(__name__)


def executing_class_name(plugin: object) -> str:
    """Kafka's class name of a built-in plugin (``kafka_class_name``), else the Python class path."""
    name = getattr(plugin, "kafka_class_name", None)
    if name:
        return name
    cls = type(plugin)
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass(frozen=True)
class TransformationStage:
    """One transform with its optional predicate and ``negate`` flag.

    Attributes:
        transformation: the transform.
        predicate: the guarding predicate, or ``None`` (always apply).
        negate: apply when the predicate is false instead.
    """

    transformation: Transformation
    predicate: Predicate | None = None
    negate: bool = False

    @property
    def executing_class(self) -> str:
        """The class name the error handler reports for this stage."""
        return executing_class_name(self.transformation)

    def should_apply(self, record: SinkRecord) -> bool:
        """``predicate is None or negate ^ predicate.test(record)``."""
        return self.predicate is None or (self.negate ^ bool(self.predicate.test(record)))

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        """The transformed record, the record itself when the predicate says skip, or ``None`` to drop it."""
        if self.should_apply(record):
            return self.transformation.apply(record)
        return record

    def close(self) -> None:
        for plugin in (self.transformation, self.predicate):
            if plugin is None:
                continue
            try:
                plugin.close()
            except Exception:
                log.warning("Failed to close %s", executing_class_name(plugin), exc_info=True)

    def __str__(self) -> str:
        if self.predicate is None:
            return f"TransformationStage{{transformation={self.executing_class}}}"
        return (f"TransformationStage{{predicate={executing_class_name(self.predicate)}, "
                f"transformation={self.executing_class}, negate={str(self.negate).lower()}}}")


StageSpec = Union[TransformationStage, "tuple[Transformation, Predicate | None, bool]"]


class TransformationChain:
    """The ordered stages of one connector.

    Args:
        stages: :class:`TransformationStage` objects or ``(transformation, predicate or None, negate)``
            tuples, in the configured order.
    """

    def __init__(self, stages: Iterable[StageSpec] = ()) -> None:
        self._stages: tuple[TransformationStage, ...] = tuple(
            stage if isinstance(stage, TransformationStage) else TransformationStage(*stage) for stage in stages
        )

    @property
    def stages(self) -> tuple[TransformationStage, ...]:
        return self._stages

    def __len__(self) -> int:
        return len(self._stages)

    def __iter__(self) -> Iterator[TransformationStage]:
        return iter(self._stages)

    def executing_class(self, index: int) -> str:
        """The executing class name of stage ``index`` (``org.apache.kafka.connect.transforms.Cast$Value``)."""
        return self._stages[index].executing_class

    def apply_stage(self, index: int, record: SinkRecord) -> SinkRecord | None:
        """Apply stage ``index`` to ``record`` (its predicate decides whether the transform runs)."""
        return self._stages[index].apply(record)

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        """Apply every stage in order; ``None`` as soon as one drops the record."""
        current: SinkRecord | None = record
        for stage in self._stages:
            current = stage.apply(current)  # type: ignore[arg-type]
            if current is None:
                log.debug("%s dropped record %s", stage.executing_class, record.coordinates())
                return None
        return current

    def close(self) -> None:
        """Close every transform and predicate once."""
        closed: set[int] = set()
        for stage in self._stages:
            for plugin in (stage.transformation, stage.predicate):
                if plugin is None or id(plugin) in closed:
                    continue
                closed.add(id(plugin))
                try:
                    plugin.close()
                except Exception:
                    log.warning("Failed to close %s", executing_class_name(plugin), exc_info=True)

    def __repr__(self) -> str:
        return "TransformationChain{" + ", ".join(str(s) for s in self._stages) + "}"
