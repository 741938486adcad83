"""The delivery-health read on PostgreSQL: ``store/health_queries.py``'s one grouped
pass, with the same rows (:class:`~termal_tui.store.health_queries.HealthRows`)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final

import psycopg

from termal_tui.core.models import CONTROL_TOPIC
from termal_tui.store.health_queries import IDS_BY_KEY, HealthRows, UnreadRange
from termal_tui.store.postgres.connection import every, one
from termal_tui.store.postgres.queries import NOT_CONTROL

Conn = psycopg.AsyncConnection[Any]

_NEVER: Final = "u.notification_disposition = 'durableButNotWoken'"
_WOKEN: Final = "u.notification_disposition IN ('deliveredToIdleSession', 'recoveredWake')"

_UNREAD_BY_PARTICIPANT: Final = f"""
SELECT p.mailbox_id, p.session_id, p.display_name, p.processed_through, p.left_at,
  COUNT(u.id), MIN(u.sequence), MIN(u.created_at),
  COUNT(*) FILTER (WHERE {_NEVER}),
  MIN(u.sequence) FILTER (WHERE {_NEVER}),
  MIN(u.created_at) FILTER (WHERE {_NEVER}),
  COUNT(*) FILTER (WHERE {_WOKEN}),
  MIN(u.sequence) FILTER (WHERE {_WOKEN}),
  MIN(u.created_at) FILTER (WHERE {_WOKEN})
FROM mailbox_participants p
JOIN mailbox_messages u
  ON u.mailbox_id = p.mailbox_id AND u.sequence > p.processed_through
 AND u.target_session_id = p.session_id AND {NOT_CONTROL.format(t="u.")}
{{where}}GROUP BY p.mailbox_id, p.session_id
"""

_VISIBLE_MAILBOXES: Final = (
    "SELECT COUNT(*) FROM mailboxes m WHERE EXISTS (SELECT 1 FROM mailbox_messages v "
    f"WHERE v.mailbox_id = m.id AND {NOT_CONTROL.format(t='v.')})"
)


async def read_health_rows(conn: Conn, mailbox_ids: Collection[str] | None = None) -> HealthRows:
    """As :func:`termal_tui.store.health_queries.read_health_rows`."""
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC}
    wanted = set(mailbox_ids) if mailbox_ids is not None else None
    where = ""
    if wanted is not None and len(wanted) <= IDS_BY_KEY:
        where = "WHERE p.mailbox_id = ANY(%(ids)s)\n"
        params["ids"] = sorted(wanted)
    rows = await every(conn, _UNREAD_BY_PARTICIPANT.format(where=where), params)
    if wanted is not None:
        rows = [row for row in rows if row[0] in wanted]
    names = await _participant_names(conn, {row[0] for row in rows})
    (visible,) = await one(conn, _VISIBLE_MAILBOXES, {"ctl": CONTROL_TOPIC})
    ranges = [
        UnreadRange(
            str(mailbox_id),
            str(session_id),
            str(name),
            int(cursor),
            left_at is not None,
            int(unread),
            int(oldest),
            str(oldest_at),
            int(never or 0),
            never_first,
            None if never_at is None else str(never_at),
            int(woken or 0),
            woken_first,
            None if woken_at is None else str(woken_at),
        )
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
        ) in rows
        if mailbox_id in names and unread
    ]
    return HealthRows(ranges, names, int(visible or 0))


async def _participant_names(conn: Conn, ids: set[str]) -> dict[str, str]:
    """``A ⇄ B`` per mailbox in TermAl's participant order (by session id)."""
    if not ids:
        return {}
    params: dict[str, Any] = {}
    where = ""
    if len(ids) <= IDS_BY_KEY:
        where = "WHERE mailbox_id = ANY(%(ids)s) "
        params["ids"] = sorted(ids)
    grouped: dict[str, list[str]] = {}
    for mailbox_id, name in await every(
        conn,
        f"SELECT mailbox_id, display_name FROM mailbox_participants {where}"
        "ORDER BY mailbox_id, session_id",
        params,
    ):
        if mailbox_id in ids:
            grouped.setdefault(str(mailbox_id), []).append(str(name))
    return {mailbox_id: " ⇄ ".join(found) for mailbox_id, found in grouped.items()}
