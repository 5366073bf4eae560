"""Record frames built by Arrow from raw batches (the bulk path without a Python object per record)."""

from __future__ import annotations


from connect_spark.converters.bytearray import ByteArrayConverter
from connect_spark.converters.header import SimpleHeaderConverter
from connect_spark.converters.string import StringConverter
from connect_spark.api.bulk import RECORD_FRAME_COLUMNS
from connect_spark.runtime.conversion.record_frames import ArrowFrameBuilder
from connect_spark.runtime.conversion.sink_records import RecordConverter
from connect_spark.runtime.errors import ErrorHandler, ErrorHandlingConfig
from connect_spark.testing.raw_batches import raw_record_batch



def _raw(values, timestamps=None):
    return raw_record_batch(values, keys=b"k", timestamps=timestamps, headers=[[("h", b"x")]] * len(values))


def _converter(key, value, stages=()):
    key.configure({}, True)
    value.configure({}, False)
    handler = ErrorHandler(ErrorHandlingConfig.from_connector_config({}), "c", 0, [])
    return RecordConverter(key, value, SimpleHeaderConverter(), stages, handler)


def test_string_values_become_a_frame_with_every_column():
    builder = ArrowFrameBuilder.for_converter(_converter(ByteArrayConverter(), StringConverter()))
    frame = builder.build(_raw([b"a", None, "é".encode()], timestamps=[5, -1, None]))
    assert frame.column_names == list(RECORD_FRAME_COLUMNS)
    assert frame.column("value").to_pylist() == ["a", None, "é"]
    assert frame.column("key").to_pylist() == [b"k"] * 3
    assert frame.column("timestamp_type").to_pylist() == [0, -1, -1]
    assert [t is None for t in frame.column("timestamp").to_pylist()] == [False, True, True]
    assert frame.column("original_offset").to_pylist() == [0, 1, 2]
    assert frame.column("headers").to_pylist()[0] == [{"key": "h", "value": b"x"}]


def test_invalid_utf8_or_timestamp_sends_the_batch_to_the_per_record_path():
    builder = ArrowFrameBuilder.for_converter(_converter(ByteArrayConverter(), StringConverter()))
    assert builder.build(_raw([b"ok", b"\xff\xfe"])) is None
    assert builder.build(_raw([b"ok"], timestamps=[-5])) is None


def test_transformations_or_other_converters_have_no_arrow_frames():
    from connect_spark.converters.json import JsonConverter

    assert ArrowFrameBuilder.for_converter(_converter(ByteArrayConverter(), JsonConverter())) is None
