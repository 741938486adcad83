"""Read-only board queries on a ``sqlite3.Connection`` (run on the connection's thread,
inside the caller's snapshot). Shared by the board reader and the board writer, so a
read answers the same through either. Nothing here changes the file."""

from __future__ import annotations

import json
import sqlite3

from termal_tui.store.board import rules
from termal_tui.store.board.records import BoardGetResult, BoardHead, BoardListPage, BoardScope
from termal_tui.store.board.rules import HEAD_COLUMNS, head_from_row


def board_tables(db: sqlite3.Connection) -> frozenset[str]:
    rows = db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'coordination_board_%'"
    ).fetchall()
    return frozenset(row[0] for row in rows)


def ensure_scope_active(db: sqlite3.Connection, scope_id: str) -> None:
    """``ensure_coordination_board_scope_active``: a fenced (deleted) scope is 404."""
    try:
        (fenced,) = db.execute(
            "SELECT EXISTS(SELECT 1 FROM coordination_board_deleted_scopes WHERE scope_id = ?)",
            (scope_id,),
        ).fetchone()
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return  # a file without the fence table has fenced nothing
        raise
    if fenced:
        raise rules.scope_deleted(scope_id)


def generation(db: sqlite3.Connection, scope_id: str) -> int:
    row = db.execute(
        "SELECT generation FROM coordination_board_scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    return rules.checked_generation(None if row is None else row[0])


def head(db: sqlite3.Connection, scope_id: str, key: str) -> BoardHead | None:
    row = db.execute(
        f"SELECT {HEAD_COLUMNS} FROM coordination_board_entries WHERE scope_id = ? AND key = ?",
        (scope_id, key),
    ).fetchone()
    return None if row is None else head_from_row(row)


def get(db: sqlite3.Connection, scope_id: str, key: str) -> BoardGetResult:
    """TermAl's ``get`` after validation, in one snapshot."""
    ensure_scope_active(db, scope_id)
    scope_generation = generation(db, scope_id)
    return rules.get_result(scope_id, key, head(db, scope_id, key), scope_generation)


def list_page(
    db: sqlite3.Connection,
    scope_id: str,
    after_key: str | None,
    limit: int,
    snapshot_generation: int | None,
    known_generation: int | None,
) -> BoardListPage:
    """TermAl's ``list`` after validation, in one snapshot."""
    ensure_scope_active(db, scope_id)
    current = generation(db, scope_id)
    unchanged = rules.unchanged_page(current, after_key, snapshot_generation, known_generation)
    if unchanged is not None:
        return unchanged
    if after_key is None:
        rows = db.execute(
            f"SELECT {HEAD_COLUMNS} FROM coordination_board_entries "
            "WHERE scope_id = ? AND value_json IS NOT NULL ORDER BY key LIMIT ?",
            (scope_id, limit + 1),
        ).fetchall()
    else:
        rows = db.execute(
            f"SELECT {HEAD_COLUMNS} FROM coordination_board_entries "
            "WHERE scope_id = ? AND value_json IS NOT NULL AND key > ? ORDER BY key LIMIT ?",
            (scope_id, after_key, limit + 1),
        ).fetchall()
    return rules.page_from(rows, limit, current)


# ------------------------------------------------------------- views beyond TermAl's API


def scopes(db: sqlite3.Connection) -> list[BoardScope]:
    """Every scope with its generation and live/tombstoned counts, by scope id."""
    rows = db.execute(
        "SELECT s.scope_id, s.generation, "
        "COALESCE(SUM(e.value_json IS NOT NULL), 0), "
        "COALESCE(SUM(e.key IS NOT NULL AND e.value_json IS NULL), 0), "
        "MAX(e.updated_at) "
        "FROM coordination_board_scopes AS s "
        "LEFT JOIN coordination_board_entries AS e ON e.scope_id = s.scope_id "
        "GROUP BY s.scope_id ORDER BY s.scope_id"
    ).fetchall()
    return [rules.scope_from_row(row) for row in rows]


def generations(db: sqlite3.Connection) -> dict[str, int]:
    rows = db.execute("SELECT scope_id, generation FROM coordination_board_scopes").fetchall()
    return {row[0]: row[1] for row in rows}


def deleted_scopes(db: sqlite3.Connection) -> list[tuple[str, str]]:
    try:
        rows = db.execute(
            "SELECT scope_id, deleted_at FROM coordination_board_deleted_scopes ORDER BY scope_id"
        ).fetchall()
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return []
        raise
    return [(row[0], row[1]) for row in rows]


def entries(db: sqlite3.Connection, scope_id: str, include_deleted: bool) -> list[BoardHead]:
    """Every head of a scope by key (tombstones too when asked), tolerant of bad values."""
    live_only = "" if include_deleted else " AND value_json IS NOT NULL"
    rows = db.execute(
        f"SELECT {HEAD_COLUMNS} FROM coordination_board_entries "
        f"WHERE scope_id = ?{live_only} ORDER BY key",
        (scope_id,),
    ).fetchall()
    return [head_from_row(row, strict=False) for row in rows]


def history(db: sqlite3.Connection, scope_id: str, key: str) -> list[BoardHead]:
    """A key's retained earlier revisions, newest first (the head itself is not included)."""
    rows = db.execute(
        f"SELECT {HEAD_COLUMNS} FROM coordination_board_history "
        "WHERE scope_id = ? AND key = ? ORDER BY revision DESC",
        (scope_id, key),
    ).fetchall()
    return [head_from_row(row, strict=False) for row in rows]


# ------------------------------------------------------------------- project names

TERMAL_METADATA_KEY = "metadataState"  # TermAl's persist.rs SQLITE_METADATA_KEY


def termal_project_names(db: sqlite3.Connection) -> dict[str, str]:
    """Project id → name from TermAl's own ``termal.sqlite`` (its metadata state);
    empty when the file is not TermAl's after all."""
    try:
        row = db.execute(
            "SELECT value_json FROM app_state WHERE key = ?", (TERMAL_METADATA_KEY,)
        ).fetchone()
        if row is None:
            return {}
        state = json.loads(row[0])
        return {str(p["id"]): str(p["name"]) for p in state["projects"]}
    except (sqlite3.Error, ValueError, TypeError, KeyError):
        return {}


def registry_project_names(db: sqlite3.Connection) -> dict[str, str]:
    """Project id → name from termal-tui's session registry (projects it minted for
    sessions outside TermAl's); empty for a registry from before projects existed."""
    try:
        return {str(r[0]): str(r[1]) for r in db.execute("SELECT id, name FROM projects")}
    except sqlite3.Error:
        return {}
