"""The board's tables on PostgreSQL: TermAl's columns with PostgreSQL's types.

Text columns are ``COLLATE "C"`` (keys order and page by bytes, as on a file). Values
stay ``TEXT``, never ``jsonb``: the stored canonical JSON is TermAl's text byte for byte.
A receipt's insertion order (SQLite's ``rowid``, which receipt retention keeps the newest
4096 of) is the identity column ``insertion_order``.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from termal_tui.store.postgres.connection import one
from termal_tui.store.postgres.schema import ensure_schema
from termal_tui.store.schema import BOARD_TABLES

# Two writers making the board's tables at once take turns (CREATE ... IF NOT EXISTS races).
_ENSURE_BOARD_LOCK: Final = 0x7465726D616C62  # "termalb"

BOARD_DDL: Final = (
    """CREATE TABLE IF NOT EXISTS coordination_board_scopes (
      scope_id TEXT COLLATE "C" PRIMARY KEY,
      generation BIGINT NOT NULL DEFAULT 0 CHECK (generation >= 0)
    )""",
    """CREATE TABLE IF NOT EXISTS coordination_board_entries (
      scope_id TEXT COLLATE "C" NOT NULL,
      key TEXT COLLATE "C" NOT NULL,
      revision BIGINT NOT NULL CHECK (revision > 0),
      generation BIGINT NOT NULL CHECK (generation > 0),
      value_json TEXT COLLATE "C",
      author_session_id TEXT COLLATE "C" NOT NULL,
      author_name TEXT COLLATE "C" NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL,
      state_stamp TEXT COLLATE "C",
      PRIMARY KEY (scope_id, key),
      FOREIGN KEY (scope_id) REFERENCES coordination_board_scopes(scope_id) ON DELETE CASCADE
    )""",
    """CREATE TABLE IF NOT EXISTS coordination_board_history (
      scope_id TEXT COLLATE "C" NOT NULL,
      key TEXT COLLATE "C" NOT NULL,
      revision BIGINT NOT NULL CHECK (revision > 0),
      generation BIGINT NOT NULL CHECK (generation > 0),
      value_json TEXT COLLATE "C",
      author_session_id TEXT COLLATE "C" NOT NULL,
      author_name TEXT COLLATE "C" NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL,
      state_stamp TEXT COLLATE "C",
      PRIMARY KEY (scope_id, key, revision),
      FOREIGN KEY (scope_id) REFERENCES coordination_board_scopes(scope_id) ON DELETE CASCADE
    )""",
    """CREATE TABLE IF NOT EXISTS coordination_board_idempotency (
      scope_id TEXT COLLATE "C" NOT NULL,
      author_session_id TEXT COLLATE "C" NOT NULL,
      idempotency_key TEXT COLLATE "C" NOT NULL,
      request_hash TEXT COLLATE "C" NOT NULL,
      receipt_json TEXT COLLATE "C" NOT NULL,
      created_at TEXT COLLATE "C" NOT NULL,
      insertion_order BIGINT GENERATED ALWAYS AS IDENTITY,
      PRIMARY KEY (scope_id, author_session_id, idempotency_key),
      FOREIGN KEY (scope_id) REFERENCES coordination_board_scopes(scope_id) ON DELETE CASCADE
    )""",
    """CREATE INDEX IF NOT EXISTS coordination_board_idempotency_order
      ON coordination_board_idempotency(scope_id, insertion_order)""",
    """CREATE TABLE IF NOT EXISTS coordination_board_deleted_scopes (
      scope_id TEXT COLLATE "C" PRIMARY KEY,
      deleted_at TEXT COLLATE "C" NOT NULL
    )""",
)


async def board_tables(conn: psycopg.AsyncConnection[Any]) -> frozenset[str]:
    """The board tables visible through the search_path."""
    row = await one(
        conn,
        "SELECT " + ", ".join(f"to_regclass('{name}') IS NOT NULL" for name in BOARD_TABLES),
    )
    return frozenset(name for name, present in zip(BOARD_TABLES, row, strict=True) if present)


async def _board_complete(conn: psycopg.AsyncConnection[Any]) -> bool:
    row = await one(
        conn,
        "SELECT to_regclass('coordination_board_idempotency_order') IS NOT NULL",
    )
    return bool(row[0]) and await board_tables(conn) >= set(BOARD_TABLES)


async def ensure_board_schema(conn: psycopg.AsyncConnection[Any], url: str) -> None:
    """The coordination schema (as the mailbox writer ensures it) and the board's tables,
    in the caller's transaction. A database that has them all is only read (a role that
    may write rows but not create tables opens a prepared database); two writers making
    them at once take turns."""
    await ensure_schema(conn, url)
    if await _board_complete(conn):
        return
    await conn.execute(f"SELECT pg_advisory_xact_lock({_ENSURE_BOARD_LOCK})".encode())
    for statement in BOARD_DDL:
        await conn.execute(statement.encode())
