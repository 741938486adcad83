"""A real PostgreSQL server for the tests: one per test process (each xdist worker starts
its own), in a temporary directory, on 127.0.0.1 with a free port and a unix socket
beside its data, tuned for tests (no fsync), stopped when the session ends.

Each test gets a fresh empty database: a schema of its own, named by its URL's
``search_path`` (``CREATE DATABASE`` would cost a checkpoint per test).

The binaries are Debian's (``initdb``, ``pg_ctl``): on PATH, else the newest
``/usr/lib/postgresql/*/bin``. Missing binaries are a failure with one sentence, never a
skip (``.ci/run`` installs the package on a machine without it). PostgreSQL refuses to
run as root: as root, the server runs as the ``postgres`` user (or ``nobody``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SUPERUSER = "termal"
PACKAGED = Path("/usr/lib/postgresql")  # Debian's layout: one bin/ per major version
MISSING = (
    "PostgreSQL's initdb and pg_ctl were found neither on PATH nor in "
    "/usr/lib/postgresql/*/bin: install Debian's postgresql package (.ci/run does)"
)


def find_binaries() -> Path:
    """The directory holding initdb and pg_ctl; RuntimeError (one sentence) if none."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).resolve().parent
    candidates = sorted(
        PACKAGED.glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    for directory in reversed(candidates):
        if (directory / "initdb").exists() and (directory / "pg_ctl").exists():
            return directory
    raise RuntimeError(MISSING)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as() -> tuple[list[str], int | None, int | None]:
    """The prefix that runs a server binary unprivileged, and that user's uid/gid."""
    if os.geteuid() != 0:
        return [], None, None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            user = pwd.getpwnam(name)
            return ["runuser", "-u", name, "--"], user.pw_uid, user.pw_gid
    raise RuntimeError("running as root, and neither a postgres nor a nobody user exists")


@dataclass
class PgServer:
    """A running server: ``url(dbname)`` is a TCP URL for a database in it."""

    directory: Path
    bindir: Path
    port: int
    prefix: list[str]
    _names: Iterator[int] = field(default_factory=itertools.count)
    options: str = ""  # the server's command-line settings, for start()
    _opts: str = ""

    @property
    def socket_dir(self) -> Path:
        return self.directory / "socket"

    def url(self, dbname: str, user: str = SUPERUSER, password: str | None = None) -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{user}{secret}@127.0.0.1:{self.port}/{dbname}"

    def admin(self, dbname: str = "postgres") -> str:
        """A conninfo for the superuser over the unix socket (setup only)."""
        return f"host={self.socket_dir} port={self.port} user={SUPERUSER} dbname={dbname}"

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.admin(dbname), autocommit=True) as conn:
            conn.execute(sql.encode())

    def fresh_database(self) -> str:
        """A new empty database for one test; returns its URL. It is a schema of its own
        in the shared ``tests`` database, named by the URL's ``search_path`` (a schema
        takes a millisecond; ``CREATE DATABASE`` a checkpoint, ~0.3 s)."""
        name = f"t{next(self._names)}"
        if name == "t0":
            self.execute("CREATE DATABASE tests TEMPLATE template0")
        self.execute(f"CREATE SCHEMA {name}", "tests")
        return self.url("tests") + f"?options=-csearch_path%3D{name}"

    def restart(self) -> None:
        """Restart the server (every session ends), with the same settings."""
        subprocess.run(
            [
                *self.prefix,
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.directory / "data"),
                "-l",
                str(self.directory / "log"),
                "-m",
                "fast",
                "-w",
                "restart",
            ],
            capture_output=True,
            check=True,
        )

    def halt(self) -> None:
        """Stop the server (every session ends; new connections are refused), keeping its
        data for :meth:`start` (the benches' "PostgreSQL restarted under load")."""
        subprocess.run(
            [*self.prefix, str(self.bindir / "pg_ctl"), "-D", str(self.directory / "data"),
             "-m", "fast", "-w", "stop"],
            capture_output=True, check=True,
        )  # fmt: skip

    def start(self) -> None:
        """Start a halted server again, on the same port with the same settings."""
        subprocess.run(
            [*self.prefix, str(self.bindir / "pg_ctl"), "-D", str(self.directory / "data"),
             "-l", str(self.directory / "log"), "-o", f"-p {self.port} {self.options}",
             "-w", "-t", "60", "start"],
            capture_output=True, check=True,
        )  # fmt: skip

    def down(self) -> None:
        """Stop the server, keeping its data (``up`` starts it again on the same port)."""
        self._opts = (self.directory / "data" / "postmaster.opts").read_text()
        subprocess.run(
            [
                *self.prefix,
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.directory / "data"),
                *("-m", "fast", "-w", "stop"),
            ],
            capture_output=True,
            check=True,
        )

    def up(self) -> None:
        """Start the server stopped by ``down``, with the options it ran with."""
        import shlex

        words = shlex.split(self._opts)[1:]  # the postgres binary, then its options
        at = words.index("-D")
        options = shlex.join(words[:at] + words[at + 2 :])  # pg_ctl gives -D itself
        data = str(self.directory / "data")
        subprocess.run(
            [
                *self.prefix,
                str(self.bindir / "pg_ctl"),
                *("-D", data, "-l", str(self.directory / "log")),
                *("-o", options, "-w", "start"),
            ],
            capture_output=True,
            check=True,
        )

    def stop(self) -> None:
        subprocess.run(
            [
                *self.prefix,
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.directory / "data"),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.directory, ignore_errors=True)


def start_server(overrides: dict[str, str] | None = None) -> PgServer:
    """initdb in a new temporary directory and start the server (RuntimeError: why not).
    ``overrides``: settings in place of the tests' (the benches ask for fsync)."""
    bindir = find_binaries()
    prefix, uid, gid = _run_as()
    directory = Path(tempfile.mkdtemp(prefix="termal-pg-"))
    (directory / "socket").mkdir()
    if uid is not None and gid is not None:
        for path in (directory, directory / "socket"):
            os.chown(path, uid, gid)
    data = directory / "data"
    init = subprocess.run(
        [
            *prefix,
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if init.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {init.stderr.strip()[-500:]}")
    settings = {
        "listen_addresses": "127.0.0.1",
        "unix_socket_directories": str(directory / "socket"),
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "max_connections": "300",
        "shared_buffers": "32MB",
        "max_wal_size": "1GB",
        "checkpoint_timeout": "30min",
        "jit": "off",
        "log_min_messages": "warning",
    } | (overrides or {})
    last = ""
    for _attempt in range(5):  # a free port can be taken between the probe and the bind
        port = _free_port()
        options = " ".join(f"-c {key}={value}" for key, value in settings.items())
        started = subprocess.run(
            [
                *prefix,
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(directory / "log"),
                "-o",
                f"-p {port} {options}",
                "-w",
                "-t",
                "60",
                "start",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if started.returncode == 0:
            return PgServer(directory, bindir, port, prefix, options=options)
        last = (
            (directory / "log").read_text(errors="replace")[-500:]
            if (directory / "log").exists()
            else started.stderr
        )
    shutil.rmtree(directory, ignore_errors=True)
    raise RuntimeError(f"the PostgreSQL server did not start: {last.strip()}")
