"""Delivery health: is any hand-off stuck, and where? (headless; no textual or rich)

One read-only pass over every participant's unread range yields, per mailbox and
participant, what a person needs to see at a glance:

- ``never-woken``: unread rows whose wake never went out (state still
  ``durableButNotWoken``) older than a threshold;
- ``woken-unprocessed``: rows whose wake was delivered to an idle session or woken by
  a recovery pass (``recoveredWake``), still unprocessed past a threshold (the receiver
  was prompted and did nothing);
- ``receiver-gone``: unread rows for a participant that has left;
- ``lagging``: the oldest unprocessed row is older than a threshold (any state).

Findings are ranked by severity, then by age (oldest first).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from termal_tui.formats import parse_timestamp
from termal_tui.models import CONTROL_TOPIC
from termal_tui.notifiers import Notifier, read_notifiers
from termal_tui.store import queries

if TYPE_CHECKING:
    from termal_tui.store.reader import MailboxReader

SEVERITY: Final = {
    "receiver-gone": 3,
    "no-notifier": 3,
    "never-woken": 2,
    "woken-unprocessed": 2,
    "lagging": 1,
}


@dataclass(frozen=True)
class Thresholds:
    """Ages (seconds) past which an unread row counts as stuck."""

    never_woken: float = 120.0
    woken_unprocessed: float = 900.0
    lagging: float = 3600.0
    # Unread mail for a registered session with no live channel server and no hook run
    # within this long has nobody to wake its receiver.
    no_notifier: float = 300.0


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    mailbox_id: str
    participants: str  # "A ⇄ B"
    session_id: str
    display_name: str
    rows: int  # how many rows show the problem
    first_sequence: int  # the first affected message (open the mailbox there)
    oldest_at: str  # its created_at
    age_seconds: float
    unread_depth: int  # everything unread for this participant in this mailbox
    processed_through: int

    @property
    def severity(self) -> int:
        return SEVERITY[self.kind]

    def describe(self, with_age: bool = True) -> str:
        """One sentence; ``with_age`` false leaves the age out (a narrow row shows it
        first, where a cut cannot take it)."""
        who = self.display_name
        age = f" (oldest {format_age(self.age_seconds)})" if with_age else ""
        if self.kind == "never-woken":
            return f"{self.rows:,} unread for {who} never woken{age}"
        if self.kind == "woken-unprocessed":
            return f"{self.rows:,} woken for {who} but not processed{age}"
        if self.kind == "receiver-gone":
            return f"{self.rows:,} unread for {who}, who has left the mailbox"
        if self.kind == "no-notifier":
            return (
                f"{self.rows:,} unread for {who}, and nothing is listening: no channel "
                f"server, no hook run lately{age}"
            )
        return f"{who} lags: {self.unread_depth:,} unread{age.replace(' (', ', ').rstrip(')')}"

    def to_json(self) -> dict[str, Any]:
        """camelCase like TermAl's wire JSON."""
        out = {_camel(key): value for key, value in asdict(self).items()}
        out["severity"] = self.severity
        out["summary"] = self.describe()
        return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass
class HealthReport:
    findings: list[Finding] = field(default_factory=list)
    mailboxes: int = 0
    unread: int = 0

    @property
    def healthy(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        """``doctor --json``'s document (camelCase, as TermAl's wire JSON)."""
        return {
            "healthy": self.healthy,
            "mailboxes": self.mailboxes,
            "unread": self.unread,
            "findings": [finding.to_json() for finding in self.findings],
        }

    @property
    def stuck_rows(self) -> int:
        """Unread rows behind the findings, each counted once: a participant's lagging
        finding covers all its unread rows, which its wake findings count again."""
        by_reader: dict[tuple[str, str], list[Finding]] = {}
        for finding in self.findings:
            by_reader.setdefault((finding.mailbox_id, finding.session_id), []).append(finding)
        total = 0
        for found in by_reader.values():
            covering = max((f.rows for f in found if f.kind == "lagging"), default=0)
            total += max(covering, sum(f.rows for f in found if f.kind != "lagging"))
        return total

    def by_mailbox(self) -> dict[str, list[Finding]]:
        grouped: dict[str, list[Finding]] = {}
        for finding in self.findings:
            grouped.setdefault(finding.mailbox_id, []).append(finding)
        return grouped


def format_age(seconds: float) -> str:
    """``45 s``, ``3 min``, ``5 h``, ``2 d``: the units and steps of the viewer's
    ``3 min ago`` (vocabulary.age_words), so the health view and the rows agree."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 172_800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86_400:,} d"


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
 AND u.target_session_id = p.session_id AND {queries.NOT_CONTROL.format(t="u.")}
 AND typeof(u.sequence) = 'integer'
GROUP BY p.mailbox_id, p.session_id
"""


def _age(created_at: str, now: datetime) -> float:
    try:
        return (now - parse_timestamp(created_at)).total_seconds()
    except (ValueError, OverflowError):
        return 0.0


def collect(
    db: sqlite3.Connection,
    now: datetime,
    thresholds: Thresholds,
    notifiers: Mapping[str, Notifier] | None = None,
    mailbox_ids: Collection[str] | None = None,
) -> HealthReport:
    """Run on the reader's thread inside one read snapshot (see MailboxReader.health).
    With ``mailbox_ids``, findings only for those mailboxes (the index's loaded cards:
    a few hundred are looked up by key, not found in a pass over every mailbox);
    ``mailboxes`` still counts every visible one."""
    params: dict[str, Any] = {"ctl": CONTROL_TOPIC}
    sql = _UNREAD_BY_PARTICIPANT
    wanted = set(mailbox_ids) if mailbox_ids is not None else None
    if wanted is not None and len(wanted) <= _IDS_BY_KEY:
        names_in = [f"h{index}" for index in range(len(wanted))]
        params |= dict(zip(names_in, sorted(wanted), strict=True))
        head, tail = sql.split("GROUP BY")
        sql = (
            f"{head}WHERE p.mailbox_id IN ({', '.join(':' + n for n in names_in)})\nGROUP BY{tail}"
        )
    rows = db.execute(sql, params).fetchall()
    if wanted is not None:
        rows = [row for row in rows if row[0] in wanted]
    names = _participant_names(db, {row[0] for row in rows})
    visible = db.execute(
        f"SELECT COUNT(*) FROM mailboxes m WHERE EXISTS (SELECT 1 FROM mailbox_messages v "
        f"WHERE v.mailbox_id = m.id AND {queries.NOT_CONTROL.format(t='v.')})",
        {"ctl": CONTROL_TOPIC},
    ).fetchone()[0]
    report = HealthReport(mailboxes=visible)
    found = report.findings
    moment = now.timestamp()
    listening_for = thresholds.no_notifier
    as_text = queries.as_text
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
        delivered,
        delivered_first,
        delivered_at,
    ) in rows:
        if mailbox_id not in names or not unread:
            continue
        report.unread += unread
        base = (
            as_text(mailbox_id),
            names[mailbox_id],
            as_text(session_id),
            as_text(name),
        )
        through = cursor if isinstance(cursor, int) else 0

        def finding(
            kind: str,
            count: int,
            first: int,
            created: str,
            age: float,
            base: tuple[str, str, str, str] = base,
            tail: tuple[int, int] = (unread, through),
        ) -> Finding:
            return Finding(kind, *base, count, first, created, age, *tail)

        oldest_text = as_text(oldest_at)
        oldest_age = _age(oldest_text, now)
        if left_at is not None:
            found.append(finding("receiver-gone", unread, oldest, oldest_text, oldest_age))
            continue
        notifier = notifiers.get(base[2]) if notifiers is not None else None
        if (
            notifier is not None
            and not notifier.listening(moment, listening_for)
            and oldest_age >= listening_for
        ):
            found.append(finding("no-notifier", unread, oldest, oldest_text, oldest_age))
            continue  # it explains the rest: counted once
        if never:
            created = as_text(never_at)
            age = oldest_age if created == oldest_text else _age(created, now)
            if age >= thresholds.never_woken:
                found.append(finding("never-woken", never, never_first, created, age))
        if delivered:
            created = as_text(delivered_at)
            age = oldest_age if created == oldest_text else _age(created, now)
            if age >= thresholds.woken_unprocessed:
                found.append(finding("woken-unprocessed", delivered, delivered_first, created, age))
        if oldest_age >= thresholds.lagging:
            found.append(finding("lagging", unread, oldest, oldest_text, oldest_age))
    found.sort(key=lambda f: (-SEVERITY[f.kind], -f.age_seconds, f.mailbox_id))
    return report


# Up to this many mailboxes, health is read for each by key (the index's loaded cards).
_IDS_BY_KEY: Final = 500


def _participant_names(db: sqlite3.Connection, ids: set[Any]) -> dict[Any, str]:
    """``A ⇄ B`` per mailbox in TermAl's participant order (queries.participants'),
    as plain strings: a health pass over 100,000 mailboxes builds no records for it."""
    if not ids:
        return {}
    params: dict[str, Any] = {}
    where = ""
    if len(ids) <= _IDS_BY_KEY:
        keys = [f"n{index}" for index in range(len(ids))]
        params = dict(zip(keys, sorted(ids, key=str), strict=True))
        where = f"WHERE mailbox_id IN ({', '.join(':' + key for key in keys)}) "
    grouped: dict[Any, list[str]] = {}
    as_text = queries.as_text
    for mailbox_id, name in db.execute(
        f"SELECT mailbox_id, display_name FROM mailbox_participants {where}"
        "ORDER BY mailbox_id, session_id",
        params,
    ):
        if mailbox_id in ids:
            grouped.setdefault(mailbox_id, []).append(name if type(name) is str else as_text(name))
    return {mailbox_id: " ⇄ ".join(found) for mailbox_id, found in grouped.items()}


async def health_report(
    reader: MailboxReader,
    now: datetime | None = None,
    thresholds: Thresholds | None = None,
    mailbox_ids: Collection[str] | None = None,
) -> HealthReport:
    """Stuck hand-offs across every mailbox (or only ``mailbox_ids``), in one read
    snapshot of ``reader``."""
    moment = now or utc_now()
    limits = thresholds or Thresholds()
    notifiers = read_notifiers(reader.path, moment.timestamp())
    return await reader.query(lambda db: collect(db, moment, limits, notifiers, mailbox_ids))


def utc_now() -> datetime:
    return datetime.now(UTC)
