"""The vectorized conversion path: converters and SMTs compiled to Spark column expressions.

* :mod:`~connect_spark.columnar.types` — Connect schemas ⇄ Spark and Arrow types.
* :mod:`~connect_spark.columnar.plan` — :func:`compile_plan` turns a connector's converters and
  transforms into a :class:`ColumnarPlan` (or ``None`` when a piece cannot be vectorized).
* :mod:`~connect_spark.columnar.column_converter` — the contract of the plan's key and value converters;
  :mod:`~connect_spark.columnar.json_columns` (JsonConverter) and :mod:`~connect_spark.columnar.avro` keep it.
* :mod:`~connect_spark.columnar.records` — record frames (Arrow) ⇄ ``SinkRecord`` lists.
"""
