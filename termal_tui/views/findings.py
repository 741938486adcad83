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

from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from termal_tui.core.formats import parse_timestamp
from termal_tui.views.notifiers import Notifier, notifiers_for

if TYPE_CHECKING:
    from termal_tui.store.health_queries import HealthRows
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
    rows: HealthRows | None = field(default=None, repr=False, compare=False)  # its source

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


def _age(created_at: str, now: datetime) -> float:
    try:
        return (now - parse_timestamp(created_at)).total_seconds()
    except (ValueError, OverflowError):
        return 0.0


def collect(
    rows: HealthRows,
    now: datetime,
    thresholds: Thresholds,
    notifiers: Mapping[str, Notifier] | None = None,
) -> HealthReport:
    """The findings in what the store read (``MailboxReader.health_rows``: every
    participant's unread range, or only the index's loaded mailboxes'), ranked."""
    report = HealthReport(mailboxes=rows.visible_mailboxes)
    found = report.findings
    moment = now.timestamp()
    listening_for = thresholds.no_notifier
    for unread in rows.ranges:
        report.unread += unread.unread
        base = (
            unread.mailbox_id,
            rows.participants[unread.mailbox_id],
            unread.session_id,
            unread.display_name,
        )

        def finding(
            kind: str,
            count: int,
            first: int,
            created: str,
            age: float,
            base: tuple[str, str, str, str] = base,
            tail: tuple[int, int] = (unread.unread, unread.processed_through),
        ) -> Finding:
            return Finding(kind, *base, count, first, created, age, *tail)

        oldest_text = unread.oldest_at
        oldest_age = _age(oldest_text, now)
        whole = (unread.unread, unread.oldest_sequence, oldest_text, oldest_age)
        if unread.left:
            found.append(finding("receiver-gone", *whole))
            continue
        notifier = notifiers.get(unread.session_id) if notifiers is not None else None
        if (
            notifier is not None
            and not notifier.listening(moment, listening_for)
            and oldest_age >= listening_for
        ):
            found.append(finding("no-notifier", *whole))
            continue  # it explains the rest: counted once
        for kind, count, first, created, limit in (
            (
                "never-woken",
                unread.never_woken,
                unread.never_woken_first,
                unread.never_woken_at,
                thresholds.never_woken,
            ),
            (
                "woken-unprocessed",
                unread.woken,
                unread.woken_first,
                unread.woken_at,
                thresholds.woken_unprocessed,
            ),
        ):
            if not count or first is None or created is None:
                continue
            age = oldest_age if created == oldest_text else _age(created, now)
            if age >= limit:
                found.append(finding(kind, count, first, created, age))
        if oldest_age >= thresholds.lagging:
            found.append(finding("lagging", *whole))
    found.sort(key=lambda f: (-SEVERITY[f.kind], -f.age_seconds, f.mailbox_id))
    return report


async def health_report(
    reader: MailboxReader,
    now: datetime | None = None,
    thresholds: Thresholds | None = None,
    mailbox_ids: Collection[str] | None = None,
    rows: HealthRows | None = None,
) -> HealthReport:
    """Stuck hand-offs across every mailbox (or only ``mailbox_ids``), in one read
    snapshot of ``reader``. ``rows``: what an earlier read of an unchanged file found
    (the ages and the listeners are taken again; the file is not read)."""
    moment = now or utc_now()
    limits = thresholds or Thresholds()
    notifiers = await notifiers_for(reader.location, moment.timestamp())
    if rows is None:
        rows = await reader.health_rows(mailbox_ids)
    report = collect(rows, moment, limits, notifiers)
    report.rows = rows
    return report


def utc_now() -> datetime:
    return datetime.now(UTC)
