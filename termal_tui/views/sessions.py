"""The sessions view (headless): one row per agent.

For each session that takes part in a mailbox: its mailboxes, what is addressed to it and
not processed (and since when: the oldest such message's time), its last acknowledgement
(TermAl keeps no time for one, so it is the time this view saw a cursor of it move, and
says so), whether a notifier is listening for it, its last board write, and its traffic
over recent hours as a sparkline.

Rows are ordered most stuck first: behind before caught up, the longest waiting first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Final, NamedTuple

from termal_tui.core.formats import parse_timestamp
from termal_tui.store.activity import ParticipantRow, SessionLoad

SPARK_HOURS: Final = 12
SPARK_BARS: Final = "▁▂▃▄▅▆▇█"


class SessionRow(NamedTuple):
    session_id: str
    name: str
    mailboxes: int  # mailboxes it is still in
    left: int  # mailboxes it has left
    unread: int  # visible messages addressed to it above its cursor
    behind_in: int  # mailboxes where it has such messages
    waiting_since: datetime | None  # the oldest of them
    last_ack: datetime | None  # when a cursor of it was seen moving (observed)
    notifier: str | None  # who listens for it ("channel pid 123", "hook 2 min ago"), or None
    last_board_write: datetime | None
    traffic: tuple[int, ...]  # messages it sent per hour, oldest hour first

    @property
    def behind(self) -> bool:
        return self.unread > 0

    def sparkline(self) -> str:
        return sparkline(self.traffic)


def sparkline(counts: Iterable[int]) -> str:
    """One bar per count, scaled to the largest; a quiet hour is the lowest bar."""
    values = list(counts)
    top = max(values, default=0)
    if top <= 0:
        return SPARK_BARS[0] * len(values)
    last = len(SPARK_BARS) - 1
    return "".join(
        SPARK_BARS[0] if v <= 0 else SPARK_BARS[max(1, round(v / top * last))] for v in values
    )


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return parse_timestamp(text)
    except Exception:
        return None


def hourly(stamps: Iterable[str], now: datetime, hours: int = SPARK_HOURS) -> tuple[int, ...]:
    """Counts per hour over the last ``hours`` hours ending at ``now`` (oldest first)."""
    counts = [0] * hours
    start = now - timedelta(hours=hours)
    for text in stamps:
        at = _time(text)
        if at is None or at < start or at > now:
            continue
        index = min(hours - 1, int((at - start) / timedelta(hours=1)))
        counts[index] += 1
    return tuple(counts)


class SessionsModel:
    """Builds and holds the rows; remembers cursor moves between reads (the last ack)."""

    def __init__(self, now: Callable[[], datetime]) -> None:
        self._now = now
        self.rows: list[SessionRow] = []
        self._cursors: dict[tuple[str, str], int] = {}
        self._last_ack: dict[str, datetime] = {}
        self.loaded = False
        self.selected = 0

    def load(
        self,
        participants: Iterable[ParticipantRow],
        loads: Iterable[SessionLoad],
        board_writes: Mapping[str, str],
        senders: Iterable[tuple[str, str]],
        notifiers: Mapping[str, str] | None = None,
    ) -> None:
        """One read's worth: every participant row, each session's load, the newest board
        write per author, (sender, created_at) of recent messages, and who listens."""
        now = self._now()
        names: dict[str, str] = {}
        live: dict[str, int] = {}
        left: dict[str, int] = {}
        for row in participants:
            names[row.session_id] = row.display_name
            if row.left_at:
                left[row.session_id] = left.get(row.session_id, 0) + 1
            else:
                live[row.session_id] = live.get(row.session_id, 0) + 1
            pair = (row.mailbox_id, row.session_id)
            before = self._cursors.get(pair)
            if self.loaded and before is not None and row.processed_through > before:
                self._last_ack[row.session_id] = now
            self._cursors[pair] = row.processed_through
        by_session = {load.session_id: load for load in loads}
        sent: dict[str, list[str]] = {}
        for sender, stamp in senders:
            sent.setdefault(sender, []).append(stamp)
        rows = []
        for session_id, name in names.items():
            load = by_session.get(session_id)
            rows.append(
                SessionRow(
                    session_id=session_id,
                    name=name,
                    mailboxes=live.get(session_id, 0),
                    left=left.get(session_id, 0),
                    unread=load.unread if load else 0,
                    behind_in=load.behind_mailboxes if load else 0,
                    waiting_since=_time(load.oldest_unread_at) if load else None,
                    last_ack=self._last_ack.get(session_id),
                    notifier=(notifiers or {}).get(session_id),
                    last_board_write=_time(board_writes.get(session_id)),
                    traffic=hourly(sent.get(session_id, ()), now),
                )
            )
        far = datetime.max.replace(tzinfo=UTC)
        rows.sort(
            key=lambda r: (not r.behind, r.waiting_since or far, r.name.casefold(), r.session_id)
        )
        current = self.current()
        self.rows = rows
        self.loaded = True
        if current is not None:
            self.select_session(current.session_id)
        self.selected = min(self.selected, max(0, len(rows) - 1))

    def current(self) -> SessionRow | None:
        if 0 <= self.selected < len(self.rows):
            return self.rows[self.selected]
        return None

    def move(self, step: int) -> None:
        if self.rows:
            self.selected = max(0, min(len(self.rows) - 1, self.selected + step))

    def select_session(self, session_id: str) -> None:
        for index, row in enumerate(self.rows):
            if row.session_id == session_id:
                self.selected = index
                return

    @property
    def behind_count(self) -> int:
        return sum(1 for row in self.rows if row.behind)
