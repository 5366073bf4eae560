"""Runs ``connect_spark.cli`` with one fault: the process suspends itself (SIGSTOP) in the middle of an offset
commit, once the file named by ``PAUSE_IN_COMMIT_MARKER`` exists (the file is removed first).

The pause comes after the commit began and before its first ``connect-offsets`` record is handed to the
producer, so the record can only reach the broker after the process is resumed (SIGCONT): by then another
worker owns the connector and has committed past it. Used by tests/integration/test_cluster.py as
``python -m tests.integration.pause_in_commit distributed worker.properties``.
"""

import os
import runpy
import signal
import sys

from kafka import KafkaProducer

MARKER = os.environ.get("PAUSE_IN_COMMIT_MARKER", "")
_send = KafkaProducer.send


def _offsets_producer(producer):
    client_id = str(producer.config.get("client_id", ""))
    return client_id.startswith("connect-spark-offsets") or client_id.endswith("-offsets-producer")


def _send_or_pause(self, topic, *args, **kwargs):
    if MARKER and _offsets_producer(self) and os.path.exists(MARKER):
        try:
            os.unlink(MARKER)
        except FileNotFoundError:
            pass
        else:
            print(f"pause_in_commit: suspending in a commit to {topic}", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
    return _send(self, topic, *args, **kwargs)


KafkaProducer.send = _send_or_pause

if __name__ == "__main__":
    sys.argv[0] = "connect_spark.cli"
    runpy.run_module("connect_spark.cli", run_name="__main__", alter_sys=True)
