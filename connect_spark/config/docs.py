"""Render the configuration reference (Markdown) from the declarations.

The reference in ``conf/config-reference.md`` is generated, never edited by hand::

    python -m connect_spark.config.docs > conf/config-reference.md

A unit test fails when the committed file differs from :func:`render`, so the documentation cannot
drift from ``WORKER_CONFIG_DEF``, ``CONNECTOR_CONFIG_DEF`` and the built-in plugin table.
"""

from __future__ import annotations

import sys
from typing import Any

from connect_spark import plugins
from connect_spark.config.connector import CONNECTOR_CONFIG_DEF
from connect_spark.config.definition import ConfigDef, ConfigKey, Importance, Password, Type
from connect_spark.config.worker import WORKER_CONFIG_DEF

__all__ = ["REGENERATE_COMMAND", "render", "render_config_def", "main"]

REGENERATE_COMMAND = "python -m connect_spark.config.docs > conf/config-reference.md"

_IMPORTANCE_ORDER = {Importance.HIGH: 0, Importance.MEDIUM: 1, Importance.LOW: 2}

_WORKER_INTRO = """\
The worker is configured by one `.properties` file, as a Kafka Connect worker is. Keys have Kafka Connect's names and defaults. Besides the keys below, these pass through undeclared:

| Prefix | Goes to |
|---|---|
| `spark.*` | the SparkSession, with the full key. A session connect_spark builds starts from {spark_defaults}, the local jars of Spark's Kafka source and Delta (`spark.jars`) and this Python for the workers; a session handed in (a notebook's) is used as it is |
| `consumer.*` | every sink consumer (the Spark Kafka source), prefix removed |
| `producer.*` | the dead letter queue producer, prefix removed |
| `admin.*` | the admin client, prefix removed |
| `sasl.*`, `ssl.*` | common settings of the Kafka clients, with `bootstrap.servers` and `security.protocol` (the `consumer.*`, `producer.*` and `admin.*` keys override them per client) |
| `key.converter.*`, `value.converter.*`, `header.converter.*` | the worker's converters, prefix removed |
| `config.providers.<name>.class`, `config.providers.<name>.param.*` | config provider declarations |

Values may reference config providers: `${env:VARIABLE}`, `${file:/path/to/file.properties:key}`.
Other keys are allowed and ignored (logged at DEBUG).
"""

_CONNECTOR_INTRO = """\
Each connector is configured by one `.properties` file (or a REST request). The connector's own keys are
declared by its `config()` and listed in its documentation. Besides the keys below:

| Key | Meaning |
|---|---|
| `transforms.<alias>.type` | required for each alias in `transforms`: the transform (alias, Kafka class name or Python path) |
| `transforms.<alias>.predicate` | a predicate alias from `predicates`; the transform applies only to records it matches |
| `transforms.<alias>.negate` | `true`: apply the transform to records the predicate does not match (needs `predicate`) |
| `transforms.<alias>.*` | the transform's own settings, prefix removed |
| `predicates.<alias>.type` | required for each alias in `predicates`: the predicate |
| `predicates.<alias>.*` | the predicate's own settings, prefix removed |
| `key.converter.*`, `value.converter.*`, `header.converter.*` | settings of the connector's converter, used only when the connector sets the converter class (they are not merged with the worker's) |
| `consumer.override.*` | sink consumer settings, applied last (`group.id` defaults to `connect-<name>`; `auto.offset.reset` is `earliest`, `latest` or `none`, default `earliest`) |
| `producer.override.*`, `admin.override.*` | dead letter queue producer and admin client settings |

Which `*.override.*` keys are allowed depends on the worker's `connector.client.config.override.policy`.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "\\<").replace(">", "\\>").replace("\n", " ").strip()


def _default(key: ConfigKey) -> str:
    value: Any = key.default
    if key.required:
        return "*required*"
    if value is None:
        return "*not set*"
    if isinstance(value, Password):
        return "`[hidden]`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list):
        return f"`{','.join(str(v) for v in value)}`" if value else '`""`'
    if value == "":
        return '`""`'
    return f"`{value}`"


def _valid(key: ConfigKey) -> str:
    if key.validator is not None:
        return str(key.validator)
    if key.type is Type.BOOLEAN:
        return "true, false"
    return ""


def render_config_def(config_def: ConfigDef, heading_level: int = 3) -> str:
    """One table per group (in declaration order), keys by importance then declaration order."""
    groups: dict[str | None, list[ConfigKey]] = {}
    for key in config_def.keys.values():
        groups.setdefault(key.group, []).append(key)
    out: list[str] = []
    for group, keys in groups.items():
        if group:
            out.append(f"{'#' * heading_level} {group}\n")
        out.append("| Key | Type | Default | Valid values | Importance | Description |")
        out.append("|---|---|---|---|---|---|")
        for key in sorted(keys, key=lambda k: _IMPORTANCE_ORDER[k.importance]):
            out.append(
                f"| `{key.name}` | {key.type.name.lower()} | {_cell(_default(key))} | {_cell(_valid(key))} "
                f"| {key.importance.value} | {_cell(key.doc)} |"
            )
        out.append("")
    return "\n".join(out)


def _render_plugins() -> str:
    out = [
        "Plugins are named by a short alias, by their Java class name (Kafka's, Confluent's or",
        "Debezium's), by the name of an entry point in the kind's",
        "group, or by a Python path `pkg.module:Class`.",
        "",
    ]
    titles = {
        "connector": "Connectors",
        "converter": "Converters",
        "header_converter": "Header converters",
        "transform": "Transforms",
        "predicate": "Predicates",
    }
    for kind in plugins.KINDS:
        out.append(f"### {titles[kind]} (entry-point group `{plugins.ENTRY_POINT_GROUPS[kind]}`)\n")
        out.append("| Alias | Java class name | Python class |")
        out.append("|---|---|---|")
        by_target: dict[str, list[str]] = {}
        for name, target in plugins.BUILT_INS[kind].items():
            by_target.setdefault(target, []).append(name)
        for target, names in by_target.items():
            kafka = [n for n in names if n.startswith(plugins.JAVA_CLASS_PREFIXES)]
            aliases = [n for n in names if not n.startswith(plugins.JAVA_CLASS_PREFIXES)]
            out.append(
                f"| {', '.join(f'`{a}`' for a in aliases)} | {', '.join(f'`{k}`' for k in kafka)} | `{target}` |"
            )
        out.append("")
    return "\n".join(out)


def _spark_defaults() -> str:
    from connect_spark.spark_session import SESSION_DEFAULTS

    return ", ".join(f"`{key}={_cell(value)}`" for key, value in SESSION_DEFAULTS.items())


def render() -> str:
    """The whole reference as Markdown."""
    parts = [
        "# connect_spark configuration reference\n",
        f"Generated from the declarations in `connect_spark.config`; do not edit. Regenerate with\n"
        f"`{REGENERATE_COMMAND}`.\n",
        "## Worker configuration\n",
        _WORKER_INTRO.replace("{spark_defaults}", _spark_defaults()),
        render_config_def(WORKER_CONFIG_DEF),
        "## Connector configuration\n",
        _CONNECTOR_INTRO,
        render_config_def(CONNECTOR_CONFIG_DEF),
        "## Built-in plugins\n",
        _render_plugins(),
    ]
    return "\n".join(parts).rstrip("\n") + "\n"


def main() -> None:
    """Print the reference to standard output."""
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
