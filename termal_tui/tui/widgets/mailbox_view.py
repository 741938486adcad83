"""One mailbox tab: a one-line header, the participants bar, and the newest-first thread.

The view owns its state (a headless :class:`ThreadModel`), its bindings, its polling
timer (paused while the view is hidden, resumed when it is shown) and its workers; the
App only manages tabs. All reads go through the read-only reader in workers; a poll
first asks for a change token (two primary-key lookups) and reads nothing more when
nothing moved; the widget applies exactly the rows that changed. Rows are rendered once
the view knows its width (never at a guessed one and again at the real one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import OptionList, Static
from textual.worker import Worker, WorkerState

from termal_tui.formats import READ_LIMIT_MAX
from termal_tui.models import ChangeToken, MailboxMessage, MailboxSummary, MessagePage
from termal_tui.presentation import summary_title
from termal_tui.sanitize import visible, visible_line
from termal_tui.store.errors import NotFoundError
from termal_tui.store.reader import MailboxReader
from termal_tui.thread import Change, Gap, Item, StartMarker, ThreadModel, item_key
from termal_tui.tui.messages import CloseRequested, ReadFailed, TitleKnown, read_failed
from termal_tui.tui.render import gap_row, message_row, participants_bar, short_id, start_marker
from termal_tui.tui.widgets.thread_list import RowOption, ThreadList

PAGE_SIZE: Final = 50
MAX_REFRESH_ROWS: Final = 1_000
JUMP_CONTEXT: Final = 25


# ------------------------------------------------------------- typed results


@dataclass
class PageLoaded(Message):
    summary: MailboxSummary
    page: MessagePage
    token: ChangeToken | None


@dataclass
class OlderLoaded(Message):
    page: MessagePage


@dataclass
class RefreshLoaded(Message):
    summary: MailboxSummary | None  # None: nothing moved since the last poll
    rows: list[MailboxMessage]
    more: bool
    token: ChangeToken | None


@dataclass
class JumpLoaded(Message):
    sequence: int
    page: MessagePage
    next_sequence: int


@dataclass
class GapLoaded(Message):
    gap: Gap
    page: MessagePage


__all__ = ["CloseRequested", "MailboxView", "ReadFailed", "ThreadHeader", "TitleKnown"]


# -------------------------------------------------------------------- header


class ThreadHeader(Widget):
    """``● Live 07:03:47 · 50 of latest #140 loaded · 3fcb1a2e`` on one line."""

    DEFAULT_CSS = "ThreadHeader { height: 1; padding: 0 1; background: $panel; }"

    state: reactive[str] = reactive("loading")
    refreshed: reactive[str] = reactive("")
    loaded: reactive[int] = reactive(0)
    latest: reactive[int] = reactive(0)
    mailbox: reactive[str] = reactive("")
    error: reactive[str] = reactive("")

    STATES: Final = {
        "loading": ("◌ Loading", "bold $foreground 65%"),
        "live": ("● Live", "bold $success"),
        "paused": ("⏸ Paused", "bold $warning"),
        "snapshot": ("◼ Snapshot", "bold $warning"),
        "stale": ("● Stale", "bold $error"),
    }

    def render(self) -> Content:
        label, style = self.STATES[self.state]
        parts: list[Content | str] = [Content.styled(label, style)]
        if self.refreshed:
            parts.append(Content.styled(f" {self.refreshed}", "$foreground 65%"))
        if self.latest:
            parts.append(
                Content.styled(
                    f" · {self.loaded:,} of latest #{self.latest:,} loaded", "$foreground 65%"
                )
            )
        parts.append(Content.styled(f" · {self.mailbox}", "$foreground 65%"))
        if self.error:
            parts.append(Content.styled(f" · {visible_line(self.error, 300)}", "$error"))
        return Content.assemble(*parts)


# ---------------------------------------------------------------------- view


class MailboxView(Vertical):
    """A read-only mailbox thread with paging, jumps, expansion and live refresh."""

    DEFAULT_CSS = """
    MailboxView { height: 1fr; }
    MailboxView #participants { height: auto; padding: 0 1; }
    MailboxView #new-notice {
        height: 1; padding: 0 1; display: none; background: $accent 30%; text-style: bold;
    }
    MailboxView.-has-new #new-notice { display: block; }
    MailboxView ThreadList { height: 1fr; border: none; }
    MailboxView ThreadList > .option-list--option { padding: 0 1; }
    """

    BINDINGS = [
        Binding("o", "older", "Older"),
        Binding("f", "full_body", "Body"),
        Binding("n", "show_new", "New"),
        Binding("r", "refresh", "Refresh"),
        Binding("w", "close", "Close"),
        Binding("c", "copy_body", "Copy body", show=False),
        Binding("C", "copy_id", "Copy id", show=False),
        Binding("e", "export", "Export", show=False),
        Binding("slash", "search", "Search", show=False),
    ]

    def __init__(
        self,
        mailbox_id: str,
        reader: MailboxReader,
        *,
        session_id: str | None = None,
        clock: Callable[[], datetime] | None = None,
        interval: float = 0.0,
        snapshot: bool = False,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.mailbox_id = mailbox_id
        self.reader = reader
        self.session_id = session_id
        self.clock = clock or (lambda: datetime.now().astimezone())
        self.interval = interval
        self.snapshot = snapshot
        self.model = ThreadModel()
        self.live = False
        self.refreshing = False
        self.reading = False
        self._token: ChangeToken | None = None
        self._timer: Timer | None = None
        self._width = 0  # the width rows were rendered at; 0 until the view is laid out
        self._early_page: PageLoaded | None = None  # read before the first layout
        self._focus_on_mount = False
        self._hidden = False
        self._offered: tuple[bool, ...] = ()
        self._pending_jump: int | None = None
        self._bar: Content | None = None
        self._notice: Content | None = None

    # ------------------------------------------------------------ properties

    @property
    def summary(self) -> MailboxSummary | None:
        return self.model.summary

    @property
    def messages(self) -> list[MailboxMessage]:
        return [item for item in self.model.items if isinstance(item, MailboxMessage)]

    @property
    def pending(self) -> list[MailboxMessage]:
        return self.model.pending

    @property
    def has_older(self) -> bool:
        return self.model.has_older

    @property
    def thread(self) -> ThreadList:
        return self.query_one(ThreadList)

    def compose(self) -> ComposeResult:
        yield ThreadHeader()
        yield Static(Content(""), id="participants")
        yield Static(Content(""), id="new-notice")
        yield ThreadList(id="thread")

    def on_mount(self) -> None:
        header = self.query_one(ThreadHeader)
        header.mailbox = short_id(self.mailbox_id)
        # The header says "◌ Loading" (a LoadingIndicator would animate for nothing).
        if self.interval > 0:  # paused until the view is shown
            self._timer = self.set_interval(self.interval, self.poll, pause=True)
        self.load_first_page()
        if self._focus_on_mount:
            self.thread.focus()

    def focus_thread(self) -> None:
        """Keys to the thread: now, or once the view has built its children."""
        try:
            self.thread.focus()
        except NoMatches:
            self._focus_on_mount = True

    # ------------------------------------------------------------- bindings

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "older":
            return self.model.has_older
        if action == "show_new":
            return bool(self.model.pending)
        if action == "full_body":
            return self.highlighted_message() is not None
        return True

    def action_older(self) -> None:
        self.load_older()

    def action_show_new(self) -> None:
        self.show_new()

    def action_refresh(self) -> None:
        self.refresh_thread(force=True)

    def action_close(self) -> None:
        self.post_message(CloseRequested(self.mailbox_id))

    def action_search(self) -> None:
        """Substring search over this mailbox; choosing a result jumps to it."""
        from termal_tui.tui.screens.search import SearchScreen

        def chosen(sequence: int | None) -> None:
            if sequence is not None:
                self.jump_to(sequence)

        screen = SearchScreen(
            self.reader, self.mailbox_id, self.session_id, self.model.latest_sequence
        )
        self.app.push_screen(screen, chosen)

    def action_copy_body(self) -> None:
        """The highlighted message's exact body to the clipboard (OSC 52, base64)."""
        message = self.highlighted_message()
        if message is None:
            return
        self.app.copy_to_clipboard(message.body)
        controls = sum(1 for char in message.body if char != visible(char) and char not in "\n\t")
        extra = f" (it contains {controls} control/invisible characters)" if controls else ""
        self.notify(
            f"Copied {len(message.body):,} characters of #{message.sequence}'s body{extra}.",
            markup=False,
        )

    def action_copy_id(self) -> None:
        message = self.highlighted_message()
        if message is not None:
            self.app.copy_to_clipboard(message.id)
            self.notify(f"Copied the id of #{message.sequence} ({len(message.id)} characters).")

    def action_export(self) -> None:
        """The loaded messages (oldest to newest) as JSONL in the working directory."""
        import json

        from termal_tui.export import export_record

        rows = sorted(self.messages, key=lambda m: m.sequence)
        if not rows or self.model.summary is None:
            return
        name = f"termal-export-{short_id(self.mailbox_id)}-{rows[0].sequence}-{rows[-1].sequence}.jsonl"
        try:
            with open(name, "w", encoding="utf-8") as handle:
                for message in rows:
                    record = export_record(message, self.model.summary)
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        except OSError as error:
            self.notify(
                f"Could not write {name}: {error.strerror}.", severity="error", markup=False
            )
            return
        self.notify(
            f"Exported {len(rows):,} loaded messages to {Path(name).resolve()}.", markup=False
        )

    def action_full_body(self) -> None:
        from termal_tui.tui.screens.body import BodyScreen

        message = self.highlighted_message()
        if message is not None:
            self.app.push_screen(BodyScreen(message))

    # -------------------------------------------------------------- polling

    def on_show(self) -> None:
        """Shown: the timer runs; coming back to a hidden tab refreshes it at once."""
        if self._timer is not None:
            self._timer.resume()
            if self._hidden:
                self.poll()
        self._hidden = False

    def on_hide(self) -> None:
        """Hidden (another tab chosen): no ticks until it is shown again."""
        self._hidden = True
        if self._timer is not None:
            self._timer.pause()

    def poll(self) -> None:
        """Timer tick (only while shown), never overlapping the previous read.

        With nothing loaded yet (the first page failed, e.g. the file was locked) it
        loads the first page again instead of reading everything after #0.
        """
        if self.refreshing or self.reading:
            return
        if self.model.summary is None:
            self.load_first_page()
        else:
            self.refresh_thread()

    # -------------------------------------------------------------- workers

    @work(group="read", exclusive=False, exit_on_error=False)
    async def load_first_page(self) -> None:
        self.reading = True
        try:
            token = await self.reader.change_token(self.mailbox_id)
            page = await self.reader.read_page(
                self.mailbox_id, None, PAGE_SIZE, session_id=self.session_id
            )
            head = await self.reader.get_head(self.mailbox_id, session_id=self.session_id)
        finally:
            self.reading = False
        self.post_message(PageLoaded(head, page, token))

    @work(group="read", exclusive=False, exit_on_error=False)
    async def load_older(self) -> None:
        oldest = self.model.oldest_sequence
        if self.reading or not self.model.has_older or oldest is None:
            return
        self.reading = True
        try:
            page = await self.reader.read_page(
                self.mailbox_id, oldest, PAGE_SIZE, session_id=self.session_id
            )
        finally:
            self.reading = False
        self.post_message(OlderLoaded(page))

    @work(group="refresh", exclusive=False, exit_on_error=False)
    async def refresh_thread(self, force: bool = False) -> None:
        if self.refreshing or self.model.summary is None:
            if self.model.summary is None and not self.reading:
                self.load_first_page()
            return
        self.refreshing = True
        try:
            token = await self.reader.change_token(self.mailbox_id)
            if token is None:
                raise NotFoundError("mailbox not found")
            if token == self._token and not force:
                self.post_message(RefreshLoaded(None, [], False, token))
                return
            head = await self.reader.get_head(self.mailbox_id, session_id=self.session_id)
            newest = self.model.newest_sequence
            fresh: list[MailboxMessage] = []
            more = False
            # Bounded: at most MAX_REFRESH_ROWS per refresh, and no more while that many
            # already wait unseen (they come in with n, then the next ones are read).
            room = MAX_REFRESH_ROWS - len(self.model.pending)
            if room <= 0:
                more = head.latest_sequence > newest
            while room > 0:
                batch = await self.reader.read_range(
                    self.mailbox_id, newest, READ_LIMIT_MAX, session_id=self.session_id
                )
                fresh.extend(batch)
                if len(batch) < READ_LIMIT_MAX:
                    break
                newest = batch[-1].sequence
                if len(fresh) >= room:
                    more = True
                    fresh = fresh[:room]
                    break
        finally:
            self.refreshing = False
        self.post_message(RefreshLoaded(head, fresh, more, token))

    def request_jump(self, sequence: int) -> None:
        """Select ``#sequence`` now, or as soon as the first page is in."""
        if self.model.summary is None:
            self._pending_jump = sequence
        else:
            self.jump_to(sequence)

    @work(group="read", exclusive=False, exit_on_error=False)
    async def jump_to(self, sequence: int) -> None:
        """Select ``#sequence``: at once if loaded, else read a window around it."""
        if self.highlight_sequence(sequence):
            return
        if self.model.pending and sequence > self.model.newest_sequence - len(self.model.pending):
            self.show_new()
            if self.highlight_sequence(sequence):
                return
        token = await self.reader.change_token(self.mailbox_id)
        next_sequence = max(token.next_sequence, 0) if token else 0
        page = await self.reader.read_page(
            self.mailbox_id,
            sequence + JUMP_CONTEXT + 1,
            2 * JUMP_CONTEXT + 1,
            session_id=self.session_id,
        )
        self.post_message(JumpLoaded(sequence, page, next_sequence))

    @work(group="read", exclusive=False, exit_on_error=False)
    async def load_gap(self, gap: Gap) -> None:
        page = await self.reader.read_page(
            self.mailbox_id, gap.newer, PAGE_SIZE, session_id=self.session_id
        )
        self.post_message(GapLoaded(gap, page))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place where a failed read becomes a typed message (then Stale)."""
        if event.state != WorkerState.ERROR:
            return
        event.stop()
        self.post_message(read_failed(event.worker.error))

    # -------------------------------------------------------------- results

    @on(PageLoaded)
    def _page_loaded(self, event: PageLoaded) -> None:
        event.stop()
        width = self._row_width()
        if not width:  # not laid out yet: rendered once, at the real width, on resize
            self._early_page = event
            return
        self._width = width
        self.loading = False
        self._token = event.token
        change = self.model.load_first(event.summary, event.page.messages, event.page.has_older)
        self._apply(change)
        if self.model.items:
            self.thread.highlighted = 0
        self._mark_live()
        self.post_message(TitleKnown(self.mailbox_id, summary_title(event.summary)))
        if self._pending_jump is not None:
            sequence, self._pending_jump = self._pending_jump, None
            self.jump_to(sequence)

    @on(OlderLoaded)
    def _older_loaded(self, event: OlderLoaded) -> None:
        event.stop()
        self._apply(self.model.add_older(event.page.messages, event.page.has_older))
        self._update_chrome()

    @on(RefreshLoaded)
    def _refresh_loaded(self, event: RefreshLoaded) -> None:
        event.stop()
        self._token = event.token
        if event.summary is None:  # nothing moved: only the refresh time changes
            self._mark_live(chrome=False)
            return
        if event.summary is not None:
            self._apply(self.model.update_summary(event.summary))
            if event.rows or event.more:
                self.model.add_newer(event.rows, event.more, cap=MAX_REFRESH_ROWS)
            if self.model.pending and self._reader_at_top():
                # Watching the top: follow it (the newest row stays highlighted, so the
                # next arrival is shown at once too, not announced).
                self.show_new()
                if self.thread.option_count:
                    self.thread.highlighted = 0
        self._mark_live()

    @on(JumpLoaded)
    def _jump_loaded(self, event: JumpLoaded) -> None:
        event.stop()
        rows = event.page.messages
        if any(m.sequence == event.sequence for m in rows):
            self._apply(self.model.place_window(rows, event.page.has_older, True))
            self.highlight_sequence(event.sequence)
        elif 1 <= event.sequence < event.next_sequence:
            self.notify(
                f"#{event.sequence} is a control-plane row (a structured review result) that "
                "this view hides.",
                markup=False,
            )
        else:
            self.notify(f"There is no message #{event.sequence} in this mailbox.", markup=False)
        self._update_chrome()

    @on(GapLoaded)
    def _gap_loaded(self, event: GapLoaded) -> None:
        event.stop()
        page = event.page
        complete = not page.has_older or (
            bool(page.messages) and page.messages[-1].sequence <= event.gap.older + 1
        )
        self._apply(self.model.fill_gap(event.gap, page.messages, complete))
        self._update_chrome()

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        event.stop()
        self.loading = False
        self.live = False
        header = self.query_one(ThreadHeader)
        header.state = "stale"
        header.error = f"no longer available: {event.error}" if event.missing else event.error
        self._update_chrome()

    @on(OptionList.OptionSelected, "#thread")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option = event.option
        item = option.item if isinstance(option, RowOption) else None
        if isinstance(item, Gap):
            self.load_gap(item)
        elif isinstance(item, MailboxMessage):
            self.toggle(item.id)

    @on(OptionList.OptionHighlighted, "#thread")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self._refresh_footer()
        # Reaching the last rows loads the next older page (no key needed).
        if event.option_index >= self.thread.option_count - 2 and self.model.has_older:
            self.load_older()

    def on_resize(self) -> None:
        width = self._row_width()
        if not width:
            return
        if self._early_page is not None:
            event, self._early_page = self._early_page, None
            self._page_loaded(event)
        elif width != self._width and self._width and self.model.items:
            self._width = width  # a real resize: rows re-wrap at the new width
            self._render_all()

    # -------------------------------------------------------------- actions

    def toggle(self, message_id: str) -> None:
        self._apply(self.model.toggle(message_id))

    def show_new(self) -> None:
        """Bring announced new rows into the thread (at the top)."""
        if not self.model.pending:
            return
        more = self.model.pending_more
        self._apply(self.model.show_pending())
        self.model.pending_more = False
        if more:
            self.refresh_thread(force=True)
        self._update_chrome()

    def message_by_id(self, message_id: str) -> MailboxMessage | None:
        return self.model.by_id.get(message_id)

    def highlighted_message(self) -> MailboxMessage | None:
        try:
            option = self.thread.highlighted_option
        except NoMatches:  # not mounted yet
            return None
        item = option.item if isinstance(option, RowOption) else None
        return item if isinstance(item, MailboxMessage) else None

    def highlight_sequence(self, sequence: int) -> bool:
        index = self.model.index_of_sequence(sequence)
        if index is None:
            return False
        thread = self.thread
        thread.highlighted = index
        thread.scroll_to_highlight(top=True)
        # Rows just added may not be laid out yet: scroll again once they are.
        self.call_after_refresh(thread.scroll_to_highlight, top=True)
        thread.focus()
        return True

    # ------------------------------------------------------------- rendering

    def _row_width(self) -> int:
        """Cells a row may use: the list's width less padding, scrollbar and one spare
        (0 before the view is laid out: nothing is rendered at a guessed width)."""
        width = self.thread.size.width or self.size.width
        return max(20, width - 5) if width else 0

    def _option(self, item: Item, dividers: dict[str, list]) -> RowOption:
        key = item_key(item)
        prompt = self._prompt(item, dividers.get(key, []))
        return RowOption(prompt, key, item, disabled=isinstance(item, StartMarker))

    def _prompt(self, item: Item, marks: list) -> Content:
        if isinstance(item, MailboxMessage):
            assert self.model.summary is not None
            return message_row(
                item,
                self.model.summary,
                item.id in self.model.expanded,
                dividers=marks,
                width=self._width or self._row_width() or 80,
                body_lines=max(5, self.size.height - 22),
                processed=self.model.is_processed(item),
            )
        if isinstance(item, Gap):
            return gap_row(item, marks)
        return start_marker()

    def _apply(self, change: Change) -> None:
        """Apply a model change to the widget: splices, then changed rows only."""
        if not change:
            return
        thread = self.thread
        dividers = self.model.dividers()
        spliced: set[str] = set()
        with self.app.batch_update():
            for splice in change.splices:
                options = [self._option(item, dividers) for item in splice.items]
                spliced |= {item_key(item) for item in splice.items}
                thread.splice(splice.index, splice.count, options)
            prompts: dict[str, Content] = {}
            for key in change.changed - spliced:
                item: Item | None = self.model.by_id.get(key)
                if item is None:
                    index = self.model.index_of(key)
                    item = self.model.items[index] if index is not None else None
                if item is not None:
                    prompts[key] = self._prompt(item, dividers.get(key, []))
            if prompts:
                thread.replace_rows(prompts)
        self._update_chrome()

    def _render_all(self) -> None:
        dividers = self.model.dividers()
        options = [self._option(item, dividers) for item in self.model.items]
        highlighted = self.thread.highlighted
        self.thread.set_options(options)
        if highlighted is not None and options:
            self.thread.highlighted = min(highlighted, len(options) - 1)

    def _reader_at_top(self) -> bool:
        thread = self.thread
        return thread.scroll_y == 0 and thread.highlighted in (None, 0)

    def _mark_live(self, chrome: bool = True) -> None:
        self.live = True
        header = self.query_one(ThreadHeader)
        header.error = ""
        if self.snapshot:
            header.state = "snapshot"
        elif self.interval <= 0:
            header.state = "paused"
        else:
            header.state = "live"
        header.refreshed = self.clock().strftime("%H:%M:%S")
        if chrome:
            self._update_chrome()

    def _update_chrome(self) -> None:
        header = self.query_one(ThreadHeader)
        header.loaded = self.model.loaded
        header.latest = self.model.latest_sequence
        if self.model.summary is not None:
            bar = participants_bar(self.model.summary, self.model.latest_sequence)
            if bar != self._bar:  # an update re-lays the screen out: only on change
                self._bar = bar
                self.query_one("#participants", Static).update(bar)
        if self.model.pending:
            count = len(self.model.pending)
            shown = f"{count:,}+" if self.model.pending_more else f"{count:,}"
            noun = "message" if count == 1 and not self.model.pending_more else "messages"
            notice = Content(f"▲ {shown} new {noun} above — press n to show")
            if notice != self._notice:
                self._notice = notice
                self.query_one("#new-notice", Static).update(notice)
        if self.has_class("-has-new") != bool(self.model.pending):
            self.set_class(bool(self.model.pending), "-has-new")
        self._refresh_footer()

    def _refresh_footer(self) -> None:
        """Rebuild the footer only when what it offers changes (a rebuild restyles it)."""
        offered = (
            self.model.has_older,
            bool(self.model.pending),
            self.highlighted_message() is not None,
        )
        if offered != self._offered:
            self._offered = offered
            self.refresh_bindings()
