"""A throwaway S3-compatible server on loopback (moto's standalone server), for the S3 sink's tests and
benchmark.

``moto_server`` (``pip install 'moto[server]'``, in the test extra) runs as a child process on 127.0.0.1 and
a free port, keeping objects in memory; it speaks the S3 API that boto3 and pyarrow use (multipart uploads,
listing, user metadata). Used by the session fixture in ``tests/integration/s3_fixtures.py`` and by
``jobs/bench_s3.py``::

    with LocalS3(log_dir) as s3:
        s3.create_bucket("b")
        props = s3.connector_keys("b")   # store.url, s3.region, aws.access.key.id, aws.secret.access.key
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from connect_spark.api.errors import ConnectException
from connect_spark.localprocess import free_port

__all__ = ["LocalS3"]

log = logging.getLogger(__name__)

#: Credentials the local server accepts (any are accepted; these make the connector use explicit keys).
ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key"


class LocalS3:
    """One ``moto_server`` process owned by whoever started it."""

    def __init__(self, log_dir: str | os.PathLike[str]) -> None:
        self.log_dir = Path(log_dir)
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> "LocalS3":
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        out = open(self.log_dir / "moto_server.log", "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ConnectException(f"moto_server exited with {self.process.returncode}: see "
                                       f"{self.log_dir / 'moto_server.log'}")
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1).read()
                log.info("moto_server ready at %s", self.url)
                return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise ConnectException(f"moto_server did not answer at {self.url} within {timeout} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> "LocalS3":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def client(self) -> Any:
        """A boto3 client of the server."""
        import boto3

        return boto3.client("s3", endpoint_url=self.url, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY)

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object of ``bucket`` under ``prefix``: key → bytes."""
        client = self.client()
        found = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", ()):
                found[item["Key"]] = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        return found

    def connector_keys(self, bucket: str) -> dict[str, str]:
        """The connector keys that point an S3 sink at ``bucket`` of this server."""
        return {"s3.bucket.name": bucket, "store.url": self.url, "s3.region": "us-east-1",
                "aws.access.key.id": ACCESS_KEY, "aws.secret.access.key": SECRET_KEY}
