"""MailboxApp: the read-only Textual viewer, and ``make_app`` used by the CLI and tests."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.timer import Timer
from textual.widgets import Footer, Header, TabbedContent, TabPane

from termal_tui.models import MailboxSummary
from termal_tui.presentation import summary_title
from termal_tui.sanitize import visible_line
from termal_tui.store.errors import RetryableError, StoreError
from termal_tui.store.reader import MailboxReader, open_reader
from termal_tui.tui.commands import MailboxCommands
from termal_tui.tui.messages import IndexFailed, IndexLoaded, OpenMailbox
from termal_tui.tui.screens.body import BodyScreen
from termal_tui.tui.screens.help import HelpScreen
from termal_tui.tui.widgets.index import MailboxIndex
from termal_tui.tui.widgets.mailbox_view import MailboxView

INDEX_PANE = "index"
DEFAULT_POLL_SECONDS = 8.0
RETRY_OPEN_SECONDS = 2.0
# A viewer never waits long for a lock: it shows Stale and tries again on its next tick.
READER_BUSY_TIMEOUT_MS = 250


class MailboxApp(App[None]):
    """Browse TermAl mailboxes without ever writing to the database."""

    CSS_PATH = "app.tcss"
    TITLE = "termal-tui"
    COMMANDS = App.COMMANDS | {MailboxCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("r", "refresh", "Refresh", id="refresh"),
        Binding("o", "load_older", "Older", id="older"),
        Binding("f", "full_body", "Full body", id="full-body"),
        Binding("n", "show_new", "Show new", id="show-new"),
        Binding("w", "close_tab", "Close tab", id="close-tab"),
        Binding("ctrl+right", "next_tab", "Next tab", show=False, id="next-tab"),
        Binding("ctrl+left", "previous_tab", "Prev tab", show=False, id="prev-tab"),
        Binding("0", "show_index", "Index", show=False, id="index"),
    ]

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        mailbox_id: str | None = None,
        poll_interval: float = DEFAULT_POLL_SECONDS,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__()
        self.db_path = Path(db_path)
        self.session_id = session_id
        self.initial_mailbox = mailbox_id
        self.poll_interval = poll_interval
        self._clock = clock or (lambda: datetime.now().astimezone())
        self._stack = contextlib.AsyncExitStack()
        self._reader: MailboxReader | None = None
        self.summaries: list[MailboxSummary] = []
        self._panes: dict[str, str] = {}
        self._pane_counter = 0
        self._index_refreshing = False
        self._index_timer: Timer | None = None
        self._retry_timer: Timer | None = None
        self.sub_title = self._subtitle()

    def _subtitle(self) -> str:
        viewer = f" · as {visible_line(self.session_id)}" if self.session_id else ""
        snapshot = " · snapshot" if self._reader is not None and self._reader.snapshot else ""
        return f"{visible_line(str(self.db_path))}{viewer} · read-only{snapshot}"

    @property
    def reader(self) -> MailboxReader:
        assert self._reader is not None, "reader is opened on mount"
        return self._reader

    def now_text(self) -> str:
        return self._clock().strftime("%H:%M:%S")

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(id="tabs"), TabPane(Content("Mailboxes"), id=INDEX_PANE):
            yield MailboxIndex(id="mailbox-index")
        yield Footer()

    async def on_mount(self) -> None:
        self.query_one(MailboxIndex).loading = True
        await self._open_reader()

    async def _open_reader(self) -> None:
        """Open the reader; a busy (locked) file shows Stale and is retried by a timer."""
        index = self.query_one(MailboxIndex)
        try:
            self._reader = await self._stack.enter_async_context(
                open_reader(self.db_path, busy_timeout_ms=READER_BUSY_TIMEOUT_MS)
            )
        except RetryableError as error:
            index.loading = False
            index.set_status(
                Content.assemble(
                    Content.styled("● Stale", "bold $error"),
                    "  ",
                    Content.styled(
                        visible_line(f"{error} — retrying every {RETRY_OPEN_SECONDS:g} s", 300),
                        "$error",
                    ),
                )
            )
            if self._retry_timer is None:
                self._retry_timer = self.set_interval(RETRY_OPEN_SECONDS, self._retry_open)
            return
        except StoreError as error:
            index.loading = False
            index.set_status(Content.styled(visible_line(str(error), 300), "$error"))
            return
        if self._retry_timer is not None:
            self._retry_timer.stop()
            self._retry_timer = None
        if self._reader.snapshot is not None:
            self.poll_interval = 0  # an immutable snapshot has no changes to follow
            self.sub_title = self._subtitle()
            self.notify(visible_line(self._reader.snapshot, 300), title="Snapshot", markup=False)
        if self.poll_interval > 0:
            self._index_timer = self.set_interval(self.poll_interval, self._poll_index)
        self.load_index()
        if self.initial_mailbox:
            self.open_mailbox(self.initial_mailbox)

    async def _retry_open(self) -> None:
        if self._reader is None:
            await self._open_reader()

    async def on_unmount(self) -> None:
        await self._stack.aclose()

    # ----------------------------------------------------------------- index

    def _poll_index(self) -> None:
        if not self._index_refreshing and self._active_pane() == INDEX_PANE:
            self.load_index()

    @work(group="index", exclusive=False)
    async def load_index(self) -> None:
        if self._index_refreshing:
            return
        self._index_refreshing = True
        try:
            summaries = await self.reader.list_mailboxes(self.session_id)
        except StoreError as error:
            self.post_message(IndexFailed(str(error)))
            return
        finally:
            self._index_refreshing = False
        self.post_message(IndexLoaded(summaries))

    @on(IndexLoaded)
    def _index_loaded(self, event: IndexLoaded) -> None:
        self.summaries = event.summaries
        index = self.query_one(MailboxIndex)
        index.loading = False
        unread = sum(summary.unread_count for summary in event.summaries)
        count = len(event.summaries)
        status = Content.assemble(
            Content.styled("● Live", "bold $success"),
            Content.styled(
                f"  {count} mailbox{'es' if count != 1 else ''} · {unread} unread · "
                f"refreshed {self.now_text()}",
                "$text-muted",
            ),
        )
        index.show(event.summaries, status)

    @on(IndexFailed)
    def _index_failed(self, event: IndexFailed) -> None:
        index = self.query_one(MailboxIndex)
        index.loading = False
        index.set_status(
            Content.assemble(
                Content.styled("● Stale", "bold $error"),
                "  ",
                Content.styled(visible_line(event.error, 200), "$error"),
            )
        )

    # ------------------------------------------------------------------ tabs

    @on(OpenMailbox)
    def _open_requested(self, event: OpenMailbox) -> None:
        self.open_mailbox(event.mailbox_id)

    def open_mailbox(self, mailbox_id: str) -> None:
        """Open the mailbox's tab, or focus it if it is already open (never a copy)."""
        tabs = self.query_one("#tabs", TabbedContent)
        pane_id = self._panes.get(mailbox_id)
        if pane_id is not None:
            tabs.active = pane_id
            return
        self._pane_counter += 1
        pane_id = f"mailbox-pane-{self._pane_counter}"
        self._panes[mailbox_id] = pane_id
        pane = TabPane(self._tab_title(mailbox_id), MailboxView(mailbox_id), id=pane_id)
        tabs.add_pane(pane)
        tabs.active = pane_id

    def _tab_title(self, mailbox_id: str) -> Content:
        for summary in self.summaries:
            if summary.id == mailbox_id:
                return Content(visible_line(summary_title(summary), 40))
        return Content(visible_line(mailbox_id, 24))

    def _active_pane(self) -> str:
        return self.query_one("#tabs", TabbedContent).active

    def active_view(self) -> MailboxView | None:
        pane_id = self._active_pane()
        if pane_id == INDEX_PANE or not pane_id:
            return None
        try:
            return self.query_one(f"#{pane_id} MailboxView", MailboxView)
        except Exception:
            return None

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        active = event.pane.id
        for view in self.query(MailboxView):
            pane = view.parent
            view.set_visible_tab(pane is not None and pane.id == active)
        view = self.active_view()
        if view is not None:
            view.query_one("#thread").focus()
        elif active == INDEX_PANE:
            self.query_one("#cards").focus()

    def _pane_order(self) -> list[str]:
        return [
            pane.id for pane in self.query_one("#tabs", TabbedContent).query(TabPane) if pane.id
        ]

    def _cycle(self, step: int) -> None:
        order = self._pane_order()
        if len(order) < 2:
            return
        current = order.index(self._active_pane()) if self._active_pane() in order else 0
        self.query_one("#tabs", TabbedContent).active = order[(current + step) % len(order)]

    def action_next_tab(self) -> None:
        self._cycle(1)

    def action_previous_tab(self) -> None:
        self._cycle(-1)

    def action_show_index(self) -> None:
        self.query_one("#tabs", TabbedContent).active = INDEX_PANE

    async def action_close_tab(self) -> None:
        pane_id = self._active_pane()
        if pane_id == INDEX_PANE:
            return
        for mailbox_id, known in list(self._panes.items()):
            if known == pane_id:
                del self._panes[mailbox_id]
        await self.query_one("#tabs", TabbedContent).remove_pane(pane_id)

    # --------------------------------------------------------------- actions

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_refresh(self) -> None:
        self.load_index()
        view = self.active_view()
        if view is not None:
            view.refresh_thread()

    def action_load_older(self) -> None:
        view = self.active_view()
        if view is not None:
            view.load_older()

    def action_show_new(self) -> None:
        view = self.active_view()
        if view is not None:
            view.show_new()

    def action_full_body(self) -> None:
        view = self.active_view()
        message = view.highlighted_message() if view is not None else None
        if message is not None:
            self.push_screen(BodyScreen(message))

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
) -> MailboxApp:
    """Build the viewer for the CLI and for tests."""
    return MailboxApp(
        db_path,
        session_id=session_id,
        mailbox_id=mailbox_id,
        poll_interval=poll_interval,
        clock=clock,
    )
