"""Schema v1 on PostgreSQL: TermAl's mailbox tables with PostgreSQL's types.

Every text column is ``COLLATE "C"``: comparisons, ``ORDER BY``, keysets and unique keys
work on bytes, as SQLite's TEXT does, whatever the database's locale. The tables live in
the connection's ``search_path`` (the URL may name a schema with
``options=-csearch_path%3D...``). The coordination board's and registry's tables come
with their PostgreSQL engines.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from termal_tui.store.errors import SchemaError
from termal_tui.store.postgres.connection import one
from termal_tui.store.schema import (
    BACKFILL_SQL,
    MAILBOX_TABLES,
    META_BACKFILL,
    META_LEGACY_IMPORT,
    META_SCHEMA_VERSION,
    NO_LEGACY_STATE,
    SCHEMA_VERSION,
    SchemaInfo,
    unsupported_version_message,
)
from termal_tui.store.urls import redact

# Two writers ensuring the schema at once take turns (CREATE ... IF NOT EXISTS races).
_ENSURE_LOCK: Final = 0x7465726D616C  # "termal"

DDL: Final = (
    """CREATE TABLE IF NOT EXISTS meta (
      key TEXT COLLATE "C" PRIMARY KEY,
      value TEXT COLLATE "C" NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS mailboxes (
      id TEXT COLLATE "C" PRIMARY KEY,
      participant_key TEXT COLLATE "C" NOT NULL UNIQUE,
      created_at TEXT COLLATE "C" NOT NULL,
      next_sequence BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS mailbox_participants (
      mailbox_id TEXT COLLATE "C" NOT NULL,
      session_id TEXT COLLATE "C" NOT NULL,
      display_name TEXT COLLATE "C" NOT NULL,
      processed_through BIGINT NOT NULL DEFAULT 0,
      joined_at TEXT COLLATE "C" NOT NULL,
      left_at TEXT COLLATE "C",
      PRIMARY KEY (mailbox_id, session_id),
      FOREIGN KEY (mailbox_id) REFERENCES mailboxes(id) ON DELETE CASCADE
    )""",
    """CREATE TABLE IF NOT EXISTS mailbox_messages (
      id TEXT COLLATE "C" PRIMARY KEY,
      mailbox_id TEXT COLLATE "C" NOT NULL,
      sequence BIGINT NOT NULL,
      sender_session_id TEXT COLLATE "C" NOT NULL,
      sender_name TEXT COLLATE "C" NOT NULL,
      target_session_id TEXT COLLATE "C" NOT NULL,
      target_name TEXT COLLATE "C" NOT NULL,
      created_at TEXT COLLATE "C" NOT NULL,
      class TEXT COLLATE "C" NOT NULL CHECK (class = 'routine'),
      topic TEXT COLLATE "C",
      state_stamp TEXT COLLATE "C",
      body TEXT COLLATE "C" NOT NULL,
      idempotency_key TEXT COLLATE "C" NOT NULL,
      unread_depth_at_append BIGINT NOT NULL,
      notification_disposition TEXT COLLATE "C" NOT NULL,
      dispatch_outcome TEXT COLLATE "C",
      UNIQUE (mailbox_id, sequence),
      UNIQUE (sender_session_id, idempotency_key),
      FOREIGN KEY (mailbox_id) REFERENCES mailboxes(id) ON DELETE CASCADE
    )""",
    """CREATE INDEX IF NOT EXISTS mailbox_participants_session
      ON mailbox_participants(session_id, left_at)""",
    # The unread counts (per target above a cursor) and the wake queries.
    """CREATE INDEX IF NOT EXISTS mailbox_messages_target
      ON mailbox_messages(mailbox_id, target_session_id, sequence)""",
    # The order rows were inserted in, SQLite's rowid: the activity stream's keyset
    # (added to a database made before it; existing rows are numbered as found).
    """ALTER TABLE mailbox_messages
      ADD COLUMN IF NOT EXISTS insertion_order BIGINT GENERATED ALWAYS AS IDENTITY""",
    """CREATE UNIQUE INDEX IF NOT EXISTS mailbox_messages_insertion_order
      ON mailbox_messages(insertion_order)""",
)


async def _tables(conn: psycopg.AsyncConnection[Any]) -> set[str]:
    """The mailbox tables visible through the search_path."""
    names = ("meta", *MAILBOX_TABLES)
    row = await one(
        conn,
        "SELECT " + ", ".join(f"to_regclass('{name}') IS NOT NULL" for name in names),
    )
    return {name for name, present in zip(names, row, strict=True) if present}


async def _meta(conn: psycopg.AsyncConnection[Any], key: str) -> str | None:
    row = await one(conn, "SELECT value FROM meta WHERE key = %s", (key,))
    return None if row is None else str(row[0])


async def verify_readable(conn: psycopg.AsyncConnection[Any], url: str) -> SchemaInfo:
    """Read-only checks (a role with only SELECT passes): the mailbox tables exist and
    the schema version is supported."""
    tables = await _tables(conn)
    missing = [name for name in MAILBOX_TABLES if name not in tables]
    if missing:
        raise SchemaError(
            f"{redact(url)} is a PostgreSQL database but not a TermAl coordination database "
            f"(missing table {missing[0]})."
        )
    version = await _meta(conn, META_SCHEMA_VERSION) if "meta" in tables else None
    if version is not None and version != SCHEMA_VERSION:
        raise SchemaError(f"{redact(url)}: {unsupported_version_message(version)}.")
    return SchemaInfo(has_dispatch_outcome=True, version=version)


async def has_insertion_order(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether the messages carry ``insertion_order`` (a database made before it has
    none until a writer next opens it)."""
    row = await one(conn, "SELECT to_regclass('mailbox_messages_insertion_order') IS NOT NULL")
    return bool(row[0])


async def _complete(conn: psycopg.AsyncConnection[Any], url: str) -> bool:
    """Everything :func:`ensure_schema` makes is there already (read only: a role that may
    read and write rows but not create tables opens a prepared database)."""
    row = await one(
        conn,
        "SELECT "
        + ", ".join(f"to_regclass('{name}') IS NOT NULL" for name in ("meta", *MAILBOX_TABLES))
        + ", to_regclass('mailbox_messages_target') IS NOT NULL"
        + ", to_regclass('mailbox_messages_insertion_order') IS NOT NULL",
    )
    if not all(row):
        return False
    version = await _meta(conn, META_SCHEMA_VERSION)
    if version is not None and version != SCHEMA_VERSION:
        raise SchemaError(f"{redact(url)}: {unsupported_version_message(version)}.")
    markers = [await _meta(conn, key) for key in (META_BACKFILL, META_LEGACY_IMPORT)]
    return version is not None and None not in markers


async def ensure_schema(conn: psycopg.AsyncConnection[Any], url: str) -> None:
    """TermAl's ensure sequence, in one transaction (the caller's): tables, the outcome
    backfill marker, the version; there is no legacy file to import on PostgreSQL. A
    database that has it all is only read."""
    if await _complete(conn, url):
        return
    await conn.execute(f"SELECT pg_advisory_xact_lock({_ENSURE_LOCK})".encode())
    await conn.execute(DDL[0].encode())
    version = await _meta(conn, META_SCHEMA_VERSION)
    if version is not None and version != SCHEMA_VERSION:
        raise SchemaError(f"{redact(url)}: {unsupported_version_message(version)}.")
    for statement in DDL[1:]:
        await conn.execute(statement.encode())
    if await _meta(conn, META_BACKFILL) is None:
        await conn.execute(BACKFILL_SQL.encode())
        await _put_meta(conn, META_BACKFILL, "complete", replace=False)
    await _put_meta(conn, META_SCHEMA_VERSION, SCHEMA_VERSION, replace=True)
    await _put_meta(conn, META_LEGACY_IMPORT, NO_LEGACY_STATE, replace=False)


async def _put_meta(
    conn: psycopg.AsyncConnection[Any], key: str, value: str, *, replace: bool
) -> None:
    action = "DO UPDATE SET value = excluded.value" if replace else "DO NOTHING"
    await conn.execute(
        f"INSERT INTO meta(key, value) VALUES(%s, %s) ON CONFLICT(key) {action}".encode(),
        (key, value),
    )
