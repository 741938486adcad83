"""SQL shared by the reader and the writer: message rows, visibility, summaries.

Every function is synchronous and runs on the connection's own thread inside the
caller's transaction (see :func:`termal_tui.store.connection.run`), so one store
call is one thread hop and the counts and rows it returns describe one snapshot.
``viewer=None`` is the human view (control rows hidden everywhere, unread counted
against each message's own target); ``viewer=session_id`` is exactly TermAl's
per-session route semantics.

Rows written by other programs are untrusted: a row whose columns do not have the
types TermAl writes is salvaged (text decoded, never an exception) and, if it
cannot be shown as a message, marked ``unreadable`` with a reason instead of
failing the whole read.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Final

from termal_tui.core.formats import PREVIEW_CHARS, preview
from termal_tui.core.models import (
    CONTROL_TOPIC,
    ChangeToken,
    MailboxMessage,
    MailboxParticipant,
    MailboxSummary,
    trusted,
)
from termal_tui.store import rules
from termal_tui.store.errors import NotFoundError

MAX_SEQUENCE: Final = 2**63 - 1
_PREVIEW_PREFIX_BYTES: Final = 1024

# ---------------------------------------------------------------- SQL fragments
# Each is written once and reused by the reader, the writer and the summaries.

NOT_CONTROL: Final = "COALESCE({t}topic, '') != :ctl"
"""Visible-to-everyone predicate (``{t}`` is a table prefix such as ``"unread."``)."""

UNREAD_FOR: Final = (
    "SELECT COUNT(*) FROM mailbox_messages unread "
    "WHERE unread.mailbox_id = {mailbox} AND unread.sequence > {cursor} "
    "AND unread.target_session_id = {session} AND " + NOT_CONTROL.format(t="unread.")
)
"""Unread rows addressed to one participant above its cursor (TermAl's count)."""

_BASE_COLUMNS: Final = (
    "id, mailbox_id, sequence, sender_session_id, sender_name, target_session_id, "
    "target_name, created_at, class, topic, state_stamp, body, idempotency_key, "
    "unread_depth_at_append, notification_disposition"
)
# One flag computed by SQLite: every column has the type TermAl writes. Rows with
# the flag set are built without re-validation (the hot path).
_CLEAN: Final = (
    "(typeof(id) = 'text' AND typeof(mailbox_id) = 'text' AND typeof(sequence) = 'integer' "
    "AND typeof(sender_session_id) = 'text' AND typeof(sender_name) = 'text' "
    "AND typeof(target_session_id) = 'text' AND typeof(target_name) = 'text' "
    "AND typeof(created_at) = 'text' AND typeof(class) = 'text' "
    "AND typeof(topic) IN ('text', 'null') AND typeof(state_stamp) IN ('text', 'null') "
    "AND typeof(body) = 'text' AND typeof(idempotency_key) = 'text' "
    "AND typeof(unread_depth_at_append) = 'integer' "
    "AND typeof(notification_disposition) = 'text' {outcome_check})"
)
_FIELDS: Final = (
    "id",
    "mailbox_id",
    "sequence",
    "sender_session_id",
    "sender_name",
    "target_session_id",
    "target_name",
    "created_at",
    "class_",
    "topic",
    "state_stamp",
    "body",
    "idempotency_key",
    "unread_depth_at_append",
    "notification_state",
    "dispatch_outcome",
    "unreadable",
)
_OPTIONAL_TEXT: Final = frozenset({"topic", "state_stamp", "dispatch_outcome"})
_INTEGER: Final = frozenset({"sequence", "unread_depth_at_append"})


def message_columns(has_dispatch_outcome: bool) -> str:
    if has_dispatch_outcome:
        tail = "dispatch_outcome"
        check = "AND typeof(dispatch_outcome) IN ('text', 'null')"
    else:
        tail, check = "NULL AS dispatch_outcome", ""
    # Column 16 is the ``unreadable`` reason (NULL for a trusted row), 17 the type flag.
    return f"{_BASE_COLUMNS}, {tail}, NULL, {_CLEAN.format(outcome_check=check)}, rowid"


def visibility(viewer: str | None) -> tuple[str, dict[str, Any]]:
    """SQL predicate hiding control-plane rows from this viewer.

    TermAl hides a control row only from the session it is addressed to; the
    human view hides every control row.
    """
    if viewer is None:
        return NOT_CONTROL.format(t=""), {"ctl": CONTROL_TOPIC}
    return (
        "NOT (target_session_id = :viewer AND COALESCE(topic, '') = :ctl)",
        {"ctl": CONTROL_TOPIC, "viewer": viewer},
    )


# ------------------------------------------------------------- untrusted values


def as_text(value: object) -> str:
    """Any stored value as text: BLOBs decode, invalid bytes show as ``\\xNN``, never raise."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return "" if value is None else str(value)


def as_optional_text(value: object) -> str | None:
    return None if value is None else as_text(value)


def _complete_utf8_prefix(data: bytes) -> bytes:
    """Drop a multi-byte character cut in half at the end of a byte prefix."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead byte
        width = 2 if byte >= 0xC0 else 1
        width = 3 if byte >= 0xE0 else width
        width = 4 if byte >= 0xF0 else width
        return data[:-back] if width > back else data
    return data


def fetch_messages(db: sqlite3.Connection, sql: str, params: Any) -> list[MailboxMessage]:
    """Rows as messages; trusted rows (SQLite's type flag) are built without re-validation."""
    return messages_from_rows(db.execute(sql, params).fetchall())


def messages_from_rows(rows: list[Any]) -> list[MailboxMessage]:
    """Rows of :func:`message_columns`'s shape (on either engine: columns 0-15, the
    ``unreadable`` reason, the clean-types flag, a row key) as messages."""
    return [
        trusted(MailboxMessage, dict(zip(_FIELDS, row, strict=False)))
        if row[17] == 1
        else _salvage(row)
        for row in rows
    ]


def _salvage(row: Any) -> MailboxMessage:
    """Build what can be shown of an ill-typed row; ``unreadable`` says why it is not a message."""
    values: dict[str, Any] = {}
    fatal: list[str] = []
    for name, value in zip(_FIELDS[:16], row[:16], strict=True):
        if name in _INTEGER:
            if isinstance(value, int) and not isinstance(value, bool):
                values[name] = value
            elif isinstance(value, float) and value.is_integer():
                values[name] = int(value)
            else:
                # A REAL sequence keeps its place in the thread (floor); anything else
                # sorts below every row.
                placed = int(value) if isinstance(value, float) and math.isfinite(value) else -1
                values[name] = placed if name == "sequence" else 0
                if name == "sequence":
                    shown = "NULL" if value is None else repr(as_text(value)[:40])
                    fatal.append(f"sequence {shown} is not an integer")
        elif name in _OPTIONAL_TEXT:
            values[name] = as_optional_text(value)
        else:
            values[name] = as_text(value)
    if not values["id"]:
        values["id"] = f"unreadable-rowid-{row[18]}"
        fatal.append("the message id is missing")
    values["unreadable"] = "; ".join(fatal) if fatal else None
    return trusted(MailboxMessage, values)


# -------------------------------------------------------------- authorization


def require_participant(db: sqlite3.Connection, mailbox_id: str, session_id: str) -> None:
    row = db.execute(
        "SELECT 1 FROM mailbox_participants "
        "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL",
        (mailbox_id, session_id),
    ).fetchone()
    if row is None:
        raise NotFoundError(rules.NOT_PARTICIPANT)


def require_mailbox(db: sqlite3.Connection, mailbox_id: str) -> None:
    if db.execute("SELECT 1 FROM mailboxes WHERE id = ?", (mailbox_id,)).fetchone() is None:
        raise NotFoundError(f"mailbox {mailbox_id} not found")


def authorize(db: sqlite3.Connection, mailbox_id: str, viewer: str | None) -> None:
    if viewer is None:
        require_mailbox(db, mailbox_id)
    else:
        require_participant(db, mailbox_id, viewer)


# ------------------------------------------------------------------- messages


# The session's participation, folded into a message query so an authorized read is
# one statement (its own snapshot, no BEGIN/ROLLBACK); an empty result is then
# explained by ``authorize``.
_PARTICIPATING: Final = (
    " AND EXISTS (SELECT 1 FROM mailbox_participants me WHERE me.mailbox_id = {mailbox} "
    "AND me.session_id = :viewer AND me.left_at IS NULL)"
)


@functools.lru_cache(maxsize=64)
def _message_query(where: str, order: str, per_session: bool, outcome: bool) -> str:
    predicate, _ = visibility(":viewer" if per_session else None)
    folded = _PARTICIPATING.format(mailbox="mailbox_messages.mailbox_id") if per_session else ""
    return (
        f"SELECT {message_columns(outcome)} FROM mailbox_messages "
        f"WHERE {where} AND {predicate}{folded} {order}"
    )


def _authorized_rows(
    db: sqlite3.Connection, sql: str, params: dict[str, Any], mailbox_id: str, viewer: str | None
) -> list[MailboxMessage]:
    rows = fetch_messages(db, sql, params)
    if not rows:
        authorize(db, mailbox_id, viewer)
    return rows


def fetch_range(
    db: sqlite3.Connection,
    mailbox_id: str,
    after_sequence: int,
    limit: int,
    viewer: str | None,
    has_dispatch_outcome: bool,
) -> list[MailboxMessage]:
    """TermAl's read: ascending above ``after_sequence``; NotFoundError if not authorized."""
    sql = _message_query(
        "mailbox_id = :mid AND sequence > :after",
        "ORDER BY sequence LIMIT :limit",
        viewer is not None,
        has_dispatch_outcome,
    )
    params = visibility(viewer)[1] | {"mid": mailbox_id, "after": after_sequence, "limit": limit}
    return _authorized_rows(db, sql, params, mailbox_id, viewer)


def fetch_newest_first(
    db: sqlite3.Connection,
    mailbox_id: str,
    before_sequence: int | None,
    limit: int,
    viewer: str | None,
    has_dispatch_outcome: bool,
) -> list[MailboxMessage]:
    """Up to ``limit`` visible rows below ``before_sequence``, newest first (keyset)."""
    sql = _message_query(
        "mailbox_id = :mid AND sequence < :before",
        "ORDER BY sequence DESC LIMIT :limit",
        viewer is not None,
        has_dispatch_outcome,
    )
    before = MAX_SEQUENCE if before_sequence is None else before_sequence
    params = visibility(viewer)[1] | {"mid": mailbox_id, "before": before, "limit": limit}
    return _authorized_rows(db, sql, params, mailbox_id, viewer)


def fetch_hidden(
    db: sqlite3.Connection,
    mailbox_id: str,
    first: int,
    last: int,
    limit: int,
    has_dispatch_outcome: bool,
) -> list[MailboxMessage]:
    """The control-plane rows (structured review results) between ``first`` and
    ``last``, newest first: what the views hide, read only when a person asks."""
    sql = (
        f"SELECT {message_columns(has_dispatch_outcome)} FROM mailbox_messages "
        "WHERE mailbox_id = :mid AND sequence BETWEEN :first AND :last "
        "AND COALESCE(topic, '') = :ctl ORDER BY sequence DESC LIMIT :limit"
    )
    params = {"ctl": CONTROL_TOPIC, "mid": mailbox_id, "first": first, "last": last}
    return fetch_messages(db, sql, params | {"limit": limit})


def fetch_message(
    db: sqlite3.Connection, message_id: str, viewer: str | None, has_dispatch_outcome: bool
) -> MailboxMessage:
    params = visibility(viewer)[1] | {"id": message_id}
    rows = fetch_messages(
        db, _message_query("id = :id", "", viewer is not None, has_dispatch_outcome), params
    )
    if rows:
        return rows[0]
    # Say why: no such visible message, or not a participant of its mailbox.
    rows = fetch_messages(db, _message_query("id = :id", "", False, has_dispatch_outcome), params)
    if not rows or (
        viewer is not None and rows[0].is_control and rows[0].target_session_id == viewer
    ):
        raise NotFoundError("mailbox message not found")
    if viewer is not None:
        require_participant(db, rows[0].mailbox_id, viewer)
    raise NotFoundError("mailbox message not found")


def search_chunk(
    db: sqlite3.Connection,
    mailbox_id: str,
    needle: str,
    before: int,
    scan: int,
    viewer: str | None,
    has_dispatch_outcome: bool,
) -> tuple[list[MailboxMessage], int | None]:
    """Visible rows below ``before`` whose body or topic contains ``needle`` (ASCII case
    folded), looking at no more than ``scan`` rows; returns the matches (newest first) and
    the lowest sequence scanned (None when the start of the mailbox was reached)."""
    bounds = db.execute(
        "SELECT MIN(sequence), COUNT(*) FROM (SELECT sequence FROM mailbox_messages "
        "WHERE mailbox_id = ? AND sequence < ? ORDER BY sequence DESC LIMIT ?)",
        (mailbox_id, before, scan),
    ).fetchone()
    lowest, scanned = bounds
    if not scanned:
        return [], None
    predicate, params = visibility(viewer)
    sql = (
        f"SELECT {message_columns(has_dispatch_outcome)} FROM mailbox_messages "
        f"WHERE mailbox_id = :mid AND sequence < :before AND sequence >= :lowest "
        f"AND {predicate} AND (instr(lower(body), :needle) > 0 "
        "OR instr(lower(COALESCE(topic, '')), :needle) > 0) ORDER BY sequence DESC"
    )
    params |= {"mid": mailbox_id, "before": before, "lowest": lowest, "needle": needle.lower()}
    matches = fetch_messages(db, sql, params)
    return matches, (lowest if scanned == scan else None)


# ------------------------------------------------------------------ summaries

_LATEST_VISIBLE: Final = f"""
  JOIN mailbox_messages latest
    ON latest.rowid = (
      SELECT candidate.rowid FROM mailbox_messages candidate
      WHERE candidate.mailbox_id = m.id AND {NOT_CONTROL.format(t="candidate.")}
        AND typeof(candidate.sequence) = 'integer'
      ORDER BY candidate.sequence DESC LIMIT 1
    )
"""
# The preview prefix is read as bytes: SQLite's substr()/length() on TEXT stop at
# NUL, TermAl previews the whole body.
_SUMMARY_TAIL: Final = f"""
  substr(CAST(latest.body AS BLOB), 1, {_PREVIEW_PREFIX_BYTES}),
  length(CAST(latest.body AS BLOB)), latest.created_at, latest.rowid
"""

_SESSION_SUMMARIES: Final = f"""
SELECT m.id, latest.sequence,
  ({UNREAD_FOR.format(mailbox="m.id", cursor="mine.processed_through", session=":viewer")}),
  {_SUMMARY_TAIL}
FROM mailboxes m
  JOIN mailbox_participants mine
    ON mine.mailbox_id = m.id AND mine.session_id = :viewer AND mine.left_at IS NULL
{_LATEST_VISIBLE}
WHERE (:mid IS NULL OR m.id = :mid)
ORDER BY latest.created_at DESC, m.id
"""

# The human view's unread count (messages not yet processed by their own target) is
# summed from the per-participant counts that come with the participants query below:
# one grouped pass instead of a correlated COUNT per participant per mailbox.
_HUMAN_SUMMARIES: Final = f"""
SELECT m.id, latest.sequence, 0,
  {_SUMMARY_TAIL}
FROM mailboxes m
{_LATEST_VISIBLE}
WHERE (:mid IS NULL OR m.id = :mid)
ORDER BY latest.created_at DESC, m.id
"""

_PARTICIPANT_COLUMNS: Final = (
    "p.mailbox_id, p.session_id, p.display_name, p.processed_through, p.left_at"
)
_PARTICIPANT_UNREAD: Final = (
    "LEFT JOIN mailbox_messages u ON u.mailbox_id = p.mailbox_id "
    "AND u.sequence > p.processed_through AND u.target_session_id = p.session_id "
    "AND " + NOT_CONTROL.format(t="u.")
)
# Above this many mailboxes one ordered scan of every participant beats an IN list.
_PARTICIPANT_IN_LIMIT: Final = 500


def participant_record(
    session: Any, name: Any, cursor: Any, left_at: Any, unread: int = 0
) -> MailboxParticipant:
    if not (
        type(session) is str
        and type(name) is str
        and type(cursor) is int
        and (left_at is None or type(left_at) is str)
    ):
        session, name, left_at = as_text(session), as_text(name), as_optional_text(left_at)
        cursor = cursor if type(cursor) is int else 0
    return trusted(
        MailboxParticipant,
        {
            "session_id": session,
            "display_name": name,
            "processed_through": cursor,
            "left_at": left_at,
            "unread_count": unread,
        },
    )


def participants_sql(with_unread: bool, where: str = "") -> str:
    if with_unread:
        return (
            f"SELECT {_PARTICIPANT_COLUMNS}, COUNT(u.rowid) FROM mailbox_participants p "
            f"{_PARTICIPANT_UNREAD} {where} GROUP BY p.mailbox_id, p.session_id "
            "ORDER BY p.mailbox_id, p.session_id"
        )
    return (
        f"SELECT {_PARTICIPANT_COLUMNS}, 0 FROM mailbox_participants p {where} "
        "ORDER BY p.mailbox_id, p.session_id"
    )


def participants(
    db: sqlite3.Connection, mailbox_ids: list[str], with_unread: bool = False
) -> tuple[dict[str, list[MailboxParticipant]], dict[str, int]]:
    """Participants of these mailboxes in TermAl's order and, ``with_unread``, how many
    visible messages addressed to each one lie above its cursor, summed per mailbox."""
    grouped: dict[str, list[MailboxParticipant]] = defaultdict(list)
    unread: dict[str, int] = defaultdict(int)
    if not mailbox_ids:
        return grouped, unread
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC}
    where = ""
    if len(mailbox_ids) <= _PARTICIPANT_IN_LIMIT:
        names = [f"m{index}" for index in range(len(mailbox_ids))]
        where = f"WHERE p.mailbox_id IN ({', '.join(':' + name for name in names)})"
        params |= dict(zip(names, mailbox_ids, strict=True))
    sql = participants_sql(with_unread, where)
    return group_participants(db.execute(sql, params), set(mailbox_ids))


def group_participants(
    rows: Any, wanted: set[str]
) -> tuple[dict[str, list[MailboxParticipant]], dict[str, int]]:
    """Participant rows (mailbox, session, name, cursor, left_at, unread), ordered by
    mailbox and session, grouped per wanted mailbox with each mailbox's unread sum."""
    grouped: dict[str, list[MailboxParticipant]] = defaultdict(list)
    unread: dict[str, int] = defaultdict(int)
    current_id: Any = None
    current: list[MailboxParticipant] = []
    for mailbox_id, session, name, cursor, left_at, count in rows:
        if mailbox_id != current_id:
            current_id = mailbox_id
            current = grouped[mailbox_id] if mailbox_id in wanted else []
        current.append(participant_record(session, name, cursor, left_at, count or 0))
        if count:
            unread[mailbox_id] += count
    return grouped, unread


def _preview(db: sqlite3.Connection, rowid: int, prefix: object, length: int) -> str:
    def whole() -> object:
        row = db.execute("SELECT body FROM mailbox_messages WHERE rowid = ?", (rowid,)).fetchone()
        return None if row is None else row[0]

    return preview_of(prefix, length, whole)


def preview_of(prefix: object, length: object, whole: Callable[[], object]) -> str:
    """The latest message's preview from a prefix of its body (bytes or text) and the
    body's length in bytes; ``whole()`` reads the whole body when the prefix did not
    hold enough visible characters."""
    data = prefix if isinstance(prefix, bytes) else as_text(prefix).encode()
    truncated = isinstance(length, int) and length > len(data)
    result = preview(as_text(_complete_utf8_prefix(data) if truncated else data))
    if truncated and len(result) <= PREVIEW_CHARS:
        # The prefix did not hold 161 visible characters: use the whole body.
        body = whole()
        if body is not None:
            result = preview(as_text(body))
    return result


_KEYSET: Final = (
    " AND (latest.created_at < :after_at OR (latest.created_at = :after_at AND m.id > :after_id))"
)
_FILTER: Final = "WHERE (:mid IS NULL OR m.id = :mid)"


# The index filter: the mailbox id or a participant's name or session id holds the
# needle, compared casefolded (Python's casefold, as the viewer compares loaded cards).
_MATCHING: Final = (
    " AND (instr(termal_fold(m.id), :needle) > 0 OR EXISTS (SELECT 1 FROM"
    " mailbox_participants fp WHERE fp.mailbox_id = m.id AND"
    " (instr(termal_fold(fp.display_name), :needle) > 0"
    " OR instr(termal_fold(fp.session_id), :needle) > 0)))"
)


def _fold(value: object) -> str:
    return (value if type(value) is str else as_text(value)).casefold()


def _with_matching(db: sqlite3.Connection, params: dict[str, Any], needle: str) -> None:
    db.create_function("termal_fold", 1, _fold, deterministic=True)
    params["needle"] = needle.casefold()


def summaries(
    db: sqlite3.Connection,
    viewer: str | None,
    mailbox_id: str | None = None,
    limit: int | None = None,
    after: tuple[str, str] | None = None,
    matching: str | None = None,
) -> list[MailboxSummary]:
    """Mailboxes with at least one visible message, newest activity first; with
    ``limit``, one keyset page of them after ``after`` (the last card's latest activity
    time and id), so an index of 100,000 mailboxes builds only what it shows; with
    ``matching``, only those whose id or a participant's name or session id holds it."""
    sql = _HUMAN_SUMMARIES if viewer is None else _SESSION_SUMMARIES
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC, "mid": mailbox_id}
    if viewer is not None:
        params["viewer"] = viewer
    extra = ""
    if after is not None:
        extra += _KEYSET
        params |= {"after_at": after[0], "after_id": after[1]}
    if matching:
        extra += _MATCHING
        _with_matching(db, params, matching)
    if extra:
        head, tail = sql.split(_FILTER)
        sql = head + _FILTER + extra + tail
    if limit is not None:
        sql += " LIMIT :limit"
        params["limit"] = limit
    rows = db.execute(sql, params).fetchall()
    # The cycle collector is not paused here: a pause is process-wide (every thread's),
    # and it only defers the young collection to the first allocation after it; a read
    # of 10,000 mailboxes spends the same time in the collector either way
    # (bench/bench_store.py, "time in the cycle collector").
    return _build_summaries(db, rows, human=viewer is None)


_HUMAN_TOTALS: Final = f"""
SELECT (SELECT COUNT(*) FROM mailboxes m WHERE EXISTS (
          SELECT 1 FROM mailbox_messages v WHERE v.mailbox_id = m.id
          AND {NOT_CONTROL.format(t="v.")} AND typeof(v.sequence) = 'integer')),
       (SELECT COUNT(u.rowid) FROM mailbox_participants p {_PARTICIPANT_UNREAD})
"""

_SESSION_TOTALS: Final = f"""
SELECT COUNT(*), COALESCE(SUM(
  ({UNREAD_FOR.format(mailbox="m.id", cursor="mine.processed_through", session=":viewer")})), 0)
FROM mailboxes m
  JOIN mailbox_participants mine
    ON mine.mailbox_id = m.id AND mine.session_id = :viewer AND mine.left_at IS NULL
WHERE EXISTS (SELECT 1 FROM mailbox_messages v WHERE v.mailbox_id = m.id
  AND {NOT_CONTROL.format(t="v.")} AND typeof(v.sequence) = 'integer')
"""


def count_matching(db: sqlite3.Connection, viewer: str | None, needle: str) -> int:
    """How many mailboxes :func:`summaries` lists with ``matching=needle``."""
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC}
    mine = ""
    if viewer is not None:
        params["viewer"] = viewer
        mine = (
            "JOIN mailbox_participants mine ON mine.mailbox_id = m.id"
            " AND mine.session_id = :viewer AND mine.left_at IS NULL "
        )
    _with_matching(db, params, needle)
    sql = (
        f"SELECT COUNT(*) FROM mailboxes m {mine}WHERE EXISTS (SELECT 1 FROM "
        f"mailbox_messages v WHERE v.mailbox_id = m.id AND {NOT_CONTROL.format(t='v.')} "
        f"AND typeof(v.sequence) = 'integer'){_MATCHING}"
    )
    return int(db.execute(sql, params).fetchone()[0] or 0)


def totals(db: sqlite3.Connection, viewer: str | None) -> tuple[int, int]:
    """How many mailboxes :func:`summaries` lists and the sum of their unread counts,
    without building one summary."""
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC}
    if viewer is not None:
        params["viewer"] = viewer
    row = db.execute(_HUMAN_TOTALS if viewer is None else _SESSION_TOTALS, params).fetchone()
    return int(row[0] or 0), int(row[1] or 0)


_HEAD: Final = f"""
SELECT m.id, latest.sequence, 0, {_SUMMARY_TAIL}
FROM mailboxes m
{_LATEST_VISIBLE}
WHERE m.id = :mid
"""


def head(db: sqlite3.Connection, mailbox_id: str, viewer: str | None) -> MailboxSummary | None:
    """A mailbox's participants, latest visible sequence and preview *without* counting
    unread rows (``unread_count`` is 0): what a thread view needs on every change."""
    authorize(db, mailbox_id, viewer)
    rows = db.execute(_HEAD, {"ctl": CONTROL_TOPIC, "mid": mailbox_id}).fetchall()
    return _build_summaries(db, rows, human=False)[0] if rows else None


_PROBE: Final = """
SELECT m.next_sequence, (
  SELECT group_concat(p.session_id || ':' || p.processed_through || ':' || COALESCE(p.left_at, ''), ',')
  FROM (SELECT * FROM mailbox_participants WHERE mailbox_id = m.id ORDER BY session_id) p)
FROM mailboxes m WHERE m.id = ?
"""


def probe(db: sqlite3.Connection, mailbox_id: str) -> ChangeToken | None:
    """A token that changes whenever a row is appended or a cursor or departure moves:
    two primary-key lookups, so an idle poll costs nothing close to a count."""
    row = db.execute(_PROBE, (mailbox_id,)).fetchone()
    if row is None:
        return None
    next_sequence = row[0] if type(row[0]) is int else -1
    return ChangeToken(next_sequence, as_optional_text(row[1]) or "")


def _build_summaries(db: sqlite3.Connection, rows: list[Any], human: bool) -> list[MailboxSummary]:
    by_mailbox, unread_by_mailbox = participants(db, [row[0] for row in rows], with_unread=human)
    return build_summaries(
        rows,
        by_mailbox,
        unread_by_mailbox,
        human=human,
        preview=lambda rowid, prefix, length: _preview(db, rowid, prefix, length),
    )


def build_summaries(
    rows: list[Any],
    by_mailbox: dict[str, list[MailboxParticipant]],
    unread_by_mailbox: dict[str, int],
    *,
    human: bool,
    preview: Callable[[Any, object, Any], str],
) -> list[MailboxSummary]:
    """Summary rows (id, latest sequence, unread, body prefix, body length, latest time,
    row key) as summaries, on either engine; ``preview(key, prefix, length)``."""
    result = []
    for mid, latest_sequence, unread, prefix, length, latest_at, rowid in rows:
        result.append(
            trusted(
                MailboxSummary,
                {
                    "id": mid if type(mid) is str else as_text(mid),
                    "participants": by_mailbox.get(mid, []),
                    "latest_sequence": latest_sequence,
                    "unread_count": unread_by_mailbox.get(mid, 0) if human else unread,
                    "latest_message_preview": preview(rowid, prefix, length),
                    "latest_message_at": as_optional_text(latest_at),
                },
            )
        )
    return result
