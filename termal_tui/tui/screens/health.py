"""The health view: stuck hand-offs ranked by severity and age; enter opens the mailbox
at the first affected message. Read-only, like everything in the viewer.

It renders a :class:`~termal_tui.views.health.HealthView` (what is listed, the counts,
the status line, when a pass may run) and owns only its keys. It reads nothing on its
own schedule: it subscribes to the app's one live source, and a pass runs when the
source reports the file (a change, or a poll that found none: time alone makes a
hand-off stuck), while the screen is shown, never overlapping one in flight. Its worker
posts a typed :class:`HealthLoaded`; a failed pass is a :class:`ReadFailed`, shown as
the one "Stale" status line (the last report's findings stay listed).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from termal_tui.core.sanitize import visible_line
from termal_tui.core.vocabulary import FINDING_WORDS
from termal_tui.tui.cells import cells, first_fit, fit, option_room, pad_cells
from termal_tui.tui.messages import (
    HealthLoaded,
    LiveChanged,
    ReadFailed,
    WorkerFailures,
    follow_live,
)
from termal_tui.tui.screens.mounting import popped_before_mount
from termal_tui.tui.widgets.footer import FittingFooter
from termal_tui.views.findings import Finding, HealthReport, Thresholds, format_age, health_report
from termal_tui.views.health import MAX_SHOWN as MAX_SHOWN  # (where the view's tests look)
from termal_tui.views.health import MUTED, TITLE, HealthView
from termal_tui.views.live import Superseded
from termal_tui.views.notifiers import Notifier, notifiers_for

if TYPE_CHECKING:
    from termal_tui.store.reader import MailboxReader
    from termal_tui.views.live import LiveSource, Subscription

Notifiers = Mapping[str, Notifier] | None

KIND_LABELS = {  # the words are vocabulary.FINDING_WORDS, as on cards and in help
    "receiver-gone": (f"⚠ {FINDING_WORDS['receiver-gone']}", "bold $termal-error"),
    "no-notifier": (f"⚠ {FINDING_WORDS['no-notifier']}", "bold $termal-error"),
    "never-woken": (f"⚠ {FINDING_WORDS['never-woken']}", "bold $termal-warning"),
    "woken-unprocessed": (f"⚠ {FINDING_WORDS['woken-unprocessed']}", "bold $termal-warning"),
    "lagging": (f"◷ {FINDING_WORDS['lagging']}", "$termal-muted"),
}

LABEL_CELLS = 24  # the widest label and a space: the names line up at 80 columns and up


def finding_row(finding: Finding, width: int = 116) -> Content:
    """Two lines that never wrap at ``width`` cells: the label, the participants and
    where it starts, then what is stuck. Laid out by cell width (wide names take two
    cells a character). Narrow, the label is not padded and the first row's number
    moves to the second line; names and sentences end in ``…`` when cut."""
    label, style = KIND_LABELS[finding.kind]
    where = f"first #{finding.first_sequence:,} · oldest {format_age(finding.age_seconds)}"
    names = visible_line(finding.participants)
    padded = pad_cells(label, LABEL_CELLS)
    if cells(padded) + min(cells(names), 16) + 2 + cells(where) > width:
        padded = f"{label}  "
    room = width - cells(padded) - 2 - cells(where)
    if room >= min(cells(names), 16):
        head = Content.assemble(
            Content.styled(padded, style),
            fit(names, max(6, min(40, room)), "bold"),
            Content.styled(f"  {where}", MUTED),
        )
        # the sentence's own "(oldest …)" goes whole before it would be cut: the head says it
        second = Content("   ") + first_fit(
            max(10, width - 3),
            visible_line(finding.describe()),
            visible_line(finding.describe(with_age=False)),
        )
    else:  # too narrow for both: the first row's number and the age lead the second
        # line (a cut cannot take them), the sentence follows without its age
        head = Content.assemble(
            Content.styled(padded, style),
            fit(names, max(6, width - cells(padded)), "bold"),
        )
        first = Content.styled(
            f"   #{finding.first_sequence:,} · {format_age(finding.age_seconds)} · ", MUTED
        )
        second = Content.assemble(
            first,
            fit(visible_line(finding.describe(with_age=False)), max(10, width - cells(first))),
        )
    return Content("\n").join([fit(head, width), fit(second, width)])


class FindingList(OptionList):
    """The findings; enter opens the first affected message (shown in the footer)."""

    BINDINGS = [Binding("enter", "select", "Open")]


class HealthScreen(WorkerFailures, Screen[tuple[str, int] | None]):
    """Dismisses with (mailbox id, first affected sequence) when a finding is chosen."""

    DEFAULT_CSS = """
    HealthScreen #health-title { height: 1; padding: 0 1; }
    HealthScreen #health-status { height: auto; padding: 0 1; background: $panel; }
    HealthScreen #health-channels { height: auto; padding: 0 1; background: $panel; }
    HealthScreen #findings { height: 1fr; border: none; }
    HealthScreen #findings > .option-list--option { padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,h", "dismiss(None)", "Back"),
        Binding("r", "reload", "Refresh"),
    ]

    def __init__(self, source: LiveSource, thresholds: Thresholds | None = None) -> None:
        super().__init__()
        self.source = source
        self.model = HealthView(
            thresholds,
            clock=source.clock.now,
            monotonic=source.clock.monotonic,
            live=source.interval > 0,
            file_name=source.name,
            measure=cells,
        )
        self._subscription: Subscription | None = None
        self._covered = False  # another screen (help, a body) is on top
        self._pending = False  # the file was reported while covered
        self._focused_once = False
        self._rows_of: object = None  # the report the rows were built from
        self._rows_width = 0
        # the notifiers a pass read, by id of its report, until HealthLoaded is handled
        self._notifiers: dict[int, tuple[Notifiers, datetime]] = {}

    # ------------------------------------------------------------- lifecycle

    @property
    def report(self):  # the listed findings (tests and the chosen row read it)
        return self.model.report

    @property
    def checking(self) -> bool:
        return self.model.checking

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Content(""), id="health-title")
            yield Static(Content("◌ Checking every mailbox…"), id="health-status")
            channels = Static(Content(""), id="health-channels")
            channels.display = False  # until a pass read the session registry
            yield channels
            yield FindingList(id="findings")
        yield FittingFooter()

    def on_mount(self) -> None:
        if popped_before_mount(self):
            return
        self.title = TITLE
        self._subscription = follow_live(self, self.source)
        self._apply_status(self.source.status.phase, self.source.status.reason)
        if self.source.reader is not None:
            self.load(asked=True)
        else:
            self.draw()

    def on_unmount(self) -> None:
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None

    def on_screen_suspend(self) -> None:
        """Covered by another screen (help, a body): no passes."""
        self._covered = True

    def on_screen_resume(self) -> None:
        """Shown again: a pass at once when the file was reported meanwhile."""
        self._covered = False
        if self._pending and self.model.report is not None:
            self._pending = False
            self.load()

    # ----------------------------------------------------------- the source

    @on(LiveChanged)
    def _live_changed(self, message: LiveChanged) -> None:
        message.stop()
        event = message.event
        if event.status.phase in ("live", "paused", "snapshot"):
            self.model.live = event.status.phase == "live"
        if event.kind == "state":
            self._apply_status(event.status.phase, event.status.reason)
            self.draw_status()
            return
        if event.kind == "tick":
            return  # no check was made: the status keeps its time
        if event.kind == "opened":
            self.model.missing = ""
        if self._covered:
            self._pending = True
            return
        self.load()

    def _apply_status(self, phase: str, reason: str) -> None:
        if phase == "missing":
            self.model.file_missing(reason)
        elif phase == "stale" and reason:
            self.model.stale(reason)

    # ------------------------------------------------------------ the passes

    def action_reload(self) -> None:
        self.load(asked=True)

    @work(group="health", exclusive=False, exit_on_error=False)
    async def load(self, asked: bool = False) -> None:
        if self.source.reader is None or not self.model.due(asked=asked):
            return
        self.model.begin()
        self.draw_status()
        now = self.source.clock.now()
        thresholds = self.model.thresholds

        async def check(reader: MailboxReader) -> tuple[HealthReport, Notifiers]:
            report = await health_report(reader, now=now, thresholds=thresholds)
            # who holds each channel, judged at the pass's moment (read-only)
            return report, await notifiers_for(reader.location, now.timestamp())

        try:
            report, notifiers = await self.source.read(check)
        except Superseded:
            self.model.abandon()  # the file was replaced: the "opened" event reads again
            return
        except BaseException:
            self.model.abandon()
            raise
        self._notifiers[id(report)] = (notifiers, now)
        self.post_message(HealthLoaded(report))

    @on(HealthLoaded)
    def _loaded(self, event: HealthLoaded) -> None:
        event.stop()
        notifiers, now = self._notifiers.pop(id(event.report), (None, None))
        self.model.loaded(event.report, notifiers, now)
        self.draw()

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        event.stop()
        self.model.failed(event.error)
        self.draw_status()

    # ------------------------------------------------------------- rendering

    def draw_status(self) -> None:
        room = (self.size.width or 80) - 2
        segments = self.model.status(room)
        self.query_one("#health-status", Static).update(
            Content.assemble(*(Content.styled(text, style) for text, style in segments))
        )
        lines = self.model.channel_lines(room)
        channels = self.query_one("#health-channels", Static)
        channels.display = bool(lines)
        channels.update(
            Content("\n").join(
                fit(Content.assemble(*(Content.styled(t, style) for t, style in line)), room)
                for line in lines
            )
        )
        heading = self.model.heading(room)
        title = Content.assemble(*(Content.styled(t, style) for t, style in heading))
        self.query_one("#health-title", Static).update(fit(title, room))

    def draw(self) -> None:
        """The status line, and the rows when the report (or the width) changed."""
        self.draw_status()
        findings = self.query_one("#findings", OptionList)
        width = self._row_width()
        report = self.model.report
        if report is None or (report is self._rows_of and width == self._rows_width):
            return
        previous = self._rows_of
        previous_findings = previous.findings if previous is not None else []  # type: ignore[attr-defined]
        previous_more = self._rows_more
        at = findings.highlighted
        self._rows_of, self._rows_width, self._rows_more = report, width, self.model.more
        with self.app.batch_update():
            findings.clear_options()
            findings.add_options(
                Option(finding_row(finding, width), id=f"finding-{index}")
                for index, finding in enumerate(report.findings)
            )
            if self.model.more:  # the worst are listed; the rest are a command away
                # (reachable with the keys: enter on it says so)
                findings.add_option(
                    Option(Content.styled(self.model.more_line(), MUTED), id="findings-more")
                )
            if findings.option_count:
                findings.highlighted = self.model.highlight_after(
                    previous_findings, at, previous_more
                )
        if not self._focused_once and findings.option_count:
            self._focused_once = True
            findings.focus()

    _rows_more = 0

    def _row_width(self) -> int:
        """Cells a finding may use: the list less its scrollbar and the option padding
        (before the first layout: the screen less the same margins)."""
        # The scrollbar is counted whether or not it shows yet: the rows that follow
        # may bring it, and a row measured wider than it is drawn loses its last line.
        return max(30, option_room(self.query_one("#findings", OptionList), self))

    def on_resize(self) -> None:
        if not popped_before_mount(self):
            self.draw()  # rows follow the width both ways; Stale stays said

    @on(OptionList.OptionSelected, "#findings")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        report = self.model.report
        if report is None:
            return
        if event.option.id == "findings-more":
            self.notify(
                "The view lists the worst findings; `termal-tui doctor` (or --json) lists "
                "every one.",
                markup=False,
            )
            return
        finding = report.findings[event.option_index]
        self.dismiss((finding.mailbox_id, finding.first_sequence))
