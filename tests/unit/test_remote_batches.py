"""The Spark Connect foreachBatch function: picklable, and without the runtime it built where it ran."""

from __future__ import annotations

import pickle
import threading

from connect_spark.api.records import TopicPartition
from connect_spark.connectors.file import FileStreamSinkTask
from connect_spark.runtime.processors.remote_batches import RemoteBatchFunction
from connect_spark.spark_session import is_remote_session


def test_the_function_pickles_with_its_configuration_and_without_its_runtime():
    function = RemoteBatchFunction(
        run_id="r-1", connector_props={"name": "c", "topics": "t"}, worker_props={"bootstrap.servers": "b:9092"},
        task_class=FileStreamSinkTask, task_configs=[{"file": "/tmp/x"}], client_config={"bootstrap.servers": "b:9092"},
        include_headers=False, positions={TopicPartition("t", 0): 5})
    function._runtime = threading.Lock()  # type: ignore[assignment] - stands for a runtime that cannot pickle
    copy = pickle.loads(pickle.dumps(function))
    assert copy == function and copy._runtime is None
    assert copy.task_class is FileStreamSinkTask and copy.positions == {TopicPartition("t", 0): 5}


def test_a_classic_session_or_anything_else_is_not_remote():
    class SparkSession:  # a class of the same name outside pyspark.sql.connect
        pass

    assert not is_remote_session(SparkSession()) and not is_remote_session(None)
