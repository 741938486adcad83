"""The delivery-health read: one grouped pass over every participant's unread range
(run on the reader's thread, inside one read snapshot; see ``MailboxReader.health_rows``).

What a stuck hand-off is (thresholds, kinds, ranking) is decided above the store, in
``termal_tui.views.findings``; this module only reads, per mailbox and participant, the unread
range and the state its rows are in, the participants' names in TermAl's order, and how
many mailboxes have a visible row. Nothing here changes the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from typing import Any, Final, NamedTuple

from termal_tui.core.models import CONTROL_TOPIC
from termal_tui.store.queries import NOT_CONTROL, as_text

# Up to this many mailboxes, health is read for each by key (the index's loaded cards).
IDS_BY_KEY: Final = 500


class UnreadRange(NamedTuple):
    """One participant's unread range in one mailbox (addressed to it, above its cursor,
    control rows left out), and what state its rows are in."""

    mailbox_id: str
    session_id: str
    display_name: str
    processed_through: int
    left: bool  # the participant has left the mailbox
    unread: int
    oldest_sequence: int
    oldest_at: str
    never_woken: int  # rows still durableButNotWoken
    never_woken_first: int | None
    never_woken_at: str | None
    woken: int  # rows delivered to an idle session or woken by recovery
    woken_first: int | None
    woken_at: str | None


class HealthRows(NamedTuple):
    ranges: list[UnreadRange]
    participants: dict[str, str]  # mailbox id → "A ⇄ B" (TermAl's participant order)
    visible_mailboxes: int  # every mailbox with a visible row


# One grouped pass: per participant, its unread range and what state the rows are in.
_UNREAD_BY_PARTICIPANT: Final = f"""
SELECT p.mailbox_id, p.session_id, p.display_name, p.processed_through, p.left_at,
  COUNT(u.rowid),
  MIN(u.sequence), MIN(u.created_at),
  SUM(u.notification_disposition = 'durableButNotWoken'),
  MIN(CASE WHEN u.notification_disposition = 'durableButNotWoken' THEN u.sequence END),
  MIN(CASE WHEN u.notification_disposition = 'durableButNotWoken' THEN u.created_at END),
  SUM(u.notification_disposition IN ('deliveredToIdleSession', 'recoveredWake')),
  MIN(CASE WHEN u.notification_disposition IN ('deliveredToIdleSession', 'recoveredWake') THEN u.sequence END),
  MIN(CASE WHEN u.notification_disposition IN ('deliveredToIdleSession', 'recoveredWake') THEN u.created_at END)
FROM mailbox_participants p
JOIN mailbox_messages u
  ON u.mailbox_id = p.mailbox_id AND u.sequence > p.processed_through
 AND u.target_session_id = p.session_id AND {NOT_CONTROL.format(t="u.")}
 AND typeof(u.sequence) = 'integer'
{{where}}GROUP BY p.mailbox_id, p.session_id
"""

_VISIBLE_MAILBOXES: Final = (
    "SELECT COUNT(*) FROM mailboxes m WHERE EXISTS (SELECT 1 FROM mailbox_messages v "
    f"WHERE v.mailbox_id = m.id AND {NOT_CONTROL.format(t='v.')})"
)


def _keyed(prefix: str, ids: Collection[Any]) -> tuple[str, dict[str, Any]]:
    """``:p0, :p1, …`` and their values, for ``IN (…)``."""
    names = [f"{prefix}{index}" for index in range(len(ids))]
    return ", ".join(":" + name for name in names), dict(
        zip(names, sorted(ids, key=str), strict=True)
    )


def _optional_text(value: object) -> str | None:
    return None if value is None else as_text(value)


def read_health_rows(
    db: sqlite3.Connection, mailbox_ids: Collection[str] | None = None
) -> HealthRows:
    """Every participant's unread range (only in ``mailbox_ids`` when given: a few
    hundred are looked up by key, not found in a pass over every mailbox), only where
    something is unread; ``visible_mailboxes`` still counts every visible mailbox."""
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC}
    wanted = set(mailbox_ids) if mailbox_ids is not None else None
    where = ""
    if wanted is not None and len(wanted) <= IDS_BY_KEY:
        keys, values = _keyed("h", wanted)
        where, params = f"WHERE p.mailbox_id IN ({keys})\n", params | values
    rows = db.execute(_UNREAD_BY_PARTICIPANT.format(where=where), params).fetchall()
    if wanted is not None:
        rows = [row for row in rows if row[0] in wanted]
    names = _participant_names(db, {row[0] for row in rows})
    (visible,) = db.execute(_VISIBLE_MAILBOXES, {"ctl": CONTROL_TOPIC}).fetchone()
    ranges = []
    for (
        mailbox_id,
        session_id,
        name,
        cursor,
        left_at,
        unread,
        oldest,
        oldest_at,
        never,
        never_first,
        never_at,
        woken,
        woken_first,
        woken_at,
    ) in rows:
        if mailbox_id not in names or not unread:
            continue
        ranges.append(
            UnreadRange(
                as_text(mailbox_id),
                as_text(session_id),
                as_text(name),
                cursor if isinstance(cursor, int) else 0,
                left_at is not None,
                unread,
                oldest,
                as_text(oldest_at),
                never or 0,
                never_first,
                _optional_text(never_at),
                woken or 0,
                woken_first,
                _optional_text(woken_at),
            )
        )
    named = {as_text(key): value for key, value in names.items()}
    return HealthRows(ranges, named, visible)


def _participant_names(db: sqlite3.Connection, ids: set[Any]) -> dict[Any, str]:
    """``A ⇄ B`` per mailbox in TermAl's participant order (queries.participants'),
    as plain strings: a health pass over 100,000 mailboxes builds no records for it."""
    if not ids:
        return {}
    params: dict[str, Any] = {}
    where = ""
    if len(ids) <= IDS_BY_KEY:
        keys, params = _keyed("n", ids)
        where = f"WHERE mailbox_id IN ({keys}) "
    grouped: dict[Any, list[str]] = {}
    for mailbox_id, name in db.execute(
        f"SELECT mailbox_id, display_name FROM mailbox_participants {where}"
        "ORDER BY mailbox_id, session_id",
        params,
    ):
        if mailbox_id in ids:
            grouped.setdefault(mailbox_id, []).append(name if type(name) is str else as_text(name))
    return {mailbox_id: " ⇄ ".join(found) for mailbox_id, found in grouped.items()}
