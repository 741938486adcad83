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
# (a hub's bearer tokens); 5: channel_listeners (who holds a session's channel).
REGISTRY_VERSION: Final = 5

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
    seen_at REAL NOT NULL
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
        db.executescript(
            f"BEGIN IMMEDIATE;{SCHEMA}PRAGMA user_version = {REGISTRY_VERSION};COMMIT;"
        )
    # WAL with NORMAL: a heartbeat a second costs no fsync.
    db.execute("PRAGMA synchronous = NORMAL")


def empty() -> sqlite3.Connection:
    """An in-memory registry with no rows (a read before any file exists)."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(SCHEMA)
    return db
