"""The JSON bodies of the REST API, in Kafka Connect's shapes (``rest/entities/*`` in Kafka's runtime).

Pure functions from the herder's objects to ``dict``/``list``; every configuration they show goes
through :func:`masked_config` first, so no secret reaches a response.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from connect_spark.api.records import TopicPartition
from connect_spark.config.connector import CONNECTOR_CONFIG_DEF
from connect_spark.config.definition import NO_DEFAULT, ConfigDef, ConfigKey, Type
from connect_spark.config.secrets import masked
from connect_spark.status.records import StatusRecord
from connect_spark.storage.offsets import KAFKA_OFFSET_KEY, KAFKA_PARTITION_KEY, KAFKA_TOPIC_KEY

__all__ = [
    "CONNECTOR_TYPE",
    "masked_config",
    "connector_info",
    "task_infos",
    "state_entry",
    "connector_state_info",
    "connector_offsets",
    "parse_connector_offsets",
    "config_infos",
    "error_body",
    "message",
]

CONNECTOR_TYPE = "sink"


def _plugin_config_def(props: Mapping[str, Any]) -> ConfigDef | None:
    """The connector plugin's own ``config()``, when it resolves (to mask its PASSWORD keys too)."""
    from connect_spark import plugins

    class_name = props.get("connector.class")
    if not isinstance(class_name, str) or not class_name:
        return None
    try:
        definition = plugins.instantiate("connector", class_name, key="connector.class").config()
    except Exception:
        return None
    return definition if isinstance(definition, ConfigDef) else None


def masked_config(props: Mapping[str, Any]) -> dict[str, Any]:
    """A connector or task config as it may be shown: secrets (declared PASSWORD keys, ``*.password``,
    ``sasl.jaas.config`` ...) replaced by ``[hidden]``."""
    shown = masked(props, CONNECTOR_CONFIG_DEF)
    plugin_def = _plugin_config_def(props)
    return masked(shown, plugin_def) if plugin_def is not None else shown


def connector_info(name: str, config: Mapping[str, Any], task_count: int) -> dict[str, Any]:
    """``ConnectorInfo``: ``{"name","config","tasks":[{"connector","task"}],"type"}``."""
    return {
        "name": name,
        "config": masked_config(config),
        "tasks": [{"connector": name, "task": i} for i in range(task_count)],
        "type": CONNECTOR_TYPE,
    }


def task_infos(name: str, task_configs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``GET /connectors/{name}/tasks``: ``[{"id":{"connector","task"},"config":{...}}]``."""
    return [{"id": {"connector": name, "task": i}, "config": masked_config(c)} for i, c in enumerate(task_configs)]


def state_entry(status: StatusRecord) -> dict[str, Any]:
    """A connector or task state: ``{"state","worker_id"[,"trace"]}`` (+ ``"id"`` for a task); no empty trace."""
    entry: dict[str, Any] = {}
    if status.task is not None:
        entry["id"] = status.task
    entry["state"] = status.state.value if status.state is not None else "UNASSIGNED"
    entry["worker_id"] = status.worker_id or ""
    if status.trace:
        entry["trace"] = status.trace
    return entry


def connector_state_info(name: str, connector: StatusRecord, tasks: Iterable[StatusRecord]) -> dict[str, Any]:
    """``ConnectorStateInfo``: ``{"name","connector":{...},"tasks":[...],"type"}``, tasks by id."""
    return {
        "name": name,
        "connector": state_entry(connector),
        "tasks": [state_entry(t) for t in sorted(tasks, key=lambda t: t.task or 0)],
        "type": CONNECTOR_TYPE,
    }


def connector_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, Any]:
    """``ConnectorOffsets`` of a sink: ``{"offsets":[{"partition":{kafka_topic,kafka_partition},"offset":{kafka_offset}}]}``."""
    return {"offsets": [
        {"partition": {KAFKA_TOPIC_KEY: tp.topic, KAFKA_PARTITION_KEY: tp.partition},
         "offset": {KAFKA_OFFSET_KEY: offset}}
        for tp, offset in sorted(offsets.items())
    ]}


def parse_connector_offsets(body: Any) -> dict[TopicPartition, int | None]:
    """The offsets of a ``PATCH /offsets`` body; a ``null`` offset resets that partition.

    Raises:
        ValueError: the body is not a sink connector's ``ConnectorOffsets`` (the message says what is wrong).
    """
    if not isinstance(body, dict) or not isinstance(body.get("offsets"), list):
        raise ValueError('The request body must be {"offsets": [{"partition": {...}, "offset": {...}}, ...]}')
    result: dict[TopicPartition, int | None] = {}
    for i, item in enumerate(body["offsets"]):
        partition = item.get("partition") if isinstance(item, dict) else None
        if not isinstance(partition, dict):
            raise ValueError(f"offsets[{i}] has no partition object")
        topic = partition.get(KAFKA_TOPIC_KEY)
        number = _as_int(partition.get(KAFKA_PARTITION_KEY))
        if not isinstance(topic, str) or not topic or number is None or number < 0:
            raise ValueError(f"offsets[{i}].partition must have a non-empty string '{KAFKA_TOPIC_KEY}' and a "
                             f"non-negative integer '{KAFKA_PARTITION_KEY}'")
        offset = item.get("offset")
        if offset is None:
            result[TopicPartition(topic, number)] = None
            continue
        value = _as_int(offset.get(KAFKA_OFFSET_KEY)) if isinstance(offset, dict) else None
        if value is None or value < 0:
            raise ValueError(f"offsets[{i}].offset must be null or have a non-negative integer '{KAFKA_OFFSET_KEY}'")
        result[TopicPartition(topic, number)] = value
    return result


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _type_name(key: ConfigKey) -> str:
    return key.type.name


def _default_text(key: ConfigKey) -> str | None:
    if key.default is NO_DEFAULT or key.default is None:
        return None
    if key.type is Type.LIST and isinstance(key.default, (list, tuple)):
        return ",".join(map(str, key.default))
    return str(key.default)


def config_infos(
    connector_class: str,
    definitions: Iterable[ConfigKey],
    config: Mapping[str, Any],
    errors: Mapping[str, list[str]],
) -> dict[str, Any]:
    """``ConfigInfos`` of ``PUT /connector-plugins/{plugin}/config/validate``.

    Args:
        connector_class: the connector's class name (``name`` of the answer).
        definitions: every declared key (the connector keys every sink has, then the plugin's own).
        config: the submitted configuration (values are masked in the answer).
        errors: key → error messages; keys with errors but no declaration are listed too.
    """
    shown = masked_config(config)
    groups: list[str] = []
    configs = []
    order_in_group: dict[str, int] = {}
    seen = set()
    for key in definitions:
        if key.name in seen:
            continue
        seen.add(key.name)
        group = key.group or ""
        if group and group not in groups:
            groups.append(group)
        order_in_group[group] = order_in_group.get(group, 0) + 1
        configs.append(_config_info(key.name, _type_name(key), key.required, _default_text(key), key.importance.name,
                                    key.doc, group or None, order_in_group[group], shown, errors))
    for name in sorted(set(errors) - seen):
        configs.append(_config_info(name, "STRING", False, None, "LOW", "", None, -1, shown, errors))
    return {
        "name": connector_class,
        "error_count": sum(len(v) for v in errors.values()),
        "groups": groups,
        "configs": configs,
    }


def _config_info(name: str, type_name: str, required: bool, default: str | None, importance: str, doc: str,
                 group: str | None, order: int, shown: Mapping[str, Any], errors: Mapping[str, list[str]]) -> dict:
    value = shown.get(name)
    return {
        "definition": {
            "name": name, "type": type_name, "required": required, "default_value": default,
            "importance": importance, "documentation": doc, "group": group, "order": order,
            "width": "NONE", "display_name": name, "dependents": [],
        },
        "value": {
            "name": name, "value": None if value is None else str(value), "recommended_values": [],
            "errors": list(errors.get(name, [])), "visible": True,
        },
    }


def error_body(status_code: int, text: str) -> dict[str, Any]:
    """Connect's ``ErrorMessage``: ``{"error_code": <HTTP status>, "message": "..."}``."""
    return {"error_code": status_code, "message": text}


def message(text: str) -> dict[str, str]:
    """Connect's ``Message``: ``{"message": "..."}``."""
    return {"message": text}
