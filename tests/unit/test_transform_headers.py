"""DropHeaders and InsertHeader (cases from Kafka's DropHeadersTest and InsertHeaderTest)."""

from __future__ import annotations

import datetime

import pytest

from connect_spark.api import Headers, SinkRecord
from connect_spark.api.data import Schema, Time
from connect_spark.api.errors import ConfigException
from connect_spark.transforms.drop_headers import DropHeaders
from connect_spark.transforms.insert_header import InsertHeader


def with_headers(headers):
    return SinkRecord("topic", 0, Schema.STRING_SCHEMA, "key", Schema.STRING_SCHEMA, "value", 5, timestamp=0,
                      headers=headers)


def test_drop_headers():
    t = DropHeaders()
    t.configure({"headers": "dropped, also"})
    headers = Headers().add("keep", "a").add("dropped", "b").add("keep", "c").add("also", "d")
    out = t.apply(with_headers(headers))
    assert [(h.key, h.value) for h in out.headers] == [("keep", "a"), ("keep", "c")]
    assert len(headers) == 4
    assert out.key == "key" and out.value == "value" and out.kafka_offset == 5


def test_drop_headers_needs_a_list():
    with pytest.raises(ConfigException, match="Empty list"):
        DropHeaders().configure({"headers": ""})
    with pytest.raises(ConfigException, match="headers"):
        DropHeaders().configure({})


@pytest.mark.parametrize(
    "literal, schema, value",
    [
        ("inserted", Schema.STRING_SCHEMA, "inserted"),
        ("42", Schema.INT8_SCHEMA, 42),
        ("true", Schema.BOOLEAN_SCHEMA, True),
        ("10:15:30.000Z", Time.SCHEMA, datetime.time(10, 15, 30)),
        ("null", None, None),
    ],
)
def test_insert_header(literal, schema, value):
    t = InsertHeader()
    t.configure({"header": "inserted", "value.literal": literal})
    out = t.apply(with_headers(Headers().add("existing", "x")))
    header = out.headers.last_with_name("inserted")
    assert (header.schema, header.value) == (schema, value)
    assert out.headers.last_with_name("existing").value == "x"
    assert out.value == "value"


def test_insert_header_config():
    with pytest.raises(ConfigException, match="header"):
        InsertHeader().configure({"value.literal": "x"})
    with pytest.raises(ConfigException, match="value.literal"):
        InsertHeader().configure({"header": "h"})
