"""Plugin resolution: from a class name in a configuration to a Python class.

A configuration names a plugin (``connector.class``, ``value.converter``, ``transforms.<a>.type``,
``predicates.<p>.type``, ``header.converter``) the way a Kafka Connect user would. Names are tried in
this order:

1. a built-in: a short alias (``JsonConverter``, ``Cast$Value``, ``FileStreamSink``) or Kafka's fully
   qualified class name (``org.apache.kafka.connect.json.JsonConverter``; Debezium's for Debezium's
   transforms, ``io.debezium.transforms.ExtractNewRecordState``), from the table below;
2. an entry point of the plugin kind's group (``connect_spark.connectors``, ``connect_spark.converters``,
   ``connect_spark.header_converters``, ``connect_spark.transforms``, ``connect_spark.predicates``),
   declared by a third-party package, e.g. in ``setup.cfg``::

       [options.entry_points]
       connect_spark.connectors =
           MySink = my_package.sink:MySinkConnector

3. a Python path, ``pkg.module:Class`` or ``pkg.module.Class``, importable from ``sys.path``.

Modules are imported only when a name is resolved, so a plugin whose optional dependency is missing
only matters when a configuration uses it, and the error says which extra to install. The resolved
class must subclass the contract of its kind (``connect_spark.api.SinkConnector``, ``Converter``,
``HeaderConverter``, ``Transformation``, ``Predicate``).

Called by ``connect_spark.config.validation`` before anything starts (to check every name and validate
each plugin's ``config()``), and by the runtime to build the plugins it runs. Every failure is a
:class:`~connect_spark.api.errors.ConfigException` naming the key, the value and what is allowed.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import inspect
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, Iterable

from connect_spark.api.connector import SinkConnector
from connect_spark.api.converters import Converter, HeaderConverter
from connect_spark.api.errors import ConfigException
from connect_spark.api.transforms import Predicate, Transformation

if TYPE_CHECKING:
    from connect_spark.config.connector import ConnectorConfig
    from connect_spark.config.worker import WorkerConfig

__all__ = [
    "KINDS",
    "ENTRY_POINT_GROUPS",
    "OPTIONAL_DEPENDENCY_EXTRAS",
    "resolve",
    "instantiate",
    "configured_converter",
    "BUILT_INS",
    "JAVA_CLASS_PREFIXES",
    "known_aliases",
    "kafka_class_name",
    "add_plugin_path",
]

log = logging.getLogger(__name__)

KINDS = ("connector", "converter", "header_converter", "transform", "predicate")
"""The plugin kinds."""

ENTRY_POINT_GROUPS = {
    "connector": "connect_spark.connectors",
    "converter": "connect_spark.converters",
    "header_converter": "connect_spark.header_converters",
    "transform": "connect_spark.transforms",
    "predicate": "connect_spark.predicates",
}
"""The entry-point group searched for each kind."""

_CONTRACTS: dict[str, type] = {
    "connector": SinkConnector,
    "converter": Converter,
    "header_converter": HeaderConverter,
    "transform": Transformation,
    "predicate": Predicate,
}

OPTIONAL_DEPENDENCY_EXTRAS: dict[str, str] = {
    "fastavro": "avro",
    "confluent_kafka": "avro",
    "jsonschema": "jsonschema",
    "psycopg": "postgres",
    "boto3": "s3",
    "cryptography": "tls",
    "opensearchpy": "search",
    "elasticsearch": "search",
}
"""Top-level module (or dotted prefix) of an optional dependency → the extra that installs it.

When importing a plugin fails because one of these is missing, the error says
``pip install 'connect-spark[<extra>]'``.
"""

JAVA_CLASS_PREFIXES = ("org.apache.kafka.", "io.confluent.", "io.debezium.")
"""The packages of the Java class names built-ins are also known by (Kafka's, Confluent's, Debezium's); such names
are accepted but not listed as aliases."""
_KAFKA_CONVERTERS = "org.apache.kafka.connect.converters."
_KAFKA_TRANSFORMS = "org.apache.kafka.connect.transforms."
_DEBEZIUM_TRANSFORMS = "io.debezium.transforms."


def _build_table() -> dict[str, dict[str, str]]:
    """Name → ``module:Class`` target for every built-in, per kind. The first name of each is Kafka's FQCN."""
    table: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}

    def add(kind: str, target: str, *names: str) -> None:
        for name in names:
            table[kind][name] = target

    add("connector", "connect_spark.connectors.file:FileStreamSinkConnector",
        "org.apache.kafka.connect.file.FileStreamSinkConnector", "FileStreamSinkConnector", "FileStreamSink")
    add("connector", "connect_spark.connectors.delta:DeltaSinkConnector", "DeltaSinkConnector", "DeltaSink")
    add("connector", "connect_spark.connectors.files:FilesSinkConnector", "FilesSinkConnector", "FilesSink")
    add("connector", "connect_spark.connectors.iceberg:IcebergSinkConnector",
        "org.apache.iceberg.connect.IcebergSinkConnector", "IcebergSinkConnector", "IcebergSink")
    add("connector", "connect_spark.connectors.jdbc:JdbcSinkConnector", "io.confluent.connect.jdbc.JdbcSinkConnector",
        "JdbcSinkConnector", "JdbcSink")
    add("connector", "connect_spark.connectors.s3:S3SinkConnector", "io.confluent.connect.s3.S3SinkConnector",
        "S3SinkConnector", "S3Sink")
    add("connector", "connect_spark.connectors.search:SearchSinkConnector",
        "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector", "ElasticsearchSinkConnector",
        "ElasticsearchSink", "SearchSink")
    add("connector", "connect_spark.testing.recording:RecordingSinkConnector", "RecordingSink")

    # Every built-in converter is also a header converter, as in Kafka (each implements both interfaces),
    # so any of them may be named in header.converter too.
    converters = [
        ("connect_spark.converters.string:StringConverter", "org.apache.kafka.connect.storage.StringConverter",
         "StringConverter"),
        ("connect_spark.converters.bytearray:ByteArrayConverter", _KAFKA_CONVERTERS + "ByteArrayConverter",
         "ByteArrayConverter"),
        ("connect_spark.converters.json:JsonConverter", "org.apache.kafka.connect.json.JsonConverter", "JsonConverter"),
    ]
    for numeric in ("Boolean", "Double", "Float", "Integer", "Long", "Short"):
        name = f"{numeric}Converter"
        converters.append((f"connect_spark.converters.numeric:{name}", _KAFKA_CONVERTERS + name, name))
    for target, *names in converters:
        add("converter", target, *names)
        add("header_converter", target, *names)
    # Confluent's schema-registry converters: key and value converters only (as in Confluent, neither is a
    # header converter).
    add("converter", "connect_spark.converters.avro:AvroConverter", "io.confluent.connect.avro.AvroConverter",
        "AvroConverter")
    add("converter", "connect_spark.converters.json_schema:JsonSchemaConverter",
        "io.confluent.connect.json.JsonSchemaConverter", "JsonSchemaConverter")
    add("header_converter", "connect_spark.converters.header:SimpleHeaderConverter",
        "org.apache.kafka.connect.storage.SimpleHeaderConverter", "SimpleHeaderConverter")

    with_variants = {
        "Cast": "cast",
        "ExtractField": "extract_field",
        "Flatten": "flatten",
        "HeaderFrom": "header_from",
        "HoistField": "hoist_field",
        "InsertField": "insert_field",
        "MaskField": "mask_field",
        "ReplaceField": "replace_field",
        "SetSchemaMetadata": "set_schema_metadata",
        "TimestampConverter": "timestamp_converter",
    }
    for name, module in with_variants.items():
        for variant in ("Key", "Value"):
            add("transform", f"connect_spark.transforms.{module}:{name}{variant}",
                f"{_KAFKA_TRANSFORMS}{name}${variant}", f"{name}${variant}")
    without_variants = {
        "DropHeaders": "drop_headers",
        "Filter": "filter",
        "InsertHeader": "insert_header",
        "RegexRouter": "regex_router",
        "TimestampRouter": "timestamp_router",
        "ValueToKey": "value_to_key",
    }
    for name, module in without_variants.items():
        add("transform", f"connect_spark.transforms.{module}:{name}", _KAFKA_TRANSFORMS + name, name)

    # Debezium's transforms, under Debezium's class names (io.debezium.transforms.ExtractNewRecordState).
    debezium = {
        "ByLogicalTableRouter": "by_logical_table_router",
        "ExtractChangedRecordState": "extract_changed_record_state",
        "ExtractNewRecordState": "extract_new_record_state",
        "HeaderToValue": "header_to_value",
    }
    for name, module in debezium.items():
        add("transform", f"connect_spark.transforms.debezium.{module}:{name}", _DEBEZIUM_TRANSFORMS + name, name)

    for name in ("TopicNameMatches", "HasHeaderKey", "RecordIsTombstone"):
        add("predicate", f"connect_spark.transforms.predicates:{name}", f"{_KAFKA_TRANSFORMS}predicates.{name}", name)
    return table


#: Every built-in plugin name (aliases and Kafka's class names) by kind, mapped to ``module:Class``; the classes
#: are imported only when resolved. Read by :mod:`connect_spark.config.docs` to list the plugins.
BUILT_INS = _build_table()


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"Unknown plugin kind {kind!r}; kinds are {', '.join(KINDS)}")


def _entry_points(kind: str) -> dict[str, importlib.metadata.EntryPoint]:
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUPS[kind]):
        found.setdefault(entry_point.name, entry_point)
    return found


def known_aliases(kind: str) -> list[str]:
    """The short names accepted for ``kind``: built-in aliases and entry-point names, sorted.

    Kafka's fully qualified class names are accepted too but are not listed here.
    """
    _check_kind(kind)
    names = {name for name in BUILT_INS[kind] if not name.startswith(JAVA_CLASS_PREFIXES)}
    names.update(_entry_points(kind))
    return sorted(names)


def kafka_class_name(kind: str, name: str) -> str:
    """Kafka's fully qualified class name for a built-in alias (``Cast$Value`` → ``org.apache...Cast$Value``,
    ``ExtractNewRecordState`` → ``io.debezium.transforms.ExtractNewRecordState``).

    Used where Kafka shows a class name (dead letter queue headers, the connector-plugins listing).
    Any other name is returned unchanged.
    """
    _check_kind(kind)
    target = BUILT_INS[kind].get(name)
    if target is None:
        return name
    for candidate, candidate_target in BUILT_INS[kind].items():
        if candidate_target == target and candidate.startswith(JAVA_CLASS_PREFIXES):
            return candidate
    return name


def _fail(message: str, key: str | None, value: str) -> ConfigException:
    if key is not None:
        return ConfigException(message, key, value)
    return ConfigException(f"{message} (value {value!r})")


def _import_failure(error: ImportError, kind: str, name: str, module_name: str, key: str | None) -> ConfigException:
    """The error for an import that failed: a missing optional dependency, or the plugin's module itself."""
    missing = getattr(error, "name", None) or ""
    if missing and not _is_within(module_name, missing) and not _is_within(missing, "connect_spark"):
        extra = next(
            (extra for mod, extra in OPTIONAL_DEPENDENCY_EXTRAS.items() if missing == mod or missing.startswith(mod + ".")),
            None,
        )
        install = f"pip install 'connect-spark[{extra}]'" if extra else f"install the package that provides {missing!r}"
        return _fail(
            f"The {kind.replace('_', ' ')} {name} needs the Python module {missing!r}, which is not installed: {install}",
            key,
            name,
        )
    return _fail(f"The {kind.replace('_', ' ')} {name} cannot be imported: {type(error).__name__}: {error}", key, name)


def _is_within(module_name: str, package: str) -> bool:
    """True when ``module_name`` is ``package`` or one of its submodules."""
    return module_name == package or module_name.startswith(package + ".")


def _load_target(target: str) -> Any:
    """Import ``module:attr.path``; raises ImportError or AttributeError."""
    module_name, _, attr_path = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr_path.split("."):
        obj = getattr(obj, part)
    return obj


def _load_dotted(name: str) -> tuple[Any, str] | None:
    """Import ``pkg.module:Class`` or ``pkg.module.Class``; ``None`` when no module prefix exists.

    Returns:
        ``(object, module name)``. Raises ImportError (for a failure inside an existing module) or
        AttributeError.
    """
    if ":" in name:
        module_name = name.partition(":")[0]
        if not module_name or not _module_exists(module_name):
            return None
        return _load_target(name), module_name
    parts = name.split(".")
    # A top-level module alone does not make a Python path of a Java name (``io.confluent...``).
    for cut in range(len(parts) - 1, 1 if len(parts) > 2 else 0, -1):
        module_name = ".".join(parts[:cut])
        if _module_exists(module_name):
            return _load_target(f"{module_name}:{'.'.join(parts[cut:])}"), module_name
    return None


def _module_exists(module_name: str) -> bool:
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        return False


def _unknown(kind: str, name: str, key: str | None, detail: str = "") -> ConfigException:
    aliases = known_aliases(kind)
    by_lower = {alias.lower(): alias for alias in aliases}
    close = difflib.get_close_matches(name.rpartition(".")[2].lower(), list(by_lower), n=1, cutoff=0.85)
    hint = f" ({detail})" if detail else ""
    hint += f". Did you mean {by_lower[close[0]]}?" if close else "."
    return _fail(
        f"Unknown {kind.replace('_', ' ')} class {name}{hint} Known aliases: {', '.join(aliases) or 'none'};"
        f" also accepted: Kafka's class names for these, an entry point in group {ENTRY_POINT_GROUPS[kind]},"
        " or a Python path pkg.module:Class",
        key,
        name,
    )


def resolve(kind: str, name: str, key: str | None = None) -> type:
    """The class ``name`` designates for ``kind``, imported now.

    Args:
        kind: one of :data:`KINDS`.
        name: an alias, Kafka class name, entry-point name or Python path.
        key: the configuration key ``name`` came from, for error messages.

    Raises:
        ConfigException: the name is unknown, its module cannot be imported (a missing optional
            dependency names the extra to install), or the class does not implement the kind's contract.
        ValueError: ``kind`` is not a plugin kind (a programming error).
    """
    _check_kind(kind)
    name = name.strip()
    if not name:
        raise _unknown(kind, name, key)
    obj: Any = None
    if name in BUILT_INS[kind]:
        target = BUILT_INS[kind][name]
        module_name = target.partition(":")[0]
        try:
            obj = _load_target(target)
        except ImportError as e:
            if getattr(e, "name", None) and _is_within(module_name, e.name):
                raise _fail(
                    f"The built-in {kind.replace('_', ' ')} {name} ({target}) is not available in this installation",
                    key,
                    name,
                ) from e
            raise _import_failure(e, kind, name, module_name, key) from e
        except AttributeError as e:
            raise _fail(f"The built-in {name} ({target}) is not available: {e}", key, name) from e
    else:
        entry_point = _entry_points(kind).get(name)
        if entry_point is not None:
            try:
                obj = entry_point.load()
            except ImportError as e:
                raise _import_failure(e, kind, name, entry_point.module, key) from e
            except AttributeError as e:
                raise _fail(f"Entry point {name} = {entry_point.value} is broken: {e}", key, name) from e
        else:
            try:
                loaded = _load_dotted(name)
            except ImportError as e:
                raise _import_failure(e, kind, name, name.partition(":")[0], key) from e
            except AttributeError as e:
                raise _unknown(kind, name, key, str(e)) from None
            except Exception as e:  # a plugin module that fails at import time
                raise _fail(f"Importing {name} failed: {type(e).__name__}: {e}", key, name) from e
            if loaded is None:
                java = name.count(".") >= 2 and ":" not in name and name.rpartition(".")[2][:1].isupper()
                detail = "a Java class name is accepted only for plugins connect_spark ships" if java else ""
                raise _unknown(kind, name, key, detail)
            obj = loaded[0]
    contract = _CONTRACTS[kind]
    if not (isinstance(obj, type) and issubclass(obj, contract)):
        raise _fail(
            f"{name} is not a {kind.replace('_', ' ')}: it must be a subclass of connect_spark.api.{contract.__name__}",
            key,
            name,
        )
    if inspect.isabstract(obj):
        raise _fail(f"{name} is abstract and cannot be instantiated", key, name)
    log.debug("Resolved %s %s to %s.%s", kind, name, obj.__module__, obj.__qualname__)
    return obj


def instantiate(kind: str, name: str, key: str | None = None) -> Any:
    """A new instance of the class :func:`resolve` finds (its constructor takes no arguments).

    Raises:
        ConfigException: as :func:`resolve`, or when the constructor fails.
    """
    cls = resolve(kind, name, key)
    try:
        return cls()
    except Exception as e:
        raise _fail(f"Cannot instantiate {name}: {type(e).__name__}: {e}", key, name) from e


def configured_converter(which: str, connector: "ConnectorConfig", worker: "WorkerConfig") -> Any:
    """A new converter for ``which`` (``key.converter``, ``value.converter`` or ``header.converter``),
    configured as Kafka Connect configures it (the connector's override, else the worker's setting).

    Called by the task builder for every task and by the columnar plan to read the converters' settings.
    """
    class_name, props = connector.converter_config(which, worker)
    if which == "header.converter":
        instance = instantiate("header_converter", class_name, key=which)
        instance.configure(props)
    else:
        instance = instantiate("converter", class_name, key=which)
        instance.configure(props, which == "key.converter")
    return instance


def add_plugin_path(directories: Iterable[str]) -> list[str]:
    """Append the worker's ``plugin.path`` directories to ``sys.path`` (those not already on it).

    Called once by ``connect_spark.config.validation`` before any plugin is resolved, so that Python
    paths and entry points of packages installed in those directories are found. A directory that does
    not exist is skipped with a warning, as Kafka does.

    Returns:
        The directories added.
    """
    added = []
    for directory in directories:
        path = os.path.abspath(directory)
        if not os.path.isdir(path):
            log.warning("plugin.path entry %s is not a directory; skipped", directory)
            continue
        if path not in sys.path:
            sys.path.append(path)
            added.append(path)
    if added:
        importlib.invalidate_caches()
        log.info("Added plugin.path directories to the Python path: %s", ", ".join(added))
    return added
