"""Wake marks (one pending wake per mailbox), re-offers of ignored wakes, hook runs, and
the channel listeners: every process that takes a session's wake-ups, each with its
heartbeat. Which of them holds the channel is decided from these rows
(``notifiers.channel_holder``: the newest live one)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Final

from termal_tui.store.registry.dbapi import Db
from termal_tui.store.sqlite import read_only_uri

ListenerRow = tuple[str, str, str, int, str, str | None, float, float, str | None]
LISTENER_COLUMNS: Final = "id, session_id, kind, pid, host, peer, since, seen_at, runs_on"

# ------------------------------------------------------------------ wake marks


def marks(db: Db, session_id: str) -> list[tuple[str, int, int]]:
    return db.execute(
        "SELECT mailbox_id, pending, seen_through FROM wake_marks WHERE session_id = ?",
        (session_id,),
    ).fetchall()


def has_pending(db: Db, session_id: str, mailbox_id: str, before: int) -> bool:
    row = db.execute(
        "SELECT 1 FROM wake_marks WHERE session_id = ? AND mailbox_id = ? "
        "AND pending = 1 AND seen_through < ?",
        (session_id, mailbox_id, before),
    ).fetchone()
    return row is not None


def mark(db: Db, session_id: str, mailbox_id: str, pending: int, through: int, at: str) -> None:
    db.execute(
        "INSERT INTO wake_marks(session_id, mailbox_id, pending, seen_through, updated_at) "
        "VALUES(?, ?, ?, ?, ?) ON CONFLICT(session_id, mailbox_id) DO UPDATE SET "
        "pending = excluded.pending, seen_through = CASE WHEN excluded.seen_through > "
        "wake_marks.seen_through THEN excluded.seen_through ELSE wake_marks.seen_through END, "
        "updated_at = excluded.updated_at",
        (session_id, mailbox_id, pending, through, at),
    )


def clear(db: Db, session_id: str) -> None:
    db.execute("DELETE FROM wake_marks WHERE session_id = ?", (session_id,))
    db.execute("DELETE FROM wake_reoffers WHERE session_id = ?", (session_id,))


def ignored(db: Db, session_id: str, cutoff: str) -> list[tuple[str, int]]:
    rows = db.execute(
        "SELECT m.mailbox_id, m.seen_through FROM wake_marks m "
        "LEFT JOIN wake_reoffers r ON r.session_id = m.session_id "
        "  AND r.mailbox_id = m.mailbox_id AND r.through >= m.seen_through "
        "WHERE m.session_id = ? AND m.pending = 1 AND m.updated_at <= ? "
        "  AND r.session_id IS NULL",
        (session_id, cutoff),
    ).fetchall()
    return [(str(row[0]), int(row[1])) for row in rows]


def mark_reoffered(db: Db, session_id: str, mailbox_id: str, through: int, at: str) -> None:
    db.execute(
        "INSERT INTO wake_reoffers(session_id, mailbox_id, through, offered_at) "
        "VALUES(?, ?, ?, ?) ON CONFLICT(session_id, mailbox_id) DO UPDATE SET "
        "through = excluded.through, offered_at = excluded.offered_at",
        (session_id, mailbox_id, through, at),
    )


def hook_ran(db: Db, session_id: str, at: float) -> None:
    db.execute(
        "INSERT INTO notifier_seen(session_id, hook_seen_at) VALUES(?, ?) "
        "ON CONFLICT(session_id) DO UPDATE SET hook_seen_at = excluded.hook_seen_at",
        (session_id, at),
    )


# ------------------------------------------------------------------ channel listeners


def add_listener(db: Db, row: ListenerRow) -> None:
    db.execute(
        f"INSERT INTO channel_listeners({LISTENER_COLUMNS}) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET session_id = excluded.session_id, kind = excluded.kind, "
        "pid = excluded.pid, host = excluded.host, peer = excluded.peer, "
        "since = excluded.since, seen_at = excluded.seen_at, runs_on = excluded.runs_on",
        row,
    )


def beat(db: Db, listener_id: str, at: float) -> bool:
    """Refresh a listener's heartbeat; False when its row is gone (released or removed)."""
    changed = db.execute(
        "UPDATE channel_listeners SET seen_at = ? WHERE id = ?", (at, listener_id)
    ).rowcount
    return bool(changed)


def drop_listener(db: Db, listener_id: str) -> None:
    db.execute("DELETE FROM channel_listeners WHERE id = ?", (listener_id,))


def drop_listeners_of(db: Db, session_id: str, pid: int) -> None:
    db.execute("DELETE FROM channel_listeners WHERE session_id = ? AND pid = ?", (session_id, pid))


def drop_stale(db: Db, before: float) -> None:
    """Forget listeners whose heartbeat stopped long ago (their process died silently)."""
    db.execute("DELETE FROM channel_listeners WHERE seen_at < ?", (before,))


def listeners(
    db: Db, session_id: str | None = None, *, columns: str = LISTENER_COLUMNS
) -> list[ListenerRow]:
    """Listeners (of one session, or all), newest first. ``columns``: what an older file
    has (the viewer reads it without migrating it)."""
    if session_id is None:
        return db.execute(
            f"SELECT {columns} FROM channel_listeners ORDER BY since DESC, id DESC"
        ).fetchall()
    return db.execute(
        f"SELECT {columns} FROM channel_listeners WHERE session_id = ? "
        "ORDER BY since DESC, id DESC",
        (session_id,),
    ).fetchall()


# ------------------------------------------------------------------ the viewer's read


class NotifierRows:
    """What ``notifiers.read_notifiers`` needs, read read-only in one go."""

    def __init__(
        self,
        sessions: list[tuple[str, str, int | None, float | None, float | None]],
        listeners: list[ListenerRow],
    ) -> None:
        self.sessions = sessions  # (id, name, legacy channel pid, legacy seen at, hook seen)
        self.listeners = listeners


def read_notifier_rows(path: Path) -> NotifierRows | None:
    """Live sessions, their hook runs and every channel listener, from the registry file
    at ``path``, without changing it: ``mode=ro``, and an immutable snapshot when the file
    is not in use (so no sidecar is created). None when it cannot be read."""
    in_use = Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    try:
        db = sqlite3.connect(read_only_uri(path, immutable=not in_use), uri=True)
    except sqlite3.Error:
        return None
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if "notifier_seen" in tables:  # registry version 3 and later
            hooks = "(SELECT hook_seen_at FROM notifier_seen n WHERE n.session_id = s.id)"
        else:
            hooks = "NULL"
        sessions = db.execute(
            f"SELECT s.id, s.name, s.channel_pid, s.channel_seen_at, {hooks} FROM sessions s "
            "WHERE s.removed_at IS NULL"
        ).fetchall()
        found: list[ListenerRow] = []
        if "channel_listeners" in tables:  # version 5 and later
            present = {row[1] for row in db.execute("PRAGMA table_info(channel_listeners)")}
            columns = LISTENER_COLUMNS
            if "runs_on" not in present:  # versions 5 and 6
                columns = columns.replace(", runs_on", ", NULL")
            found = listeners(db, columns=columns)
    except sqlite3.Error:
        return None
    finally:
        with contextlib.suppress(sqlite3.Error):
            db.close()
    return NotifierRows(sessions, found)
