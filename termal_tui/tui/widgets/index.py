"""The mailbox index: compact two-line cards, newest activity first, polled while shown.

Cards are drawn as soon as the summaries are read; the health markers (a pass over
every unread range, at most every 30 s) follow in their own worker and restyle them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from termal_tui.models import MailboxSummary
from termal_tui.sanitize import visible_line
from termal_tui.store.reader import MailboxReader
from termal_tui.tui.messages import (
    IndexLoaded,
    MarkersLoaded,
    OpenMailbox,
    ReadFailed,
    read_failed,
)
from termal_tui.tui.render import card

if TYPE_CHECKING:
    from termal_tui.health import Thresholds

HEALTH_EVERY_SECONDS = 30.0
PROBLEM_WORDS = {
    "receiver-gone": "gone",
    "no-notifier": "unheard",
    "never-woken": "not woken",
    "woken-unprocessed": "ignored",
    "lagging": "lagging",
}


class CardList(OptionList):
    """The index's cards; enter opens (shown in the footer)."""

    BINDINGS = [Binding("enter", "select", "Open")]


class MailboxIndex(Vertical, can_focus=True):
    """Cards for every visible mailbox. Selecting one posts :class:`OpenMailbox`.

    Focusable itself, so that with no cards (an empty database) its keys still work.
    """

    DEFAULT_CSS = """
    MailboxIndex #index-status { height: 1; padding: 0 1; color: $foreground 65%; }
    MailboxIndex #index-empty { padding: 1 2; display: none; }
    MailboxIndex.-empty #index-empty { display: block; }
    MailboxIndex.-empty #cards { display: none; }
    MailboxIndex #cards { height: 1fr; border: none; }
    MailboxIndex #cards > .option-list--option { padding: 0 1; }
    MailboxIndex #index-filter { margin: 0 1; }
    MailboxIndex.-none #index-filter { display: none; }
    """
    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("h", "app.health", "Health"),
        Binding("r", "refresh", "Refresh"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(
        self,
        *,
        session_id: str | None = None,
        clock: Callable[[], datetime] | None = None,
        thresholds: Thresholds | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.thresholds = thresholds  # None: health.py's defaults
        self.summaries: list[MailboxSummary] = []
        self.session_id = session_id
        self.clock = clock or (lambda: datetime.now().astimezone())
        self.reader: MailboxReader | None = None
        self.interval = 0.0
        self.snapshot = False
        self.visible_tab = False  # set by Show / Hide
        self.refreshing = False
        self.marking = False
        self._timer: Timer | None = None
        self._width = 0
        self.problems: dict[str, str] = {}  # mailbox id → a word for its worst finding
        self._health_at = -1e9
        self.filter_text = ""
        self._focused_once = False
        self._load_on_show = False

    def _matches(self, summary: MailboxSummary) -> bool:
        needle = self.filter_text.casefold()
        return not needle or any(
            needle in p.display_name.casefold() or needle in p.session_id.casefold()
            for p in summary.participants
        )

    def compose(self) -> ComposeResult:
        yield Static(Content("Loading mailboxes…"), id="index-status")
        filter_box = Input(placeholder="/ filter by participant", id="index-filter", compact=True)
        filter_box.can_focus = False  # focused only by / (never takes ordinary keys)
        yield filter_box
        yield Static(
            Content(
                "No mailboxes yet.\n\nAgents have not sent each other any visible messages in "
                "this database. When they do, their mailboxes appear here (press r to refresh)."
            ),
            id="index-empty",
        )
        yield CardList(id="cards")

    def start(
        self, reader: MailboxReader, interval: float, *, snapshot: bool, load_now: bool
    ) -> None:
        """Begin reading: the timer ticks only while the index is shown; with
        ``load_now`` the first load starts once the index has been drawn (its first
        frame says "Loading mailboxes…"), so cards are rendered once, at its width."""
        self.reader = reader
        self.interval = interval
        self.snapshot = snapshot
        if interval > 0:
            self._timer = self.set_interval(interval, self.poll, pause=not self.visible_tab)
        if load_now:
            if self.visible_tab:
                self.load()
            else:
                self._load_on_show = True

    def on_show(self) -> None:
        """Shown (laid out and drawn): the first load, or, coming back to the index,
        the timer resumes and a poll runs at once."""
        self.visible_tab = True
        if self.summaries and not self._focused_once and self._displayed():
            self._focused_once = True  # cards drawn while hidden: keys to them now
            self.focus_cards()
        if self._timer is not None:
            self._timer.resume()
        if self._load_on_show:
            self._load_on_show = False
            self.load()
        elif self._timer is not None:
            self.poll()

    def on_hide(self) -> None:
        if self._timer is not None:
            self._timer.pause()
        self.visible_tab = False

    def _displayed(self) -> bool:
        """Shown now: Show/Hide arrive after the next layout, ``display`` changes at once
        when another tab is chosen."""
        return self.visible_tab and all(
            node.display for node in self.ancestors_with_self if isinstance(node, Widget)
        )

    def focus_cards(self) -> None:
        if self.summaries:
            self.query_one("#cards", OptionList).focus()
        else:
            self.focus()

    def poll(self) -> None:
        if self.visible_tab and not self.refreshing:
            self.load()

    def action_refresh(self) -> None:
        self.load()

    def action_filter(self) -> None:
        box = self.query_one("#index-filter", Input)
        box.can_focus = True
        box.focus()

    @on(Input.Changed, "#index-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter_text = event.value.strip()
        if self.summaries:
            self.show(self.summaries, self._status(self.summaries))

    @on(Input.Submitted, "#index-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#index-filter", Input).can_focus = False
        self.focus_cards()

    @work(group="index", exclusive=False, exit_on_error=False)
    async def load(self) -> None:
        """The summaries (cards drawn at once), then the health markers when due."""
        if self.refreshing or self.reader is None:
            return
        self.refreshing = True
        try:
            summaries = await self.reader.list_mailboxes(session_id=self.session_id)
        finally:
            self.refreshing = False
        self.post_message(IndexLoaded(summaries))
        if time.monotonic() - self._health_at >= HEALTH_EVERY_SECONDS:
            self.load_markers()

    @work(group="index-markers", exclusive=False, exit_on_error=False)
    async def load_markers(self) -> None:
        """The worst finding per mailbox, as a word on its card."""
        if self.marking or self.reader is None:
            return
        from termal_tui.health import health_report

        self.marking = True
        self._health_at = time.monotonic()
        try:
            report = await health_report(self.reader, now=self.clock(), thresholds=self.thresholds)
        finally:
            self.marking = False
        worst: dict[str, str] = {}
        for finding in report.findings:  # ranked: the first per mailbox is worst
            if finding.severity >= 2:
                worst.setdefault(finding.mailbox_id, PROBLEM_WORDS[finding.kind])
        self.post_message(MarkersLoaded(worst))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed worker becomes one typed message (shown by :meth:`_failed`)."""
        if event.state == WorkerState.ERROR:
            event.stop()
            self.post_message(read_failed(event.worker.error))

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        event.stop()
        self.loading = False
        self.show_error(event.error)

    @on(IndexLoaded)
    def _loaded(self, event: IndexLoaded) -> None:
        self.loading = False
        self.show(event.summaries, self._status(event.summaries))

    @on(MarkersLoaded)
    def _markers_loaded(self, event: MarkersLoaded) -> None:
        event.stop()
        if event.problems != self.problems:
            self.problems = event.problems
            if self.summaries:
                self.show(self.summaries, self._status(self.summaries))

    def _status(self, summaries: list[MailboxSummary]) -> Content:
        if self.snapshot:
            state = Content.styled("◼ Snapshot", "bold $warning")
        elif self.interval <= 0:
            state = Content.styled("⏸ Paused", "bold $warning")
        else:
            state = Content.styled("● Live", "bold $success")
        unread = sum(summary.unread_count for summary in summaries)
        count = len(summaries)
        return Content.assemble(
            state,
            Content.styled(
                f" {self.clock().strftime('%H:%M:%S')} · {count} mailbox"
                f"{'es' if count != 1 else ''} · {unread:,} unread",
                "$foreground 65%",
            ),
        )

    def show_error(self, reason: str) -> None:
        self.set_status(
            Content.assemble(
                Content.styled("● Stale", "bold $error"),
                " ",
                Content.styled(visible_line(reason, 300), "$error"),
            )
        )

    def show(self, summaries: list[MailboxSummary], status: Content) -> None:
        cards = self.query_one("#cards", OptionList)
        highlighted = cards.highlighted_option.id if cards.highlighted_option else None
        self.summaries = summaries
        width = max(20, (self.size.width or 80) - 5)  # padding and a scrollbar
        self._width = width
        shown = [s for s in summaries if self._matches(s)]
        with self.app.batch_update():
            cards.clear_options()
            cards.add_options(
                [Option(card(s, width, self.problems.get(s.id)), id=s.id) for s in shown]
            )
            if highlighted is not None and any(s.id == highlighted for s in shown):
                cards.highlighted = cards.get_option_index(highlighted)
            elif shown:
                cards.highlighted = 0
            self.set_class(not summaries, "-empty")
            # Nothing at all to filter: no filter box (it would take the keys).
            self.set_class(not summaries, "-none")
            typing = self.query_one("#index-filter").has_focus
            # Focus only what is shown: focusing into a hidden tab would switch to it.
            on_screen = self._displayed()
            if on_screen and not typing and not self._focused_once:
                self._focused_once = True  # the first load: keys go to the cards
                self.focus_cards()
            elif not summaries and on_screen and not typing:
                self.focus()
            elif summaries and on_screen and self.app.focused is self:
                cards.focus()
            self.query_one("#index-status", Static).update(status)

    def on_resize(self) -> None:
        if self.summaries and (self.size.width or 80) - 5 != self._width:
            self.show(self.summaries, self._status(self.summaries))

    def set_status(self, status: Content) -> None:
        self.query_one("#index-status", Static).update(status)

    @on(OptionList.OptionSelected, "#cards")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(OpenMailbox(event.option.id))
