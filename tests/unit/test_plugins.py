"""Plugin resolution: built-in table, entry points, Python paths, kind checks and error messages.

Uses small plugin classes written to a temporary package on sys.path (not the built-ins, which other
modules provide), plus a fake installed distribution that declares entry points.
"""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from connect_spark import plugins
from connect_spark.api import Converter, HeaderConverter, Predicate, SinkConnector, Transformation
from connect_spark.api.errors import ConfigException

PLUGIN_MODULE = '''
from connect_spark.api import Converter, HeaderConverter, Predicate, SinkConnector, SinkTask, Transformation

class MyTask(SinkTask):
    def version(self): return "1"
    def start(self, props): pass
    def put(self, records): pass
    def stop(self): pass

class MySink(SinkConnector):
    def version(self): return "1"
    def start(self, props): pass
    def task_class(self): return MyTask
    def task_configs(self, max_tasks): return [{}]
    def stop(self): pass

class AbstractSink(SinkConnector):
    pass

class MyConverter(Converter, HeaderConverter):
    def to_connect_data(self, topic, value, headers=None): return None
    def from_connect_data(self, topic, schema, value, headers=None): return None
    def to_connect_header(self, topic, header_key, value): return None
    def from_connect_header(self, topic, header_key, schema, value): return None

class MyTransform(Transformation):
    def apply(self, record): return record

    class Nested(Transformation):
        def apply(self, record): return None

class MyPredicate(Predicate):
    def test(self, record): return True

class Exploding(Transformation):
    def __init__(self): raise RuntimeError("boom")
    def apply(self, record): return record
'''


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    """A package ``cs_test_plugins`` on sys.path, with a distribution declaring entry points."""
    package = tmp_path / "cs_test_plugins"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text(textwrap.dedent(PLUGIN_MODULE))
    (package / "needs_dep.py").write_text("import cs_missing_dependency_xyz\n")
    (package / "broken.py").write_text("raise RuntimeError('fails at import')\n")
    dist = tmp_path / "cs_test_plugins-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cs-test-plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        textwrap.dedent(
            """
            [connect_spark.connectors]
            MyEntrySink = cs_test_plugins.core:MySink
            NeedsDep = cs_test_plugins.needs_dep:Thing

            [connect_spark.transforms]
            MyEntryTransform = cs_test_plugins.core:MyTransform
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("cs_test_plugins")]:
        del sys.modules[name]


@pytest.mark.parametrize(
    "kind, name, base",
    [
        ("connector", "cs_test_plugins.core:MySink", SinkConnector),
        ("connector", "cs_test_plugins.core.MySink", SinkConnector),
        ("converter", "cs_test_plugins.core:MyConverter", Converter),
        ("header_converter", "cs_test_plugins.core.MyConverter", HeaderConverter),
        ("transform", "cs_test_plugins.core:MyTransform", Transformation),
        ("transform", "cs_test_plugins.core:MyTransform.Nested", Transformation),
        ("transform", "cs_test_plugins.core.MyTransform.Nested", Transformation),
        ("predicate", "cs_test_plugins.core:MyPredicate", Predicate),
        ("connector", "MyEntrySink", SinkConnector),
        ("transform", "MyEntryTransform", Transformation),
    ],
)
def test_resolves_python_paths_and_entry_points(plugin_path, kind, name, base):
    cls = plugins.resolve(kind, name)
    assert issubclass(cls, base)
    assert isinstance(plugins.instantiate(kind, name), cls)


def test_entry_points_are_listed_as_aliases(plugin_path):
    assert "MyEntrySink" in plugins.known_aliases("connector")
    assert "MyEntryTransform" in plugins.known_aliases("transform")


def test_wrong_kind_names_the_contract(plugin_path):
    with pytest.raises(ConfigException) as info:
        plugins.resolve("connector", "cs_test_plugins.core:MyTransform", key="connector.class")
    message = str(info.value)
    assert "connector.class" in message and "cs_test_plugins.core:MyTransform" in message
    assert "must be a subclass of connect_spark.api.SinkConnector" in message
    assert info.value.key == "connector.class"


def test_abstract_class_is_rejected(plugin_path):
    with pytest.raises(ConfigException, match="abstract"):
        plugins.resolve("connector", "cs_test_plugins.core:AbstractSink")


def test_unknown_name_lists_aliases_and_suggests(plugin_path):
    with pytest.raises(ConfigException) as info:
        plugins.resolve("converter", "Jsonconverter", key="value.converter")
    message = str(info.value)
    assert "Invalid value 'Jsonconverter' for configuration value.converter" in message
    assert "Did you mean JsonConverter?" in message
    assert "ByteArrayConverter" in message and "connect_spark.converters" in message


def test_java_class_without_python_equivalent(plugin_path):
    with pytest.raises(ConfigException, match="Java class name"):
        plugins.resolve("converter", "io.confluent.connect.protobuf.ProtobufConverter", key="value.converter")


def test_missing_attribute_in_existing_module(plugin_path):
    with pytest.raises(ConfigException, match="has no attribute 'Nope'"):
        plugins.resolve("transform", "cs_test_plugins.core:Nope")


def test_missing_optional_dependency_names_the_extra(plugin_path, monkeypatch):
    monkeypatch.setitem(plugins.OPTIONAL_DEPENDENCY_EXTRAS, "cs_missing_dependency_xyz", "xyz")
    with pytest.raises(ConfigException) as info:
        plugins.resolve("connector", "cs_test_plugins.needs_dep:Thing", key="connector.class")
    assert "pip install 'connect-spark[xyz]'" in str(info.value)
    assert "cs_missing_dependency_xyz" in str(info.value)
    with pytest.raises(ConfigException, match=r"connect-spark\[xyz\]"):
        plugins.resolve("connector", "NeedsDep")


def test_missing_dependency_without_extra(plugin_path):
    with pytest.raises(ConfigException, match="install the package that provides 'cs_missing_dependency_xyz'"):
        plugins.resolve("connector", "cs_test_plugins.needs_dep.Thing")


def test_module_failing_at_import(plugin_path):
    with pytest.raises(ConfigException, match="RuntimeError: fails at import"):
        plugins.resolve("connector", "cs_test_plugins.broken:X")


def test_constructor_failure(plugin_path):
    with pytest.raises(ConfigException, match="Cannot instantiate.*boom"):
        plugins.instantiate("transform", "cs_test_plugins.core:Exploding", key="transforms.x.type")


def test_built_in_resolves_lazily_through_the_table(plugin_path, monkeypatch):
    monkeypatch.setitem(plugins.BUILT_INS["predicate"], "Always", "cs_test_plugins.core:MyPredicate")
    assert plugins.resolve("predicate", "Always").__name__ == "MyPredicate"
    monkeypatch.setitem(plugins.BUILT_INS["predicate"], "Gone", "connect_spark.no_such_module_xyz:Gone")
    with pytest.raises(ConfigException, match="not available in this installation"):
        plugins.resolve("predicate", "Gone", key="predicates.p.type")


def test_empty_name_and_bad_kind():
    with pytest.raises(ConfigException):
        plugins.resolve("connector", "  ", key="connector.class")
    with pytest.raises(ValueError, match="kinds are"):
        plugins.resolve("sink", "X")


def test_built_in_table_matches_the_documented_targets():
    table = plugins.BUILT_INS
    assert table["converter"]["org.apache.kafka.connect.json.JsonConverter"] == "connect_spark.converters.json:JsonConverter"
    assert table["converter"]["IntegerConverter"] == "connect_spark.converters.numeric:IntegerConverter"
    assert (
        table["converter"]["org.apache.kafka.connect.converters.ByteArrayConverter"]
        == "connect_spark.converters.bytearray:ByteArrayConverter"
    )
    assert table["header_converter"]["SimpleHeaderConverter"] == "connect_spark.converters.header:SimpleHeaderConverter"
    assert table["header_converter"]["StringConverter"] == "connect_spark.converters.string:StringConverter"
    assert table["transform"]["Cast$Key"] == "connect_spark.transforms.cast:CastKey"
    assert (
        table["transform"]["org.apache.kafka.connect.transforms.TimestampConverter$Value"]
        == "connect_spark.transforms.timestamp_converter:TimestampConverterValue"
    )
    assert table["transform"]["org.apache.kafka.connect.transforms.Filter"] == "connect_spark.transforms.filter:Filter"
    assert table["transform"]["ValueToKey"] == "connect_spark.transforms.value_to_key:ValueToKey"
    assert (
        table["predicate"]["org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"]
        == "connect_spark.transforms.predicates:RecordIsTombstone"
    )
    for name in ("FileStreamSink", "FileStreamSinkConnector", "org.apache.kafka.connect.file.FileStreamSinkConnector"):
        assert table["connector"][name] == "connect_spark.connectors.file:FileStreamSinkConnector"
    assert table["connector"]["DeltaSink"] == "connect_spark.connectors.delta:DeltaSinkConnector"
    assert table["connector"]["RecordingSink"] == "connect_spark.testing.recording:RecordingSinkConnector"
    assert len(table["transform"]) == 2 * (10 * 2 + 6 + 4)  # Kafka's, then Debezium's four


def test_kafka_class_name():
    assert plugins.kafka_class_name("transform", "Cast$Value") == "org.apache.kafka.connect.transforms.Cast$Value"
    assert plugins.kafka_class_name("connector", "FileStreamSink") == "org.apache.kafka.connect.file.FileStreamSinkConnector"
    assert plugins.kafka_class_name("connector", "DeltaSink") == "DeltaSink"
    assert plugins.kafka_class_name("converter", "my.pkg:Conv") == "my.pkg:Conv"
