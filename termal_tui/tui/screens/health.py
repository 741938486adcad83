"""The health view: stuck hand-offs ranked by severity and age; enter opens the mailbox
at the first affected message. Read-only, like everything in the viewer.

Live like a tab: its own timer re-checks every interval while the screen is shown
(paused while another screen covers it), never overlapping a pass in flight; the status
line says Live or Stale and when it last checked. Its worker posts a typed
:class:`HealthLoaded`; a failed pass is a :class:`ReadFailed`, shown as the one "Stale"
status line (the last report's findings stay listed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from termal_tui.health import Finding, HealthReport, Thresholds, format_age, health_report
from termal_tui.sanitize import visible_line
from termal_tui.store.reader import MailboxReader
from termal_tui.tui.messages import HealthLoaded, ReadFailed, WorkerFailures
from termal_tui.tui.widgets.footer import FittingFooter
from termal_tui.vocabulary import FINDING_WORDS, counted

KIND_LABELS = {  # the words are vocabulary.FINDING_WORDS, as on cards and in help
    "receiver-gone": (f"⚠ {FINDING_WORDS['receiver-gone']}", "bold $error"),
    "no-notifier": (f"⚠ {FINDING_WORDS['no-notifier']}", "bold $error"),
    "never-woken": (f"⚠ {FINDING_WORDS['never-woken']}", "bold $warning"),
    "woken-unprocessed": (f"⚠ {FINDING_WORDS['woken-unprocessed']}", "bold $warning"),
    "lagging": (f"◷ {FINDING_WORDS['lagging']}", "$foreground 65%"),
}


MAX_SHOWN = 500  # findings listed (ranked); a line says how many more there are
SLOW_FACTOR = 20.0  # after a pass of t seconds, the next waits at least 20 t…
SLOW_PASS = 0.5  # …when t is at least this (a busy machine slows small passes too)
CHECKING = " · checking…"
LABEL_CELLS = 24  # the widest label and a space: the names line up at 80 columns and up


def finding_row(finding: Finding, width: int = 116) -> Content:
    """Two lines that never wrap at ``width``: the label, the participants and where it
    starts, then what is stuck. Narrow, the label is not padded and the first row's
    number moves to the second line; names and sentences end in ``…`` when cut."""
    label, style = KIND_LABELS[finding.kind]
    where = f"first #{finding.first_sequence:,} · oldest {format_age(finding.age_seconds)}"
    names = visible_line(finding.participants)
    padded = f"{label:<{LABEL_CELLS}}"
    if len(padded) + min(len(names), 16) + 2 + len(where) > width:
        padded = f"{label}  "
    room = width - len(padded) - 2 - len(where)
    describe = visible_line(finding.describe())
    if room >= min(len(names), 16):
        head = Content.assemble(
            Content.styled(padded, style),
            Content.styled(visible_line(names, max(6, min(40, room))), "bold"),
            Content.styled(f"  {where}", "$foreground 65%"),
        )
        second = Content("   ") + Content(visible_line(describe, max(10, width - 3)))
    else:  # too narrow for both: the first row's number and the age lead the second
        # line (a cut cannot take them), the sentence follows without its age
        head = Content.assemble(
            Content.styled(padded, style),
            Content.styled(visible_line(names, max(6, width - len(padded))), "bold"),
        )
        first = f"#{finding.first_sequence:,} · {format_age(finding.age_seconds)}"
        second = Content.assemble(
            Content.styled(f"   {first} · ", "$foreground 65%"),
            Content(
                visible_line(finding.describe(with_age=False), max(10, width - 6 - len(first)))
            ),
        )
    return Content("\n").join([head, second])


class Counts(NamedTuple):
    """What a report counted before it was cut to the findings listed."""

    rows: int  # stuck unread rows, each once
    mailboxes: int  # mailboxes with a finding
    findings: int  # findings in all


def _identity(finding: Finding) -> tuple[str, str, str]:
    return (finding.kind, finding.mailbox_id, finding.session_id)


class FindingList(OptionList):
    """The findings; enter opens the first affected message (shown in the footer)."""

    BINDINGS = [Binding("enter", "select", "Open")]


class HealthScreen(WorkerFailures, Screen[tuple[str, int] | None]):
    """Dismisses with (mailbox id, first affected sequence) when a finding is chosen."""

    DEFAULT_CSS = """
    HealthScreen #health-status { height: auto; padding: 0 1; background: $panel; }
    HealthScreen #findings { height: 1fr; border: none; }
    HealthScreen #findings > .option-list--option { padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,h", "dismiss(None)", "Back"),
        Binding("r", "reload", "Refresh"),
    ]

    def __init__(
        self,
        reader: MailboxReader,
        thresholds: Thresholds | None = None,
        clock: Callable[[], datetime] | None = None,
        interval: float = 0.0,
    ) -> None:
        super().__init__()
        self.reader = reader
        self.clock = clock
        self.thresholds = thresholds or Thresholds()
        self.report: HealthReport | None = None
        self.interval = interval  # 0: no timer (paused viewer or snapshot)
        self.checking = False
        self._timer: Timer | None = None
        self._focused_once = False
        self._status: Content | None = None  # the status line of the last report
        self._counts: Counts | None = None
        self._finished_at = -1e9
        self._took = 0.0  # seconds the last pass took
        self._good_at: str | None = None  # when the last pass that read the file ended
        self._stale_reason = ""  # why the last pass failed, until one succeeds

    def _now(self) -> datetime:
        return self.clock() if self.clock is not None else datetime.now().astimezone()

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Content("◌ Checking every mailbox…"), id="health-status")
            yield FindingList(id="findings")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.title = "termal-tui (read-only) — delivery health"
        if self.interval > 0:
            self._timer = self.set_interval(self.interval, self.poll)
        self.action_reload()

    def on_screen_suspend(self) -> None:
        """Covered by another screen (help, a body): no ticks."""
        if self._timer is not None:
            self._timer.pause()

    def on_screen_resume(self) -> None:
        """Shown again: the timer runs and a pass starts at once."""
        if self._timer is not None:
            self._timer.resume()
            if self.report is not None:
                self.poll()

    def reopen(self, reader: MailboxReader) -> None:
        """Another file is at the path (the App opened it): check that one."""
        self.reader = reader
        self.checking = False
        self.load()

    def poll(self) -> None:
        """A timer tick: a pass, unless one runs or the last one was slow (a pass that
        takes seconds on a huge file waits ``SLOW_FACTOR`` times its duration before
        the next one, so the view never keeps a core busy)."""
        if self.checking:
            return
        slow = self._took >= SLOW_PASS  # a small file's pass is never held back
        if slow and time.monotonic() - self._finished_at < SLOW_FACTOR * self._took:
            return
        self.load()

    def action_reload(self) -> None:
        self.load()

    @work(exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        now = self.clock() if self.clock is not None else None
        self.checking = True
        self._checking_shown()
        started = time.monotonic()
        try:
            report = await health_report(self.reader, now=now, thresholds=self.thresholds)
        finally:
            self.checking = False
            self._finished_at = time.monotonic()
            self._took = self._finished_at - started
        self.post_message(HealthLoaded(report))

    def _checking_shown(self) -> None:
        """A pass is running over the last report: the status line says so."""
        if self.report is None or self._status is None or self._stale_reason:
            return  # (Stale stays said until a pass succeeds)
        self.query_one("#health-status", Static).update(
            self._status + Content.styled(CHECKING, "$foreground 65%")
        )

    def _state(self, live: bool) -> Content:
        """``● Live 12:00:00``; Stale with the time of the last good pass (as tabs do)."""
        moment = self._good_at or self._now().strftime("%H:%M:%S")
        if not live:
            return Content.styled(f"● Stale {moment}", "bold $error")
        if self.interval <= 0:
            return Content.styled(f"⏸ Paused {moment}", "bold $warning")
        return Content.styled(f"● Live {moment}", "bold $success")

    @on(HealthLoaded)
    def _loaded(self, event: HealthLoaded) -> None:
        event.stop()
        self._stale_reason = ""
        self._good_at = self._now().strftime("%H:%M:%S")
        self.show(event.report)

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        event.stop()
        self._stale_reason = event.error
        self._show_stale()

    def _show_stale(self) -> None:
        """Until a pass succeeds (a resize redraws the rows, not a Live line)."""
        self.query_one("#health-status", Static).update(
            Content.assemble(
                self._state(live=False),
                Content.styled(" · the findings of that pass\n", "$foreground 65%"),
                Content.styled(visible_line(self._stale_reason, 200), "$error"),
            )
        )

    def show(self, report: HealthReport) -> None:
        """A new report: counted whole, then only the worst ``MAX_SHOWN`` findings are
        kept (400,000 findings need not stay in memory for 500 rows)."""
        counts = Counts(report.stuck_rows, len(report.by_mailbox()), len(report.findings))
        listed = HealthReport(
            findings=report.findings[:MAX_SHOWN], mailboxes=report.mailboxes, unread=report.unread
        )
        self.draw(listed, counts)

    def draw(self, report: HealthReport, counts: Counts) -> None:
        """The status line and the rows, at the width the screen has now."""
        previous = self.report
        self.report, self._counts = report, counts
        status = self.query_one("#health-status", Static)
        findings = self.query_one("#findings", OptionList)
        # The highlighted finding stays highlighted across passes (by what it is about).
        chosen = None
        at = findings.highlighted
        on_more = at is not None and previous is not None and at == len(previous.findings)
        if previous is not None and at is not None and at < len(previous.findings):
            chosen = _identity(previous.findings[at])
        if report.healthy:
            findings.clear_options()
            status.update(
                Content.assemble(
                    self._state(live=True),
                    Content.styled(
                        f" · ✓ Nothing is stuck: {counted(report.mailboxes, 'mailbox', 'mailboxes')}, "
                        f"{report.unread:,} unread, every unread row is recent or on its way.",
                        "bold $success",
                    ),
                )
            )
            self._status = None
            return
        rows, stuck_in = counts.rows, counts.mailboxes
        plural = "s" if rows != 1 else ""
        room = self.size.width - 2
        state = self._state(live=True)
        line = state
        for words in (
            f" · {rows:,} stuck unread row{plural} in {stuck_in:,} of "
            f"{counted(report.mailboxes, 'mailbox', 'mailboxes')}",
            f" · {rows:,} stuck in {stuck_in:,} of {counted(report.mailboxes, 'mailbox', 'mailboxes')}",
            f" · {rows:,} stuck in {counted(stuck_in, 'mailbox', 'mailboxes')}",
        ):
            line = state + Content.styled(words, "bold $warning")
            if line.cell_length <= room - len(CHECKING):  # room for "· checking…" too
                break
        hint = Content.styled(" · enter opens the first affected message", "$foreground 65%")
        if line.cell_length + hint.cell_length + len(CHECKING) <= room:
            line += hint
        self._status = line
        status.update(line)
        shown = report.findings
        left = counts.findings - len(shown)
        with self.app.batch_update():
            findings.clear_options()
            width = self._row_width()
            findings.add_options(
                Option(finding_row(finding, width), id=f"finding-{index}")
                for index, finding in enumerate(shown)
            )
            if left:  # the worst are listed; the rest are a command away (reachable
                # with the keys: enter on it says so)
                findings.add_option(
                    Option(
                        Content.styled(
                            f"… and {left:,} more finding{'s' if left != 1 else ''}, less "
                            "severe or more recent: `termal-tui doctor` lists them all",
                            "$foreground 65%",
                        ),
                        id="findings-more",
                    )
                )
            keys = [_identity(finding) for finding in shown]
            if on_more and left:  # on "… and N more" it stays there
                findings.highlighted = len(shown)
            else:
                findings.highlighted = keys.index(chosen) if chosen in keys else 0
        if not self._focused_once:
            self._focused_once = True
            findings.focus()

    def _row_width(self) -> int:
        """Cells a finding may use: the list less its scrollbar and the option padding
        (before the first layout: the screen less the same margins)."""
        findings = self.query_one("#findings", OptionList)
        # The scrollbar is counted whether or not it shows yet: the rows that follow
        # may bring it, and a row measured wider than it is drawn loses its last line.
        outer = findings.size.width or (self.size.width or 80) - 2
        return max(30, outer - findings.styles.scrollbar_size_vertical - 2)

    def on_resize(self) -> None:
        if self.report is not None and self._counts is not None and not self.report.healthy:
            self.draw(self.report, self._counts)  # rows follow the width both ways
            if self._stale_reason:
                self._show_stale()

    @on(OptionList.OptionSelected, "#findings")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.report is None:
            return
        if event.option.id == "findings-more":
            self.notify(
                "The view lists the worst findings; `termal-tui doctor` (or --json) lists "
                "every one.",
                markup=False,
            )
            return
        finding = self.report.findings[event.option_index]
        self.dismiss((finding.mailbox_id, finding.first_sequence))
