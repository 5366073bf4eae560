"""Every column converter the plan picks keeps one contract (connect_spark.columnar.column_converter)."""

from connect_spark.columnar.avro import AvroColumns
from connect_spark.columnar.column_converter import ColumnConverter
from connect_spark.columnar.plan import build_plan
from connect_spark.converters.avro import AvroConverter
from connect_spark.converters.bytearray import ByteArrayConverter
from connect_spark.converters.json import JsonConverter
from connect_spark.converters.string import StringConverter


def _json(schemas: bool) -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": str(schemas).lower()}, False)
    return converter


def test_every_converter_the_plan_picks_is_a_column_converter():
    avro = AvroConverter()
    avro.configure({"schema.registry.url": "http://127.0.0.1:9"}, False)
    for key, value in [(ByteArrayConverter(), StringConverter()), (_json(True), _json(False)),
                       (StringConverter(), avro)]:
        plan = build_plan(key, value, None, [])
        for side in (plan.key, plan.value):
            assert isinstance(side, ColumnConverter)
            assert side.hoisted == () and side.reused is False
            side.forget()
            assert isinstance(side.needs_sample(), bool)
    assert isinstance(build_plan(StringConverter(), avro, None, []).value, AvroColumns)
