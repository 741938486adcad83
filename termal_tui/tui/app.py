"""MailboxApp: the read-only Textual viewer, and ``make_app`` used by the CLI and tests.

The App opens the reader and manages tabs; the index and each mailbox view own their
bindings, timers and workers.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Final

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.timer import Timer
from textual.widgets import Footer, Header, TabbedContent, TabPane

from termal_tui.health import Thresholds
from termal_tui.models import MailboxSummary
from termal_tui.presentation import summary_title
from termal_tui.sanitize import visible_line
from termal_tui.store.errors import RetryableError, StoreError
from termal_tui.store.reader import MailboxReader, open_reader
from termal_tui.tui.commands import MailboxCommands
from termal_tui.tui.messages import IndexLoaded, OpenMailbox
from termal_tui.tui.screens.help import HelpScreen
from termal_tui.tui.widgets.index import MailboxIndex
from termal_tui.tui.widgets.mailbox_view import CloseRequested, MailboxView, TitleKnown

INDEX_PANE: Final = "index"
DEFAULT_POLL_SECONDS: Final = 8.0
RETRY_OPEN_SECONDS = 2.0
# A viewer never waits long for a lock: it shows Stale and tries again on its next tick.
READER_BUSY_TIMEOUT_MS = 250
TAB_TITLE_CHARS: Final = 28


class MailboxApp(App[None]):
    """Browse TermAl mailboxes without ever writing to the database."""

    CSS_PATH = "app.tcss"
    TITLE = "termal-tui (read-only)"
    COMMANDS = App.COMMANDS | {MailboxCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit", show=False, id="quit"),  # shown by the index
        Binding("question_mark", "help", "Help", id="help"),
        Binding("left_square_bracket", "previous_tab", "Tabs", key_display="[ ]", id="prev-tab"),
        Binding("right_square_bracket", "next_tab", "Next tab", show=False, id="next-tab"),
        Binding("ctrl+right", "next_tab", "Next tab", show=False),
        Binding("ctrl+left", "previous_tab", "Prev tab", show=False),
        Binding("0", "show_index", "Index", id="index"),
        Binding("h", "health", "Health", show=False, id="health"),
    ]

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        mailbox_id: str | None = None,
        poll_interval: float = DEFAULT_POLL_SECONDS,
        clock: Callable[[], datetime] | None = None,
        thresholds: Thresholds | None = None,
    ) -> None:
        super().__init__()
        self.thresholds = thresholds or Thresholds()
        self.db_path = Path(db_path)
        self.session_id = session_id
        self.initial_mailbox = mailbox_id
        self.poll_interval = poll_interval
        self._clock = clock or (lambda: datetime.now().astimezone())
        self._stack = contextlib.AsyncExitStack()
        self._reader: MailboxReader | None = None
        self._panes: dict[str, str] = {}
        self._pane_counter = 0
        self._retry_timer: Timer | None = None
        self.sub_title = self._subtitle()

    def _subtitle(self) -> str:
        viewer = f" · as {visible_line(self.session_id, 40)}" if self.session_id else ""
        snapshot = " · snapshot" if self._reader is not None and self._reader.snapshot else ""
        return f"{visible_line(self.db_path.name, 60)}{viewer}{snapshot}"

    @property
    def reader(self) -> MailboxReader:
        assert self._reader is not None, "reader is opened on mount"
        return self._reader

    @property
    def summaries(self) -> list[MailboxSummary]:
        return self.query_one(MailboxIndex).summaries

    def now_text(self) -> str:
        return self._clock().strftime("%H:%M:%S")

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(id="tabs"), TabPane(Content("Mailboxes"), id=INDEX_PANE):
            yield MailboxIndex(session_id=self.session_id, clock=self._clock, id="mailbox-index")
        yield Footer(compact=True)

    async def on_mount(self) -> None:
        self.query_one(MailboxIndex).loading = True
        await self._open_reader()

    async def on_unmount(self) -> None:
        await self._stack.aclose()

    # ---------------------------------------------------------------- reader

    async def _open_reader(self) -> None:
        """Open the reader; a busy (locked) file shows Stale and is retried by a timer."""
        index = self.query_one(MailboxIndex)
        try:
            self._reader = await self._stack.enter_async_context(
                open_reader(self.db_path, busy_timeout_ms=READER_BUSY_TIMEOUT_MS)
            )
        except RetryableError as error:
            index.loading = False
            index.show_error(f"{error} — retrying every {RETRY_OPEN_SECONDS:g} s")
            if self._retry_timer is None:
                self._retry_timer = self.set_interval(RETRY_OPEN_SECONDS, self._retry_open)
            return
        except StoreError as error:
            index.loading = False
            index.show_error(str(error))
            return
        if self._retry_timer is not None:
            self._retry_timer.stop()
            self._retry_timer = None
        if self._reader.snapshot is not None:
            self.poll_interval = 0  # an immutable snapshot has no changes to follow
            self.sub_title = self._subtitle()
            self.notify(visible_line(self._reader.snapshot, 300), title="Snapshot", markup=False)
        index.start(
            self._reader,
            self.poll_interval,
            snapshot=self._reader.snapshot is not None,
            load_now=not self.initial_mailbox,
        )
        if self.initial_mailbox:
            # The tab's first page comes first; the index (which counts) follows it.
            self.open_mailbox(self.initial_mailbox)

    async def _retry_open(self) -> None:
        if self._reader is None:
            await self._open_reader()

    # ------------------------------------------------------------------ tabs

    @on(OpenMailbox)
    def _open_requested(self, event: OpenMailbox) -> None:
        self.open_mailbox(event.mailbox_id)

    def open_mailbox(self, mailbox_id: str, at_sequence: int | None = None) -> None:
        """Open the mailbox's tab, or focus it if it is already open (never a copy);
        with ``at_sequence``, select that message once the tab has loaded."""
        if self._reader is None:
            return
        tabs = self.query_one("#tabs", TabbedContent)
        pane_id = self._panes.get(mailbox_id)
        if pane_id is not None:
            tabs.active = pane_id
            if at_sequence is not None:
                view = self.active_view()
                if view is not None:
                    view.request_jump(at_sequence)
            return
        self._pane_counter += 1
        pane_id = f"mailbox-pane-{self._pane_counter}"
        self._panes[mailbox_id] = pane_id
        view = MailboxView(
            mailbox_id,
            self._reader,
            session_id=self.session_id,
            clock=self._clock,
            interval=self.poll_interval,
            snapshot=self._reader.snapshot is not None,
        )
        if at_sequence is not None:
            view.request_jump(at_sequence)
        tabs.add_pane(TabPane(self._tab_title(mailbox_id), view, id=pane_id))
        tabs.active = pane_id

    def _tab_title(self, mailbox_id: str) -> Content:
        for summary in self.summaries:
            if summary.id == mailbox_id:
                return Content(visible_line(summary_title(summary), TAB_TITLE_CHARS))
        return Content(visible_line(mailbox_id.removeprefix("mailbox-")[:8], TAB_TITLE_CHARS))

    @on(TitleKnown)
    def _title_known(self, event: TitleKnown) -> None:
        pane = event.view.parent
        if isinstance(pane, TabPane) and pane.id:
            tab = self.query_one("#tabs", TabbedContent).get_tab(pane.id)
            tab.label = Content(visible_line(event.title, TAB_TITLE_CHARS))
        if self.initial_mailbox and event.view.mailbox_id == self.initial_mailbox:
            self.query_one(MailboxIndex).load()  # after the first page, never before

    @on(IndexLoaded)
    def _index_loaded(self, event: IndexLoaded) -> None:
        """Name tabs that were opened before the index knew their participants."""
        for mailbox_id, pane_id in self._panes.items():
            for summary in event.summaries:
                if summary.id == mailbox_id:
                    tab = self.query_one("#tabs", TabbedContent).get_tab(pane_id)
                    tab.label = Content(visible_line(summary_title(summary), TAB_TITLE_CHARS))

    @on(CloseRequested)
    async def _close_requested(self, event: CloseRequested) -> None:
        pane = event.view.parent
        if not isinstance(pane, TabPane) or not pane.id:
            return
        for mailbox_id, known in list(self._panes.items()):
            if known == pane.id:
                del self._panes[mailbox_id]
        await self.query_one("#tabs", TabbedContent).remove_pane(pane.id)

    def _active_pane(self) -> str:
        return self.query_one("#tabs", TabbedContent).active

    def active_view(self) -> MailboxView | None:
        pane_id = self._active_pane()
        if pane_id == INDEX_PANE or not pane_id:
            return None
        views = self.query(f"#{pane_id} MailboxView").results(MailboxView)
        return next(iter(views), None)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        active = event.pane.id
        for view in self.query(MailboxView):
            pane = view.parent
            view.set_visible_tab(pane is not None and pane.id == active)
        view = self.active_view()
        if view is not None:
            view.thread.focus()
        elif active == INDEX_PANE:
            index = self.query_one(MailboxIndex)
            index.focus_cards()
            index.set_visible(True)
        if active != INDEX_PANE:
            self.query_one(MailboxIndex).set_visible(False)

    def _cycle(self, step: int) -> None:
        tabs = self.query_one("#tabs", TabbedContent)
        order = [pane.id for pane in tabs.query(TabPane) if pane.id]
        if len(order) < 2:
            return
        current = order.index(tabs.active) if tabs.active in order else 0
        tabs.active = order[(current + step) % len(order)]

    def action_next_tab(self) -> None:
        self._cycle(1)

    def action_previous_tab(self) -> None:
        self._cycle(-1)

    def action_show_index(self) -> None:
        self.query_one("#tabs", TabbedContent).active = INDEX_PANE

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_tab", "previous_tab"):
            return len(self._panes) > 0
        if action == "show_index":
            return self._active_pane() != INDEX_PANE
        return True

    # --------------------------------------------------------------- actions

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_health(self) -> None:
        """Stuck hand-offs across every mailbox; choosing one opens it at the message."""
        if self._reader is None:
            return
        from termal_tui.tui.screens.health import HealthScreen

        def chosen(result: tuple[str, int] | None) -> None:
            if result is not None:
                self.open_mailbox(result[0], at_sequence=result[1])

        screen = HealthScreen(self._reader, self.thresholds, clock=self._clock)
        self.push_screen(screen, chosen)

    def action_refresh(self) -> None:
        view = self.active_view()
        if view is not None:
            view.action_refresh()
        else:
            self.query_one(MailboxIndex).load()

    def action_load_older(self) -> None:
        view = self.active_view()
        if view is not None:
            view.load_older()

    def action_show_new(self) -> None:
        view = self.active_view()
        if view is not None:
            view.show_new()

    def jump_to(self, sequence: int) -> None:
        view = self.active_view()
        if view is None:
            self.notify("Open a mailbox first, then jump to #N.", markup=False)
            return
        view.jump_to(sequence)


def make_app(
    db_path: str | os.PathLike[str],
    *,
    session_id: str | None = None,
    mailbox_id: str | None = None,
    poll_interval: float = DEFAULT_POLL_SECONDS,
    clock: Callable[[], datetime] | None = None,
    thresholds: Thresholds | None = None,
) -> MailboxApp:
    """Build the viewer for the CLI and for tests."""
    return MailboxApp(
        db_path,
        session_id=session_id,
        mailbox_id=mailbox_id,
        poll_interval=poll_interval,
        clock=clock,
        thresholds=thresholds,
    )
