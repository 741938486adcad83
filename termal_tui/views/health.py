"""What the health view shows, headless (no textual, no rich): the ranked findings of
the last good pass, their counts, and the one status line (Live, Paused, Stale with the
time of the last good pass, the file not there yet), plus when the next pass may run.

The screen renders it and owns its keys; it never decides. Passes are started when the
live source reports a change (or a tick, or ``r``); :meth:`HealthView.due` spaces them
out after a slow one, on an injected monotonic clock, so tests drive time with a call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Final, NamedTuple

from termal_tui.core.sanitize import visible_line
from termal_tui.core.vocabulary import counted
from termal_tui.views.findings import Finding, HealthReport, Thresholds, format_age
from termal_tui.views.notifiers import Listener, Notifier

MAX_SHOWN: Final = 500  # findings listed (ranked); a line says how many more there are
SLOW_FACTOR: Final = 20.0  # after a pass of t seconds, the next waits at least 20 t…
SLOW_PASS: Final = 0.5  # …when t is at least this (a busy machine slows small passes too)
CHECKING: Final = " · checking…"
TITLE: Final = "termal-tui (read-only) — delivery health"
MUTED: Final = "$termal-muted"
CHANNEL_LINES: Final = 3  # the channels section's most lines; then "… and N more"
NAME_CELLS: Final = 24  # a session's name is cut to this in the channels section

Segment = tuple[str, str]  # (text, style): the screen turns these into its own text


class Counts(NamedTuple):
    """What a report counted before it was cut to the findings listed."""

    rows: int  # stuck unread rows, each once
    mailboxes: int  # mailboxes with a finding
    findings: int  # findings in all


class Channel(NamedTuple):
    """Who holds one registered session's channel, as the health view says it (names
    and hosts already made visible: an agent chose them)."""

    name: str
    holder: str  # "local pid 4242 since 12:01 UTC"; "" when nobody holds it
    hooks: str  # "hooks 3 min ago" when nobody holds it but its hooks ran; else ""

    @property
    def held(self) -> bool:
        return bool(self.holder)

    def text(self) -> str:
        """``planner ← local pid 4242 since 12:01 UTC`` / ``backend ← nobody``."""
        if self.holder:
            return f"{self.name} ← {self.holder}"
        return f"{self.name} ← nobody" + (f" ({self.hooks})" if self.hooks else "")


def _clock_time(epoch: float, today: datetime) -> str:
    """``12:01 UTC`` today (UTC), ``2026-12-01 23:58 UTC`` on another day."""
    moment = datetime.fromtimestamp(epoch, UTC)
    if moment.date() == today.astimezone(UTC).date():
        return moment.strftime("%H:%M UTC")
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def holder_words(listener: Listener, today: datetime) -> str:
    """The compact :meth:`Listener.describe`: ``local pid 4242 since 12:01 UTC``, or
    ``remote 10.0.0.7 (shim 77@laptop) since …`` (the shim's words are its own)."""
    since = _clock_time(listener.since, today)
    if listener.kind == "remote":
        shim = f" (shim {visible_line(listener.peer, 40)})" if listener.peer else ""
        return f"remote {visible_line(listener.host, 60)}{shim} since {since}"
    return f"local pid {listener.pid} since {since}"


def channels_of(notifiers: Mapping[str, Notifier] | None, now: datetime) -> list[Channel] | None:
    """Every registered session's channel, held ones first, then by name; None when
    there is no session registry (sessions TermAl runs are not ours to describe)."""
    if notifiers is None:
        return None
    moment = now.timestamp()
    found = []
    for notifier in notifiers.values():
        name = visible_line(notifier.name, NAME_CELLS) or "?"
        if notifier.holder is not None:
            holder = holder_words(notifier.holder, now)
        elif notifier.channel:  # a registry from before version 5: one channel, no more said
            holder = "a local channel"
        else:
            holder = ""
        hooks = ""
        if not holder and notifier.hook_seen_at is not None:
            hooks = f"hooks {format_age(moment - notifier.hook_seen_at)} ago"
        found.append(Channel(name, holder, hooks))
    found.sort(key=lambda channel: (not channel.held, channel.name.casefold(), channel.name))
    return found


def identity(finding: Finding) -> tuple[str, str, str]:
    """What a finding is about: the highlight stays on it across passes."""
    return (finding.kind, finding.mailbox_id, finding.session_id)


def _wall() -> datetime:
    return datetime.now().astimezone()


class HealthView:
    """The health view's state and decisions, fed by passes over the live file."""

    def __init__(
        self,
        thresholds: Thresholds | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        live: bool = True,
        file_name: str = "",
        measure: Callable[[str], int] = len,
    ) -> None:
        self.thresholds = thresholds or Thresholds()
        # How wide a text is on screen: the viewer passes its one measure in terminal
        # cells (``tui.cells.cells``: a CJK character takes two); headless, characters.
        self.measure = measure
        self.clock = clock or _wall
        self.monotonic = monotonic
        self.live = live  # False: paused (interval 0) or a snapshot; no passes of its own
        self.file_name = file_name
        self.report: HealthReport | None = None  # the listed findings (at most MAX_SHOWN)
        self.counts: Counts | None = None
        self.checking = False
        self.good_at: str | None = None  # when the last pass that read the file ended
        self.stale_reason = ""  # why the last pass failed, until one succeeds
        self.missing = ""  # the file is not there (and nothing was read from it): why
        self.channels: list[Channel] | None = None  # None: no session registry
        self._finished_at = -1e18
        self._took = 0.0  # seconds the last pass took
        self._started_at = 0.0

    # ------------------------------------------------------------------ passes

    def due(self, *, asked: bool = False) -> bool:
        """May a pass start now? Never while one runs; after a slow pass (one that took
        seconds on a huge file) not before ``SLOW_FACTOR`` times its duration has gone
        by, so the view never keeps a core busy. A person asking (``r``) is always due."""
        if self.checking:
            return False
        if asked:
            return True
        slow = self._took >= SLOW_PASS  # a small file's pass is never held back
        return not (slow and self.monotonic() - self._finished_at < SLOW_FACTOR * self._took)

    def begin(self) -> None:
        self.checking = True
        self._started_at = self.monotonic()

    def _end(self) -> None:
        self.checking = False
        self._finished_at = self.monotonic()
        self._took = self._finished_at - self._started_at

    def loaded(
        self,
        report: HealthReport,
        notifiers: Mapping[str, Notifier] | None = None,
        now: datetime | None = None,
    ) -> None:
        """A pass succeeded: counted whole, then only the worst ``MAX_SHOWN`` findings
        are kept (400,000 findings need not stay in memory for 500 rows). ``notifiers``
        (read in the same pass, judged at ``now``) say who holds each channel."""
        self._end()
        self.channels = channels_of(notifiers, now or self.clock())
        self.stale_reason = ""
        self.missing = ""
        self.good_at = self.clock().strftime("%H:%M:%S")
        self.counts = Counts(report.stuck_rows, len(report.by_mailbox()), len(report.findings))
        self.report = HealthReport(
            findings=report.findings[:MAX_SHOWN], mailboxes=report.mailboxes, unread=report.unread
        )

    def failed(self, reason: str) -> None:
        """A pass failed: Stale with the reason until one succeeds (the listed findings
        of the last good pass stay)."""
        self._end()
        self.stale_reason = reason

    def abandon(self) -> None:
        """A pass ended without an answer of its own (the file was replaced meanwhile:
        the new file's pass follows; or it failed, and :meth:`failed` says why)."""
        self._end()

    def stale(self, reason: str) -> None:
        """The live source says the file cannot be read now (gone, locked, replaced by
        one that cannot be opened): Stale with the reason, the findings kept."""
        self.stale_reason = reason

    def file_missing(self, reason: str) -> None:
        """The live source says nothing is at the path (never opened, or gone)."""
        self.checking = False
        self.missing = reason or "the database file is not there"
        if self.report is not None:  # it was read before: Stale, the findings stay
            self.stale_reason = self.missing

    # ------------------------------------------------------------- what it shows

    @property
    def never_read(self) -> bool:
        return self.good_at is None

    @property
    def more(self) -> int:
        """Findings counted but not listed."""
        if self.report is None or self.counts is None:
            return 0
        return self.counts.findings - len(self.report.findings)

    @property
    def findings(self) -> list[Finding]:
        return self.report.findings if self.report is not None else []

    def highlight_after(
        self, previous: list[Finding], at: int | None, previous_more: int = 0
    ) -> int:
        """Where the highlight goes after a redraw: on the same finding (by what it is
        about) when it is still listed, on "… and N more" when it was there, else 0."""
        if at is not None and at == len(previous) and previous_more and self.more:
            return len(self.findings)
        if at is not None and 0 <= at < len(previous):
            keys = [identity(finding) for finding in self.findings]
            chosen = identity(previous[at])
            if chosen in keys:
                return keys.index(chosen)
        return 0

    def heading(self, room: int = 200) -> list[Segment]:
        """The view's title line, as every screen has one: what gives way when narrow is
        the file's name, then the explanation (never cut mid-word)."""
        name = visible_line(self.file_name, 60)
        for tail in (
            f" · stuck hand-offs, worst first · {name}" if name else "",
            " · stuck hand-offs, worst first",
            "",
        ):
            if self.measure("Delivery health") + self.measure(tail) <= room:
                break
        return (
            [("Delivery health", "bold"), (tail, MUTED)] if tail else [("Delivery health", "bold")]
        )

    def _state(self, live: bool) -> Segment:
        """``● Live 12:00:00``; Stale with the time of the last good pass, or none."""
        moment = f" {self.good_at}" if self.good_at else ""
        if not live:
            return (f"● Stale{moment}", "bold $termal-error")
        if not self.live:
            return (f"⏸ Paused{moment}", "bold $termal-warning")
        return (f"● Live{moment}", "bold $termal-success")

    def status(self, room: int) -> list[Segment]:
        """The status line at ``room`` cells (a Stale reason on a line of its own)."""
        if self.missing and self.never_read:
            name = visible_line(self.file_name, 60) or "the database file"
            return [
                ("◌ Not there yet", "bold $termal-warning"),
                (f" · {name} does not exist (yet): nothing to check\n", MUTED),
                (visible_line(self.missing, 300), MUTED),
            ]
        if self.stale_reason:
            listed = " · the findings of that pass" if self.report is not None else ""
            return [
                self._state(live=False),
                (f"{listed}\n", MUTED),
                (visible_line(self.stale_reason, 300), "$termal-error"),
            ]
        if self.report is None or self.counts is None:
            return [("◌ Checking every mailbox…", MUTED)]
        report, state = self.report, self._state(live=True)
        checking = [(CHECKING, MUTED)] if self.checking else []
        if report.healthy:
            mailboxes = counted(report.mailboxes, "mailbox", "mailboxes")
            said = f" · ✓ Nothing is stuck: {mailboxes}, {report.unread:,} unread"
            for words in (f"{said}, every unread row is recent or on its way.", f"{said}."):
                if self.measure(state[0]) + self.measure(words) + self.measure(CHECKING) <= room:
                    break
            else:
                words = " · ✓ Nothing is stuck."
            return [state, (words, "bold $termal-success"), *checking]
        rows, stuck_in = self.counts.rows, self.counts.mailboxes
        of = counted(report.mailboxes, "mailbox", "mailboxes")
        choices = (
            f" · {counted(rows, 'stuck unread row')} in {stuck_in:,} of {of}",
            f" · {rows:,} stuck in {stuck_in:,} of {of}",
            f" · {rows:,} stuck in {counted(stuck_in, 'mailbox', 'mailboxes')}",
        )
        words = choices[-1]
        for words in choices:
            if self.measure(state[0]) + self.measure(words) <= room - self.measure(
                CHECKING
            ):  # room for "checking…"
                break
        line = [state, (words, "bold $termal-warning")]
        hint = " · enter opens the first affected message"
        if (
            self.measure(state[0])
            + self.measure(words)
            + self.measure(hint)
            + self.measure(CHECKING)
            <= room
        ):
            line.append((hint, MUTED))
        return line + checking

    def channel_lines(self, room: int, most: int = CHANNEL_LINES) -> list[list[Segment]]:
        """The channels section at ``room`` cells: ``channels: planner ← local pid 4242
        since 12:01 UTC · backend ← nobody``, wrapped between sessions (a session is
        never split; one too long for a line is cut with ``…``), at most ``most`` lines,
        the last ending in ``… and N more`` when not all fit. Nothing when there is no
        session registry."""
        if self.channels is None:
            return []
        label = "channels: "
        if not self.channels:
            return [[(label, "bold"), ("no session is registered", MUTED)]]
        room = max(20, room)
        indent = " " * self.measure(label)
        total = len(self.channels)
        lines: list[list[Segment]] = []
        line: list[Segment] = [(label, "bold")]
        used = self.measure(label)
        for index, channel in enumerate(self.channels):
            text = channel.text()
            style = "" if channel.held else "$termal-warning"
            sep = " · " if len(line) > 1 else ""
            if len(line) > 1 and used + self.measure(sep) + self.measure(text) > room:
                if len(lines) == most - 1:  # no line left: say how many are not shown
                    return [*lines, self._cut_with_more(line, used, room, total - index)]
                lines.append(line)
                line, used, sep = [(indent, "")], self.measure(indent), ""
            if (
                used + self.measure(sep) + self.measure(text) > room
            ):  # alone on its line and still too long
                text = self._cut(text, max(1, room - used - self.measure(sep)))
            line += [(sep, MUTED), (text, style)] if sep else [(text, style)]
            used += self.measure(sep) + self.measure(text)
        return [*lines, line]

    def _cut(self, text: str, room: int) -> str:
        """``text`` cut to ``room`` (by :attr:`measure`), ending in ``…``."""
        while text and self.measure(text + "…") > room:
            text = text[:-1]
        return text + "…"

    def _cut_with_more(self, line: list[Segment], used: int, room: int, left: int) -> list[Segment]:
        """``line`` ending in ``… and N more sessions``, sessions dropped from its end
        (counted into N) until that fits (the line's first session always stays)."""
        while True:
            tail = f" · … and {counted(left, 'more session')}"
            if used + self.measure(tail) <= room or len(line) <= 2:
                return [*line, (tail, MUTED)]
            sep, text = line[-2], line[-1]
            line = line[:-2]
            used -= self.measure(sep[0]) + self.measure(text[0])
            left += 1

    def more_line(self) -> str:
        left = self.more
        return (
            f"… and {counted(left, 'more finding')}, less severe or more recent: "
            "`termal-tui doctor` lists them all"
        )
