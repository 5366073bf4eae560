"""DLQ replay: send a connector's dead letters back through its normal path once their cause is fixed.

:mod:`.letters` reads and filters the dead letter topic; :mod:`.replay` delivers the chosen letters to the
connector (converters, transforms, ``put``) with their original coordinates, or lists them (dry run).
Called by ``connect-spark dlq replay``.
"""

from connect_spark.dlq_replay.letters import DeadLetter, LetterFilter, read_dead_letters
from connect_spark.dlq_replay.replay import ReplayResult, replay_dead_letters

__all__ = ["DeadLetter", "LetterFilter", "read_dead_letters", "ReplayResult", "replay_dead_letters"]
