"""Read-only queries behind the activity stream and the sessions view.

Every statement here reads TermAl's own tables and needs no index TermAl does not make:
messages are read newest-first by ``rowid`` (SQLite assigns rowids in
insertion order, so a keyset on it is a walk down the table's own b-tree and costs the
same on a million rows as on ten); participants and board entries are small tables read
whole, as is the board (bounded by TermAl's caps). Functions take a ``sqlite3.Connection`` inside one read snapshot
(:meth:`MailboxReader.activity` and friends run them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from termal_tui.core.models import CONTROL_TOPIC
from termal_tui.store.queries import NOT_CONTROL, as_optional_text, as_text

T = TypeVar("T")

# How much of a body a stream row carries (the preview is cut again for the screen).
PREVIEW_BYTES: Final = 400
# The traffic sparkline reads back at most this many messages (newest first).
TRAFFIC_SCAN_CAP: Final = 100_000


class MessageRow(NamedTuple):
    """One message as the activity stream shows it."""

    rowid: int
    message_id: str
    mailbox_id: str
    sequence: int
    sender_id: str
    sender_name: str
    target_id: str
    target_name: str
    created_at: str
    topic: str | None
    preview: str
    wake_state: str


class BoardRow(NamedTuple):
    """One revision of a board key (``deleted``: a tombstone)."""

    scope_id: str
    key: str
    revision: int
    deleted: bool
    author_id: str
    author_name: str
    updated_at: str


class ParticipantRow(NamedTuple):
    """One participant of one mailbox, with its cursor and the mailbox's head."""

    mailbox_id: str
    session_id: str
    display_name: str
    processed_through: int
    joined_at: str
    left_at: str | None


class SessionLoad(NamedTuple):
    """What is addressed to one session and not processed, over all its mailboxes."""

    session_id: str
    unread: int
    oldest_unread_at: str | None
    behind_mailboxes: int


_MESSAGE_COLUMNS: Final = (
    "rowid, id, mailbox_id, sequence, sender_session_id, sender_name, target_session_id, "
    f"target_name, created_at, topic, CAST(substr(body, 1, {PREVIEW_BYTES}) AS TEXT), "
    "notification_disposition"
)


def _message(row: Any) -> MessageRow:
    return MessageRow(
        int(row[0]),
        as_text(row[1]),
        as_text(row[2]),
        row[3] if type(row[3]) is int else 0,
        as_text(row[4]),
        as_text(row[5]),
        as_text(row[6]),
        as_text(row[7]),
        as_text(row[8]),
        as_optional_text(row[9]),
        as_text(row[10]),
        as_text(row[11]),
    )


def messages_before(
    db: sqlite3.Connection, before_rowid: int | None, limit: int
) -> list[MessageRow]:
    """The newest ``limit`` visible messages below ``before_rowid`` (None: the newest),
    newest first; control-plane rows (review results) are left out."""
    where = NOT_CONTROL.format(t="")
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC, "limit": limit}
    if before_rowid is not None:
        where += " AND rowid < :before"
        params["before"] = before_rowid
    sql = f"SELECT {_MESSAGE_COLUMNS} FROM mailbox_messages WHERE {where} ORDER BY rowid DESC LIMIT :limit"
    return [_message(row) for row in db.execute(sql, params)]


def messages_after(db: sqlite3.Connection, after_rowid: int, limit: int) -> list[MessageRow]:
    """Visible messages above ``after_rowid``, oldest first, at most ``limit``."""
    sql = (
        f"SELECT {_MESSAGE_COLUMNS} FROM mailbox_messages WHERE rowid > :after AND "
        f"{NOT_CONTROL.format(t='')} ORDER BY rowid LIMIT :limit"
    )
    params = {"ctl": CONTROL_TOPIC, "after": after_rowid, "limit": limit}
    return [_message(row) for row in db.execute(sql, params)]


def wake_states(db: sqlite3.Connection, first_rowid: int, last_rowid: int) -> dict[int, str]:
    """The notification state of every message with a rowid in ``first..=last``."""
    rows = db.execute(
        "SELECT rowid, notification_disposition FROM mailbox_messages WHERE rowid BETWEEN ? AND ?",
        (first_rowid, last_rowid),
    )
    return {int(rowid): as_text(state) for rowid, state in rows}


def board_revisions(db: sqlite3.Connection) -> list[BoardRow]:
    """Every revision the board still holds: each key's head (a tombstone for a deleted
    key) and the older revisions in its history. Both are bounded by TermAl's caps
    (512 live keys a project, a short history a key), so this is read whole."""
    sql = (
        "SELECT scope_id, key, revision, value_json IS NULL, author_session_id, author_name,"
        " updated_at FROM coordination_board_entries UNION ALL "
        "SELECT scope_id, key, revision, value_json IS NULL, author_session_id, author_name,"
        " updated_at FROM coordination_board_history"
    )
    return [
        BoardRow(
            as_text(scope),
            as_text(key),
            revision if type(revision) is int else 0,
            bool(deleted),
            as_text(author),
            as_text(name),
            as_text(at),
        )
        for scope, key, revision, deleted, author, name, at in db.execute(sql)
    ]


def participants(db: sqlite3.Connection) -> list[ParticipantRow]:
    """Every participant row of every mailbox (two per pair mailbox)."""
    rows = db.execute(
        "SELECT mailbox_id, session_id, display_name, processed_through, joined_at, left_at "
        "FROM mailbox_participants ORDER BY mailbox_id, session_id"
    )
    return [
        ParticipantRow(
            as_text(m),
            as_text(s),
            as_text(n),
            cursor if type(cursor) is int else 0,
            as_text(joined),
            as_optional_text(left),
        )
        for m, s, n, cursor, joined, left in rows
    ]


def session_loads(db: sqlite3.Connection) -> list[SessionLoad]:
    """Per session: visible messages addressed to it above its cursor in mailboxes it is
    still in, the time of the oldest of them, and in how many mailboxes it is behind."""
    sql = f"""
    SELECT p.session_id, COUNT(u.rowid), MIN(u.created_at), COUNT(DISTINCT u.mailbox_id)
    FROM mailbox_participants p
      LEFT JOIN mailbox_messages u
        ON u.mailbox_id = p.mailbox_id AND u.sequence > p.processed_through
       AND u.target_session_id = p.session_id AND {NOT_CONTROL.format(t="u.")}
    WHERE p.left_at IS NULL
    GROUP BY p.session_id ORDER BY p.session_id
    """
    return [
        SessionLoad(as_text(s), int(n or 0), as_optional_text(oldest), int(behind or 0))
        for s, n, oldest, behind in db.execute(sql, {"ctl": CONTROL_TOPIC})
    ]


def last_board_writes(db: sqlite3.Connection) -> dict[str, str]:
    """Per author session: the time of its newest board revision still in the history
    or on the board."""
    sql = (
        "SELECT author_session_id, MAX(updated_at) FROM ("
        " SELECT author_session_id, updated_at FROM coordination_board_history"
        " UNION ALL SELECT author_session_id, updated_at FROM coordination_board_entries)"
        " GROUP BY author_session_id"
    )
    return {as_text(a): as_text(t) for a, t in db.execute(sql)}


def recent_senders(db: sqlite3.Connection, cap: int = TRAFFIC_SCAN_CAP) -> list[tuple[str, str]]:
    """(sender session, created_at) of the newest ``cap`` visible messages, newest first:
    the raw material of each session's traffic sparkline."""
    sql = (
        "SELECT sender_session_id, created_at FROM mailbox_messages "
        f"WHERE {NOT_CONTROL.format(t='')} ORDER BY rowid DESC LIMIT :cap"
    )
    return [
        (as_text(s), as_text(t)) for s, t in db.execute(sql, {"ctl": CONTROL_TOPIC, "cap": cap})
    ]


def has_board(db: sqlite3.Connection) -> bool:
    """Whether this file has TermAl's board tables (files from before the board lack them)."""
    row = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'coordination_board_history'"
    ).fetchone()
    return row is not None


class ActivitySnapshot(NamedTuple):
    messages: list[MessageRow]
    board: list[BoardRow]
    participants: list[ParticipantRow]
    wake_states: dict[int, str]


class ActivityReads:
    """The activity and sessions reads, as methods of the read-only reader (mixed into
    :class:`~termal_tui.store.reader.MailboxReader`): each is one short read snapshot."""

    if TYPE_CHECKING:  # provided by the reader

        async def _snapshot(
            self, work: Callable[[sqlite3.Connection], T], single: bool = False
        ) -> T: ...

    async def activity_page(self, *, before_rowid: int | None, limit: int) -> list[MessageRow]:
        """Messages newest first below ``before_rowid`` (an older page)."""
        return await self._snapshot(
            lambda db: messages_before(db, before_rowid, limit), single=True
        )

    async def activity_snapshot(
        self,
        *,
        after_rowid: int | None,
        limit: int,
        wake_window: tuple[int, int] | None = None,
    ) -> ActivitySnapshot:
        """In one snapshot, so a cursor move and the message that moved it agree: the
        newest page of messages (``after_rowid`` None) or the ones above it (oldest
        first), the board's revisions, every participant and a window's wake states."""

        def work(db: sqlite3.Connection) -> ActivitySnapshot:
            if after_rowid is None:
                rows = messages_before(db, None, limit)
            else:
                rows = messages_after(db, after_rowid, limit)
            board = board_revisions(db) if has_board(db) else []
            states = wake_states(db, *wake_window) if wake_window else {}
            return ActivitySnapshot(rows, board, participants(db), states)

        return await self._snapshot(work)

    async def sessions_overview(
        self,
    ) -> tuple[list[ParticipantRow], list[SessionLoad], dict[str, str], list[tuple[str, str]]]:
        """Everything the sessions view shows but the notifiers, in one snapshot."""

        def work(
            db: sqlite3.Connection,
        ) -> tuple[list[ParticipantRow], list[SessionLoad], dict[str, str], list[tuple[str, str]]]:
            writes = last_board_writes(db) if has_board(db) else {}
            return participants(db), session_loads(db), writes, recent_senders(db)

        return await self._snapshot(work)
