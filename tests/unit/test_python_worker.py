"""A Spark Python worker re-reads a zip archive on ``importlib.invalidate_caches()`` only when it changed."""

from __future__ import annotations

import importlib
import os
import sys
import zipfile
import zipimport

import pytest

from connect_spark.runtime.python_worker import zip_reads


@pytest.fixture
def archive_on_path(tmp_path):
    archive = tmp_path / "mods.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("cs_zip_mod_a.py", "VALUE = 'a'\n")
    sys.path.insert(0, str(archive))
    try:
        yield archive
    finally:
        sys.path.remove(str(archive))
        sys.path_importer_cache.pop(str(archive), None)
        for name in ("cs_zip_mod_a", "cs_zip_mod_b"):
            sys.modules.pop(name, None)


def test_unchanged_archives_are_not_read_again(archive_on_path, monkeypatch):
    assert importlib.import_module("cs_zip_mod_a").VALUE == "a"
    zip_reads.install()
    zip_reads.install()  # twice is harmless
    assert zip_reads.installed()
    importlib.invalidate_caches()  # the first call after install reads once and remembers the stamp

    reads = []
    real_read = zipimport._read_directory
    monkeypatch.setattr(zipimport, "_read_directory", lambda path: reads.append(path) or real_read(path))
    importlib.invalidate_caches()
    importlib.invalidate_caches()
    assert str(archive_on_path) not in reads


def test_a_changed_archive_is_read_again(archive_on_path):
    assert importlib.import_module("cs_zip_mod_a").VALUE == "a"
    zip_reads.install()
    importlib.invalidate_caches()
    with zipfile.ZipFile(archive_on_path, "a") as z:
        z.writestr("cs_zip_mod_b.py", "VALUE = 'b'\n")
    stat = os.stat(archive_on_path)
    os.utime(archive_on_path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    importlib.invalidate_caches()
    assert importlib.import_module("cs_zip_mod_b").VALUE == "b"
