"""Schema v1: DDL, the writer's ensure sequence (migration, backfill, legacy import),
and the reader's read-only verification."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import aiosqlite

from termal_tui.store.errors import SchemaError

SCHEMA_VERSION: Final = "1"
META_SCHEMA_VERSION: Final = "coordination_schema_version"
META_BACKFILL: Final = "mailbox_dispatch_outcome_backfill_v1"
META_LEGACY_IMPORT: Final = "legacy_coordination_import_v1"
NO_LEGACY_STATE: Final = "no-legacy-state"
LEGACY_DB_NAME: Final = "termal.sqlite"

MAILBOX_TABLES: Final = ("mailboxes", "mailbox_participants", "mailbox_messages")
BOARD_TABLES: Final = (
    "coordination_board_scopes",
    "coordination_board_entries",
    "coordination_board_history",
    "coordination_board_idempotency",
    "coordination_board_deleted_scopes",
)
# Order matters for foreign keys when copying legacy rows.
COPY_ORDER: Final = (
    "mailboxes",
    "mailbox_participants",
    "mailbox_messages",
    "coordination_board_scopes",
    "coordination_board_entries",
    "coordination_board_history",
    "coordination_board_idempotency",
    "coordination_board_deleted_scopes",
)

META_DDL: Final = """
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
"""

TABLES_DDL: Final = """
CREATE TABLE IF NOT EXISTS mailboxes (
  id TEXT PRIMARY KEY,
  participant_key TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  next_sequence INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS mailbox_participants (
  mailbox_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  display_name TEXT NOT NULL,
  processed_through INTEGER NOT NULL DEFAULT 0,
  joined_at TEXT NOT NULL,
  left_at TEXT,
  PRIMARY KEY (mailbox_id, session_id),
  FOREIGN KEY (mailbox_id) REFERENCES mailboxes(id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS mailbox_messages (
  id TEXT PRIMARY KEY,
  mailbox_id TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  sender_session_id TEXT NOT NULL,
  sender_name TEXT NOT NULL,
  target_session_id TEXT NOT NULL,
  target_name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  class TEXT NOT NULL CHECK (class = 'routine'),
  topic TEXT,
  state_stamp TEXT,
  body TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  unread_depth_at_append INTEGER NOT NULL,
  notification_disposition TEXT NOT NULL,
  dispatch_outcome TEXT,
  UNIQUE (mailbox_id, sequence),
  UNIQUE (sender_session_id, idempotency_key),
  FOREIGN KEY (mailbox_id) REFERENCES mailboxes(id) ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS mailbox_participants_session
  ON mailbox_participants(session_id, left_at);

CREATE TABLE IF NOT EXISTS coordination_board_scopes (
  scope_id TEXT PRIMARY KEY,
  generation INTEGER NOT NULL DEFAULT 0 CHECK (generation >= 0)
);

CREATE TABLE IF NOT EXISTS coordination_board_entries (
  scope_id TEXT NOT NULL,
  key TEXT NOT NULL,
  revision INTEGER NOT NULL CHECK (revision > 0),
  generation INTEGER NOT NULL CHECK (generation > 0),
  value_json TEXT NOT NULL,
  author_session_id TEXT NOT NULL,
  author_name TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  state_stamp TEXT,
  PRIMARY KEY (scope_id, key),
  FOREIGN KEY (scope_id) REFERENCES coordination_board_scopes(scope_id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS coordination_board_history (
  scope_id TEXT NOT NULL,
  key TEXT NOT NULL,
  revision INTEGER NOT NULL CHECK (revision > 0),
  generation INTEGER NOT NULL CHECK (generation > 0),
  value_json TEXT NOT NULL,
  author_session_id TEXT NOT NULL,
  author_name TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  state_stamp TEXT,
  PRIMARY KEY (scope_id, key, revision),
  FOREIGN KEY (scope_id) REFERENCES coordination_board_scopes(scope_id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS coordination_board_idempotency (
  scope_id TEXT NOT NULL,
  author_session_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  receipt_json TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (scope_id, author_session_id, idempotency_key)
);

CREATE TABLE IF NOT EXISTS coordination_board_deleted_scopes (
  scope_id TEXT PRIMARY KEY,
  deleted_at TEXT NOT NULL
);
"""

BACKFILL_SQL: Final = """
UPDATE mailbox_messages
SET dispatch_outcome = CASE notification_disposition
  WHEN 'queuedBehindActiveTurn' THEN 'queuedBehindActiveTurn'
  WHEN 'deliveredToIdleSession' THEN 'deliveredToIdleSession'
  ELSE 'durableButNotWoken'
END
WHERE dispatch_outcome IS NULL
"""


@dataclass(frozen=True)
class SchemaInfo:
    """What the reader learned about a file without changing it."""

    has_dispatch_outcome: bool
    version: str | None


def unsupported_version_message(version: str) -> str:
    return (
        f"unsupported SQLite coordination schema version `{version}`; "
        f"this binary supports `{SCHEMA_VERSION}`"
    )


async def _table_names(db: aiosqlite.Connection) -> set[str]:
    async with db.execute("SELECT name FROM sqlite_master WHERE type = 'table'") as cursor:
        return {row[0] for row in await cursor.fetchall()}


async def _columns(db: aiosqlite.Connection, table: str, schema: str = "main") -> list[str]:
    async with db.execute(f"PRAGMA {schema}.table_info({table})") as cursor:
        return [row[1] for row in await cursor.fetchall()]


async def _meta(db: aiosqlite.Connection, key: str) -> str | None:
    async with db.execute("SELECT value FROM meta WHERE key = ?", (key,)) as cursor:
        row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def verify_readable(db: aiosqlite.Connection, path: Path) -> SchemaInfo:
    """Read-only checks: the mailbox tables exist and the schema version is supported."""
    try:
        tables = await _table_names(db)
    except sqlite3.DatabaseError as error:
        raise SchemaError(f"{path} is not a SQLite database ({error}).") from error
    missing = [name for name in MAILBOX_TABLES if name not in tables]
    if missing:
        raise SchemaError(
            f"{path} is a SQLite database but not a TermAl coordination database "
            f"(missing table {missing[0]})."
        )
    version = await _meta(db, META_SCHEMA_VERSION) if "meta" in tables else None
    if version is not None and version != SCHEMA_VERSION:
        raise SchemaError(f"{path}: {unsupported_version_message(version)}.")
    columns = await _columns(db, "mailbox_messages")
    return SchemaInfo(has_dispatch_outcome="dispatch_outcome" in columns, version=version)


async def ensure_schema(db: aiosqlite.Connection, path: Path) -> None:
    """TermAl's ensure sequence (termal-compat §1.3) plus the legacy-import marker (§3.18).

    Runs inside the caller's ``BEGIN IMMEDIATE`` transaction.
    """
    await db.execute(META_DDL)
    version = await _meta(db, META_SCHEMA_VERSION)
    if version is not None and version != SCHEMA_VERSION:
        raise SchemaError(f"{path}: {unsupported_version_message(version)}.")
    for statement in _split_ddl(TABLES_DDL):
        await db.execute(statement)
    if "dispatch_outcome" not in await _columns(db, "mailbox_messages"):
        await db.execute("ALTER TABLE mailbox_messages ADD COLUMN dispatch_outcome TEXT")
    if await _meta(db, META_LEGACY_IMPORT) is None:
        await _legacy_import(db, path)
    if await _meta(db, META_BACKFILL) is None:
        await db.execute(BACKFILL_SQL)
        await db.execute(
            "INSERT INTO meta(key, value) VALUES(?, 'complete') ON CONFLICT(key) DO NOTHING",
            (META_BACKFILL,),
        )
    await db.execute(
        "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (META_SCHEMA_VERSION, SCHEMA_VERSION),
    )


def _split_ddl(ddl: str) -> list[str]:
    return [part.strip() for part in ddl.split(";") if part.strip()]


async def _coordination_row_count(db: aiosqlite.Connection, schema: str = "main") -> int:
    total = 0
    for table in COPY_ORDER:
        async with db.execute(f"SELECT COUNT(*) FROM {schema}.{table}") as cursor:
            row = await cursor.fetchone()
        total += int(row[0]) if row else 0
    return total


async def _legacy_import(db: aiosqlite.Connection, path: Path) -> None:
    """Copy legacy mailbox/board rows from a sibling termal.sqlite, then write the marker.

    TermAl's boot refuses a destination that gained coordination rows without the
    marker, so the marker is always written here: the legacy path after a copy, or
    ``no-legacy-state`` when there is no legacy file.
    """
    legacy = path.parent / LEGACY_DB_NAME
    if not legacy.exists() or legacy.resolve() == path.resolve():
        marker = NO_LEGACY_STATE
    else:
        if await _coordination_row_count(db) > 0:
            raise SchemaError(
                f"{path}: legacy coordination import from {legacy} requires an empty "
                "pre-marker destination."
            )
        await _copy_legacy_rows(db, legacy)
        marker = os.fspath(legacy)
    await db.execute(
        "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO NOTHING",
        (META_LEGACY_IMPORT, marker),
    )


async def _copy_legacy_rows(db: aiosqlite.Connection, legacy: Path) -> None:
    # ATTACH is not allowed inside a transaction, so read the legacy file through
    # a separate read-only connection and insert the rows here.
    uri = legacy.resolve().as_uri() + "?mode=ro"
    try:
        source = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as error:
        raise SchemaError(f"cannot open legacy state {legacy}: {error}.") from error
    try:
        legacy_tables = {
            row[0] for row in source.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        for table in COPY_ORDER:
            if table not in legacy_tables:
                continue
            destination_columns = await _columns(db, table)
            source_columns = [row[1] for row in source.execute(f"PRAGMA table_info({table})")]
            shared = [column for column in destination_columns if column in source_columns]
            column_list = ", ".join(shared)
            placeholders = ", ".join("?" for _ in shared)
            rows = source.execute(f"SELECT {column_list} FROM {table}").fetchall()
            if rows:
                await db.executemany(
                    f"INSERT INTO {table}({column_list}) VALUES({placeholders})", rows
                )
    except sqlite3.DatabaseError as error:
        raise SchemaError(f"cannot read legacy state {legacy}: {error}.") from error
    finally:
        source.close()
