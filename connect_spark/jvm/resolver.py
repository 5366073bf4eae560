"""Resolves artifact sets with Maven into local folders, once.

``ensure_resolved()`` is idempotent: a set whose folder holds a marker naming exactly its
coordinates is left alone (a warm call takes milliseconds). Otherwise it writes a small pom listing
the set's coordinates and runs ``mvn dependency:copy-dependencies`` (runtime scope) into a scratch
folder, drops the jars pyspark already ships when the set asks for it, and renames the folder into
place, so a half-finished resolution is never taken for a finished one. When Maven Central does not
serve a set's coordinates, its ``fallbacks`` are tried in order (with a warning naming the substitute);
the marker still names the coordinates asked for, so the substitute is found again without Maven.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Iterable

from connect_spark.api.errors import ConnectException
from connect_spark.jvm.artifacts import ArtifactSet, artifact_sets, jars_root

__all__ = ["JarResolutionError", "ensure_resolved", "jar_paths", "is_resolved", "pyspark_jar_artifacts"]

log = logging.getLogger(__name__)

_MARKER = ".resolved"
_DEPENDENCY_PLUGIN = "3.8.1"
_JAR_VERSION = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


class JarResolutionError(ConnectException):
    """The JVM artifacts could not be resolved (no Maven, no network, an unknown coordinate)."""


def _marker_text(artifact_set: ArtifactSet) -> str:
    return "\n".join(artifact_set.coordinates) + "\n"


def is_resolved(artifact_set: ArtifactSet, root: Path | None = None) -> bool:
    marker = artifact_set.folder(root) / _MARKER
    return marker.is_file() and marker.read_text() == _marker_text(artifact_set)


def jar_paths(artifact_set: ArtifactSet, root: Path | None = None) -> list[Path]:
    """The jars of a resolved set, sorted; raises :class:`JarResolutionError` if it is not resolved."""
    if not is_resolved(artifact_set, root):
        raise JarResolutionError(
            f"The JVM artifacts '{artifact_set.name}' are not resolved in {artifact_set.folder(root)}; "
            "run `connect-spark jars` with this pyspark (needs Maven and access to Maven Central once)."
        )
    return sorted(artifact_set.folder(root).glob("*.jar"))


def ensure_resolved(sets: Iterable[ArtifactSet] | None = None, root: Path | None = None) -> dict[str, list[Path]]:
    """Resolve every given set (default: every set of the running Spark, :func:`artifact_sets`) that is not
    resolved yet; return each set's jars by set name."""
    root = root or jars_root()
    result: dict[str, list[Path]] = {}
    for artifact_set in (artifact_sets() if sets is None else sets):
        if not is_resolved(artifact_set, root):
            started = time.monotonic()
            _resolve_with_fallbacks(artifact_set, root)
            log.info("Resolved %s in %.1f s", artifact_set.label, time.monotonic() - started)
        result[artifact_set.name] = jar_paths(artifact_set, root)
    return result


def _resolve_with_fallbacks(artifact_set: ArtifactSet, root: Path) -> None:
    """Resolve the set's coordinates, else the first of its ``fallbacks`` Maven Central serves."""
    try:
        _resolve(artifact_set, root)
        return
    except JarResolutionError as first_failure:
        if not artifact_set.fallbacks or not _not_served(str(first_failure)):
            raise
        for coordinates in artifact_set.fallbacks:
            substitute = dataclasses.replace(artifact_set, coordinates=coordinates, fallbacks=())
            try:
                _resolve(substitute, root, marker=_marker_text(artifact_set))
            except JarResolutionError as e:
                if not _not_served(str(e)):
                    raise
                continue
            log.warning("Maven Central does not serve %s; resolved %s in its place (same release line)",
                        ", ".join(artifact_set.coordinates), ", ".join(coordinates))
            return
        raise first_failure


def _not_served(maven_failure: str) -> bool:
    """Whether Maven failed because the repository has no such artifact (not because it was unreachable)."""
    lowered = maven_failure.lower()
    if "unreachable" in lowered or "could not transfer" in lowered:
        return False
    return any(s in lowered for s in ("could not find artifact", "was not found in", "(absent)"))


def pyspark_jar_artifacts() -> set[str]:
    """Artifact ids (without versions) of the jars bundled in the installed pyspark."""
    import pyspark  # the resolver runs where pyspark is installed; imported late to stay light

    jars = Path(pyspark.__file__).parent / "jars"
    return {_artifact_id(p.name) for p in jars.glob("*.jar")}


def _artifact_id(jar_name: str) -> str:
    match = _JAR_VERSION.match(jar_name)
    return match.group("artifact") if match else jar_name[: -len(".jar")]


def _resolve(artifact_set: ArtifactSet, root: Path, marker: str | None = None) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarResolutionError(
            "Maven (`mvn`) is not on PATH. connect_spark resolves its JVM jars (Spark's Kafka source, Delta, "
            "the Kafka broker) from Maven Central with it once: install Maven (e.g. `apt-get install maven`) "
            "or point CONNECT_SPARK_JARS at a folder that already holds them."
        )
    root.mkdir(parents=True, exist_ok=True)
    target = artifact_set.folder(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target.name}-", dir=target.parent) as scratch:
        scratch_dir = Path(scratch)
        pom = scratch_dir / "pom.xml"
        pom.write_text(_pom(artifact_set))
        settings = _maven_settings(scratch_dir)
        out = scratch_dir / "jars"
        command = [
            mvn,
            "--batch-mode",
            "--quiet",
            "-s",
            str(settings),
            "-f",
            str(pom),
            f"org.apache.maven.plugins:maven-dependency-plugin:{_DEPENDENCY_PLUGIN}:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={out}",
        ]
        log.info("Resolving %s with Maven: %s", artifact_set.label, ", ".join(artifact_set.coordinates))
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            raise JarResolutionError(_explain_maven_failure(artifact_set, proc.stdout + proc.stderr))
        if artifact_set.unpack:
            _unpack_archives(out)
        if artifact_set.exclude_pyspark_jars:
            shipped = pyspark_jar_artifacts()
            for jar in out.glob("*.jar"):
                if _artifact_id(jar.name) in shipped:
                    jar.unlink()
        (out / _MARKER).write_text(marker or _marker_text(artifact_set))
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)


def _unpack_archives(folder: Path) -> None:
    """Unpack every ``.tar.gz`` and ``.zip`` Maven copied into ``folder`` in place, then delete the archives."""
    for archive in sorted(folder.glob("*.tar.gz")):
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")
        archive.unlink()
    for archive in sorted(folder.glob("*.zip")):
        _unzip(archive, folder)
        archive.unlink()


def _unzip(archive: Path, folder: Path) -> None:
    """Unpack a zip keeping its files' Unix modes (``zipfile`` drops them; launch scripts need theirs)."""
    with zipfile.ZipFile(archive) as zipped:
        for member in zipped.infolist():
            path = Path(zipped.extract(member, folder))
            mode = (member.external_attr >> 16) & 0o777
            if mode:
                path.chmod(mode)


def _explain_maven_failure(artifact_set: ArtifactSet, output: str) -> str:
    errors = [line for line in output.splitlines() if "ERROR" in line][:6]
    detail = "\n  ".join(errors) or output.strip()[-2000:]
    hint = ""
    lowered = output.lower()
    if any(s in lowered for s in ("unknownhost", "unknown host", "connect timed out", "network is unreachable",
                                  "could not transfer", "connection refused")):
        hint = " Maven Central looks unreachable from here: connect_spark needs it once to fetch its jars."
    return (
        f"Maven could not resolve the JVM artifacts '{artifact_set.label}' "
        f"({', '.join(artifact_set.coordinates)}).{hint}\n  {detail}"
    )


def _maven_settings(scratch_dir: Path) -> Path:
    """Maven settings for the resolution: ``$CONNECT_SPARK_MAVEN_SETTINGS`` when set (a corporate
    mirror, a proxy), else settings sending every repository request to Maven Central.

    Some poms (Spark's parent among them) declare extra repositories that may not be reachable; a
    mirror of ``*`` keeps the resolution on Maven Central alone.
    """
    configured = os.environ.get("CONNECT_SPARK_MAVEN_SETTINGS")
    if configured:
        return Path(configured).expanduser()
    settings = scratch_dir / "settings.xml"
    settings.write_text(
        """<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <mirror><id>central-only</id><mirrorOf>*</mirrorOf><url>https://repo.maven.apache.org/maven2</url></mirror>
  </mirrors>
</settings>
"""
    )
    return settings


def _pom(artifact_set: ArtifactSet) -> str:
    dependencies = []
    for coordinate in artifact_set.coordinates:
        group, artifact, version, *packaging = coordinate.split(":")
        extra = ""
        if packaging:  # group:artifact:version:type:classifier
            extra = f"<type>{packaging[0]}</type>" + (f"<classifier>{packaging[1]}</classifier>" if len(packaging) > 1 else "")
        if artifact_set.unpack:  # a self-contained distribution: none of its pom's dependencies
            extra += "<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>"
        dependencies.append(
            "    <dependency>"
            f"<groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}</version>{extra}"
            "</dependency>"
        )
    body = "\n".join(dependencies)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>connect-spark.local</groupId>
  <artifactId>{artifact_set.name.replace("/", "-")}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{body}
  </dependencies>
</project>
"""
