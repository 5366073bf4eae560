"""Connector and task status (``connect-status``), connector configs (``connect-configs``), and their states.

* :mod:`~connect_spark.status.states`: the observed states and target states, and the allowed transitions;
* :mod:`~connect_spark.status.records`: Kafka Connect's exact keys and JSON values of both topics;
* :mod:`~connect_spark.status.log`: a compacted topic (or memory) replayed into a view;
* :mod:`~connect_spark.status.stores`: :class:`StatusStore` and :class:`ConfigStore`.
"""

from connect_spark.status.states import IllegalTransition, State, TargetState, check_transition
from connect_spark.status.stores import ConfigStore, ConnectorConfigState, StatusStore

__all__ = ["State", "TargetState", "IllegalTransition", "check_transition", "StatusStore", "ConfigStore",
           "ConnectorConfigState"]
