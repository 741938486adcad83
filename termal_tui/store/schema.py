"""Schema v1: DDL, the writer's ensure sequence (migration, backfill, legacy import),
and the reader's read-only verification."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Final, NamedTuple

from termal_tui.core.sanitize import quote
from termal_tui.store.errors import SchemaError
from termal_tui.store.queries import as_text
from termal_tui.store.sqlite import display_path

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

# TermAl's DDL text, byte for byte (src/coordination_persist.rs): SQLite keeps each
# CREATE statement's text in sqlite_master, so `sqlite3 FILE .schema` of a file we
# create is identical to one TermAl created.
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
              value_json TEXT,
              author_session_id TEXT NOT NULL,
              author_name TEXT NOT NULL,
              updated_at TEXT NOT NULL,
              state_stamp TEXT,
              PRIMARY KEY (scope_id, key),
              FOREIGN KEY (scope_id)
                REFERENCES coordination_board_scopes(scope_id)
                ON DELETE CASCADE
            );

            CREATE TABLE IF NOT EXISTS coordination_board_history (
              scope_id TEXT NOT NULL,
              key TEXT NOT NULL,
              revision INTEGER NOT NULL CHECK (revision > 0),
              generation INTEGER NOT NULL CHECK (generation > 0),
              value_json TEXT,
              author_session_id TEXT NOT NULL,
              author_name TEXT NOT NULL,
              updated_at TEXT NOT NULL,
              state_stamp TEXT,
              PRIMARY KEY (scope_id, key, revision),
              FOREIGN KEY (scope_id)
                REFERENCES coordination_board_scopes(scope_id)
                ON DELETE CASCADE
            );

            CREATE TABLE IF NOT EXISTS coordination_board_idempotency (
              scope_id TEXT NOT NULL,
              author_session_id TEXT NOT NULL,
              idempotency_key TEXT NOT NULL,
              request_hash TEXT NOT NULL,
              receipt_json TEXT NOT NULL,
              created_at TEXT NOT NULL,
              PRIMARY KEY (scope_id, author_session_id, idempotency_key),
              FOREIGN KEY (scope_id)
                REFERENCES coordination_board_scopes(scope_id)
                ON DELETE CASCADE
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
   OR dispatch_outcome NOT IN ('durableButNotWoken', 'queuedBehindActiveTurn', 'deliveredToIdleSession')
"""


class SchemaInfo(NamedTuple):
    """What the reader learned about a file without changing it."""

    has_dispatch_outcome: bool
    version: str | None


def unsupported_version_message(version: str) -> str:
    return (
        f"unsupported SQLite coordination schema version {quote(version)}; "
        f"this binary supports `{SCHEMA_VERSION}`"
    )


def _table_names(db: sqlite3.Connection, schema: str = "main") -> set[str]:
    rows = db.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")
    return {row[0] for row in rows.fetchall()}


def _columns(db: sqlite3.Connection, table: str, schema: str = "main") -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA {schema}.table_info({table})").fetchall()]


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else as_text(row[0])


def verify_readable(db: sqlite3.Connection, path: Path) -> SchemaInfo:
    """Read-only checks: the mailbox tables exist and the schema version is supported.

    SQLite failures propagate as ``sqlite3.Error`` for the caller to describe.
    """
    tables = _table_names(db)
    missing = [name for name in MAILBOX_TABLES if name not in tables]
    if missing:
        raise SchemaError(
            f"{display_path(path)} is a SQLite database but not a TermAl coordination database "
            f"(missing table {missing[0]})."
        )
    version = _meta(db, META_SCHEMA_VERSION) if "meta" in tables else None
    if version is not None and version != SCHEMA_VERSION:
        raise SchemaError(f"{display_path(path)}: {unsupported_version_message(version)}.")
    columns = _columns(db, "mailbox_messages")
    return SchemaInfo(has_dispatch_outcome="dispatch_outcome" in columns, version=version)


def ensure_schema(db: sqlite3.Connection, path: Path) -> None:
    """TermAl's ensure sequence (termal-compat §1.3), then the legacy import (§3.18).

    Runs on the writer's thread under its admission; manages its own transactions
    (ATTACH, which the legacy import needs, is not allowed inside one).
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        _ensure_tables(db, path)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    if _meta(db, META_LEGACY_IMPORT) is None:
        _legacy_import(db, path)


def _ensure_tables(db: sqlite3.Connection, path: Path) -> None:
    db.execute(META_DDL)
    version = _meta(db, META_SCHEMA_VERSION)
    if version is not None and version != SCHEMA_VERSION:
        raise SchemaError(f"{display_path(path)}: {unsupported_version_message(version)}.")
    for statement in _split_ddl(TABLES_DDL):
        db.execute(statement)
    _repair_board_tables(db)
    if "dispatch_outcome" not in _columns(db, "mailbox_messages"):
        db.execute("ALTER TABLE mailbox_messages ADD COLUMN dispatch_outcome TEXT")
    if _meta(db, META_BACKFILL) is None:
        db.execute(BACKFILL_SQL)
        db.execute(
            "INSERT INTO meta(key, value) VALUES(?, 'complete') ON CONFLICT(key) DO NOTHING",
            (META_BACKFILL,),
        )
    db.execute(
        "INSERT INTO meta(key, value) VALUES(?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (META_SCHEMA_VERSION, SCHEMA_VERSION),
    )


def _split_ddl(ddl: str) -> list[str]:
    return [part.strip() for part in ddl.split(";") if part.strip()]


def _table_ddl(name: str) -> str:
    for statement in _split_ddl(TABLES_DDL):
        if statement.startswith(f"CREATE TABLE IF NOT EXISTS {name} "):
            return statement
    raise KeyError(name)


def _board_table_needs_repair(db: sqlite3.Connection, table: str) -> bool:
    info = db.execute(f"PRAGMA table_info({table})").fetchall()
    if table in ("coordination_board_entries", "coordination_board_history"):
        return any(row[1] == "value_json" and row[3] == 1 for row in info)
    foreign = db.execute(f"PRAGMA foreign_key_list({table})").fetchall()
    return not any(row[2] == "coordination_board_scopes" for row in foreign)


def _repair_board_tables(db: sqlite3.Connection) -> None:
    """Rebuild board tables created by earlier termal-tui versions with TermAl's DDL.

    Those had ``value_json NOT NULL`` (TermAl stores NULL tombstones) and no
    foreign key on ``coordination_board_idempotency``. Rows are kept; this runs
    inside the ensure transaction, so a failure leaves the file as it was.
    """
    for table in (
        "coordination_board_entries",
        "coordination_board_history",
        "coordination_board_idempotency",
    ):
        if not _board_table_needs_repair(db, table):
            continue
        columns = ", ".join(_columns(db, table))
        db.execute(f"ALTER TABLE {table} RENAME TO {table}_termal_tui_old")
        db.execute(_table_ddl(table))
        db.execute(f"INSERT INTO {table}({columns}) SELECT {columns} FROM {table}_termal_tui_old")
        db.execute(f"DROP TABLE {table}_termal_tui_old")


def _coordination_row_count(db: sqlite3.Connection) -> int:
    return sum(
        int(db.execute(f"SELECT COUNT(*) FROM main.{table}").fetchone()[0]) for table in COPY_ORDER
    )


_OUTCOME_CASE: Final = """CASE
  WHEN notification_disposition = 'queuedBehindActiveTurn' THEN 'queuedBehindActiveTurn'
  WHEN notification_disposition = 'deliveredToIdleSession' THEN 'deliveredToIdleSession'
  ELSE 'durableButNotWoken'
END"""
_KEEP_VALID_OUTCOME: Final = (
    "CASE WHEN dispatch_outcome IN "
    "('durableButNotWoken', 'queuedBehindActiveTurn', 'deliveredToIdleSession') "
    f"THEN dispatch_outcome ELSE {_OUTCOME_CASE} END"
)
_MESSAGE_COLUMNS: Final = (
    "id, mailbox_id, sequence, sender_session_id, sender_name, target_session_id, "
    "target_name, created_at, class, topic, state_stamp, body, idempotency_key, "
    "unread_depth_at_append, notification_disposition"
)
_BOARD_VALUE_COLUMNS: Final = (
    "scope_id, key, revision, generation, value_json, author_session_id, author_name, "
    "updated_at, state_stamp"
)
_LEGACY_CHECKS: Final = (
    (
        "mailbox heads",
        "SELECT id, next_sequence FROM {a}.mailboxes",
    ),
    (
        "mailbox participant cursors",
        "SELECT mailbox_id, session_id, processed_through FROM {a}.mailbox_participants",
    ),
    (
        "per-mailbox message counts and maximum sequences",
        "SELECT mailbox_id, COUNT(*), COALESCE(MAX(sequence), 0) FROM {a}.mailbox_messages "
        "GROUP BY mailbox_id",
    ),
    (
        "mailbox idempotency counts",
        "SELECT sender_session_id, COUNT(*) FROM {a}.mailbox_messages GROUP BY sender_session_id",
    ),
)


def _legacy_import(db: sqlite3.Connection, path: Path) -> None:
    """Copy legacy mailbox/board rows from a sibling termal.sqlite, then write the marker.

    TermAl's boot refuses a destination that gained coordination rows without the
    marker, so the marker is always written: the legacy path after a verified
    copy, or ``no-legacy-state`` when there is no legacy file. A partial legacy
    schema is refused with nothing copied and no marker.
    """
    legacy = path.parent / LEGACY_DB_NAME
    if not legacy.exists() or legacy.resolve() == path.resolve():
        db.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO NOTHING",
            (META_LEGACY_IMPORT, NO_LEGACY_STATE),
        )
        return
    try:
        db.execute("ATTACH DATABASE ? AS legacy_state", (legacy.resolve().as_uri() + "?mode=ro",))
    except sqlite3.Error as error:
        raise SchemaError(f"cannot open legacy state {display_path(legacy)}: {error}.") from error
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            if _meta(db, META_LEGACY_IMPORT) is None:
                _copy_legacy_rows(db, path, legacy)
                db.execute(
                    "INSERT INTO meta(key, value) VALUES(?, ?)",
                    (META_LEGACY_IMPORT, os.fspath(legacy)),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    except sqlite3.DatabaseError as error:
        if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
            raise
        raise SchemaError(f"cannot import legacy state {display_path(legacy)}: {error}.") from error
    finally:
        db.execute("DETACH DATABASE legacy_state")


def _copy_legacy_rows(db: sqlite3.Connection, path: Path, legacy: Path) -> None:
    if _coordination_row_count(db) > 0:
        raise SchemaError(
            f"{display_path(path)}: legacy coordination import from {display_path(legacy)} "
            "requires an empty pre-marker destination."
        )
    present = _table_names(db, "legacy_state")
    mailbox = [table in present for table in MAILBOX_TABLES]
    if any(mailbox):
        if not all(mailbox):
            raise SchemaError("legacy mailbox schema is incomplete; refusing a partial migration")
        legacy_outcome = (
            _KEEP_VALID_OUTCOME
            if "dispatch_outcome" in _columns(db, "mailbox_messages", "legacy_state")
            else _OUTCOME_CASE
        )
        db.execute(
            "INSERT INTO main.mailboxes(id, participant_key, created_at, next_sequence) "
            "SELECT id, participant_key, created_at, next_sequence FROM legacy_state.mailboxes"
        )
        db.execute(
            "INSERT INTO main.mailbox_participants(mailbox_id, session_id, display_name, "
            "processed_through, joined_at, left_at) SELECT mailbox_id, session_id, "
            "display_name, processed_through, joined_at, left_at "
            "FROM legacy_state.mailbox_participants"
        )
        db.execute(
            f"INSERT INTO main.mailbox_messages({_MESSAGE_COLUMNS}, dispatch_outcome) "
            f"SELECT {_MESSAGE_COLUMNS}, {legacy_outcome} FROM legacy_state.mailbox_messages"
        )
        for label, query in _LEGACY_CHECKS:
            legacy_rows, main_rows = query.format(a="legacy_state"), query.format(a="main")
            differences = db.execute(
                f"SELECT (SELECT COUNT(*) FROM ({legacy_rows} EXCEPT {main_rows})) + "
                f"(SELECT COUNT(*) FROM ({main_rows} EXCEPT {legacy_rows}))"
            ).fetchone()[0]
            if differences:
                raise SchemaError(f"legacy coordination migration verification failed for {label}")
    board = [table in present for table in BOARD_TABLES]
    if any(board):
        if not all(board[:4]):
            raise SchemaError(
                "legacy coordination-board schema is incomplete; refusing a partial migration"
            )
        db.execute(
            "INSERT INTO main.coordination_board_scopes(scope_id, generation) "
            "SELECT scope_id, generation FROM legacy_state.coordination_board_scopes"
        )
        for table in ("coordination_board_entries", "coordination_board_history"):
            db.execute(
                f"INSERT INTO main.{table}({_BOARD_VALUE_COLUMNS}) "
                f"SELECT {_BOARD_VALUE_COLUMNS} FROM legacy_state.{table}"
            )
        idempotency = (
            "scope_id, author_session_id, idempotency_key, request_hash, receipt_json, created_at"
        )
        db.execute(
            f"INSERT INTO main.coordination_board_idempotency({idempotency}) "
            f"SELECT {idempotency} FROM legacy_state.coordination_board_idempotency"
        )
        if board[4]:
            db.execute(
                "INSERT INTO main.coordination_board_deleted_scopes(scope_id, deleted_at) "
                "SELECT scope_id, deleted_at FROM legacy_state.coordination_board_deleted_scopes"
            )
