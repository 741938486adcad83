"""The activity stream's and the sessions view's reads on PostgreSQL: the statements of
``store/activity.py`` with the same rows and records.

SQLite's ``rowid`` is the ``insertion_order`` identity column here. PostgreSQL hands
identity values out when a row is inserted, not when it commits: two appends to
different mailboxes commit in either order, so a row may become visible after one with
a higher number. A read of what is new therefore looks :data:`LATE_WINDOW` numbers back
as well (the activity model keeps the rows it already has by number and adds only the
ones it has not seen).
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from termal_tui.core.models import CONTROL_TOPIC
from termal_tui.store.activity import (
    PREVIEW_BYTES,
    TRAFFIC_SCAN_CAP,
    ActivitySnapshot,
    BoardRow,
    MessageRow,
    ParticipantRow,
    SessionLoad,
)
from termal_tui.store.errors import StorageError
from termal_tui.store.postgres.board.schema import board_tables
from termal_tui.store.postgres.connection import every
from termal_tui.store.postgres.queries import NOT_CONTROL
from termal_tui.store.postgres.schema import has_insertion_order
from termal_tui.store.schema import BOARD_TABLES

Conn = psycopg.AsyncConnection[Any]

# Numbers handed out this far below the newest one seen may still commit later (appends
# in flight on other connections when the stream last read).
LATE_WINDOW: Final = 256

NO_INSERTION_ORDER: Final = (
    "this PostgreSQL database was made before the activity stream could read it (its "
    "messages have no insertion_order); the next termal-tui writer to open it (any "
    "`termal-tui send`) adds it"
)

_MESSAGE_COLUMNS: Final = (
    "insertion_order, id, mailbox_id, sequence, sender_session_id, sender_name, "
    f"target_session_id, target_name, created_at, topic, left(body, {PREVIEW_BYTES}), "
    "notification_disposition"
)


def _message(row: Any) -> MessageRow:
    return MessageRow(
        int(row[0]),
        str(row[1]),
        str(row[2]),
        int(row[3]),
        str(row[4]),
        str(row[5]),
        str(row[6]),
        str(row[7]),
        str(row[8]),
        None if row[9] is None else str(row[9]),
        str(row[10]),
        str(row[11]),
    )


class InsertionOrder:
    """Whether the messages carry ``insertion_order``, asked once per reader: once it is
    there it stays (a writer adds it and nothing takes it away), so only a database
    still without it is asked again, on each read, until a writer has added it."""

    def __init__(self) -> None:
        self.present = False
        self.asked = 0  # catalog queries run

    async def __call__(self, conn: Conn) -> bool:
        if not self.present:
            self.asked += 1
            self.present = await has_insertion_order(conn)
        return self.present


async def _require_order(conn: Conn, order: InsertionOrder) -> None:
    if not await order(conn):
        raise StorageError(NO_INSERTION_ORDER)


async def messages_before(
    conn: Conn, before: int | None, limit: int, order: InsertionOrder
) -> list[MessageRow]:
    """The newest ``limit`` visible messages below ``before`` (None: the newest)."""
    await _require_order(conn, order)
    where = NOT_CONTROL.format(t="")
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC, "limit": limit}
    if before is not None:
        where += " AND insertion_order < %(before)s"
        params["before"] = before
    sql = (
        f"SELECT {_MESSAGE_COLUMNS} FROM mailbox_messages WHERE {where} "
        "ORDER BY insertion_order DESC LIMIT %(limit)s"
    )
    return [_message(row) for row in await every(conn, sql, params)]


async def messages_after(
    conn: Conn, after: int, limit: int, order: InsertionOrder
) -> list[MessageRow]:
    """Visible messages numbered above ``after`` (and the :data:`LATE_WINDOW` below it),
    oldest first, at most ``limit`` above ``after``."""
    await _require_order(conn, order)
    sql = (
        f"SELECT {_MESSAGE_COLUMNS} FROM mailbox_messages WHERE insertion_order > %(floor)s "
        f"AND {NOT_CONTROL.format(t='')} ORDER BY insertion_order LIMIT %(limit)s"
    )
    floor = max(0, after - LATE_WINDOW)
    params = {"ctl": CONTROL_TOPIC, "floor": floor, "limit": limit + (after - floor)}
    return [_message(row) for row in await every(conn, sql, params)]


async def wake_states(conn: Conn, first: int, last: int) -> dict[int, str]:
    rows = await every(
        conn,
        "SELECT insertion_order, notification_disposition FROM mailbox_messages "
        "WHERE insertion_order BETWEEN %s AND %s",
        (first, last),
    )
    return {int(number): str(state) for number, state in rows}


async def has_board(conn: Conn) -> bool:
    return await board_tables(conn) >= set(BOARD_TABLES)


async def board_revisions(conn: Conn) -> list[BoardRow]:
    sql = (
        "SELECT scope_id, key, revision, value_json IS NULL, author_session_id, author_name,"
        " updated_at FROM coordination_board_entries UNION ALL "
        "SELECT scope_id, key, revision, value_json IS NULL, author_session_id, author_name,"
        " updated_at FROM coordination_board_history"
    )
    return [
        BoardRow(str(s), str(k), int(r), bool(d), str(a), str(n), str(t))
        for s, k, r, d, a, n, t in await every(conn, sql)
    ]


async def participants(conn: Conn) -> list[ParticipantRow]:
    rows = await every(
        conn,
        "SELECT mailbox_id, session_id, display_name, processed_through, joined_at, left_at "
        "FROM mailbox_participants ORDER BY mailbox_id, session_id",
    )
    return [
        ParticipantRow(str(m), str(s), str(n), int(c), str(j), None if left is None else str(left))
        for m, s, n, c, j, left in rows
    ]


async def session_loads(conn: Conn) -> list[SessionLoad]:
    sql = f"""
    SELECT p.session_id, COUNT(u.id), MIN(u.created_at), COUNT(DISTINCT u.mailbox_id)
    FROM mailbox_participants p
      LEFT JOIN mailbox_messages u
        ON u.mailbox_id = p.mailbox_id AND u.sequence > p.processed_through
       AND u.target_session_id = p.session_id AND {NOT_CONTROL.format(t="u.")}
    WHERE p.left_at IS NULL
    GROUP BY p.session_id ORDER BY p.session_id
    """
    return [
        SessionLoad(str(s), int(n or 0), None if oldest is None else str(oldest), int(b or 0))
        for s, n, oldest, b in await every(conn, sql, {"ctl": CONTROL_TOPIC})
    ]


async def last_board_writes(conn: Conn) -> dict[str, str]:
    sql = (
        "SELECT author_session_id, MAX(updated_at) FROM ("
        " SELECT author_session_id, updated_at FROM coordination_board_history"
        " UNION ALL SELECT author_session_id, updated_at FROM coordination_board_entries) w"
        " GROUP BY author_session_id"
    )
    return {str(a): str(t) for a, t in await every(conn, sql)}


async def recent_senders(
    conn: Conn, order: InsertionOrder, cap: int = TRAFFIC_SCAN_CAP
) -> list[tuple[str, str]]:
    """(sender, created_at) of the newest ``cap`` visible messages, newest first (by
    insertion order where the database has it, else by time)."""
    column = "insertion_order" if await order(conn) else "created_at"
    sql = (
        "SELECT sender_session_id, created_at FROM mailbox_messages "
        f"WHERE {NOT_CONTROL.format(t='')} ORDER BY {column} DESC LIMIT %(cap)s"
    )
    rows = await every(conn, sql, {"ctl": CONTROL_TOPIC, "cap": cap})
    return [(str(s), str(t)) for s, t in rows]


async def activity_snapshot(
    conn: Conn,
    after: int | None,
    limit: int,
    wake_window: tuple[int, int] | None,
    order: InsertionOrder,
) -> ActivitySnapshot:
    if after is None:
        rows = await messages_before(conn, None, limit, order)
    else:
        rows = await messages_after(conn, after, limit, order)
    board = await board_revisions(conn) if await has_board(conn) else []
    states = await wake_states(conn, *wake_window) if wake_window else {}
    return ActivitySnapshot(rows, board, await participants(conn), states)


async def sessions_overview(
    conn: Conn, order: InsertionOrder
) -> tuple[list[ParticipantRow], list[SessionLoad], dict[str, str], list[tuple[str, str]]]:
    writes = await last_board_writes(conn) if await has_board(conn) else {}
    senders = await recent_senders(conn, order)
    return await participants(conn), await session_loads(conn), writes, senders
