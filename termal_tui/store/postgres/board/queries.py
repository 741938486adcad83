"""Read-only board queries on PostgreSQL, shared by the board's reader and writer so a
read answers the same through either. Nothing here changes the database.

Each TermAl read (``get``, ``list``) is one statement: in READ COMMITTED every statement
has its own snapshot, so the fence, the scope generation and the rows are read by the
same statement to come from the same moment, as one SQLite read transaction does.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from termal_tui.store.board import rules
from termal_tui.store.board.records import BoardGetResult, BoardHead, BoardListPage, BoardScope
from termal_tui.store.board.rules import HEAD_COLUMNS, head_from_row
from termal_tui.store.postgres.connection import every, one

Conn = psycopg.AsyncConnection[Any]

_ENTRY_COLUMNS: Final = ", ".join(f"e.{name.strip()}" for name in HEAD_COLUMNS.split(","))

# The fence and the generation of one scope, as a one-row relation ``f``.
_STATE: Final = (
    "(SELECT EXISTS(SELECT 1 FROM coordination_board_deleted_scopes "
    "WHERE scope_id = %(s)s) AS fenced, "
    "(SELECT generation FROM coordination_board_scopes WHERE scope_id = %(s)s) AS generation) f"
)

_GET: Final = (
    f"SELECT f.fenced, f.generation, {_ENTRY_COLUMNS} FROM {_STATE} "
    "LEFT JOIN coordination_board_entries e ON e.scope_id = %(s)s AND e.key = %(k)s"
)


def _list_sql(after: bool) -> str:
    keyset = " AND key > %(after)s" if after else ""
    # A first page at the generation the caller knows reads no entry.
    wanted = "TRUE" if after else "%(known)s::bigint IS DISTINCT FROM COALESCE(f.generation, 0)"
    return (
        f"SELECT f.fenced, f.generation, {_ENTRY_COLUMNS} FROM {_STATE} "
        f"LEFT JOIN LATERAL (SELECT {HEAD_COLUMNS} FROM coordination_board_entries "
        f"WHERE scope_id = %(s)s AND value_json IS NOT NULL{keyset} "
        f"ORDER BY key LIMIT %(n)s) e ON NOT f.fenced AND {wanted} "
        "ORDER BY e.key"
    )


_LIST_FIRST: Final = _list_sql(after=False)
_LIST_AFTER: Final = _list_sql(after=True)


def _state(row: Any, scope_id: str) -> int:
    """The scope's generation once it is known not fenced."""
    if row[0]:
        raise rules.scope_deleted(scope_id)
    return rules.checked_generation(row[1])


def _head(row: Any, offset: int = 2) -> BoardHead | None:
    cells = row[offset:]
    return None if cells[0] is None else head_from_row(cells)


async def get(conn: Conn, scope_id: str, key: str) -> BoardGetResult:
    """TermAl's ``get`` after validation, in one statement."""
    row = await one(conn, _GET, {"s": scope_id, "k": key})
    generation = _state(row, scope_id)
    return rules.get_result(scope_id, key, _head(row), generation)


async def list_page(
    conn: Conn,
    scope_id: str,
    after_key: str | None,
    limit: int,
    snapshot_generation: int | None,
    known_generation: int | None,
) -> BoardListPage:
    """TermAl's ``list`` after validation, in one statement."""
    known = known_generation
    if known is not None and known > rules.MAX_STORED_INTEGER:
        known = -1  # no stored generation is that large
    params = {"s": scope_id, "after": after_key, "n": limit + 1, "known": known}
    found = await every(conn, _LIST_AFTER if after_key is not None else _LIST_FIRST, params)
    current = _state(found[0], scope_id)
    unchanged = rules.unchanged_page(current, after_key, snapshot_generation, known_generation)
    if unchanged is not None:
        return unchanged
    return rules.page_from([row[2:] for row in found if row[2] is not None], limit, current)


# ------------------------------------------------------------- views beyond TermAl's API


async def generation(conn: Conn, scope_id: str) -> int:
    row = await one(
        conn, "SELECT generation FROM coordination_board_scopes WHERE scope_id = %s", (scope_id,)
    )
    return rules.checked_generation(None if row is None else row[0])


async def scopes(conn: Conn) -> list[BoardScope]:
    """Every scope with its generation and live/tombstoned counts, by scope id."""
    rows = await every(
        conn,
        "SELECT s.scope_id, s.generation, "
        "COUNT(e.value_json), "
        "COUNT(e.key) FILTER (WHERE e.value_json IS NULL), "
        "MAX(e.updated_at) "
        "FROM coordination_board_scopes AS s "
        "LEFT JOIN coordination_board_entries AS e ON e.scope_id = s.scope_id "
        "GROUP BY s.scope_id ORDER BY s.scope_id",
    )
    return [rules.scope_from_row(row) for row in rows]


async def generations(conn: Conn) -> dict[str, int]:
    rows = await every(conn, "SELECT scope_id, generation FROM coordination_board_scopes")
    return {str(row[0]): int(row[1]) for row in rows}


async def deleted_scopes(conn: Conn) -> list[tuple[str, str]]:
    rows = await every(
        conn,
        "SELECT scope_id, deleted_at FROM coordination_board_deleted_scopes ORDER BY scope_id",
    )
    return [(str(row[0]), str(row[1])) for row in rows]


async def entries(conn: Conn, scope_id: str, include_deleted: bool) -> list[BoardHead]:
    """Every head of a scope by key (tombstones too when asked), tolerant of bad values."""
    live_only = "" if include_deleted else " AND value_json IS NOT NULL"
    rows = await every(
        conn,
        f"SELECT {HEAD_COLUMNS} FROM coordination_board_entries "
        f"WHERE scope_id = %s{live_only} ORDER BY key",
        (scope_id,),
    )
    return [head_from_row(row, strict=False) for row in rows]


async def history(conn: Conn, scope_id: str, key: str) -> list[BoardHead]:
    """A key's retained earlier revisions, newest first (the head itself is not included)."""
    rows = await every(
        conn,
        f"SELECT {HEAD_COLUMNS} FROM coordination_board_history "
        "WHERE scope_id = %s AND key = %s ORDER BY revision DESC",
        (scope_id, key),
    )
    return [head_from_row(row, strict=False) for row in rows]
