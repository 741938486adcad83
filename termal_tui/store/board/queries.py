"""Read-only board queries on a ``sqlite3.Connection`` (run on the connection's thread,
inside the caller's snapshot). Shared by the board reader and the board writer, so a
read answers the same through either. Nothing here changes the file."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from termal_tui.store.board import formats
from termal_tui.store.board.records import BoardGetResult, BoardHead, BoardListPage, BoardScope
from termal_tui.store.errors import ConflictError, NotFoundError, ValidationError

HEAD_COLUMNS = (
    "key, revision, generation, value_json, author_session_id, author_name, updated_at, state_stamp"
)


def detail_of(current: BoardHead | None, generation: int | None) -> dict[str, Any]:
    detail: dict[str, Any] = {}
    if current is not None:
        detail["current"] = current.to_wire()
    if generation is not None:
        detail["currentGeneration"] = generation
    return detail


def not_found(message: str, current: BoardHead | None, generation: int | None) -> NotFoundError:
    detail = detail_of(current, generation)
    return NotFoundError(formats.with_detail(message, detail), detail=detail)


def conflict(message: str, current: BoardHead | None, generation: int | None) -> ConflictError:
    detail = detail_of(current, generation)
    return ConflictError(formats.with_detail(message, detail), detail=detail)


def key_not_found(key: str, scope_id: str, current: BoardHead | None, generation: int):
    return not_found(
        f"coordination board key `{key}` was not found in scope `{scope_id}`", current, generation
    )


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
        raise not_found(
            f"coordination board scope `{scope_id}` was deleted with its project", None, 0
        )


def generation(db: sqlite3.Connection, scope_id: str) -> int:
    row = db.execute(
        "SELECT generation FROM coordination_board_scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    if row is None:
        return 0
    if not isinstance(row[0], int) or row[0] < 0:
        raise formats.internal_error(
            "failed to read coordination board generation",
            "coordination board generation must not be negative",
        )
    return row[0]


def head_from_row(row: tuple[Any, ...], *, strict: bool = True) -> BoardHead:
    """``coordination_board_head_from_row``; ``strict=False`` keeps a row whose stored
    value is not JSON (``invalid``) instead of failing the read as TermAl does."""
    value_json = row[3]
    value: Any = None
    invalid = False
    if value_json is not None:
        try:
            value = formats.loads(value_json)
        except (ValueError, TypeError) as error:
            if strict:
                raise formats.internal_error(
                    "failed to read coordination board entries", error
                ) from None
            value_json, invalid = str(value_json), True
    return BoardHead(
        key=row[0],
        revision=row[1],
        updated_at_generation=row[2],
        value=value,
        deleted=value_json is None,
        author_session_id=row[4],
        author_name=row[5],
        updated_at=row[6],
        state_stamp=row[7],
        value_json=value_json,
        invalid=invalid,
    )


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
    current = head(db, scope_id, key)
    if current is None or current.deleted:
        raise key_not_found(key, scope_id, current, scope_generation)
    return BoardGetResult(head=current, scope_generation=scope_generation)


def validate_list_request(
    scope_id: str,
    after_key: str | None,
    limit: int | None,
    snapshot_generation: int | None,
    known_generation: int | None,
) -> int:
    """TermAl's list validation, in its order; returns the page size."""
    formats.validate_scope_id(scope_id)
    if after_key is not None:
        formats.validate_key(after_key)
        if snapshot_generation is None:
            raise ValidationError(
                "coordination board pagination requires `snapshotGeneration` after the first page"
            )
    if after_key is not None and known_generation is not None:
        raise ValidationError(
            "`knownGeneration` is valid only for the first coordination board page"
        )
    if snapshot_generation is not None:
        formats.check_u64("snapshotGeneration", snapshot_generation)
    if known_generation is not None:
        formats.check_u64("knownGeneration", known_generation)
    size = formats.DEFAULT_PAGE_SIZE if limit is None else limit
    if isinstance(size, bool) or not isinstance(size, int):
        raise ValidationError("coordination board page limit must be an integer")
    if not 1 <= size <= formats.MAX_PAGE_SIZE:
        raise ValidationError(
            f"coordination board page limit must be between 1 and {formats.MAX_PAGE_SIZE}"
        )
    return size


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
    if snapshot_generation is not None and snapshot_generation != current:
        raise conflict(
            "coordination board scope changed during pagination: expected generation "
            f"{snapshot_generation}, current generation is {current}; restart the listing",
            None,
            current,
        )
    if after_key is None and known_generation == current:
        return BoardListPage(generation=current, entries=(), next_after_key=None, unchanged=True)
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
    entries = [head_from_row(row) for row in rows]
    next_after_key = None
    if len(entries) > limit:
        entries = entries[:limit]
        next_after_key = entries[-1].key
    return BoardListPage(
        generation=current,
        entries=tuple(entries),
        next_after_key=next_after_key,
        unchanged=False,
    )


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
    return [
        BoardScope(
            scope_id=row[0],
            generation=row[1],
            live_count=row[2],
            tombstone_count=row[3],
            latest_updated_at=row[4],
        )
        for row in rows
    ]


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
