"""Shared test helpers: a deterministic clock and id source, a send shortcut, file digests."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import sqlite3
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from termal_tui.store.writer import MailboxWriter

T0 = datetime(2026, 7, 30, 12, 0, 0, tzinfo=UTC)


class StepClock:
    def __init__(self, start: datetime = T0, step: timedelta = timedelta(seconds=1)) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


class DrivenClock:
    """A float clock (seconds) that moves only when the test says so: pass it where code
    takes ``clock=time.monotonic`` or ``clock=time.time`` and call :meth:`advance`."""

    def __init__(self, at: float = 1_000_000.0) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += seconds


def counter_ids() -> Any:
    counter = itertools.count(1)
    return lambda: f"00000000-0000-4000-8000-{next(counter):012d}"


NAMES = {"session-a": "Alice", "session-b": "Bob", "session-c": "Carol"}


async def send(
    writer: MailboxWriter,
    sender: str = "session-a",
    target: str = "session-b",
    body: str = "hello",
    key: str | None = None,
    **extra: Any,
):
    send.counter += 1  # type: ignore[attr-defined]
    return await writer.append(
        sender_session_id=sender,
        sender_name=extra.pop("sender_name", NAMES.get(sender, sender)),
        target_session_id=target,
        target_name=extra.pop("target_name", NAMES.get(target, target)),
        body=body,
        idempotency_key=key if key is not None else f"key-{send.counter}",  # type: ignore[attr-defined]
        **extra,
    )


send.counter = 0  # type: ignore[attr-defined]


def digest(path: Path) -> dict[str, str]:
    """sha256 of the database file and its -wal (the -shm is SQLite's shared index)."""
    out = {}
    for candidate in (path, Path(f"{path}-wal")):
        if candidate.exists() and candidate.stat().st_size > 0:
            out[candidate.name] = hashlib.sha256(candidate.read_bytes()).hexdigest()
    return out


def is_url(target: object) -> bool:
    """A PostgreSQL target (the engine-parametrized ``db`` fixture), not a SQLite path."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def _pg_rows(url: str, sql: str, params: tuple, fetch: bool) -> list[tuple]:
    """The tests' raw look at a PostgreSQL database: the same SQL text as for the SQLite
    file, with ``?`` placeholders."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        cursor = db.execute(sql.replace("?", "%s").encode(), params)
        return [tuple(row) for row in cursor.fetchall()] if fetch else []


def cursors(path: Path | str) -> list[tuple]:
    sql = (
        "SELECT mailbox_id, session_id, processed_through, left_at FROM mailbox_participants "
        "ORDER BY mailbox_id, session_id"
    )
    if is_url(path):
        return _pg_rows(str(path), sql, (), True)
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        return db.execute(sql).fetchall()


def rows(path: Path | str, sql: str, params: tuple = ()) -> list[tuple]:
    """What ``sql`` reads, through a connection closed at once: one left for the garbage
    collector (sqlite3's statement cache makes a cycle) was closed at any later moment,
    and that close, the last connection's, checkpointed the -wal into the main file
    under a test comparing the file's bytes before and after a reader. Closed here, its
    checkpoint is done before this returns (and the sidecars it made are gone)."""
    if is_url(path):
        return _pg_rows(str(path), sql, params, True)
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(sql, params).fetchall()


def execute(path: Path | str, sql: str, params: tuple = ()) -> None:
    if is_url(path):
        _pg_rows(str(path), sql, params, False)
        return
    db = sqlite3.connect(path)
    try:
        db.execute(sql, params)
        db.commit()
    finally:
        db.close()


ENGINES = ("sqlite", "postgres")
sqlite_only = pytest.mark.parametrize("engine", ["sqlite"], ids=["sqlite-only"])
"""For a test (or ``pytestmark`` of a module) about the SQLite file itself: its pragmas,
its bytes, its sidecars, TermAl's file format. It runs on SQLite alone, by name."""


def state_of(target: Path | str) -> object:
    """Everything a reader could change, to compare before and after: the SQLite file's
    bytes (and its -wal), or every mailbox row of a PostgreSQL database."""
    if not is_url(target):
        return digest(Path(target)), cursors(target)
    return [
        rows(target, f"SELECT * FROM {table} ORDER BY 1, 2")
        for table in ("meta", "mailboxes", "mailbox_participants", "mailbox_messages")
    ]


def run_cli(
    argv: list[str],
    *,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``termal-tui ARGV`` run in this process (``main()``), answered as
    ``subprocess.run(..., capture_output=True, text=True)`` would: the exit code, stdout
    and stderr. The directory, environment and stdin are this call's only; a real process
    costs ~0.3 s of CPU to start, so the tests keep a few for what only a process shows."""
    import io

    from termal_tui.cli import main

    capsys.readouterr()  # what was printed before is not this command's
    with monkeypatch.context() as scoped:
        if cwd is not None:
            scoped.chdir(cwd)
        for name, value in (env or {}).items():
            scoped.setenv(name, value)
        if stdin is not None:
            scoped.setattr("sys.stdin", io.StringIO(stdin))
        code = main(argv)
        out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["termal-tui", *argv], code, out, err)
