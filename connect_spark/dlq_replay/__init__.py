"""DLQ replay: send a connector's dead letters back through its normal path once their cause is fixed.

:mod:`.letters` reads and filters the dead letter topic in chunks; :mod:`.replay` delivers the chosen letters to
the connector (converters, transforms, ``put``) with their original coordinates, or lists them (dry run);
:mod:`.progress` is what a run stores about each letter it dealt with and :mod:`.replay_log` where (with the
lease that lets one run at a time). Called by ``connect-spark dlq replay`` and the REST API.
"""

from connect_spark.dlq_replay.letters import DeadLetter, LetterFilter
from connect_spark.dlq_replay.replay import ReplayResult, replay_dead_letters
from connect_spark.dlq_replay.replay_log import ReplayInProgressError

__all__ = ["DeadLetter", "LetterFilter", "ReplayResult", "replay_dead_letters", "ReplayInProgressError"]
