"""A throwaway PostgreSQL cluster on loopback, for tests and benchmarks of the JDBC sink.

Made with Debian's server binaries (``apt-get install postgresql``; found under
``/usr/lib/postgresql/<version>/bin`` or on ``PATH``): ``initdb`` in a fresh folder, then ``pg_ctl start``
listening on 127.0.0.1 only, on a free port, with its unix socket in that folder. PostgreSQL refuses to
run as root, so when this process is root the server runs as the ``postgres`` system user
(``runuser -u postgres --``) and the folder is handed to that user.

Used by the session fixture in ``tests/conftest.py`` and by ``jobs/bench_jdbc.py``::

    with LocalPostgres(tmp_dir) as pg:
        url = pg.jdbc_url("postgres")     # jdbc:postgresql://127.0.0.1:PORT/postgres?user=postgres
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

from connect_spark.api.errors import ConnectException
from connect_spark.localprocess import free_port

__all__ = ["LocalPostgres", "PostgresError", "find_server_binaries"]

log = logging.getLogger(__name__)

SUPERUSER = "postgres"


class PostgresError(ConnectException):
    """The local PostgreSQL server could not be found, started or stopped; the message says why."""


def find_server_binaries() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl`` (the newest Debian version, else ``PATH``).

    Raises:
        PostgresError: when no PostgreSQL server is installed.
    """
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    if versions:
        return Path(versions[-1]).parent
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise PostgresError("No PostgreSQL server binaries (initdb, pg_ctl): install them with "
                        "`apt-get install -y postgresql` (bash .ci/setup does)")


class LocalPostgres:
    """One PostgreSQL server process owned by whoever started it.

    Args:
        data_dir: a folder for the cluster, its socket and its log; wiped at start.
        port: the TCP port on 127.0.0.1 (0 = a free port).
        settings: more ``postgresql.conf`` settings (e.g. ``{"fsync": "off"}``).
    """

    def __init__(self, data_dir: str | os.PathLike[str], port: int = 0,
                 settings: dict[str, str] | None = None) -> None:
        self.base = Path(data_dir).resolve()
        self.port = port or free_port()
        self.settings = {"fsync": "off", "full_page_writes": "off",
                         "max_connections": "50", "shared_buffers": "64MB"}
        self.settings.update(settings or {})
        self.bin = find_server_binaries()
        self._as_postgres = os.geteuid() == 0

    @property
    def cluster_dir(self) -> Path:
        return self.base / "cluster"

    @property
    def log_file(self) -> Path:
        return self.base / "server.log"

    def jdbc_url(self, database: str = "postgres") -> str:
        """The JDBC URL a JdbcSinkConnector configuration takes for ``database``."""
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{database}?user={SUPERUSER}"

    def conninfo(self, database: str = "postgres") -> str:
        """A libpq connection string (for psycopg in tests)."""
        return f"host=127.0.0.1 port={self.port} dbname={database} user={SUPERUSER}"

    def start(self, timeout: float = 60.0) -> "LocalPostgres":
        """Create the cluster (first start only) and start the server; returns when it accepts connections."""
        if not (self.cluster_dir / "PG_VERSION").exists():
            if self.base.exists():
                shutil.rmtree(self.base)
            self.base.mkdir(parents=True)
            self._hand_over(self.base)
            self._run([str(self.bin / "initdb"), "-D", str(self.cluster_dir), "-U", SUPERUSER, "-A", "trust",
                       "-E", "UTF8", "--no-sync"], "initdb")
            conf = "".join(f"{k} = '{v}'\n" for k, v in self.settings.items())
            with open(self.cluster_dir / "postgresql.conf", "a") as f:
                f.write(conf)
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.base}"
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.cluster_dir), "-l", str(self.log_file),
                   "-o", options, "-w", "-t", str(int(timeout)), "start"], "pg_ctl start")
        self._wait_ready(timeout)
        log.info("PostgreSQL up on 127.0.0.1:%d (%s)", self.port, self.cluster_dir)
        return self

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: roll back open transactions; ``immediate``: like a crash)."""
        if (self.cluster_dir / "postmaster.pid").exists():
            self._run([str(self.bin / "pg_ctl"), "-D", str(self.cluster_dir), "-m", mode, "-w", "stop"],
                      "pg_ctl stop", check=False)

    def restart(self, mode: str = "fast") -> None:
        """Stop, then start again on the same port (a database restart under a running connector)."""
        self.stop(mode)
        self.start()

    def remove(self) -> None:
        """Stop and delete the cluster folder."""
        self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> "LocalPostgres":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.remove()

    # -- internals ------------------------------------------------------------------------------

    def _hand_over(self, path: Path) -> None:
        if self._as_postgres:
            shutil.chown(path, SUPERUSER, SUPERUSER)
            path.chmod(0o700)
            parent = path.parent
            while parent != parent.parent:  # postgres must be able to reach its folder
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    parent.chmod(mode | 0o001)
                parent = parent.parent

    def _run(self, command: list[str], what: str, check: bool = True) -> None:
        if self._as_postgres:
            command = ["runuser", "-u", SUPERUSER, "--"] + command
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              cwd="/")
        if check and done.returncode != 0:
            tail = self.log_file.read_text(errors="replace")[-2000:] if self.log_file.exists() else ""
            raise PostgresError(f"{what} failed ({done.returncode}): {done.stdout.decode(errors='replace')[-2000:]}"
                                f"\n{tail}")

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            done = subprocess.run([str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if done.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise PostgresError(f"PostgreSQL did not accept connections on 127.0.0.1:{self.port} "
                                    f"within {timeout:.0f} s; see {self.log_file}")
            time.sleep(0.1)
