"""validate_configs: every problem across the worker and all connectors, reported at once.

The plugins are small classes written to a temporary directory that only the worker's plugin.path
points at (the built-in plugins live in modules other engineers write).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from connect_spark.config.connector import ConnectorConfig
from connect_spark.config.definition import ConfigValidationError
from connect_spark.config.validation import validate_configs
from connect_spark.config.worker import WorkerConfig

PLUGINS = '''
from connect_spark.api import Converter, HeaderConverter, Predicate, SinkConnector, SinkTask, Transformation
from connect_spark.api.errors import ConfigException
from connect_spark.config.definition import ConfigDef, Type, Importance, NO_DEFAULT, LambdaValidator, Range, ValidRegex


def _long_enough(name, value):
    if len(value) < 8:
        raise ConfigException("must have at least 8 characters", name, value)


class Task(SinkTask):
    def version(self): return "1"
    def start(self, props): pass
    def put(self, records): pass
    def stop(self): pass


class Sink(SinkConnector):
    def version(self): return "1"
    def start(self, props): pass
    def task_class(self): return Task
    def task_configs(self, max_tasks): return [{}]
    def stop(self): pass
    def config(self):
        return (ConfigDef()
                .define("file", Type.STRING, NO_DEFAULT, importance=Importance.HIGH, doc="output file")
                .define("batch.size", Type.INT, 10, Range.at_least(1), doc="batch")
                .define("db.password", Type.PASSWORD, None, doc="secret")
                .define("auth.token", Type.STRING, None, LambdaValidator.with_(_long_enough, "8+ characters")))


class Conv(Converter):
    def config(self):
        return ConfigDef().define("schemas.enable", Type.BOOLEAN, True)
    def to_connect_data(self, topic, value, headers=None): return None
    def from_connect_data(self, topic, schema, value, headers=None): return None


class HeaderConv(HeaderConverter):
    def to_connect_header(self, topic, header_key, value): return None
    def from_connect_header(self, topic, header_key, schema, value): return None


class Hoist(Transformation):
    def config(self):
        return ConfigDef().define("field", Type.STRING, NO_DEFAULT)
    def apply(self, record): return record


class Matches(Predicate):
    def config(self):
        return ConfigDef().define("pattern", Type.STRING, NO_DEFAULT, ValidRegex())
    def test(self, record): return True


class BadConfig(Transformation):
    def config(self): raise RuntimeError("no config for you")
    def apply(self, record): return record
'''


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    directory = tmp_path / "plugins"
    directory.mkdir()
    (directory / "cs_validation_plugins.py").write_text(textwrap.dedent(PLUGINS))
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield directory
    sys.modules.pop("cs_validation_plugins", None)


P = "cs_validation_plugins:"


@pytest.fixture
def worker(plugin_dir):
    return {
        "plugin.path": str(plugin_dir),
        "key.converter": P + "Conv",
        "value.converter": P + "Conv",
        "header.converter": P + "HeaderConv",
    }


def connector(**extra):
    props = {"name": "files", "connector.class": P + "Sink", "topics": "orders", "file": "/tmp/out.txt"}
    props.update({k.replace("_", "."): v for k, v in extra.items()})
    return props


def test_valid_configuration(worker):
    sink = connector(
        transforms="hoist",
        **{
            "transforms.hoist.type": P + "Hoist",
            "transforms.hoist.field": "payload",
            "transforms.hoist.predicate": "onOrders",
            "predicates": "onOrders",
            "predicates.onOrders.type": P + "Matches",
            "predicates.onOrders.pattern": "orders",
        },
    )
    other = {**connector(), "name": "other", "topics.regex": "x.*", "topics": ""}
    worker_config, connectors = validate_configs(worker, [sink, other])
    assert isinstance(worker_config, WorkerConfig)
    assert [c.name for c in connectors] == ["files", "other"]
    assert all(isinstance(c, ConnectorConfig) for c in connectors)


def test_every_error_across_worker_and_connectors(worker, monkeypatch):
    monkeypatch.delenv("CS_TEST_MISSING_VAR", raising=False)
    bad_worker = {**worker, "trigger": "soon", "key.converter.schemas.enable": "maybe", "value.converter": "Nope"}
    first = connector(
        **{
            "tasks.max": "0",
            "topics.regex": "orders.*",  # with topics: not allowed
            "batch.size": "0",
            "transforms": "hoist,hoist",
            "transforms.hoist.type": P + "Hoist",
        }
    )
    second = {
        "name": "second",
        "connector.class": "NoSuchSink",
        "topics": "a,dlq",
        "errors.deadletterqueue.topic.name": "dlq",
        "predicates": "p",
        "predicates.p.type": P + "Matches",
        "predicates.p.pattern": "(",
        "value.converter": P + "Hoist",
        "transforms": "t",
        "transforms.t.type": P + "BadConfig",
        "consumer.override.auto.offset.reset": "${env:CS_TEST_MISSING_VAR}",
    }
    third = {"connector.class": P + "Sink", "topics": "x"}  # no name, no file
    with pytest.raises(ConfigValidationError) as info:
        validate_configs(bad_worker, [first, second, third])
    lines = [issue.message for issue in info.value.issues]
    text = str(info.value)
    assert text.startswith(f"Invalid configuration: {len(lines)} problems:")

    def has(where, *fragments):
        assert any(line.startswith(where) and all(f in line for f in fragments) for line in lines), (where, fragments)

    has("worker:", "trigger", "'soon'")
    has("worker:", "key.converter.schemas.enable", "'maybe'", "either true or false", "checked by cs_validation_plugins:Conv")
    has("worker:", "value.converter", "'Nope'", "Unknown converter class", "JsonConverter")
    has("connector 'files':", "tasks.max", "at least 1")
    has("connector 'files':", "topics", "topics.regex", "both")
    has("connector 'files':", "batch.size", "checked by cs_validation_plugins:Sink")
    has("connector 'files':", "duplicate alias hoist")
    has("connector 'files':", 'transforms.hoist.field', "Missing required configuration")
    has("connector 'second':", "connector.class", "NoSuchSink", "FileStreamSink")
    has("connector 'second':", "dlq", "may not be one of the consumed topics")
    has("connector 'second':", "predicates.p.pattern", "Invalid regular expression")
    has("connector 'second':", "value.converter", "must be a subclass of connect_spark.api.Converter")
    has("connector 'second':", "transforms.t.type", "no config for you")
    has("connector 'second':", "consumer.override.auto.offset.reset", "${env:CS_TEST_MISSING_VAR}")
    has("connector #3:", 'Missing required configuration "name"')
    has("connector #3:", 'Missing required configuration "file"')
    # every line is in the message
    for line in lines:
        assert line in text


def test_files_are_named_and_unreadable_files_reported(worker, tmp_path):
    worker_file = tmp_path / "worker.properties"
    worker_file.write_text("".join(f"{k}={v}\n" for k, v in {**worker, "offset.flush.interval.ms": "x"}.items()))
    sink_file = tmp_path / "sink.properties"
    sink_file.write_text("name=files\nconnector.class=cs_validation_plugins:Sink\ntopics=orders\n")
    missing = tmp_path / "missing.properties"
    with pytest.raises(ConfigValidationError) as info:
        validate_configs(worker_file, [sink_file, missing])
    lines = [issue.message for issue in info.value.issues]
    assert any(line.startswith(f"worker {worker_file}:") and "offset.flush.interval.ms" in line for line in lines)
    assert any(line.startswith(f"connector 'files' ({sink_file}):") and '"file"' in line for line in lines)
    assert any(line.startswith(f"connector file {missing}:") and "not found" in line for line in lines)


def test_duplicate_connector_names(worker):
    with pytest.raises(ConfigValidationError, match="Duplicate connector name 'files': also used by connector 'files'"):
        validate_configs(worker, [connector(), connector()])


def test_override_policy_from_worker(worker):
    sink = connector(**{"consumer.override.max.poll.records": "5"})
    validate_configs(worker, [sink])
    with pytest.raises(ConfigValidationError, match="override.policy is None"):
        validate_configs({**worker, "connector.client.config.override.policy": "None"}, [sink])


def test_providers_resolve_before_validation_and_secrets_stay_hidden(worker, tmp_path, monkeypatch):
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("db.password=hunter2\nbatch=5\n")
    monkeypatch.setenv("CS_TEST_FILE", "/tmp/from-env.txt")
    sink = connector(
        file="${env:CS_TEST_FILE}",
        **{"batch.size": f"${{file:{secrets}:batch}}", "db.password": f"${{file:{secrets}:db.password}}"},
    )
    _, [config] = validate_configs(worker, [sink])
    assert config.get("file") == "/tmp/from-env.txt"
    assert config.resolved["batch.size"] == "5"
    assert "hunter2" not in repr(config)

    bad = connector(**{"batch.size": "${env:CS_NOPE_XYZ}"})
    with pytest.raises(ConfigValidationError) as info:
        validate_configs({**worker, "ssl.key.password": "${env:CS_NOPE_XYZ}"}, [bad])
    text = str(info.value)
    assert "CS_NOPE_XYZ" in text and "ssl.key.password" in text and "batch.size" in text


def test_secret_values_are_masked_in_messages(worker):
    bad = connector(**{"db.password": "hunter2", "auth.token": "hunter2"})
    bad["consumer.override.sasl.jaas.config"] = "hunter2-jaas"
    with pytest.raises(ConfigValidationError) as info:
        validate_configs({**worker, "connector.client.config.override.policy": "None"}, [bad])
    text = str(info.value)
    assert "consumer.override.sasl.jaas.config" in text
    assert "Invalid value [hidden] for configuration auth.token: must have at least 8 characters" in text
    assert "hunter2" not in text
    assert all(issue.value in (None, "[hidden]") for issue in info.value.issues)


def test_plugins_can_be_skipped(worker):
    sink = {**connector(), "connector.class": "NotInstalledHere"}
    with pytest.raises(ConfigValidationError):
        validate_configs(worker, [sink])
    _, [config] = validate_configs(worker, [sink], check_plugins=False)
    assert config.connector_class == "NotInstalledHere"


def test_no_pyspark_import():
    code = (
        "import sys\n"
        "import connect_spark.config.validation, connect_spark.config.docs, connect_spark.plugins\n"
        "assert not [m for m in sys.modules if m.startswith('pyspark')], 'pyspark imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
