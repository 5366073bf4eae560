"""The bucket: whole-object uploads under final names, and the listing ``open`` resumes from.

Called by the task (on the driver or in an executor's Python worker; each task builds its own client in
``start``). boto3 is the client: an object is put whole, or, above ``s3.part.size``, as a multipart upload
that boto3 completes only after every part is in and aborts on failure, so no reader ever sees a torn
object and nothing is renamed. botocore's standard retry mode retries throttling, 5xx and connection
errors with exponential back-off (``s3.retry.max.attempts``). What still fails is raised as a
``RetriableException`` (throttling, 5xx, connection) — the runtime delivers the records again after a
back-off — or a ``ConnectException`` (a missing bucket, refused credentials).

A multipart upload that never completes nor aborts (the process killed in the middle of its parts) keeps
its parts, invisible and billed; ``open`` lists such uploads under a partition's prefix and aborts them.

Every object carries, in its user metadata, the group of objects it was uploaded with (see ``task.py``):
the first offset of the group, the offset after its last record, how many objects and records it holds, and
how many of those records are in the object itself.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from connect_spark.api.errors import ConnectException, RetriableException
from connect_spark.connectors.s3.config import S3SinkConfig

__all__ = ["Bucket", "StoredObject", "GroupMark", "ObjectMark", "UnfinishedUpload", "translated"]

_GROUP_START = "connect-group-start"
_GROUP_NEXT = "connect-group-next"
_GROUP_OBJECTS = "connect-group-objects"
_GROUP_RECORDS = "connect-group-records"
_OBJECT_RECORDS = "connect-object-records"
_TRANSIENT_CODES = {"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "InternalError",
                    "ServiceUnavailable", "RequestTimeTooSkewed"}


@dataclass(frozen=True)
class GroupMark:
    """The group an object was uploaded in: records ``[start, next)`` of one Kafka partition, ``objects`` objects
    holding ``records`` records between them (``None`` in objects written before groups counted their records)."""

    start: int
    next: int
    objects: int
    records: int | None = None

    def metadata(self) -> dict[str, str]:
        counted = {} if self.records is None else {_GROUP_RECORDS: str(self.records)}
        return {_GROUP_START: str(self.start), _GROUP_NEXT: str(self.next), _GROUP_OBJECTS: str(self.objects),
                **counted}

    def held(self, marks: Iterable["ObjectMark | None"]) -> tuple[int, int]:
        """How many of ``marks`` carry this group's mark, and how many records those objects hold."""
        own = [mark for mark in marks if mark is not None and mark.group == self]
        return len(own), sum(mark.records or 0 for mark in own)

    def complete(self, marks: Iterable["ObjectMark | None"]) -> bool:
        """Whether the objects carrying this group's mark among ``marks`` are all of its objects, holding all
        of its records."""
        return self.held(marks) == (self.objects, self.records)

    @classmethod
    def from_metadata(cls, metadata: dict[str, str]) -> "GroupMark | None":
        try:
            records = metadata.get(_GROUP_RECORDS)
            return cls(int(metadata[_GROUP_START]), int(metadata[_GROUP_NEXT]), int(metadata[_GROUP_OBJECTS]),
                       None if records is None else int(records))
        except (KeyError, ValueError):
            return None


@dataclass(frozen=True)
class ObjectMark:
    """What one object's metadata says: its group, and how many of the group's records the object holds
    (``None`` when the object predates that count)."""

    group: GroupMark
    records: int | None = None

    def metadata(self) -> dict[str, str]:
        counted = {} if self.records is None else {_OBJECT_RECORDS: str(self.records)}
        return {**self.group.metadata(), **counted}

    @classmethod
    def from_metadata(cls, metadata: dict[str, str]) -> "ObjectMark | None":
        group = GroupMark.from_metadata(metadata)
        if group is None:
            return None
        try:
            records = metadata.get(_OBJECT_RECORDS)
            return cls(group, None if records is None else int(records))
        except ValueError:
            return None


@dataclass(frozen=True)
class StoredObject:
    """An object of one Kafka partition found by listing: its key and the start offset in its name."""

    key: str
    start: int


@dataclass(frozen=True)
class UnfinishedUpload:
    """A multipart upload started and neither completed nor aborted."""

    key: str
    upload_id: str


class Bucket:
    """One sink's bucket, through a boto3 client built from the connector's keys."""

    def __init__(self, config: S3SinkConfig) -> None:
        try:
            import boto3
            from boto3.s3.transfer import TransferConfig
            from botocore.config import Config
        except ImportError as e:
            raise ConnectException("The S3 sink needs boto3: pip install 'connect-spark[s3]'") from e
        self.config = config
        client_config = Config(retries={"total_max_attempts": config.max_attempts, "mode": "standard"},
                               s3={"addressing_style": "path"} if config.store_url else None,
                               max_pool_connections=16)
        credentials: dict[str, Any] = {}
        if config.access_key:
            credentials = {"aws_access_key_id": config.access_key, "aws_secret_access_key": config.secret_key}
        self.client = boto3.session.Session().client(
            "s3", region_name=config.region, endpoint_url=config.store_url, config=client_config, **credentials)
        self.transfer = TransferConfig(multipart_threshold=config.part_size, multipart_chunksize=config.part_size,
                                       use_threads=True)

    def put(self, key: str, data: bytes, mark: ObjectMark) -> None:
        """Upload ``data`` whole under ``key`` (multipart above ``s3.part.size``), replacing any object there."""
        try:
            self.client.upload_fileobj(io.BytesIO(data), self.config.bucket, key,
                                       ExtraArgs={"Metadata": mark.metadata()}, Config=self.transfer)
        except Exception as e:
            raise translated(e, f"uploading s3://{self.config.bucket}/{key}") from e

    def objects(self, prefix: str, name: re.Pattern[str], start_after: str | None = None) -> Iterator[StoredObject]:
        """The objects under ``prefix`` whose last path part matches ``name`` (group 1: the start offset),
        only those whose key sorts after ``start_after`` when given."""
        try:
            extra = {"StartAfter": start_after} if start_after else {}
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.config.bucket, Prefix=prefix,
                                                                          **extra)
            for page in pages:
                for item in page.get("Contents", ()):
                    match = name.fullmatch(item["Key"].rsplit(self.config.directory_delim, 1)[-1])
                    if match:
                        yield StoredObject(item["Key"], int(match.group(1)))
        except Exception as e:
            raise translated(e, f"listing s3://{self.config.bucket}/{prefix}") from e

    def unfinished_uploads(self, prefix: str) -> Iterator[UnfinishedUpload]:
        """The multipart uploads under ``prefix`` that are neither completed nor aborted."""
        try:
            pages = self.client.get_paginator("list_multipart_uploads").paginate(Bucket=self.config.bucket,
                                                                                 Prefix=prefix)
            for page in pages:
                for item in page.get("Uploads", ()):
                    yield UnfinishedUpload(item["Key"], item["UploadId"])
        except Exception as e:
            raise translated(e, f"listing the multipart uploads of s3://{self.config.bucket}/{prefix}") from e

    def abort(self, upload: UnfinishedUpload) -> None:
        """Abort ``upload``: its parts are deleted (an upload already gone is no error)."""
        try:
            self.client.abort_multipart_upload(Bucket=self.config.bucket, Key=upload.key, UploadId=upload.upload_id)
        except Exception as e:
            if getattr(e, "response", {}).get("Error", {}).get("Code") == "NoSuchUpload":
                return
            raise translated(e, f"aborting the multipart upload of s3://{self.config.bucket}/{upload.key}") from e

    def mark(self, key: str) -> ObjectMark | None:
        """The group metadata of the object ``key`` (``None`` for an object this sink did not write)."""
        try:
            head = self.client.head_object(Bucket=self.config.bucket, Key=key)
        except Exception as e:
            raise translated(e, f"reading s3://{self.config.bucket}/{key}") from e
        return ObjectMark.from_metadata(head.get("Metadata", {}))


def translated(error: Exception, doing: str) -> Exception:
    """A botocore failure as Connect's exception: retriable when S3 may accept the same request later."""
    from botocore.exceptions import BotoCoreError, ClientError, ConnectionError as BotoConnectionError

    try:
        from boto3.exceptions import S3UploadFailedError
    except ImportError:  # pragma: no cover
        S3UploadFailedError = ()  # type: ignore[assignment]
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if code in _TRANSIENT_CODES or status >= 500 or status == 429:
            return RetriableException(f"S3 {doing}: {code or status} (retries exhausted)")
        return ConnectException(f"S3 {doing}: {code or status}: {error.response.get('Error', {}).get('Message', '')}")
    if isinstance(error, S3UploadFailedError) and any(c in str(error) for c in ("NoSuchBucket", "AccessDenied",
                                                                                  "InvalidAccessKeyId")):
        return ConnectException(f"S3 {doing}: {error}")
    if isinstance(error, (BotoConnectionError, S3UploadFailedError)):
        return RetriableException(f"S3 {doing}: {error}")
    if isinstance(error, BotoCoreError):
        return ConnectException(f"S3 {doing}: {error}")
    return ConnectException(f"S3 {doing}: {type(error).__name__}: {error}")
