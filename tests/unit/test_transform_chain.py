"""TransformationChain: order, predicates with negate, dropping, per-stage application."""

from __future__ import annotations

from connect_spark.api import Headers, SinkRecord
from connect_spark.api.transforms import Transformation
from connect_spark.transforms.cast import CastValue
from connect_spark.transforms.chain import TransformationChain, TransformationStage
from connect_spark.transforms.filter import Filter
from connect_spark.transforms.insert_header import InsertHeader
from connect_spark.transforms.predicates import RecordIsTombstone, TopicNameMatches
from connect_spark.transforms.regex_router import RegexRouter


def configured(cls, **props):
    plugin = cls()
    plugin.configure(props)
    return plugin


def rec(topic="orders", value="1", offset=10):
    return SinkRecord(topic, 0, None, None, None, value, offset, headers=Headers())


class Recording(Transformation):
    """Appends its name to a shared log and passes the record on."""

    def __init__(self, name, log):
        self.name, self.log, self.closed = name, log, False

    def apply(self, record):
        self.log.append(self.name)
        return record

    def close(self):
        self.closed = True


def test_stages_apply_in_order():
    log = []
    chain = TransformationChain([(Recording("a", log), None, False), (Recording("b", log), None, False)])
    assert chain.apply(rec()) is not None
    assert log == ["a", "b"]


def test_filter_with_tombstone_predicate():
    chain = TransformationChain([(Filter(), RecordIsTombstone(), False)])
    assert chain.apply(rec(value=None)) is None
    kept = rec(value="x")
    assert chain.apply(kept) is kept


def test_negate():
    chain = TransformationChain([(Filter(), RecordIsTombstone(), True)])  # drop everything that is NOT a tombstone
    assert chain.apply(rec(value="x")) is None
    tombstone = rec(value=None)
    assert chain.apply(tombstone) is tombstone


def test_predicate_sees_the_current_topic():
    router = configured(RegexRouter, regex="orders", replacement="renamed")
    tagger = configured(InsertHeader, header="tagged", **{"value.literal": "yes"})
    chain = TransformationChain([
        (router, None, False),
        (tagger, configured(TopicNameMatches, pattern="renamed"), False),
    ])
    out = chain.apply(rec())
    assert out.topic == "renamed" and out.headers.last_with_name("tagged").value == "yes"
    assert out.original_topic == "orders" and out.kafka_offset == 10


def test_a_drop_stops_the_chain():
    log = []
    chain = TransformationChain([(Filter(), None, False), (Recording("after", log), None, False)])
    assert chain.apply(rec()) is None
    assert log == []


def test_per_stage_application_and_class_names():
    cast = configured(CastValue, spec="int32")
    chain = TransformationChain([TransformationStage(Filter(), RecordIsTombstone()), (cast, None, False)])
    assert len(chain) == 2
    assert chain.executing_class(0) == "org.apache.kafka.connect.transforms.Filter"
    assert chain.executing_class(1) == "org.apache.kafka.connect.transforms.Cast$Value"
    record = rec(value="42")
    after_first = chain.apply_stage(0, record)
    assert after_first is record
    assert chain.apply_stage(1, after_first).value == 42
    assert [s.executing_class for s in chain] == [chain.executing_class(0), chain.executing_class(1)]
    assert "negate=false" in str(chain.stages[0])


def test_custom_transform_class_name():
    chain = TransformationChain([(Recording("x", []), None, False)])
    assert chain.executing_class(0).endswith("test_transform_chain.Recording")


def test_empty_chain_and_close():
    assert TransformationChain().apply(rec()).value == "1"
    recording = Recording("x", [])
    chain = TransformationChain([(recording, None, False), (recording, None, False)])
    chain.close()
    assert recording.closed


def test_configured_plugins_pickle():
    import pickle

    from connect_spark.api.data import Schema, SchemaBuilder, Struct
    from connect_spark.transforms.timestamp_converter import TimestampConverterValue

    cast = configured(CastValue, spec="a:string")
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    cast.apply(SinkRecord("t", 0, None, None, schema, Struct(schema).put("a", 1), 0))  # fills the schema cache
    chain = TransformationChain([
        (cast, None, False),
        (configured(TimestampConverterValue, **{"target.type": "string", "format": "yyyy", "field": "ts"}),
         configured(TopicNameMatches, pattern="t.*"), True),
        (configured(RegexRouter, regex="(.*)", replacement="x-$1"), None, False),
    ])
    copy = pickle.loads(pickle.dumps(chain))
    out = copy.apply(SinkRecord("t", 0, None, None, schema, Struct(schema).put("a", 1), 0))
    assert out.topic == "x-t" and out.value.get("a") == "1"
