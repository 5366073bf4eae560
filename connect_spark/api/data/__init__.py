"""Connect's data model: schemas, structs, logical types and value conversions.

The Python counterpart of Kafka's ``org.apache.kafka.connect.data`` and part of the plugin contract:
converters produce these values, transforms change them and sink tasks read them. See
:mod:`connect_spark.api.data.schema` for the Python value used for each schema type.

Example::

    from connect_spark.api.data import Schema, SchemaBuilder, Struct

    schema = (SchemaBuilder.struct().name("com.example.Person")
              .field("name", Schema.STRING_SCHEMA)
              .field("age", Schema.OPTIONAL_INT32_SCHEMA)
              .build())
    person = Struct(schema).put("name", "Ada").put("age", 36)
"""

from connect_spark.api.data.logical import Date, Decimal, Time, Timestamp
from connect_spark.api.data.schema import (
    ConnectSchema,
    Field,
    Schema,
    SchemaBuilder,
    SchemaBuilderException,
    Type,
)
from connect_spark.api.data.struct import Struct
from connect_spark.api.data.values import Values

__all__ = [
    "ConnectSchema",
    "Date",
    "Decimal",
    "Field",
    "Schema",
    "SchemaBuilder",
    "SchemaBuilderException",
    "Struct",
    "Time",
    "Timestamp",
    "Type",
    "Values",
]
