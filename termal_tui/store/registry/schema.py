"""The registry's tables and version. Every statement is IF NOT EXISTS, so opening an
older file runs the whole script once (in one BEGIN IMMEDIATE): that is its migration,
and no existing row changes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final

from termal_tui.store.errors import StorageError
from termal_tui.store.sqlite import FileKind

# 2: projects (the board's scopes); 3: notifier_seen, wake_reoffers; 4: session_tokens
# (a hub's bearer tokens); 5: channel_listeners (who holds a session's channel); 6: name
# keys recomputed by UTS #39 (names that read alike share a key; names.name_key); 7:
# channel_listeners.runs_on (the host of the process whose pid a listener records: its
# pid means something there only, which matters once hubs on several hosts share one
# registry on PostgreSQL).
REGISTRY_VERSION: Final = 7

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    agent TEXT,
    workdir TEXT,
    created_at TEXT NOT NULL,
    removed_at TEXT,
    turn_started_at TEXT,
    channel_pid INTEGER,
    channel_seen_at REAL
);
CREATE UNIQUE INDEX IF NOT EXISTS sessions_live_name
    ON sessions(name_key) WHERE removed_at IS NULL;
CREATE TABLE IF NOT EXISTS wake_marks (
    session_id TEXT NOT NULL,
    mailbox_id TEXT NOT NULL,
    pending INTEGER NOT NULL,
    seen_through INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (session_id, mailbox_id)
);
CREATE TABLE IF NOT EXISTS projects (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    root_path TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_projects (
    session_id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS notifier_seen (
    session_id TEXT PRIMARY KEY,
    hook_seen_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS wake_reoffers (
    session_id TEXT NOT NULL,
    mailbox_id TEXT NOT NULL,
    through INTEGER NOT NULL,
    offered_at TEXT NOT NULL,
    PRIMARY KEY (session_id, mailbox_id)
);
CREATE TABLE IF NOT EXISTS session_tokens (
    session_id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE TABLE IF NOT EXISTS channel_listeners (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    peer TEXT,
    since REAL NOT NULL,
    seen_at REAL NOT NULL,
    runs_on TEXT
);
CREATE INDEX IF NOT EXISTS channel_listeners_session ON channel_listeners(session_id, since);
"""
# sessions.channel_pid / channel_seen_at (version 1 to 4) are no longer written: a session
# can have several listeners, and channel_listeners says which one holds its channel.

REGISTRY_FILE: Final = FileKind(
    "termal-tui session registry", frozenset({"sessions", "wake_marks"})
)


def ensure(db: sqlite3.Connection, path: Path) -> None:
    """Create or migrate the file to this version; refuse a newer one."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > REGISTRY_VERSION:
        raise StorageError(
            f"the session registry {path} has version {version}; this termal-tui "
            f"understands up to {REGISTRY_VERSION}"
        )
    if version < REGISTRY_VERSION:
        db.execute("PRAGMA journal_mode = WAL")
        db.executescript(f"BEGIN IMMEDIATE;{SCHEMA}")  # the transaction stays open
        try:
            if version and version < 6:
                rekey_names(db)
            if version and version < 7:
                add_runs_on(db)
            db.execute(f"PRAGMA user_version = {REGISTRY_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    # WAL with NORMAL: a heartbeat a second costs no fsync.
    db.execute("PRAGMA synchronous = NORMAL")


def rekey_names(db: sqlite3.Connection) -> int:
    """Every stored name key recomputed with today's rule (version 6: mixed-script
    look-alikes share a key), inside the caller's transaction. Of two live sessions whose
    names now read alike, the older keeps the key; the newer gets one no lookup can
    produce (a NUL and its id: names never hold control characters), so it stays
    reachable by id and ``doctor`` can name it. Returns how many keys changed."""
    from termal_tui.core.names import name_key

    rows = db.execute(
        "SELECT id, name, name_key, removed_at FROM sessions ORDER BY created_at, id"
    ).fetchall()
    wanted: dict[str, str] = {}
    live: set[str] = set()
    for session_id, name, _key, removed_at in rows:
        key = name_key(str(name))
        if removed_at is None:
            if key in live:
                key = f"{key}\x00{session_id}"
            live.add(key)
        wanted[str(session_id)] = key
    changed = [(sid, key) for (sid, _n, old, _r) in rows if (key := wanted[str(sid)]) != old]
    # Two steps, so no intermediate state repeats a live key (the unique index).
    db.executemany(
        "UPDATE sessions SET name_key = ? WHERE id = ?",
        [(f"\x00{sid}", sid) for sid, _ in changed],
    )
    db.executemany("UPDATE sessions SET name_key = ? WHERE id = ?", [(k, s) for s, k in changed])
    return len(changed)


def add_runs_on(db: sqlite3.Connection) -> None:
    """Version 7: listeners record the host their process runs on (a version 5 or 6 table
    lacks the column; an older file got it from the script above)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(channel_listeners)")}
    if "runs_on" not in columns:
        db.execute("ALTER TABLE channel_listeners ADD COLUMN runs_on TEXT")


def empty() -> sqlite3.Connection:
    """An in-memory registry with no rows (a read before any file exists)."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(SCHEMA)
    return db
