"""The driver's class data sharing options: which archive, who writes it, when a written one is taken up."""

import os

import pytest

from connect_spark.jvm import class_archive
from connect_spark.jvm.class_archive import (
    ABANDONED_PART_SECONDS,
    ARCHIVE_MAGIC,
    DUMP_CLAIM_SECONDS,
    archive_key,
    driver_java_options,
    mentions_class_sharing,
)


@pytest.fixture
def jvm(tmp_path, monkeypatch):
    """A JAVA_HOME and a SPARK_HOME made of files (their names and sizes are what the key reads)."""
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "lib" / "server").mkdir(parents=True)
    (home / "bin" / "java").write_text("java")
    (home / "lib" / "server" / "libjvm.so").write_text("libjvm")
    spark = tmp_path / "spark"
    (spark / "jars").mkdir(parents=True)
    (spark / "jars" / "spark-core.jar").write_text("core")
    monkeypatch.setenv("JAVA_HOME", str(home))
    monkeypatch.setenv("SPARK_HOME", str(spark))
    return home, spark, tmp_path / "archives"


def _flag(options, name):
    return next((o.split("=", 1)[1] for o in options if o.startswith(f"-XX:{name}=")), None)


def test_the_first_driver_writes_the_archive_and_the_next_ones_wait_for_it(jvm):
    _, _, folder = jvm
    first = driver_java_options({}, folder, now=1000.0)
    part = _flag(first, "ArchiveClassesAtExit")
    assert part and part.endswith(".part") and "-Xlog:cds=off" in first
    assert driver_java_options({}, folder, now=1001.0) == []  # the first driver's claim holds
    # the first driver's JVM exits, writing its archive: the next driver starts from it
    with open(part, "wb") as f:
        f.write(ARCHIVE_MAGIC + b"\0" * 64)
    options = driver_java_options({}, folder, now=1002.0)
    archive = _flag(options, "SharedArchiveFile")
    assert archive and archive.endswith(".jsa") and os.path.exists(archive) and not os.path.exists(part)
    assert not list(folder.glob("*.claim"))
    assert driver_java_options({}, folder, now=1003.0) == options


def test_a_driver_killed_while_writing_leaves_no_archive_and_another_takes_over(jvm):
    _, _, folder = jvm
    part = _flag(driver_java_options({}, folder, now=1000.0), "ArchiveClassesAtExit")
    with open(part, "wb") as f:
        f.write(b"\0" * 128)  # the header is written last: a killed JVM leaves it zeroed
    for written in (part, *folder.glob("*.claim")):
        os.utime(written, (1000.0, 1000.0))
    assert driver_java_options({}, folder, now=1000.0 + DUMP_CLAIM_SECONDS - 1) == []
    later = driver_java_options({}, folder, now=1000.0 + DUMP_CLAIM_SECONDS + 1)
    assert _flag(later, "ArchiveClassesAtExit") not in (None, part)  # the stale claim is taken over
    assert os.path.exists(part)  # it may still be being written
    driver_java_options({}, folder, now=1000.0 + ABANDONED_PART_SECONDS + 1)
    assert not os.path.exists(part)  # an hour old and never finished: removed


def test_the_archive_follows_the_jvm_the_jars_and_the_driver_class_path(jvm):
    home, spark, _ = jvm
    java = home / "bin" / "java"
    key = archive_key(java, spark, "")
    assert archive_key(java, spark, "") == key
    assert archive_key(java, spark, "/opt/extra.jar") != key
    (spark / "jars" / "delta.jar").write_text("delta")
    assert archive_key(java, spark, "") != key
    with_jar = archive_key(java, spark, "")
    (home / "lib" / "server" / "libjvm.so").write_text("another build")
    assert archive_key(java, spark, "") != with_jar


def test_an_unwritable_folder_or_no_java_means_no_options(jvm, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert driver_java_options({}, blocker / "archives", now=1.0) == []
    monkeypatch.setattr(class_archive, "_launcher_java", lambda: None)
    assert driver_java_options({}, tmp_path / "elsewhere", now=1.0) == []


def test_user_options_that_manage_class_sharing_are_recognised():
    assert mentions_class_sharing("-Xshare:off")
    assert mentions_class_sharing("-Dx=1 -XX:SharedArchiveFile=/a.jsa")
    assert not mentions_class_sharing("-Dio.netty.tryReflectionSetAccessible=true -Xss4m")
