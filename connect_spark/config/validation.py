"""Up-front validation of a worker and all its connectors, before any SparkSession exists.

The CLI calls :func:`validate_configs` first thing. It reports every problem it can find across the
worker and all connectors in one :class:`ConfigValidationError`, each line naming the file or
connector, the key, the value (secrets masked) and what is allowed. In order:

1. read the files (a file that cannot be read is a problem too) and add ``plugin.path`` to ``sys.path``;
2. build the config providers the worker declares and resolve ``${provider:[path:]key}`` references in
   the worker's and every connector's properties;
3. parse the worker and each connector against their declarations (``WorkerConfig``, ``ConnectorConfig``,
   with their cross-key checks), and check connector names are unique;
4. check the connectors' ``*.override.*`` keys against the worker's override policy;
5. resolve every plugin (``connector.class``, the converters, each transform and predicate) through
   ``connect_spark.plugins``, and validate each plugin's own ``config()`` against its keys (missing
   required keys, bad regular expressions, bad ``Cast`` specs, ...; messages name the full key), and
   report ``transforms.<alias>.*`` / ``predicates.<alias>.*`` keys whose alias is not listed;
6. for a connector in ``task.execution.mode=realtime``, what real-time mode refuses
   (:func:`connect_spark.streaming.realtime_requirements.realtime_refusals`: a bulk DataFrame task, a Spark
   older than 4.2, ``trigger=available-now``, offsets in a file), reported against ``task.execution.mode``.

Nothing here imports pyspark; plugin modules are imported (step 5), and their constructors must be cheap.
"""

from __future__ import annotations

import difflib
import logging
import os
from typing import Any, Mapping, Sequence, Union

from connect_spark import plugins
from connect_spark.api.errors import ConfigException
from connect_spark.config.connector import ConnectorConfig, client_override_issues
from connect_spark.config.definition import ConfigDef, ConfigIssue, ConfigValidationError, Type, parse_type
from connect_spark.config.properties import load_properties
from connect_spark.config.providers import ConfigProviders
from connect_spark.config.secrets import HIDDEN, is_secret_key
from connect_spark.config.worker import WorkerConfig

__all__ = ["validate_configs", "PropsSource"]

log = logging.getLogger(__name__)

PropsSource = Union[Mapping[str, Any], str, "os.PathLike[str]"]
"""A configuration: a mapping of properties, or the path of a ``.properties`` file."""

_CONVERTERS = (("key.converter", "converter"), ("value.converter", "converter"), ("header.converter", "header_converter"))


def validate_configs(
    worker_props: PropsSource,
    connector_props_list: Sequence[PropsSource],
    *,
    check_plugins: bool = True,
) -> tuple[WorkerConfig, list[ConnectorConfig]]:
    """Validate the worker and every connector; report all problems at once.

    Args:
        worker_props: the worker properties, or the path of the worker ``.properties`` file.
        connector_props_list: each connector's properties, or the path of its ``.properties`` file.
        check_plugins: resolve the plugins and validate their own keys (step 5). Turned off only by
            callers that validate configurations for plugins that are not installed here.

    Returns:
        The parsed worker configuration and the connector configurations, in the given order.

    Raises:
        ConfigValidationError: listing every problem, each prefixed by where it is.
    """
    issues: list[ConfigIssue] = []

    worker_where = _where_worker(worker_props)
    worker_raw = _read(worker_props, worker_where, issues)
    if worker_raw is not None:
        _add_plugin_path(worker_raw)
    providers, provider_issues = ConfigProviders.from_worker_props(worker_raw or {})
    issues += _located(worker_where, provider_issues)

    worker: WorkerConfig | None = None
    if worker_raw is not None:
        worker, worker_issues = WorkerConfig.check(worker_raw, providers)
        issues += _located(worker_where, worker_issues, WorkerConfig.CONFIG_DEF)
        if check_plugins:
            resolved, _ = providers.resolve(worker_raw)
            issues += _located(worker_where, _converter_issues(resolved, "worker"), WorkerConfig.CONFIG_DEF)

    connectors: list[ConnectorConfig | None] = []
    names: dict[str, str] = {}
    for index, source in enumerate(connector_props_list):
        raw = _read(source, _where_file(source, index), issues)
        if raw is None:
            connectors.append(None)
            continue
        where = _where_connector(source, raw, index)
        connector, found = ConnectorConfig.check(raw, providers)
        resolved, _ = providers.resolve(raw)
        name = str(resolved.get("name", "")).strip()
        if name and name in names:
            found.append(
                ConfigIssue("name", name, f"Duplicate connector name {name!r}: also used by {names[name]}")
            )
        elif name:
            names[name] = where
        if worker is not None:
            found += client_override_issues(resolved, worker.connector_client_config_override_policy)
        if check_plugins:
            found += _connector_plugin_issues(resolved)
            if worker is not None and connector is not None and connector.execution_mode(worker) == "realtime":
                found += _realtime_issues(resolved, connector, worker)
        issues += _located(where, found, ConnectorConfig.CONFIG_DEF)
        connectors.append(connector)

    if issues:
        raise ConfigValidationError(issues, title=f"Invalid configuration: {_count(len(issues))}")
    assert worker is not None and all(c is not None for c in connectors)
    log.info("Validated the worker configuration and %d connector configuration(s)", len(connectors))
    return worker, [c for c in connectors if c is not None]


def _count(n: int) -> str:
    return f"{n} problem{'s' if n != 1 else ''}"


# --- reading and locating -----------------------------------------------------------------------


def _is_path(source: PropsSource) -> bool:
    return isinstance(source, (str, os.PathLike))


def _where_worker(source: PropsSource) -> str:
    return f"worker {os.fspath(source)}" if _is_path(source) else "worker"  # type: ignore[arg-type]


def _where_file(source: PropsSource, index: int) -> str:
    return f"connector file {os.fspath(source)}" if _is_path(source) else f"connector #{index + 1}"  # type: ignore[arg-type]


def _where_connector(source: PropsSource, props: Mapping[str, Any], index: int) -> str:
    name = props.get("name")
    label = f"connector {str(name).strip()!r}" if isinstance(name, str) and name.strip() else f"connector #{index + 1}"
    if _is_path(source):
        label += f" ({os.fspath(source)})"  # type: ignore[arg-type]
    return label


def _read(source: PropsSource, where: str, issues: list[ConfigIssue]) -> dict[str, Any] | None:
    if not _is_path(source):
        return dict(source)  # type: ignore[arg-type]
    try:
        return load_properties(source)  # type: ignore[arg-type]
    except ConfigException as e:
        issues.append(ConfigIssue("", os.fspath(source), f"{where}: {e}"))  # type: ignore[arg-type]
        return None


def _located(where: str, found: list[ConfigIssue], config_def: ConfigDef | None = None) -> list[ConfigIssue]:
    """Prefix each issue's message with where it is, and mask secret values in it."""
    located = []
    for issue in found:
        value, message = issue.value, issue.message
        if isinstance(value, str) and value and is_secret_key(issue.key, config_def):
            message = message.replace(repr(value), HIDDEN).replace(value, HIDDEN)
            value = HIDDEN
        located.append(ConfigIssue(issue.key, value, f"{where}: {message}"))
    return located


def _add_plugin_path(worker_raw: Mapping[str, Any]) -> None:
    raw = worker_raw.get("plugin.path")
    if raw is None:
        return
    try:
        directories = parse_type("plugin.path", raw, Type.LIST) or []
    except ConfigException:
        return  # reported by WorkerConfig
    plugins.add_plugin_path([d for d in directories if d])


# --- plugins ------------------------------------------------------------------------------------


def _plugin_issues(kind: str, key: str, class_name: Any, props: Mapping[str, Any], prefix: str) -> list[ConfigIssue]:
    """Resolve one plugin and validate its ``config()`` against ``props`` (keys under ``prefix``)."""
    if not isinstance(class_name, str) or not class_name.strip():
        return []  # missing: reported by the config's own checks
    try:
        instance = plugins.instantiate(kind, class_name, key=key)
    except ConfigException as e:
        return [ConfigIssue(key, class_name, str(e))]
    try:
        config_def = instance.config()
    except Exception as e:
        reason = f"{class_name}.config() failed: {type(e).__name__}: {e}"
        return [ConfigIssue(key, class_name, str(ConfigException(reason, key, class_name)))]
    if not isinstance(config_def, ConfigDef):
        reason = f"{class_name}.config() must return a ConfigDef"
        return [ConfigIssue(key, class_name, str(ConfigException(reason, key, class_name)))]
    embedded = config_def.with_prefix(prefix) if prefix else config_def
    found = embedded.validate(props)
    issues = [
        ConfigIssue(i.key, i.value, f"{_full_key_named(i.message, i.key, prefix)} (checked by {class_name})")
        for i in found
    ]
    if kind == "connector":
        issues += _spark_support_issues(instance, key, class_name)
    return issues


def _spark_support_issues(connector: Any, key: str, class_name: str) -> list[ConfigIssue]:
    """A connector whose JVM piece was never built for the running Spark (Iceberg on a Spark it has no
    runtime for) is refused here, with the versions that have it, before any session starts."""
    from connect_spark.jvm.spark_versions import UnsupportedSparkVersion, missing_support_reason

    try:
        reason = missing_support_reason(connector.required_spark_support())
    except UnsupportedSparkVersion as e:
        reason = str(e)
    if reason is None:
        return []
    return [ConfigIssue(key, class_name, str(ConfigException(reason, key, class_name)))]


def _realtime_issues(props: Mapping[str, Any], connector: ConnectorConfig, worker: WorkerConfig) -> list[ConfigIssue]:
    """Step 6: what ``task.execution.mode=realtime`` refuses for this connector (its task class, the running
    Spark, the worker's trigger and offset store); the task slots are checked when it starts."""
    from connect_spark.jvm.spark_versions import UnsupportedSparkVersion, running_versions
    from connect_spark.streaming.realtime_requirements import MODE_KEY, REALTIME, realtime_refusals

    try:
        task_class = plugins.instantiate("connector", props.get("connector.class"), key="connector.class").task_class()
        spark_version = running_versions().spark
    except (ConfigException, UnsupportedSparkVersion):
        return []  # reported by step 5
    except Exception as e:  # a connector whose task_class() fails before start: its start will say more
        log.warning("%s: cannot tell its task class before it starts (%r); real-time refusals are checked at start",
                    connector.name, e)
        return []
    refusals = realtime_refusals(connector.name, task_class, spark_version,
                                 available_now=worker.trigger == "available-now",
                                 offsets_file=worker.offset_storage_file_filename)
    return [ConfigIssue(MODE_KEY, REALTIME, refusal) for refusal in refusals]


def _full_key_named(message: str, key: str, prefix: str) -> str:
    """``message`` naming ``key`` in full: a plugin's validator knows only its own key (``spec``), not
    where it lives in the connector configuration (``transforms.cast.spec``)."""
    if not prefix or not key.startswith(prefix):
        return message
    bare = key[len(prefix):]
    for form in ("configuration {}:", "configuration {} ", 'configuration "{}"'):
        if form.format(bare) in message:
            return message.replace(form.format(bare), form.format(key), 1)
    return message


def _converter_issues(props: Mapping[str, Any], owner: str) -> list[ConfigIssue]:
    """The converters a configuration sets itself (a connector's unset converters are the worker's)."""
    found: list[ConfigIssue] = []
    for key, kind in _CONVERTERS:
        class_name = props.get(key)
        if class_name is None and owner == "worker" and key == "header.converter":
            class_name = WorkerConfig.CONFIG_DEF.keys[key].default
        if class_name is not None:
            found += _plugin_issues(kind, key, class_name, props, key + ".")
    return found


def _connector_plugin_issues(props: Mapping[str, Any]) -> list[ConfigIssue]:
    found = _plugin_issues("connector", "connector.class", props.get("connector.class"), props, "")
    found += _converter_issues(props, "connector")
    for list_key, kind in (("transforms", "transform"), ("predicates", "predicate")):
        try:
            aliases = parse_type(list_key, props.get(list_key), Type.LIST) or []
        except ConfigException:
            continue  # reported by ConnectorConfig
        for alias in dict.fromkeys(a for a in aliases if a):
            prefix = f"{list_key}.{alias}."
            found += _plugin_issues(kind, prefix + "type", props.get(prefix + "type"), props, prefix)
        found += _unlisted_alias_issues(props, list_key, aliases)
    return found


def _unlisted_alias_issues(props: Mapping[str, Any], list_key: str, aliases: Sequence[str]) -> list[ConfigIssue]:
    """Keys ``transforms.<alias>.*`` / ``predicates.<alias>.*`` whose alias is not in the list.

    Kafka Connect ignores such keys silently; here they are reported, since they are almost always a typo
    in the alias (``transforms=filter`` with ``transforms.filtr.type=...``): the transform would
    silently not run.
    """
    listed = {a.strip() for a in aliases if a}
    unlisted: dict[str, list[str]] = {}
    for key in props:
        if not isinstance(key, str) or not key.startswith(list_key + "."):
            continue
        alias, dot, _ = key[len(list_key) + 1:].partition(".")
        if dot and alias not in listed:
            unlisted.setdefault(alias, []).append(key)
    issues = []
    for alias, keys in unlisted.items():
        keys.sort()
        close = difflib.get_close_matches(alias, sorted(listed), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        issues.append(ConfigIssue(
            keys[0], props[keys[0]],
            f"Unknown {list_key[:-1]} alias {alias!r} in {', '.join(keys)}: {list_key} lists "
            f"{', '.join(sorted(listed)) or 'no aliases'}{hint}. Add {alias!r} to {list_key} or remove these keys",
        ))
    return issues
