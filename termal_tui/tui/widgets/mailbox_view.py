"""One mailbox tab: header, participants bar, and the newest-first thread.

The thread is one ``OptionList`` (a row is one Option; dividers are disabled
options). All reads run in workers through the read-only reader; a refresh
fetches only rows newer than the newest loaded one and never moves the reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.timer import Timer
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from termal_tui.models import MailboxMessage, MailboxSummary
from termal_tui.presentation import divider_positions, merge_newest_first
from termal_tui.store.errors import NotFoundError, StoreError
from termal_tui.store.formats import READ_LIMIT_MAX
from termal_tui.tui.messages import ThreadFailed, ThreadLoaded
from termal_tui.tui.render import divider, line, message_row, participants_bar

if TYPE_CHECKING:
    from termal_tui.tui.app import MailboxApp

PAGE_SIZE: Final = 50
LOAD_OLDER_ID: Final = "load-older"
MAX_JUMP_ROWS: Final = 20_000
MAX_REFRESH_ROWS: Final = 1_000


class MailboxView(Vertical):
    """A read-only mailbox thread with paging, expansion and live refresh."""

    DEFAULT_CSS = """
    MailboxView { height: 1fr; }
    MailboxView #header { height: 1; padding: 0 1; background: $panel; }
    MailboxView #participants { height: auto; padding: 0 1; }
    MailboxView #new-notice {
        height: 1; padding: 0 1; display: none; background: $accent 30%; text-style: bold;
    }
    MailboxView.-has-new #new-notice { display: block; }
    MailboxView #thread { height: 1fr; }
    MailboxView #readonly { height: 1; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, mailbox_id: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.mailbox_id = mailbox_id
        self.summary: MailboxSummary | None = None
        self.messages: list[MailboxMessage] = []
        self.has_older = False
        self.expanded: set[str] = set()
        self.pending: list[MailboxMessage] = []
        self.live = True
        self.error: str | None = None
        self.last_refresh: str | None = None
        self.refreshing = False
        self._timer: Timer | None = None

    @property
    def mailbox_app(self) -> MailboxApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Static(Content(f"Mailbox {self.mailbox_id}"), id="header")
        yield Static(Content(""), id="participants")
        yield Static(Content(""), id="new-notice")
        yield OptionList(id="thread")
        yield Static(
            Content(
                "Read-only view: opening, expanding, paging and refreshing never change "
                "the database or any cursor."
            ),
            id="readonly",
        )

    def on_mount(self) -> None:
        self.loading = True
        interval = self.mailbox_app.poll_interval
        if interval > 0:
            self._timer = self.set_interval(interval, self.poll)
        self.load_first_page()

    # ------------------------------------------------------------- visibility

    def set_visible_tab(self, active: bool) -> None:
        """Coming back to a tab refreshes it at once (ticks are skipped while hidden)."""
        if active and self._timer is not None:
            self.poll()

    # ---------------------------------------------------------------- workers

    @work(group="thread-read", exclusive=False)
    async def load_first_page(self) -> None:
        reader = self.mailbox_app.reader
        session = self.mailbox_app.session_id
        try:
            summary = await reader.get_mailbox(self.mailbox_id, session)
            page = await reader.read_page(self.mailbox_id, None, PAGE_SIZE, session)
        except NotFoundError as error:
            self.post_message(ThreadFailed(str(error), missing=True))
            return
        except StoreError as error:
            self.post_message(ThreadFailed(str(error)))
            return
        self.post_message(ThreadLoaded(summary, page.messages, page.has_older, "first"))

    @work(group="thread-read", exclusive=False)
    async def load_older(self) -> None:
        if not self.has_older or not self.messages:
            return
        reader = self.mailbox_app.reader
        try:
            page = await reader.read_page(
                self.mailbox_id,
                self.messages[-1].sequence,
                PAGE_SIZE,
                self.mailbox_app.session_id,
            )
        except StoreError as error:
            self.post_message(ThreadFailed(str(error)))
            return
        assert self.summary is not None
        self.post_message(ThreadLoaded(self.summary, page.messages, page.has_older, "older"))

    def poll(self) -> None:
        """Timer tick: only for the tab on screen, never overlapping the previous refresh.

        With nothing loaded yet (the first page failed, e.g. the file was locked) it
        loads the first page again instead of reading everything after #0.
        """
        if self.refreshing or self.mailbox_app.active_view() is not self:
            return
        if self.summary is None:
            self.load_first_page()
        else:
            self.refresh_thread()

    @work(group="thread-refresh", exclusive=False)
    async def refresh_thread(self) -> None:
        if self.refreshing:
            return
        self.refreshing = True
        try:
            reader = self.mailbox_app.reader
            session = self.mailbox_app.session_id
            newest = max(
                [m.sequence for m in self.messages] + [m.sequence for m in self.pending],
                default=0,
            )
            summary = await reader.get_mailbox(self.mailbox_id, session)
            fresh: list[MailboxMessage] = []
            # Bounded: one refresh brings at most MAX_REFRESH_ROWS newer rows.
            while len(fresh) < MAX_REFRESH_ROWS:
                batch = await reader.read_range(self.mailbox_id, newest, READ_LIMIT_MAX, session)
                fresh.extend(batch)
                if len(batch) < READ_LIMIT_MAX:
                    break
                newest = batch[-1].sequence
            self.post_message(ThreadLoaded(summary, fresh, None, "refresh"))
        except NotFoundError as error:
            self.post_message(ThreadFailed(str(error), missing=True))
        except StoreError as error:
            self.post_message(ThreadFailed(str(error)))
        finally:
            self.refreshing = False

    # --------------------------------------------------------------- handlers

    @on(ThreadLoaded)
    def _loaded(self, event: ThreadLoaded) -> None:
        event.stop()
        self.loading = False
        self.live = True
        self.error = None
        self.last_refresh = self.mailbox_app.now_text()
        if event.kind == "first":
            self.summary = event.summary
            self.messages = list(event.messages)
            self.has_older = bool(event.has_older)
            self._rebuild()
            thread = self.query_one("#thread", OptionList)
            if self.messages:
                thread.highlighted = 0
            if self.mailbox_app.active_view() is self:
                thread.focus()
        elif event.kind == "older":
            self.has_older = bool(event.has_older)
            self._append_older(event.messages)
        else:
            changed_summary = event.summary != self.summary
            self.summary = event.summary
            if event.messages:
                known = {m.id for m in self.messages}
                self.pending = merge_newest_first(
                    self.pending, [m for m in event.messages if m.id not in known]
                )
            if self.pending and self._reader_at_top():
                self.show_new()
            elif changed_summary:
                self._rebuild()
        self._update_chrome()

    @on(ThreadFailed)
    def _failed(self, event: ThreadFailed) -> None:
        event.stop()
        self.loading = False
        self.live = False
        self.error = (
            f"This mailbox is no longer available: {event.error}" if event.missing else event.error
        )
        self._update_chrome()

    @on(OptionList.OptionSelected, "#thread")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id
        if option_id == LOAD_OLDER_ID:
            self.load_older()
        elif option_id is not None:
            self.toggle(option_id)

    # ---------------------------------------------------------------- actions

    def toggle(self, message_id: str) -> None:
        message = self.message_by_id(message_id)
        if message is None or self.summary is None:
            return
        if message_id in self.expanded:
            self.expanded.discard(message_id)
        else:
            self.expanded.add(message_id)
        self.query_one("#thread", OptionList).replace_option_prompt(
            message_id, message_row(message, self.summary, message_id in self.expanded)
        )

    def show_new(self) -> None:
        """Bring announced new rows into the thread."""
        if not self.pending:
            return
        self.messages = merge_newest_first(self.messages, self.pending)
        self.pending = []
        self._rebuild()
        self._update_chrome()

    def message_by_id(self, message_id: str) -> MailboxMessage | None:
        for message in self.messages:
            if message.id == message_id:
                return message
        return None

    def highlighted_message(self) -> MailboxMessage | None:
        option = self.query_one("#thread", OptionList).highlighted_option
        if option is None or option.id is None:
            return None
        return self.message_by_id(option.id)

    def highlight_sequence(self, sequence: int) -> bool:
        for message in self.messages:
            if message.sequence == sequence:
                thread = self.query_one("#thread", OptionList)
                thread.highlighted = thread.get_option_index(message.id)
                thread.focus()
                return True
        return False

    @work(group="thread-read", exclusive=False)
    async def jump_to(self, sequence: int) -> None:
        """Load older pages until ``#sequence`` is loaded, then highlight it."""
        if self.highlight_sequence(sequence):
            return
        reader = self.mailbox_app.reader
        gathered: list[MailboxMessage] = []
        has_older = self.has_older
        oldest = self.messages[-1].sequence if self.messages else None
        try:
            while has_older and oldest is not None and oldest > sequence:
                if len(gathered) >= MAX_JUMP_ROWS:
                    self.notify(
                        f"#{sequence} is more than {MAX_JUMP_ROWS} rows below; load older pages.",
                        severity="warning",
                        markup=False,
                    )
                    break
                page = await reader.read_page(
                    self.mailbox_id, oldest, READ_LIMIT_MAX, self.mailbox_app.session_id
                )
                gathered.extend(page.messages)
                has_older = page.has_older
                oldest = page.oldest_sequence
        except StoreError as error:
            self.post_message(ThreadFailed(str(error)))
            return
        if gathered and self.summary is not None:
            self.has_older = has_older
            self._append_older(gathered)
            self._update_chrome()
        if not self.highlight_sequence(sequence):
            self.notify(f"No visible message #{sequence} in this mailbox.", markup=False)

    # -------------------------------------------------------------- rendering

    def _reader_at_top(self) -> bool:
        thread = self.query_one("#thread", OptionList)
        return thread.scroll_y == 0 and thread.highlighted in (None, 0)

    def _options_for(self, start: int) -> list[Option]:
        assert self.summary is not None
        dividers = divider_positions(self.messages, self.summary)
        options: list[Option] = []
        for index in range(start, len(self.messages)):
            message = self.messages[index]
            for item in dividers.get(index, []):
                options.append(Option(divider(item), disabled=True))
            options.append(
                Option(
                    message_row(message, self.summary, message.id in self.expanded),
                    id=message.id,
                )
            )
        if self.has_older:
            options.append(
                Option(
                    Content.styled("↓ Load older messages (o)", "bold $accent"), id=LOAD_OLDER_ID
                )
            )
        elif self.messages:
            options.append(
                Option(Content.styled("— start of mailbox —", "$text-muted"), disabled=True)
            )
        return options

    def _rebuild(self) -> None:
        if self.summary is None:
            return
        thread = self.query_one("#thread", OptionList)
        highlighted = thread.highlighted_option.id if thread.highlighted_option else None
        scroll_y = thread.scroll_y
        with self.app.batch_update():
            thread.clear_options()
            thread.add_options(self._options_for(0))
            if highlighted is not None:
                try:
                    thread.highlighted = thread.get_option_index(highlighted)
                except Exception:
                    thread.highlighted = 0 if self.messages else None
            thread.scroll_to(y=scroll_y, animate=False, immediate=True)

    def _append_older(self, older: list[MailboxMessage]) -> None:
        if self.summary is None:
            return
        known = {m.id for m in self.messages}
        fresh = [m for m in older if m.id not in known]
        start = len(self.messages)
        self.messages = merge_newest_first(self.messages, fresh)
        if self.messages[start:] != sorted(fresh, key=lambda m: m.sequence, reverse=True):
            self._rebuild()  # out-of-order data: fall back to a full rebuild
            return
        thread = self.query_one("#thread", OptionList)
        with self.app.batch_update():
            last = thread.option_count - 1
            if last >= 0:
                thread.remove_option_at_index(last)  # the load-older / start marker
            thread.add_options(self._options_for(start))

    def _update_chrome(self) -> None:
        header = self.query_one("#header", Static)
        state = (
            Content.styled("● Live", "bold $success")
            if self.live
            else Content.styled("● Stale", "bold $error")
        )
        refreshed = f"refreshed {self.last_refresh}" if self.last_refresh else "not loaded yet"
        parts = [
            Content.styled("Mailbox ", "$text-muted"),
            line(self.mailbox_id, "bold"),
            "  ",
            state,
            Content.styled(f"  {refreshed}", "$text-muted"),
        ]
        if self.summary is not None:
            parts.append(
                Content.styled(
                    f"  ·  {len(self.messages)} of latest #{self.summary.latest_sequence} loaded",
                    "$text-muted",
                )
            )
        if self.error:
            parts.append(Content("  "))
            parts.append(line(self.error, "$error", 200))
        header.update(Content.assemble(*parts))
        if self.summary is not None:
            self.query_one("#participants", Static).update(participants_bar(self.summary))
        notice = self.query_one("#new-notice", Static)
        if self.pending:
            count = len(self.pending)
            noun = "message" if count == 1 else "messages"
            notice.update(Content(f"▲ {count} new {noun} above — press n to show"))
        self.set_class(bool(self.pending), "-has-new")
