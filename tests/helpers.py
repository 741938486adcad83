"""Shared test helpers: a deterministic clock and id source, a send shortcut, file digests."""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from termal_tui.store.writer import MailboxWriter

T0 = datetime(2026, 7, 30, 12, 0, 0, tzinfo=UTC)


class StepClock:
    def __init__(self, start: datetime = T0, step: timedelta = timedelta(seconds=1)) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


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


def cursors(path: Path) -> list[tuple]:
    uri = path.resolve().as_uri() + "?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        return db.execute(
            "SELECT mailbox_id, session_id, processed_through, left_at FROM mailbox_participants "
            "ORDER BY mailbox_id, session_id"
        ).fetchall()


def rows(path: Path, sql: str, params: tuple = ()) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute(sql, params).fetchall()


def execute(path: Path, sql: str, params: tuple = ()) -> None:
    db = sqlite3.connect(path)
    try:
        db.execute(sql, params)
        db.commit()
    finally:
        db.close()
