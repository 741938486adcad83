"""SQL shared by the reader and the writer: message rows, visibility, summaries.

Every function runs inside the caller's transaction so the counts and rows it
returns describe one snapshot. ``viewer=None`` is the human view (control rows
hidden everywhere, unread counted against each message's own target);
``viewer=session_id`` is exactly TermAl's per-session route semantics.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

import aiosqlite

from termal_tui.models import CONTROL_TOPIC, MailboxMessage, MailboxParticipant, MailboxSummary
from termal_tui.store.errors import NotFoundError
from termal_tui.store.formats import PREVIEW_CHARS, preview

MAX_SEQUENCE: Final = 2**63 - 1
_PREVIEW_PREFIX_CHARS: Final = 1024

_BASE_COLUMNS: Final = (
    "id, mailbox_id, sequence, sender_session_id, sender_name, target_session_id, "
    "target_name, created_at, class, topic, state_stamp, body, idempotency_key, "
    "unread_depth_at_append, notification_disposition"
)


def message_columns(has_dispatch_outcome: bool) -> str:
    tail = "dispatch_outcome" if has_dispatch_outcome else "NULL AS dispatch_outcome"
    return f"{_BASE_COLUMNS}, {tail}"


def visibility(viewer: str | None) -> tuple[str, dict[str, Any]]:
    """SQL predicate hiding control-plane rows from this viewer.

    TermAl hides a control row only from the session it is addressed to; the
    human view hides every control row.
    """
    if viewer is None:
        return "COALESCE(topic, '') != :ctl", {"ctl": CONTROL_TOPIC}
    return (
        "NOT (target_session_id = :viewer AND COALESCE(topic, '') = :ctl)",
        {"ctl": CONTROL_TOPIC, "viewer": viewer},
    )


def row_to_message(row: Any) -> MailboxMessage:
    # Rows come from our own typed schema: construct without re-validating (hot path).
    return MailboxMessage.model_construct(
        id=row[0],
        mailbox_id=row[1],
        sequence=row[2],
        sender_session_id=row[3],
        sender_name=row[4],
        target_session_id=row[5],
        target_name=row[6],
        created_at=row[7],
        class_=row[8],  # noqa: RUF100
        topic=row[9],
        state_stamp=row[10],
        body=row[11],
        idempotency_key=row[12],
        unread_depth_at_append=row[13],
        notification_state=row[14],
        dispatch_outcome=row[15],
    )


async def require_participant(db: aiosqlite.Connection, mailbox_id: str, session_id: str) -> None:
    async with db.execute(
        "SELECT 1 FROM mailbox_participants "
        "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL",
        (mailbox_id, session_id),
    ) as cursor:
        if await cursor.fetchone() is None:
            raise NotFoundError("mailbox not found for this session")


async def require_mailbox(db: aiosqlite.Connection, mailbox_id: str) -> None:
    async with db.execute("SELECT 1 FROM mailboxes WHERE id = ?", (mailbox_id,)) as cursor:
        if await cursor.fetchone() is None:
            raise NotFoundError(f"mailbox {mailbox_id} not found")


async def authorize(db: aiosqlite.Connection, mailbox_id: str, viewer: str | None) -> None:
    if viewer is None:
        await require_mailbox(db, mailbox_id)
    else:
        await require_participant(db, mailbox_id, viewer)


async def fetch_range(
    db: aiosqlite.Connection,
    mailbox_id: str,
    after_sequence: int,
    limit: int,
    viewer: str | None,
    has_dispatch_outcome: bool,
) -> list[MailboxMessage]:
    predicate, params = visibility(viewer)
    sql = (
        f"SELECT {message_columns(has_dispatch_outcome)} FROM mailbox_messages "
        f"WHERE mailbox_id = :mid AND sequence > :after AND {predicate} "
        "ORDER BY sequence LIMIT :limit"
    )
    params |= {"mid": mailbox_id, "after": after_sequence, "limit": limit}
    async with db.execute(sql, params) as cursor:
        return [row_to_message(row) for row in await cursor.fetchall()]


async def fetch_newest_first(
    db: aiosqlite.Connection,
    mailbox_id: str,
    before_sequence: int | None,
    limit: int,
    viewer: str | None,
    has_dispatch_outcome: bool,
) -> list[MailboxMessage]:
    """Up to ``limit`` visible rows below ``before_sequence``, newest first (keyset)."""
    predicate, params = visibility(viewer)
    sql = (
        f"SELECT {message_columns(has_dispatch_outcome)} FROM mailbox_messages "
        f"WHERE mailbox_id = :mid AND sequence < :before AND {predicate} "
        "ORDER BY sequence DESC LIMIT :limit"
    )
    before = MAX_SEQUENCE if before_sequence is None else before_sequence
    params |= {"mid": mailbox_id, "before": before, "limit": limit}
    async with db.execute(sql, params) as cursor:
        return [row_to_message(row) for row in await cursor.fetchall()]


async def fetch_message(
    db: aiosqlite.Connection, message_id: str, viewer: str | None, has_dispatch_outcome: bool
) -> MailboxMessage:
    predicate, params = visibility(viewer)
    sql = (
        f"SELECT {message_columns(has_dispatch_outcome)} FROM mailbox_messages "
        f"WHERE id = :id AND {predicate}"
    )
    async with db.execute(sql, params | {"id": message_id}) as cursor:
        row = await cursor.fetchone()
    if row is None:
        raise NotFoundError("mailbox message not found")
    message = row_to_message(row)
    if viewer is not None:
        await require_participant(db, message.mailbox_id, viewer)
    return message


_LATEST_VISIBLE: Final = """
  JOIN mailbox_messages latest
    ON latest.rowid = (
      SELECT candidate.rowid FROM mailbox_messages candidate
      WHERE candidate.mailbox_id = m.id AND COALESCE(candidate.topic, '') != :ctl
      ORDER BY candidate.sequence DESC LIMIT 1
    )
"""

_SESSION_SUMMARIES: Final = f"""
SELECT m.id, latest.sequence,
  (SELECT COUNT(*) FROM mailbox_messages unread
   WHERE unread.mailbox_id = m.id AND unread.sequence > mine.processed_through
     AND unread.target_session_id = :viewer AND COALESCE(unread.topic, '') != :ctl),
  substr(latest.body, 1, {_PREVIEW_PREFIX_CHARS}), length(latest.body), latest.created_at
FROM mailboxes m
  JOIN mailbox_participants mine
    ON mine.mailbox_id = m.id AND mine.session_id = :viewer AND mine.left_at IS NULL
{_LATEST_VISIBLE}
WHERE (:mid IS NULL OR m.id = :mid)
ORDER BY latest.created_at DESC, m.id
"""

_HUMAN_SUMMARIES: Final = f"""
SELECT m.id, latest.sequence,
  (SELECT COALESCE(SUM((
     SELECT COUNT(*) FROM mailbox_messages unread
     WHERE unread.mailbox_id = p.mailbox_id AND unread.sequence > p.processed_through
       AND unread.target_session_id = p.session_id AND COALESCE(unread.topic, '') != :ctl
   )), 0) FROM mailbox_participants p WHERE p.mailbox_id = m.id),
  substr(latest.body, 1, {_PREVIEW_PREFIX_CHARS}), length(latest.body), latest.created_at
FROM mailboxes m
{_LATEST_VISIBLE}
WHERE (:mid IS NULL OR m.id = :mid)
ORDER BY latest.created_at DESC, m.id
"""


async def _participants(
    db: aiosqlite.Connection, mailbox_ids: list[str]
) -> dict[str, list[MailboxParticipant]]:
    grouped: dict[str, list[MailboxParticipant]] = defaultdict(list)
    if not mailbox_ids:
        return grouped
    if len(mailbox_ids) == 1:
        sql, params = (
            "SELECT mailbox_id, session_id, display_name, processed_through, left_at "
            "FROM mailbox_participants WHERE mailbox_id = ? ORDER BY session_id",
            tuple(mailbox_ids),
        )
    else:
        sql, params = (
            "SELECT mailbox_id, session_id, display_name, processed_through, left_at "
            "FROM mailbox_participants ORDER BY mailbox_id, session_id",
            (),
        )
    wanted = set(mailbox_ids)
    async with db.execute(sql, params) as cursor:
        async for row in cursor:
            if row[0] in wanted:
                grouped[row[0]].append(
                    MailboxParticipant(
                        session_id=row[1],
                        display_name=row[2],
                        processed_through=row[3],
                        left_at=row[4],
                    )
                )
    return grouped


async def _preview(
    db: aiosqlite.Connection, mailbox_id: str, sequence: int, prefix: str, length: int
) -> str:
    text = preview(prefix)
    if length > len(prefix) and len(text) <= PREVIEW_CHARS:
        # The prefix did not contain 161 visible characters: use the whole body.
        async with db.execute(
            "SELECT body FROM mailbox_messages WHERE mailbox_id = ? AND sequence = ?",
            (mailbox_id, sequence),
        ) as cursor:
            row = await cursor.fetchone()
        text = preview(row[0]) if row else text
    return text


async def summaries(
    db: aiosqlite.Connection, viewer: str | None, mailbox_id: str | None = None
) -> list[MailboxSummary]:
    """Mailboxes with at least one visible message, newest activity first."""
    sql = _HUMAN_SUMMARIES if viewer is None else _SESSION_SUMMARIES
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC, "mid": mailbox_id}
    if viewer is not None:
        params["viewer"] = viewer
    async with db.execute(sql, params) as cursor:
        rows = list(await cursor.fetchall())
    participants = await _participants(db, [row[0] for row in rows])
    result = []
    for mid, latest_sequence, unread, prefix, length, latest_at in rows:
        result.append(
            MailboxSummary(
                id=mid,
                participants=participants.get(mid, []),
                latest_sequence=latest_sequence,
                unread_count=unread,
                latest_message_preview=await _preview(db, mid, latest_sequence, prefix, length),
                latest_message_at=latest_at,
            )
        )
    return result
