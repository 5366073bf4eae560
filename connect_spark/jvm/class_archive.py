"""A class-data-sharing archive of the Spark driver's classes: sessions connect_spark builds start faster.

A Spark driver JVM loads and verifies some 15,000 classes before its first job. The JVM can keep those
classes, parsed and verified, in an archive file it maps at start (class data sharing, JDK 13+: a
*dynamic* archive written with ``-XX:ArchiveClassesAtExit``, used with ``-XX:SharedArchiveFile``). On the
2-core machine of ``jobs/bench_all.py`` a session and its first job take ~2-3 s less with one.

:func:`driver_java_options` is called by :func:`connect_spark.spark_session.get_or_create_session` for a
session it is about to build, and hands back the JVM options for the driver:

1. an archive that fits this JVM and this classpath exists: use it;
2. else, when no other driver is writing one, write one when this driver's JVM exits (a few seconds
   more at exit, once), under a name of its own (``*.part``);
3. a ``.part`` file whose header is written is complete (the JVM writes the header last: a JVM killed
   while writing leaves it zeroed) and becomes the archive at the next call; a ``.part`` never finished
   is removed after an hour.

The archive's name holds a digest of what it depends on: the JVM (the ``java`` Spark's launcher runs
and its ``libjvm``), Spark's jars and the driver's extra classpath. An archive the JVM cannot use (another
build, a changed classpath) is ignored by it; its messages are turned off. Archives live in
``$CONNECT_SPARK_CLASS_ARCHIVES`` when set, else in ``class-archives`` beside the resolved jars
(:func:`connect_spark.jvm.jars_root`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Mapping

__all__ = ["ABANDONED_PART_SECONDS", "ARCHIVE_MAGIC", "DUMP_CLAIM_SECONDS", "archive_folder", "archive_key",
           "driver_java_options", "mentions_class_sharing"]

log = logging.getLogger(__name__)

#: The first four bytes of a complete dynamic archive (HotSpot's ``0xf00baba8``, little-endian).
ARCHIVE_MAGIC = bytes.fromhex("a8ab0bf0")
#: How long a driver's claim to write the archive keeps other drivers from writing one too.
DUMP_CLAIM_SECONDS = 600.0
#: A ``.part`` file still without its header after this long belongs to a JVM that died while writing.
ABANDONED_PART_SECONDS = 3600.0
#: Turns off the JVM's messages about archives it cannot use or classes it cannot archive.
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
#: JVM options by which a user manages class data sharing; with any of them set, nothing is added.
_USER_FLAGS = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")


def mentions_class_sharing(java_options: str) -> bool:
    """True when ``java_options`` already manage class data sharing (the user's own archive, or ``-Xshare:off``)."""
    return any(flag in java_options for flag in _USER_FLAGS)


def archive_folder() -> Path:
    """Where archives are kept: ``$CONNECT_SPARK_CLASS_ARCHIVES``, else ``<jars root>/class-archives``."""
    configured = os.environ.get("CONNECT_SPARK_CLASS_ARCHIVES")
    if configured:
        return Path(configured).expanduser().resolve()
    from connect_spark.jvm.artifacts import jars_root

    return jars_root() / "class-archives"


def _launcher_java() -> Path | None:
    """The ``java`` Spark's launcher (``spark-class``) runs: ``$JAVA_HOME/bin/java``, else the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _spark_home() -> Path:
    configured = os.environ.get("SPARK_HOME")
    if configured:
        return Path(configured).resolve()
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _stat_line(path: Path) -> str:
    try:
        stat = path.stat()
    except OSError:
        return f"{path} missing"
    return f"{path} {stat.st_size} {stat.st_mtime_ns}"


def archive_key(java: Path, spark_home: Path, extra_class_path: str) -> str:
    """A digest of what an archive depends on: the JVM build, Spark's jars, the driver's extra classpath."""
    lines = [_stat_line(java)]
    lines += [_stat_line(p) for p in sorted(java.parent.parent.glob("lib/server/libjvm.*"))]
    jars = spark_home / "jars"
    lines += [_stat_line(p) for p in sorted(jars.glob("*.jar"))] if jars.is_dir() else [f"{jars} missing"]
    lines.append(f"extra class path {extra_class_path}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def _complete(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(ARCHIVE_MAGIC)) == ARCHIVE_MAGIC
    except OSError:
        return False


def _age(path: Path, now: float) -> float:
    try:
        return now - path.stat().st_mtime
    except OSError:
        return 0.0


def _claim(claim: Path, now: float) -> bool:
    """Take the right to write the archive; False while another driver's claim is fresh."""
    for _ in range(2):
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _age(claim, now) < DUMP_CLAIM_SECONDS:
                return False
            claim.unlink(missing_ok=True)  # its driver died before writing: take over
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def driver_java_options(settings: Mapping[str, str], folder: Path | None = None,
                        now: float | None = None) -> list[str]:
    """The class-sharing options for the driver of a session about to be built with ``settings``.

    Called by :func:`connect_spark.spark_session.get_or_create_session` before it builds a session (never
    for a session passed in, nor under ``spark-submit``, whose JVM already runs). Returns nothing when
    there is no ``java`` to identify or the folder cannot be written; never raises for the archive's sake.
    """
    java = _launcher_java()
    if java is None:
        return []
    folder = folder or archive_folder()
    now = time.time() if now is None else now
    try:
        folder.mkdir(parents=True, exist_ok=True)
        stem = "spark-driver-" + archive_key(java, _spark_home(), settings.get("spark.driver.extraClassPath", ""))
        archive, claim = folder / f"{stem}.jsa", folder / f"{stem}.claim"
        if archive.exists() and not _complete(archive):
            archive.unlink()  # not an archive this module wrote: make room for one
        for part in sorted(folder.glob(f"{stem}.*.part")):
            if _complete(part) and not archive.exists():
                os.replace(part, archive)
                claim.unlink(missing_ok=True)
                log.info("Class data sharing archive %s written; Spark drivers start from it", archive)
            elif _complete(part) or _age(part, now) > ABANDONED_PART_SECONDS:
                part.unlink(missing_ok=True)
        if _complete(archive):
            return [f"-XX:SharedArchiveFile={archive}", *QUIET]
        if not _claim(claim, now):
            return []
        part = folder / f"{stem}.{os.getpid()}-{int(now * 1000)}.part"
        log.info("This Spark driver writes a class data sharing archive of its classes when it exits (%s); "
                 "the next drivers start from it", archive)
        return [f"-XX:ArchiveClassesAtExit={part}", *QUIET]
    except OSError as e:
        log.info("No class data sharing archive for the Spark driver (%s): %s", folder, e)
        return []
