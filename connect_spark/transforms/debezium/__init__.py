"""Debezium's single message transforms, with Debezium's class names and configuration keys.

Debezium ships transforms that Kafka Connect sink configurations use to turn change events into rows
(``io.debezium.transforms.ExtractNewRecordState``, ``ByLogicalTableRouter``,
``ExtractChangedRecordState``, ``HeaderToValue``). The classes here behave as Debezium 3.6.1.Final's,
record for record; each carries Debezium's class name in ``kafka_class_name`` (the name the dead letter
queue's ``__connect.errors.class.name`` header reports).

Modules, one job each:

* :mod:`.envelope`: the change event envelope (field names, operation codes, the validity check);
* :mod:`.settings`: how Debezium reads a transform's keys (raw strings, Java's ``String.split``);
* :mod:`.field_reference`: the ``add.fields`` / ``add.headers`` entries of ExtractNewRecordState;
* :mod:`.delete_handling`: what ExtractNewRecordState does with deletes, tombstones and truncates;
* :mod:`.extract_new_record_state`, :mod:`.by_logical_table_router`,
  :mod:`.extract_changed_record_state`, :mod:`.header_to_value`: the transforms;
* :mod:`.schema_names`: ``schema.name.adjustment.mode`` (Avro-compatible schema names);
* :mod:`.nested_fields`: the nested field insertion HeaderToValue uses.

:mod:`connect_spark.plugins` imports the transform modules on demand; this package imports none of them.
"""
