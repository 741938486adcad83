"""The health view: stuck hand-offs ranked by severity and age; enter opens the mailbox
at the first affected message. Read-only, like everything in the viewer.

Its worker posts a typed :class:`HealthLoaded`; a failed pass is a :class:`ReadFailed`,
shown as the one "Stale" status line (the last report's findings stay listed).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from termal_tui.health import Finding, HealthReport, Thresholds, format_age, health_report
from termal_tui.sanitize import visible_line
from termal_tui.store.reader import MailboxReader
from termal_tui.tui.messages import HealthLoaded, ReadFailed, read_failed

KIND_LABELS = {
    "receiver-gone": ("⚠ receiver gone", "bold $error"),
    "no-notifier": ("⚠ nobody listening", "bold $error"),
    "never-woken": ("⚠ never woken", "bold $warning"),
    "woken-unprocessed": ("⚠ woken, not processed", "bold $warning"),
    "lagging": ("◷ lagging", "$foreground 65%"),
}


def finding_row(finding: Finding) -> Content:
    label, style = KIND_LABELS[finding.kind]
    head = Content.assemble(
        Content.styled(f"{label:<24}", style),
        Content.styled(visible_line(finding.participants, 40), "bold"),
        Content.styled(
            f"  first #{finding.first_sequence:,} · oldest {format_age(finding.age_seconds)}",
            "$foreground 65%",
        ),
    )
    return Content("\n").join(
        [head, Content("   ") + Content(visible_line(finding.describe(), 110))]
    )


class HealthScreen(Screen[tuple[str, int] | None]):
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
    ) -> None:
        super().__init__()
        self.reader = reader
        self.clock = clock
        self.thresholds = thresholds or Thresholds()
        self.report: HealthReport | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Content("◌ Checking every mailbox…"), id="health-status")
            yield OptionList(id="findings")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.title = "termal-tui (read-only) — delivery health"
        self.action_reload()

    def action_reload(self) -> None:
        self.load()

    @work(exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        now = self.clock() if self.clock is not None else None
        report = await health_report(self.reader, now=now, thresholds=self.thresholds)
        self.post_message(HealthLoaded(report))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            event.stop()
            self.post_message(read_failed(event.worker.error))

    @on(HealthLoaded)
    def _loaded(self, event: HealthLoaded) -> None:
        event.stop()
        self.show(event.report)

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        event.stop()
        self.query_one("#health-status", Static).update(
            Content.assemble(
                Content.styled("● Stale", "bold $error"),
                " ",
                Content.styled(visible_line(event.error, 200), "$error"),
            )
        )

    def show(self, report: HealthReport) -> None:
        self.report = report
        status = self.query_one("#health-status", Static)
        findings = self.query_one("#findings", OptionList)
        findings.clear_options()
        if report.healthy:
            status.update(
                Content.styled(
                    f"✓ Nothing is stuck: {report.mailboxes} mailboxes, {report.unread:,} "
                    "unread, every unread row is recent or on its way.",
                    "bold $success",
                )
            )
            return
        status.update(
            Content.styled(
                f"{len(report.findings)} stuck hand-offs in {len(report.by_mailbox())} of "
                f"{report.mailboxes} mailboxes · enter opens the first affected message",
                "bold $warning",
            )
        )
        findings.add_options(
            Option(finding_row(finding), id=f"finding-{index}")
            for index, finding in enumerate(report.findings)
        )
        findings.highlighted = 0
        findings.focus()

    @on(OptionList.OptionSelected, "#findings")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.report is None:
            return
        finding = self.report.findings[event.option_index]
        self.dismiss((finding.mailbox_id, finding.first_sequence))
