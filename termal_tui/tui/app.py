"""MailboxApp: the read-only Textual viewer, and ``make_app`` used by the CLI and tests.

The App opens the reader and manages tabs and global keys; the index and each mailbox
view own their bindings, timers (paused while hidden) and workers. What the first
screen does not need (the health model and screen, the palette's provider, the help
screen, the mailbox view itself when no tab is open) is imported where it is used.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.command import Provider
from textual.content import Content
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widgets import Footer, Header, TabbedContent, TabPane

from termal_tui.models import MailboxSummary
from termal_tui.presentation import summary_title
from termal_tui.sanitize import visible_line
from termal_tui.store.errors import RetryableError, StoreError
from termal_tui.store.reader import MailboxReader, open_reader
from termal_tui.tui.messages import CloseRequested, IndexLoaded, OpenMailbox, TitleKnown
from termal_tui.tui.widgets.index import MailboxIndex

if TYPE_CHECKING:
    from termal_tui.health import Thresholds
    from termal_tui.tui.widgets.mailbox_view import MailboxView

INDEX_PANE: Final = "index"
DEFAULT_POLL_SECONDS: Final = 8.0
RETRY_OPEN_SECONDS = 2.0
# A viewer never waits long for a lock: it shows Stale and tries again on its next tick.
READER_BUSY_TIMEOUT_MS = 250
TAB_TITLE_CHARS: Final = 28


def _mailbox_commands() -> type[Provider]:
    """The palette's provider, imported when the palette first opens."""
    from termal_tui.tui.commands import MailboxCommands

    return MailboxCommands


class MailboxApp(App[None]):
    """Browse TermAl mailboxes without ever writing to the database."""

    CSS_PATH = "app.tcss"
    TITLE = "termal-tui (read-only)"
    COMMANDS = App.COMMANDS | {_mailbox_commands}
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
        self.thresholds = thresholds  # None: health.py's defaults, applied where used
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
            yield MailboxIndex(
                session_id=self.session_id,
                clock=self._clock,
                thresholds=self.thresholds,
                id="mailbox-index",
            )
        yield Footer(compact=True)

    async def on_mount(self) -> None:
        # The index's status line says "Loading mailboxes…" (no LoadingIndicator: it
        # would animate for nothing, and it hides the index until the cards arrive).
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
        from termal_tui.tui.widgets.mailbox_view import MailboxView

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

    def _label_tab(self, mailbox_id: str, title: str) -> None:
        pane_id = self._panes.get(mailbox_id)
        if pane_id is None:
            return
        with contextlib.suppress(NoMatches):  # closed meanwhile
            tab = self.query_one("#tabs", TabbedContent).get_tab(pane_id)
            tab.label = Content(visible_line(title, TAB_TITLE_CHARS))

    @on(TitleKnown)
    def _title_known(self, event: TitleKnown) -> None:
        self._label_tab(event.mailbox_id, event.title)
        if self.initial_mailbox and event.mailbox_id == self.initial_mailbox:
            self.query_one(MailboxIndex).load()  # after the first page, never before

    @on(IndexLoaded)
    def _index_loaded(self, event: IndexLoaded) -> None:
        """Name tabs that were opened before the index knew their participants."""
        for summary in event.summaries:
            if summary.id in self._panes:
                self._label_tab(summary.id, summary_title(summary))

    @on(CloseRequested)
    async def _close_requested(self, event: CloseRequested) -> None:
        pane_id = self._panes.pop(event.mailbox_id, None)
        if pane_id is not None:
            await self.query_one("#tabs", TabbedContent).remove_pane(pane_id)

    def _active_pane(self) -> str:
        return self.query_one("#tabs", TabbedContent).active

    def active_view(self) -> MailboxView | None:
        """The mailbox view of the active tab (None on the index)."""
        pane_id = self._active_pane()
        if pane_id == INDEX_PANE or not pane_id:
            return None
        from termal_tui.tui.widgets.mailbox_view import MailboxView

        views = self.query(f"#{pane_id} MailboxView").results(MailboxView)
        return next(iter(views), None)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """Keys go to what the tab shows. (Each widget pauses and resumes its own timer
        when it is hidden and shown.)"""
        # The tab active now: a queued event may name one that is no longer active.
        active = self.query("#tabs").results(TabbedContent)
        pane_id = next((tabs.active for tabs in active), None)  # none while shutting down
        if pane_id == INDEX_PANE:
            self.query_one(MailboxIndex).focus_cards()
        elif pane_id:
            view = self.active_view()
            if view is not None:
                view.focus_thread()  # safe before the view has built its children

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
        from termal_tui.tui.screens.help import HelpScreen

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

    def jump_to(self, sequence: int) -> None:
        """Select ``#sequence`` in the active tab (for scripts and benchmarks; the
        palette offers the view's own jump)."""
        view = self.active_view()
        if view is not None:
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
