"""The read SQL on PostgreSQL, shared by its reader and its writer: message rows,
visibility, authorization, summaries. The SQLite twin is ``store/queries.py``; rows come
back in the same shapes and become records through the same functions there
(:func:`~termal_tui.store.queries.messages_from_rows`,
:func:`~termal_tui.store.queries.build_summaries`), so both engines build identical
records and raise identical errors.

PostgreSQL's columns are typed, so every row is "clean" (the SQLite salvage of ill-typed
rows written by other programs has nothing to do here).
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from termal_tui.core.models import CONTROL_TOPIC, ChangeToken, MailboxMessage, MailboxSummary
from termal_tui.store import rules
from termal_tui.store.errors import NotFoundError
from termal_tui.store.postgres.connection import every, one
from termal_tui.store.queries import (
    MAX_SEQUENCE,
    build_summaries,
    group_participants,
    messages_from_rows,
    preview_of,
)

Conn = psycopg.AsyncConnection[Any]

_PREVIEW_PREFIX_CHARS: Final = 1024

NOT_CONTROL: Final = "COALESCE({t}topic, '') <> %(ctl)s"

UNREAD_FOR: Final = (
    "SELECT COUNT(*) FROM mailbox_messages unread "
    "WHERE unread.mailbox_id = {mailbox} AND unread.sequence > {cursor} "
    "AND unread.target_session_id = {session} AND " + NOT_CONTROL.format(t="unread.")
)

# Columns 0-15 as on SQLite, then the unreadable reason (NULL), the clean flag (TRUE:
# PostgreSQL's columns are typed) and the row key.
MESSAGE_COLUMNS: Final = (
    "id, mailbox_id, sequence, sender_session_id, sender_name, target_session_id, "
    "target_name, created_at, class, topic, state_stamp, body, idempotency_key, "
    "unread_depth_at_append, notification_disposition, dispatch_outcome, NULL, 1, id"
)


def visibility(viewer: str | None) -> tuple[str, dict[str, Any]]:
    """TermAl hides a control row only from its addressee; the human view hides all."""
    if viewer is None:
        return NOT_CONTROL.format(t=""), {"ctl": CONTROL_TOPIC}
    return (
        "NOT (target_session_id = %(viewer)s AND COALESCE(topic, '') = %(ctl)s)",
        {"ctl": CONTROL_TOPIC, "viewer": viewer},
    )


# ---------------------------------------------------------------- authorization


async def require_participant(conn: Conn, mailbox_id: str, session_id: str) -> None:
    row = await one(
        conn,
        "SELECT 1 FROM mailbox_participants "
        "WHERE mailbox_id = %s AND session_id = %s AND left_at IS NULL",
        (mailbox_id, session_id),
    )
    if row is None:
        raise NotFoundError(rules.NOT_PARTICIPANT)


async def authorize(conn: Conn, mailbox_id: str, viewer: str | None) -> None:
    if viewer is not None:
        await require_participant(conn, mailbox_id, viewer)
    elif await one(conn, "SELECT 1 FROM mailboxes WHERE id = %s", (mailbox_id,)) is None:
        raise NotFoundError(f"mailbox {mailbox_id} not found")


# --------------------------------------------------------------------- messages

_PARTICIPATING: Final = (
    " AND EXISTS (SELECT 1 FROM mailbox_participants me WHERE "
    "me.mailbox_id = mailbox_messages.mailbox_id "
    "AND me.session_id = %(viewer)s AND me.left_at IS NULL)"
)


def _message_query(where: str, order: str, per_session: bool) -> str:
    predicate, _ = visibility("" if per_session else None)
    folded = _PARTICIPATING if per_session else ""
    return (
        f"SELECT {MESSAGE_COLUMNS} FROM mailbox_messages "
        f"WHERE {where} AND {predicate}{folded} {order}"
    )


async def _messages(conn: Conn, sql: str, params: dict[str, Any]) -> list[MailboxMessage]:
    return messages_from_rows(await every(conn, sql, params))


async def fetch_range(
    conn: Conn, mailbox_id: str, after_sequence: int, limit: int, viewer: str | None
) -> list[MailboxMessage]:
    sql = _message_query(
        "mailbox_id = %(mid)s AND sequence > %(after)s",
        "ORDER BY sequence LIMIT %(limit)s",
        viewer is not None,
    )
    params = visibility(viewer)[1] | {"mid": mailbox_id, "after": after_sequence, "limit": limit}
    found = await _messages(conn, sql, params)
    if not found:
        await authorize(conn, mailbox_id, viewer)
    return found


async def fetch_newest_first(
    conn: Conn, mailbox_id: str, before_sequence: int | None, limit: int, viewer: str | None
) -> list[MailboxMessage]:
    sql = _message_query(
        "mailbox_id = %(mid)s AND sequence < %(before)s",
        "ORDER BY sequence DESC LIMIT %(limit)s",
        viewer is not None,
    )
    before = MAX_SEQUENCE if before_sequence is None else before_sequence
    params = visibility(viewer)[1] | {"mid": mailbox_id, "before": before, "limit": limit}
    found = await _messages(conn, sql, params)
    if not found:
        await authorize(conn, mailbox_id, viewer)
    return found


async def fetch_hidden(
    conn: Conn, mailbox_id: str, first: int, last: int, limit: int
) -> list[MailboxMessage]:
    sql = (
        f"SELECT {MESSAGE_COLUMNS} FROM mailbox_messages "
        "WHERE mailbox_id = %(mid)s AND sequence BETWEEN %(first)s AND %(last)s "
        "AND COALESCE(topic, '') = %(ctl)s ORDER BY sequence DESC LIMIT %(limit)s"
    )
    params = {"ctl": CONTROL_TOPIC, "mid": mailbox_id, "first": first, "last": last}
    return await _messages(conn, sql, params | {"limit": limit})


async def fetch_message(conn: Conn, message_id: str, viewer: str | None) -> MailboxMessage:
    params = visibility(viewer)[1] | {"id": message_id}
    found = await _messages(conn, _message_query("id = %(id)s", "", viewer is not None), params)
    if found:
        return found[0]
    found = await _messages(conn, _message_query("id = %(id)s", "", False), params)
    if not found or (
        viewer is not None and found[0].is_control and found[0].target_session_id == viewer
    ):
        raise NotFoundError("mailbox message not found")
    if viewer is not None:
        await require_participant(conn, found[0].mailbox_id, viewer)
    raise NotFoundError("mailbox message not found")


# -------------------------------------------------------------------- summaries

_LATEST_VISIBLE: Final = f"""
  JOIN LATERAL (
    SELECT candidate.* FROM mailbox_messages candidate
    WHERE candidate.mailbox_id = m.id AND {NOT_CONTROL.format(t="candidate.")}
    ORDER BY candidate.sequence DESC LIMIT 1
  ) latest ON TRUE
"""
_SUMMARY_TAIL: Final = (
    f"left(latest.body, {_PREVIEW_PREFIX_CHARS}), octet_length(latest.body), "
    "latest.created_at, latest.id"
)
_FILTER: Final = "WHERE (%(mid)s::text IS NULL OR m.id = %(mid)s)"
_ORDER: Final = "ORDER BY latest.created_at DESC, m.id"

# A session's view carries its mailboxes' participants in the same statement (one trip
# fewer on every listing and acknowledgement); the participants' own unread counts are
# the human view's only.
_PARTICIPANTS_JSON: Final = """,
  (SELECT json_agg(json_build_array(p.session_id, p.display_name, p.processed_through,
     p.left_at) ORDER BY p.session_id)
   FROM mailbox_participants p WHERE p.mailbox_id = m.id)"""

_SESSION_SUMMARIES: Final = f"""
SELECT m.id, latest.sequence,
  ({UNREAD_FOR.format(mailbox="m.id", cursor="mine.processed_through", session="%(viewer)s")}),
  {_SUMMARY_TAIL}{_PARTICIPANTS_JSON}
FROM mailboxes m
  JOIN mailbox_participants mine
    ON mine.mailbox_id = m.id AND mine.session_id = %(viewer)s AND mine.left_at IS NULL
{_LATEST_VISIBLE}
{_FILTER}
"""

_HUMAN_SUMMARIES: Final = f"""
SELECT m.id, latest.sequence, 0, {_SUMMARY_TAIL}
FROM mailboxes m
{_LATEST_VISIBLE}
{_FILTER}
"""

_KEYSET: Final = (
    " AND (latest.created_at < %(after_at)s"
    " OR (latest.created_at = %(after_at)s AND m.id > %(after_id)s))"
)
# PostgreSQL's lower() stands in for Python's casefold (they differ on a few letters,
# such as ß).
_MATCHING: Final = (
    " AND (strpos(lower(m.id), %(needle)s) > 0 OR EXISTS (SELECT 1 FROM"
    " mailbox_participants fp WHERE fp.mailbox_id = m.id AND"
    " (strpos(lower(fp.display_name), %(needle)s) > 0"
    " OR strpos(lower(fp.session_id), %(needle)s) > 0)))"
)

_PARTICIPANTS: Final = (
    "SELECT p.mailbox_id, p.session_id, p.display_name, p.processed_through, p.left_at, {unread} "
    "FROM mailbox_participants p WHERE p.mailbox_id = ANY(%(ids)s) "
    "ORDER BY p.mailbox_id, p.session_id"
)
_PARTICIPANT_UNREAD: Final = (
    "(SELECT COUNT(*) FROM mailbox_messages u WHERE u.mailbox_id = p.mailbox_id "
    "AND u.sequence > p.processed_through AND u.target_session_id = p.session_id AND "
    + NOT_CONTROL.format(t="u.")
    + ")"
)


async def summaries(
    conn: Conn,
    viewer: str | None,
    mailbox_id: str | None = None,
    limit: int | None = None,
    after: tuple[str, str] | None = None,
    matching: str | None = None,
) -> list[MailboxSummary]:
    """As :func:`termal_tui.store.queries.summaries`, on PostgreSQL."""
    sql = _HUMAN_SUMMARIES if viewer is None else _SESSION_SUMMARIES
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC, "mid": mailbox_id}
    if viewer is not None:
        params["viewer"] = viewer
    if after is not None:
        sql += _KEYSET
        params |= {"after_at": after[0], "after_id": after[1]}
    if matching:
        sql += _MATCHING
        params["needle"] = matching.casefold()
    sql += f" {_ORDER}"
    if limit is not None:
        sql += " LIMIT %(limit)s"
        params["limit"] = limit
    rows = await every(conn, sql, params)
    if viewer is None:
        return await _build(conn, rows, human=True)
    participants = [
        (row[0], session, name, cursor, left_at, 0)
        for row in rows
        for session, name, cursor, left_at in row[-1] or ()
    ]
    return await _build(conn, [row[:-1] for row in rows], human=False, participants=participants)


async def _build(
    conn: Conn, rows: list[Any], *, human: bool, participants: list[Any] | None = None
) -> list[MailboxSummary]:
    ids = [row[0] for row in rows]
    by_mailbox: dict[str, Any] = {}
    unread: dict[str, int] = {}
    if participants is not None:
        by_mailbox, unread = group_participants(participants, set(ids))
    elif ids:
        found = await every(
            conn,
            _PARTICIPANTS.format(unread=_PARTICIPANT_UNREAD if human else "0"),
            {"ids": ids, "ctl": CONTROL_TOPIC},
        )
        by_mailbox, unread = group_participants(found, set(ids))
    # A preview whose prefix holds too few visible characters reads the whole body.
    needed: list[Any] = []
    for _, _, _, prefix, length, _, key in rows:
        if _needs_whole_body(prefix, length):
            needed.append(key)
    wholes: dict[Any, object] = {}
    for key in needed:
        row = await one(conn, "SELECT body FROM mailbox_messages WHERE id = %s", (key,))
        wholes[key] = None if row is None else row[0]
    return build_summaries(
        rows,
        by_mailbox,
        unread,
        human=human,
        preview=lambda key, prefix, length: preview_of(prefix, length, lambda: wholes.get(key)),
    )


def _needs_whole_body(prefix: object, length: object) -> bool:
    asked: list[bool] = []

    def whole() -> object:
        asked.append(True)
        return None

    preview_of(prefix, length, whole)
    return bool(asked)


async def totals(conn: Conn, viewer: str | None) -> tuple[int, int]:
    """How many mailboxes :func:`summaries` lists, and their unread sum."""
    visible = f"EXISTS (SELECT 1 FROM mailbox_messages v WHERE v.mailbox_id = m.id AND {NOT_CONTROL.format(t='v.')})"
    if viewer is None:
        sql = (
            f"SELECT (SELECT COUNT(*) FROM mailboxes m WHERE {visible}), "
            f"(SELECT COALESCE(SUM({_PARTICIPANT_UNREAD}), 0) FROM mailbox_participants p)"
        )
        row = await one(conn, sql, {"ctl": CONTROL_TOPIC})
    else:
        unread = UNREAD_FOR.format(
            mailbox="m.id", cursor="mine.processed_through", session="%(viewer)s"
        )
        sql = (
            f"SELECT COUNT(*), COALESCE(SUM(({unread})), 0) FROM mailboxes m "
            "JOIN mailbox_participants mine ON mine.mailbox_id = m.id "
            f"AND mine.session_id = %(viewer)s AND mine.left_at IS NULL WHERE {visible}"
        )
        row = await one(conn, sql, {"ctl": CONTROL_TOPIC, "viewer": viewer})
    return int(row[0] or 0), int(row[1] or 0)


async def head(conn: Conn, mailbox_id: str, viewer: str | None) -> MailboxSummary | None:
    """Participants, latest visible sequence and preview without the unread count."""
    await authorize(conn, mailbox_id, viewer)
    sql = f"SELECT m.id, latest.sequence, 0, {_SUMMARY_TAIL} FROM mailboxes m {_LATEST_VISIBLE} WHERE m.id = %(mid)s"
    rows = await every(conn, sql, {"ctl": CONTROL_TOPIC, "mid": mailbox_id})
    return (await _build(conn, rows, human=False))[0] if rows else None


async def probe(conn: Conn, mailbox_id: str) -> ChangeToken | None:
    """A token that moves with every append, cursor or departure of one mailbox."""
    row = await one(
        conn,
        "SELECT m.next_sequence, (SELECT string_agg(p.session_id || ':' || p.processed_through "
        "|| ':' || COALESCE(p.left_at, ''), ',' ORDER BY p.session_id) "
        "FROM mailbox_participants p WHERE p.mailbox_id = m.id) "
        "FROM mailboxes m WHERE m.id = %s",
        (mailbox_id,),
    )
    if row is None:
        return None
    return ChangeToken(int(row[0]), row[1] or "")


async def session_ids(conn: Conn) -> list[str]:
    rows = await every(
        conn, "SELECT DISTINCT session_id FROM mailbox_participants ORDER BY session_id"
    )
    return [str(row[0]) for row in rows]


async def session_presence(conn: Conn, session_id: str) -> tuple[int, int]:
    row = await one(
        conn,
        "SELECT COUNT(*) FILTER (WHERE left_at IS NULL), "
        "COUNT(*) FILTER (WHERE left_at IS NOT NULL) "
        "FROM mailbox_participants WHERE session_id = %s",
        (session_id,),
    )
    return int(row[0] or 0), int(row[1] or 0)


async def data_version(conn: Conn) -> int:
    """A number that moves whenever anything is written to the server (its WAL insert
    position): the PostgreSQL stand-in for SQLite's ``data_version``. It never stays
    still after a commit to this database; it may also move for the server's own
    housekeeping or for writes elsewhere on it (a poll then reads once more for
    nothing). Any role may ask. On a standby (a read replica, where a viewer may well
    read) it is the position replayed so far."""
    row = await one(
        conn,
        "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
        "ELSE pg_current_wal_insert_lsn() END - '0/0')::bigint",
    )
    return int(row[0])


async def count_matching(conn: Conn, viewer: str | None, needle: str) -> int:
    """How many mailboxes :func:`summaries` lists with ``matching=needle``."""
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC, "needle": needle.casefold()}
    mine = ""
    if viewer is not None:
        params["viewer"] = viewer
        mine = (
            "JOIN mailbox_participants mine ON mine.mailbox_id = m.id"
            " AND mine.session_id = %(viewer)s AND mine.left_at IS NULL "
        )
    sql = (
        f"SELECT COUNT(*) FROM mailboxes m {mine}WHERE EXISTS (SELECT 1 FROM "
        f"mailbox_messages v WHERE v.mailbox_id = m.id AND {NOT_CONTROL.format(t='v.')})"
        f"{_MATCHING}"
    )
    row = await one(conn, sql, params)
    return int(row[0] or 0)


async def search_chunk(
    conn: Conn, mailbox_id: str, needle: str, before: int, scan: int, viewer: str | None
) -> tuple[list[MailboxMessage], int | None]:
    """As :func:`termal_tui.store.queries.search_chunk`: visible rows below ``before``
    whose body or topic holds ``needle`` (ASCII case folded: ``lower()`` of a
    ``COLLATE "C"`` column folds only ASCII, as SQLite's does), scanning at most ``scan``
    rows; the matches newest first and the lowest sequence scanned (None: the start)."""
    bounds = await one(
        conn,
        "SELECT MIN(sequence), COUNT(*) FROM (SELECT sequence FROM mailbox_messages "
        "WHERE mailbox_id = %s AND sequence < %s ORDER BY sequence DESC LIMIT %s) s",
        (mailbox_id, before, scan),
    )
    lowest, scanned = bounds
    if not scanned:
        return [], None
    sql = _message_query(
        "mailbox_id = %(mid)s AND sequence < %(before)s AND sequence >= %(lowest)s "
        "AND (strpos(lower(body), %(needle)s) > 0 "
        "OR strpos(lower(COALESCE(topic, '')), %(needle)s) > 0)",
        "ORDER BY sequence DESC",
        viewer is not None,
    )
    params = visibility(viewer)[1] | {
        "mid": mailbox_id,
        "before": before,
        "lowest": lowest,
        "needle": needle.lower(),
    }
    matches = await _messages(conn, sql, params)
    return matches, (int(lowest) if scanned == scan else None)
