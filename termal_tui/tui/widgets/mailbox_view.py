"""One mailbox tab: a one-line header, the participants bar, and the newest-first thread.

The view renders a headless :class:`ThreadModel` (``views/thread.py``), fed by the one
live source (``views/live.py``): it subscribes, and keeps no timer and opens nothing.
When the source reports a commit, the view (if shown; else when it is shown again) asks
for the mailbox's change token (two primary-key lookups) and reads nothing more when
nothing moved there; the widget applies exactly the rows that changed. All reads go
through the source in workers (a failure makes every view Stale at once). Rows are
rendered once the view knows its width (never at a guessed one and again at the real
one).
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from functools import partial
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
from textual.widget import Widget
from textual.widgets import OptionList, Static

from termal_tui.core.formats import READ_LIMIT_MAX
from termal_tui.core.models import ChangeToken, MailboxMessage, MailboxSummary, MessagePage
from termal_tui.core.sanitize import visible, visible_line
from termal_tui.core.vocabulary import Ages, counted
from termal_tui.store.errors import NotFoundError
from termal_tui.store.reader import MailboxReader
from termal_tui.tui.cells import first_fit, option_room
from termal_tui.tui.messages import (
    CloseRequested,
    LiveChanged,
    ReadFailed,
    TitleKnown,
    WorkerFailures,
    follow_live,
)
from termal_tui.tui.render import gap_row, message_row, participants_bar, short_id, start_marker
from termal_tui.tui.widgets.thread_list import RowOption, ThreadList
from termal_tui.views.live import LiveSource, Subscription
from termal_tui.views.presentation import summary_title
from termal_tui.views.thread import Change, Gap, Item, StartMarker, ThreadModel, item_key

PAGE_SIZE: Final = 50
REWIDTH_FIRST: Final = 120  # rows re-rendered at once on a resize (the screenful)
REWIDTH_STEP: Final = 400  # then this many between frames
MAX_REFRESH_ROWS: Final = 1_000
JUMP_CONTEXT: Final = 25


# ------------------------------------------------------------- typed results


class PageLoaded(Message):
    def __init__(
        self,
        summary: MailboxSummary,
        page: MessagePage,
        token: ChangeToken | None,
    ) -> None:
        self.summary = summary
        self.page = page
        self.token = token
        super().__init__()


class OlderLoaded(Message):
    def __init__(self, page: MessagePage) -> None:
        self.page = page
        super().__init__()


class RefreshLoaded(Message):
    def __init__(
        self,
        summary: MailboxSummary | None,
        rows: list[MailboxMessage],
        more: bool,
        token: ChangeToken | None,
    ) -> None:
        self.summary = summary  # None: nothing moved since the last poll
        self.rows = rows
        self.more = more
        self.token = token
        super().__init__()


class JumpLoaded(Message):
    def __init__(self, sequence: int, page: MessagePage, next_sequence: int) -> None:
        self.sequence = sequence
        self.page = page
        self.next_sequence = next_sequence
        super().__init__()


class HiddenLoaded(Message):
    """Control-plane rows a person asked to see (newest first; empty: there are none)."""

    def __init__(self, rows: list[MailboxMessage], near: bool) -> None:
        self.rows = rows
        self.near = near  # the rows hidden next to the highlighted row (else: the newest anywhere)
        super().__init__()


class StartLoaded(Message):
    def __init__(self, rows: list[MailboxMessage]) -> None:
        self.rows = rows  # the oldest page, ascending
        super().__init__()


class GapLoaded(Message):
    def __init__(self, gap: Gap, page: MessagePage) -> None:
        self.gap = gap
        self.page = page
        super().__init__()


__all__ = ["CloseRequested", "MailboxView", "ReadFailed", "ThreadHeader", "TitleKnown"]


def clipboard_note(what: str, env: dict[str, str] | None = None) -> str:
    """What ``c``/``C`` did: Textual sends OSC 52 to the terminal, which may or may not
    pass it on (tmux's default ``set-clipboard external`` drops it from applications)."""
    import os

    env = dict(os.environ) if env is None else env
    if env.get("TMUX"):
        return (
            f"Sent {what} to the terminal as OSC 52. Under tmux it reaches the clipboard "
            "only with `set -g set-clipboard on` and a terminal that allows OSC 52."
        )
    return (
        f"Sent {what} to the clipboard (OSC 52); it arrives if your terminal allows "
        "applications to set the clipboard."
    )


def hidden_marker(first: int, last: int, width: int = 118) -> Content:
    """``· 1 control-plane row hidden (#74,997) · v shows it``, where it stands (narrower:
    without the range, then without the key)."""
    count = last - first + 1
    where = f"#{first:,}" if count == 1 else f"#{first:,}–#{last:,}"
    noun = "row" if count == 1 else "rows"
    hidden = f"· {count:,} control-plane {noun} hidden"
    return first_fit(
        width,
        *(
            Content.styled(form, "$termal-dim")
            for form in (f"{hidden} ({where}) · v shows", f"{hidden} · v shows", hidden)
        ),
    )


# -------------------------------------------------------------------- header


class ThreadHeader(Widget):
    """``● Live 07:03:47 · 50 of latest #140 loaded · 3fcb1a2e`` on one line."""

    # One line while live; a Stale reason gets lines of its own below (never cut).
    DEFAULT_CSS = "ThreadHeader { height: auto; max-height: 4; padding: 0 1; background: $panel; }"

    state: reactive[str] = reactive("loading")
    refreshed: reactive[str] = reactive("")
    loaded: reactive[int] = reactive(0)
    latest: reactive[int] = reactive(0)
    mailbox: reactive[str] = reactive("")
    error: reactive[str] = reactive("", layout=True)  # a reason takes lines of its own

    STATES: Final = {
        "loading": ("◌ Loading", "bold $termal-muted"),
        "live": ("● Live", "bold $termal-success"),
        "paused": ("⏸ Paused", "bold $termal-warning"),
        "snapshot": ("◼ Snapshot", "bold $termal-warning"),
        "stale": ("● Stale", "bold $termal-error"),
    }

    def render(self) -> Content:
        label, style = self.STATES[self.state]
        muted = "$termal-muted"
        state = Content.styled(label, style)
        if self.refreshed:
            state += Content.styled(f" {self.refreshed}", muted)
        loaded = short = Content("")
        if self.latest:
            loaded = Content.styled(f" · {self.loaded:,} of latest #{self.latest:,} loaded", muted)
            short = Content.styled(f" · {self.loaded:,}/{self.latest:,}", muted)
        mailbox = Content.styled(f" · {self.mailbox}", muted)
        # One line: narrower, the mailbox's short id goes, then the counts get shorter.
        head = first_fit(
            self.size.width or 80,
            state + loaded + mailbox,
            state + loaded,
            state + short,
            state,
        )
        if not self.error:
            return head
        reason = Content.styled(visible_line(self.error, 300), "$termal-error")
        return Content("\n").join([head, reason])


# ---------------------------------------------------------------------- view


class MailboxView(WorkerFailures, Vertical):
    """A read-only mailbox thread with paging, jumps, expansion and live refresh."""

    DEFAULT_CSS = """
    MailboxView { height: 1fr; }
    MailboxView #participants { height: auto; padding: 0 1; }
    MailboxView #new-notice {
        height: 1; padding: 0 1; display: none; background: $termal-accent 30%; text-style: bold;
    }
    MailboxView.-has-new #new-notice { display: block; }
    MailboxView ThreadList { height: 1fr; border: none; }
    MailboxView ThreadList > .option-list--option { padding: 0 1; }
    """

    BINDINGS = [
        Binding("o", "older", "Older", id="older"),
        Binding("f", "full_body", "Body", id="full-body"),
        Binding("n", "show_new", "New", id="show-new"),
        Binding("r", "refresh", "Refresh", id="refresh"),
        Binding("w", "close", "Close", id="close-tab"),
        Binding("slash", "search", "Search", id="search"),
        Binding("c", "copy_body", "Copy", id="copy-body"),
        Binding("C", "copy_id", "Id", id="copy-id"),
        Binding("e", "export", "Export", id="export"),
        Binding("q", "app.quit", "Quit", id="quit"),
        Binding("v", "hidden_rows", "Review results", show=False, id="hidden-rows"),
    ]

    def __init__(
        self,
        mailbox_id: str,
        source: LiveSource,
        *,
        session_id: str | None = None,
        export_dir: Path | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.mailbox_id = mailbox_id
        self.export_dir = export_dir  # None: viewer_config's default directory
        self.source = source
        self.session_id = session_id
        self.model = ThreadModel()
        self.live = False
        self.refreshing = False
        self.reading = False
        self._token: ChangeToken | None = None
        self._subscription: Subscription | None = None
        self._generation = 0  # the source generation the model was read from
        self._dirty = False  # a commit reported while hidden: read when shown
        self._width = 0  # the width rows were rendered at; 0 until the view is laid out
        self._early_page: PageLoaded | None = None  # read before the first layout
        self._focus_on_mount = False
        self._hidden = False
        self._offered: tuple[object, ...] = ()
        self._pending_jump: int | None = None
        self._older_wanted = 0  # o presses not served yet
        self._rewidth_generation = 0
        self._rewidth_keys: list[str] = []  # rows still at the previous width
        self._older_busy = False  # an older page is being read or not yet applied
        self._bar: Content | None = None
        self._notice: Content | None = None
        self.ages = Ages()  # the age each row was drawn with
        # The one "now" every row on screen is drawn with: taken once by each refresh
        # or tick that draws rows, so rows sent in the same second read the same age.
        self._now: datetime | None = None

    # ------------------------------------------------------------ properties

    @property
    def reader(self) -> MailboxReader | None:
        """The live source's reader now (None while no file is open)."""
        return self.source.reader

    def clock(self) -> datetime:
        """Wall time: the live source's clock (a test drives it)."""
        return self.source.clock.now()

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
        thread = ThreadList(id="thread")
        thread.is_expanded = lambda key: key in self.model.expanded  # the model of now
        yield thread

    def on_mount(self) -> None:
        header = self.query_one(ThreadHeader)
        header.mailbox = short_id(self.mailbox_id)
        # The header says "◌ Loading" (a LoadingIndicator would animate for nothing).
        self._subscription = follow_live(self, self.source)
        self._generation = self.source.generation
        if self.source.reader is not None:
            self.load_first_page()
        if self._focus_on_mount:
            self.thread.focus()

    def on_unmount(self) -> None:
        if self._subscription is not None:
            self._subscription.close()

    @on(LiveChanged)
    def _live_changed(self, message: LiveChanged) -> None:
        """The source's news: another file (read again from it), a commit (read what
        moved, now if shown, else when shown), time moving on (the header, the ages),
        Stale (the reason)."""
        message.stop()
        event = message.event
        if event.kind == "opened":
            if event.status.generation != self._generation:
                self._generation = event.status.generation
                self.reopen()
            return
        if event.kind == "changed":
            if self._hidden:
                self._dirty = True
            else:
                self.poll()
            return
        if event.kind == "state" and not event.status.live:
            self.live = False
            header = self.query_one(ThreadHeader)
            header.state = "stale"
            header.error = event.status.reason
            self._update_chrome()
            return
        if event.kind in ("unchanged", "tick") and not self._hidden:
            if event.kind == "unchanged" and self.model.summary is not None:
                self._mark_live(chrome=False)
            self.tick_ages()

    def reopen(self) -> None:
        """Another file is at the path: read this mailbox from it, first page again."""
        self._token = None
        self.refreshing = self.reading = False  # reads of the old file fail on their own
        self._early_page = None  # a first page of the old file waiting for the layout
        self.model = ThreadModel()  # nothing of the old file stays on screen
        self.ages.forget()
        self._now = None
        self._bar = self._notice = None
        try:
            self.thread.set_options([])
            self.query_one("#participants", Static).update(Content(""))
            self._update_chrome()
        except NoMatches:  # not built yet: its first page comes from the new file anyway
            pass
        self.load_first_page()

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
        if action in ("full_body", "copy_body", "copy_id"):
            return self.highlighted_message() is not None
        if action in ("export", "search", "hidden_rows"):
            return bool(self.model.by_id)  # nothing read (yet, or the file went): none
        return True

    def action_older(self) -> None:
        """One older page per press: presses during a read are queued, not dropped and
        not read twice (the next read starts below the page just added)."""
        self._older_wanted += 1
        self._next_older()

    def _next_older(self) -> None:
        if self._older_busy or self._older_wanted <= 0:
            return
        if not self.model.has_older:
            self._older_wanted = 0
            return
        self._older_wanted -= 1
        self.load_older()
        if not self._older_busy:  # not started (the first page is still being read)
            self._older_wanted = 0

    def action_oldest(self) -> None:
        """End: the oldest row and ``— start of mailbox —`` in one press (reads the
        mailbox's first page when it is not loaded, leaving a gap above it)."""
        if not self.model.has_older:
            self._show_start()
        else:
            self.load_start()

    def _show_start(self) -> None:
        """The oldest row highlighted (keys and the footer act on it), scrolled to the
        end so ``— start of mailbox —`` shows below it."""
        thread = self.thread
        if thread.option_count:
            last = thread.option_count - 1
            if last > 0 and isinstance(self.model.items[last], StartMarker):
                last -= 1  # the marker is not a row to act on (and is never highlighted)
            thread.highlighted = last
            thread.scroll_end(animate=False)
            self.call_after_refresh(thread.scroll_end, animate=False)
        self._refresh_footer()

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

        summary = self.model.summary
        screen = SearchScreen(
            self.source,
            self.mailbox_id,
            self.session_id,
            self.model.latest_sequence,
            title=summary_title(summary) if summary is not None else "",
            now=self.clock(),
        )
        self.app.push_screen(screen, chosen)

    def action_copy_body(self) -> None:
        """The highlighted message's exact body to the clipboard (OSC 52, base64)."""
        message = self.highlighted_message()
        if message is None:
            return
        self.app.copy_to_clipboard(message.body)
        controls = sum(1 for char in message.body if char != visible(char) and char not in "\n\t")
        extra = f" (it contains {controls:,} control/invisible characters)" if controls else ""
        what = f"{len(message.body):,} characters of #{message.sequence:,}'s body{extra}"
        self.notify(clipboard_note(what), markup=False)

    def action_copy_id(self) -> None:
        message = self.highlighted_message()
        if message is not None:
            self.app.copy_to_clipboard(message.id)
            what = f"the id of #{message.sequence:,} ({len(message.id)} characters)"
            self.notify(clipboard_note(what), markup=False)

    def action_export(self) -> None:
        """The loaded messages (oldest to newest) as JSONL in the export directory (the
        config file's ``export_dir``, by default ``~/.local/share/termal-tui/exports``)."""
        import json

        from termal_tui.views.config import default_export_dir
        from termal_tui.views.export import export_record

        rows = sorted(self.messages, key=lambda m: m.sequence)
        if not rows or self.model.summary is None:
            return
        directory = self.export_dir or default_export_dir()
        # The mailbox id is the database's text: only letters, digits and dashes of it
        # reach a file name (no separator, no dot-dot), and a link at that name is not
        # followed.
        tag = re.sub(r"[^A-Za-z0-9-]", "_", short_id(self.mailbox_id)) or "mailbox"
        name = f"termal-{tag}-{rows[0].sequence}-{rows[-1].sequence}.jsonl"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
            with open(os.open(directory / name, flags, 0o644), "w", encoding="utf-8") as handle:
                for message in rows:
                    record = export_record(message, self.model.summary)
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        except OSError as error:
            self.notify(
                f"Could not write {name} in {directory}: {error.strerror}.",
                severity="error",
                markup=False,
            )
            return
        # The file name on a line of its own: a toast wraps, and a name cut in two
        # cannot be copied.
        where = directory.resolve()
        home = Path.home()
        shown = f"~/{where.relative_to(home)}" if where.is_relative_to(home) else str(where)
        span = rows[-1].sequence - rows[0].sequence + 1
        gaps = " (the loaded rows only)" if len(rows) < span else ""
        self.notify(
            f"{name}\nin {visible_line(shown, 200)}{gaps}",
            title=f"Exported {counted(len(rows), 'loaded message')}",
            markup=False,
        )

    def action_hidden_rows(self) -> None:
        """The hidden control-plane row (a review result) next to the highlighted row, or
        the newest one in the mailbox, in the full-body screen."""
        message = self.highlighted_message()
        first, last = self.hidden_above(message) if message is not None else (0, 0)
        self.load_hidden(first, last)

    @work(group="hidden", exclusive=True, exit_on_error=False)
    async def load_hidden(self, first: int, last: int) -> None:
        near = first > 0
        low, high = (first, last) if near else (1, 2**63 - 1)
        rows = await self.source.read(
            lambda reader: reader.read_hidden(
                self.mailbox_id, low, high, 1, session_id=self.session_id
            )
        )
        self.post_message(HiddenLoaded(rows, near))

    @on(HiddenLoaded)
    def _hidden_loaded(self, event: HiddenLoaded) -> None:
        event.stop()
        if not event.rows:
            self.notify("This mailbox has no control-plane rows (review results).")
            return
        from termal_tui.tui.screens.body import BodyScreen

        self.app.push_screen(BodyScreen(event.rows[0]))

    def action_full_body(self) -> None:
        from termal_tui.tui.screens.body import BodyScreen

        message = self.highlighted_message()
        if message is not None:
            self.app.push_screen(BodyScreen(message))

    # -------------------------------------------------------------- polling

    def on_show(self) -> None:
        """Shown: a commit reported while the tab was hidden is read now."""
        if self._hidden:
            self.tick_ages()
            if self._dirty:
                self._dirty = False
                self.poll()
        self._hidden = False

    def on_hide(self) -> None:
        """Hidden (another tab chosen): commits are remembered, read when shown."""
        self._hidden = True

    def tick_ages(self) -> None:
        """Draw again the rows whose age reads differently now (``2 min ago`` → ``3 min
        ago``); nothing is read from the file and other rows are left alone."""
        if not self._width or not self.model.by_id:
            return
        self._now = self.clock()
        self._redraw_aged()

    def rows_now(self) -> datetime:
        """The moment the rows on screen are drawn at (one per refresh or tick)."""
        if self._now is None:
            self._now = self.clock()
        return self._now

    def _redraw_aged(self) -> None:
        """The rows whose age reads differently at :meth:`rows_now` than as drawn."""
        by_id = self.model.by_id
        if not self._width or not by_id:
            return
        if len(self.ages) > 2 * len(by_id) + PAGE_SIZE:
            self.ages.forget(set(by_id))  # rows dropped from the model
        stale = self.ages.changed(
            {key: message.created_at for key, message in by_id.items()}, self.rows_now()
        )
        if stale:
            dividers = self.model.dividers()
            self.thread.replace_rows(
                {key: self._prompt(by_id[key], dividers.get(key, [])) for key in stale}
            )

    def poll(self) -> None:
        """A commit reported (read while shown), never overlapping the previous read.

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
            token = await self.source.read(lambda reader: reader.change_token(self.mailbox_id))
            page = await self.source.read(
                lambda reader: reader.read_page(
                    self.mailbox_id, None, PAGE_SIZE, session_id=self.session_id
                )
            )
            head = await self.source.read(
                lambda reader: reader.get_head(self.mailbox_id, session_id=self.session_id)
            )
        except BaseException:
            self.reading = False
            raise
        # Still "reading" until the page is applied (_page_loaded): a poll in between, or
        # while the page waits for the first layout, must not read it again.
        self.post_message(PageLoaded(head, page, token))

    def load_older(self) -> None:
        """The next older page, unless one is being read or not yet applied (then the
        next read would start from the same row and read the same page again)."""
        if self._older_busy or self.reading or not self.model.has_older:
            return
        self._older_busy = True  # until the page is in the model (see _older_loaded)
        self._read_older()

    @work(group="read", exclusive=False, exit_on_error=False)
    async def _read_older(self) -> None:
        oldest = self.model.oldest_sequence
        if oldest is None:
            self._older_busy = False
            return
        self.reading = True
        try:
            page = await self.source.read(
                lambda reader: reader.read_page(
                    self.mailbox_id, oldest, PAGE_SIZE, session_id=self.session_id
                )
            )
        except BaseException:
            self._older_busy = False
            raise
        finally:
            self.reading = False
        self.post_message(OlderLoaded(page))

    @work(group="read", exclusive=False, exit_on_error=False)
    async def load_start(self) -> None:
        """The mailbox's oldest page (ascending from #1), for End."""
        rows = await self.source.read(
            lambda reader: reader.read_range(
                self.mailbox_id, 0, PAGE_SIZE, session_id=self.session_id
            )
        )
        self.post_message(StartLoaded(rows))

    @work(group="refresh", exclusive=False, exit_on_error=False)
    async def refresh_thread(self, force: bool = False) -> None:
        if self.refreshing or self.model.summary is None:
            if self.model.summary is None and not self.reading:
                self.load_first_page()
            return
        self.refreshing = True
        try:
            token = await self.source.read(lambda reader: reader.change_token(self.mailbox_id))
            if token is None:
                raise NotFoundError("mailbox not found")
            if token == self._token and not force:
                self.post_message(RefreshLoaded(None, [], False, token))
                return
            head = await self.source.read(
                lambda reader: reader.get_head(self.mailbox_id, session_id=self.session_id)
            )
            newest = self.model.newest_sequence
            fresh: list[MailboxMessage] = []
            more = False
            # Bounded: at most MAX_REFRESH_ROWS per refresh, and no more while that many
            # already wait unseen (they come in with n, then the next ones are read).
            room = MAX_REFRESH_ROWS - len(self.model.pending)
            if room <= 0:
                more = head.latest_sequence > newest
            while room > 0:
                batch = await self.source.read(partial(self._rows_after, newest))
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

    async def _rows_after(self, after: int, reader: MailboxReader) -> list[MailboxMessage]:
        return await reader.read_range(
            self.mailbox_id, after, READ_LIMIT_MAX, session_id=self.session_id
        )

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
        token = await self.source.read(lambda reader: reader.change_token(self.mailbox_id))
        next_sequence = max(token.next_sequence, 0) if token else 0
        page = await self.source.read(
            lambda reader: reader.read_page(
                self.mailbox_id,
                sequence + JUMP_CONTEXT + 1,
                2 * JUMP_CONTEXT + 1,
                session_id=self.session_id,
            )
        )
        self.post_message(JumpLoaded(sequence, page, next_sequence))

    @work(group="read", exclusive=False, exit_on_error=False)
    async def load_gap(self, gap: Gap) -> None:
        page = await self.source.read(
            lambda reader: reader.read_page(
                self.mailbox_id, gap.newer, PAGE_SIZE, session_id=self.session_id
            )
        )
        self.post_message(GapLoaded(gap, page))

    # -------------------------------------------------------------- results

    @on(PageLoaded)
    def _page_loaded(self, event: PageLoaded) -> None:
        event.stop()
        width = self._row_width()
        if not width:  # not laid out yet: rendered once, at the real width, on resize
            self._early_page = event
            return
        self._width = width
        self.loading = self.reading = False
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
        self._older_busy = False
        self._update_chrome()
        self._next_older()

    @on(StartLoaded)
    def _start_loaded(self, event: StartLoaded) -> None:
        event.stop()
        self._apply(self.model.place_window(event.rows, False, True))
        self._show_start()

    @on(RefreshLoaded)
    def _refresh_loaded(self, event: RefreshLoaded) -> None:
        event.stop()
        grew = (
            event.token is not None
            and self._token is not None
            and event.token.next_sequence != self._token.next_sequence
        )
        self._token = event.token
        if grew and not event.rows and self.model.items:
            self._remark_top()  # only hidden rows arrived: the top row's marker says so
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

    def _remark_top(self) -> None:
        top = self.model.items[0]
        if isinstance(top, MailboxMessage):
            marks = self.model.dividers().get(top.id, [])
            self.thread.replace_rows({top.id: self._prompt(top, marks)})

    @on(JumpLoaded)
    def _jump_loaded(self, event: JumpLoaded) -> None:
        event.stop()
        rows = event.page.messages
        if any(m.sequence == event.sequence for m in rows):
            self._apply(self.model.place_window(rows, event.page.has_older, True))
            self.highlight_sequence(event.sequence)
        elif 1 <= event.sequence < event.next_sequence:
            self.notify(
                f"#{event.sequence:,} is a control-plane row (a structured review result) that "
                "this view hides.",
                markup=False,
            )
        else:
            self.notify(f"There is no message #{event.sequence:,} in this mailbox.", markup=False)
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

    @on(ThreadList.EndRequested)
    def _end_requested(self, event: ThreadList.EndRequested) -> None:
        event.stop()
        self.action_oldest()

    @on(OptionList.OptionHighlighted, "#thread")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self._refresh_footer()
        # Reaching the last rows loads the next older page (no key needed).
        if event.option_index >= self.thread.option_count - 2 and self.model.has_older:
            self.load_older()

    def on_resize(self) -> None:
        """Rows follow the width both ways; checked again after the next refresh, when
        the list itself has its new size (a drag sends many sizes, and the list may
        still have its old one when the view hears of the change)."""
        self._rewidth()
        self.call_after_refresh(self._rewidth)

    def _rewidth(self) -> None:
        width = self._row_width()
        if not width:
            return
        if self._early_page is not None:
            event, self._early_page = self._early_page, None
            self._page_loaded(event)
        elif width != self._width and self._width and self.model.items:
            self._width = width  # a real resize: rows re-wrap at the new width
            # Nearest the highlight first (what is on screen), the rest in small steps
            # between frames: 20,000 rows cost seconds to re-render, and the screen
            # must follow the width at once, both ways.
            self._rewidth_generation += 1
            keys = [item_key(item) for item in self.model.items]
            centre = self.thread.highlighted or 0
            order = sorted(range(len(keys)), key=lambda index: abs(index - centre))
            self._rewidth_keys = [keys[index] for index in order]
            self._rewidth_step(self._rewidth_generation, REWIDTH_FIRST)

    def _rewidth_step(self, generation: int, count: int = REWIDTH_STEP) -> None:
        if generation != self._rewidth_generation or not self._rewidth_keys:
            return  # a newer width took over, or every row is done
        keys, self._rewidth_keys = self._rewidth_keys[:count], self._rewidth_keys[count:]
        dividers = self.model.dividers()
        prompts: dict[str, Content] = {}
        for key in keys:
            item: Item | None = self.model.by_id.get(key)
            if item is None:
                index = self.model.index_of(key)
                item = self.model.items[index] if index is not None else None
            if item is not None:
                prompts[key] = self._prompt(item, dividers.get(key, []))
        self.thread.replace_rows(prompts)
        if self._rewidth_keys:
            self.set_timer(0.01, lambda: self._rewidth_step(generation))

    # -------------------------------------------------------------- actions

    def toggle(self, message_id: str) -> None:
        """Expand or collapse a row; an expanded row is brought into view (its diagnostics
        and body below it, as much as fits, when it was the last row on screen)."""
        self._apply(self.model.toggle(message_id))
        self._refresh_footer()  # enter now collapses it (or expands it)
        if message_id in self.model.expanded:
            self.call_after_refresh(self.thread.reveal_highlight)

    def show_new(self) -> None:
        """Bring announced new rows into the thread (at the top), and show the top:
        the newest row highlighted, whole, at the top of the list."""
        if not self.model.pending:
            return
        more = self.model.pending_more
        self._apply(self.model.show_pending())
        self.model.pending_more = False
        if more:
            self.refresh_thread(force=True)
        self._update_chrome()
        thread = self.thread
        if thread.option_count:
            thread.highlighted = 0
            thread.scroll_home(animate=False)
            self.call_after_refresh(thread.scroll_home, animate=False)

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
        """Cells a row may use: the list's width less the option padding and the
        scrollbar (:func:`option_room`; 0 before the view is laid out: nothing is
        rendered at a guessed width)."""
        if not (self.thread.size.width or self.size.width):
            return 0
        return max(20, option_room(self.thread, self))

    def _option(self, item: Item, dividers: dict[str, list]) -> RowOption:
        key = item_key(item)
        prompt = self._prompt(item, dividers.get(key, []))
        return RowOption(prompt, key, item, disabled=isinstance(item, StartMarker))

    def hidden_above(self, message: MailboxMessage) -> tuple[int, int]:
        """(first, last) sequences hidden between ``message`` and the loaded row just
        newer than it (control-plane rows this view hides, as TermAl's views do), or
        (0, 0) when none are. Above the newest row: up to the mailbox's last sequence."""
        index = self.model.index_of(message.id)
        if index is None:
            return (0, 0)
        if index > 0:
            newer = self.model.items[index - 1]
            if not isinstance(newer, MailboxMessage):
                return (0, 0)  # a gap not read yet: nothing is known about it
            top = newer.sequence - 1
        elif self.model.pending or self._token is None:
            return (0, 0)
        else:
            top = self._token.next_sequence - 1
        return (message.sequence + 1, top) if top > message.sequence else (0, 0)

    def _prompt(self, item: Item, marks: list) -> Content:
        if isinstance(item, MailboxMessage):
            assert self.model.summary is not None
            first, last = self.hidden_above(item)
            if first:
                return Content("\n").join(
                    [
                        hidden_marker(first, last, self._prompt_width()),
                        self._message_prompt(item, marks),
                    ]
                )
            return self._message_prompt(item, marks)
        if isinstance(item, Gap):
            return gap_row(item, marks, self._prompt_width())
        return start_marker()

    def _prompt_width(self) -> int:
        return self._width or self._row_width() or 80

    def _message_prompt(self, item: MailboxMessage, marks: list) -> Content:
        assert self.model.summary is not None
        return message_row(
            item,
            self.model.summary,
            item.id in self.model.expanded,
            dividers=marks,
            width=self._prompt_width(),
            body_lines=max(5, self.size.height - 22),
            processed=self.model.is_processed(item),
            age=self.ages.shown(item.id, item.created_at, self.rows_now()),
        )

    def _apply(self, change: Change) -> None:
        """Apply a model change to the widget: splices, then changed rows only."""
        if not change:
            return
        self._now = self.clock()  # the rows drawn now, and the others, at one moment
        thread = self.thread
        dividers = self.model.dividers()
        spliced: set[str] = set()
        with self.app.batch_update():
            below: set[str] = set()  # each row under a splice: its newer neighbour moved
            for splice in change.splices:
                options = [self._option(item, dividers) for item in splice.items]
                spliced |= {item_key(item) for item in splice.items}
                thread.splice(splice.index, splice.count, options)
                after = splice.index + len(splice.items)
                if after < len(self.model.items):
                    below.add(item_key(self.model.items[after]))
            prompts: dict[str, Content] = {}
            for key in (change.changed | below) - spliced:
                item: Item | None = self.model.by_id.get(key)
                if item is None:
                    index = self.model.index_of(key)
                    item = self.model.items[index] if index is not None else None
                if item is not None:
                    prompts[key] = self._prompt(item, dividers.get(key, []))
            if prompts:
                thread.replace_rows(prompts)
            self._redraw_aged()  # rows drawn earlier: at the same moment as these
        self._update_chrome()

    def _render_all(self) -> None:
        dividers = self.model.dividers()
        options = [self._option(item, dividers) for item in self.model.items]
        highlighted = self.thread.highlighted
        self.thread.set_options(options)
        if highlighted is not None and options:
            self.thread.highlighted = min(highlighted, len(options) - 1)

    def _reader_at_top(self) -> bool:
        """Watching the top (new rows come in there at once), not reading a row: an
        expanded top row keeps the highlight, and new rows are announced above it."""
        thread = self.thread
        if thread.scroll_y != 0 or thread.highlighted not in (None, 0):
            return False
        top = self.highlighted_message()
        return top is None or top.id not in self.model.expanded

    def _mark_live(self, chrome: bool = True) -> None:
        self.live = True
        header = self.query_one(ThreadHeader)
        header.error = ""
        status = self.source.status
        if status.snapshot is not None:
            header.state = "snapshot"
        elif self.source.interval <= 0:
            header.state = "paused"
        else:
            header.state = "live"
        header.refreshed = status.good_time(self.clock())
        if chrome:
            self._update_chrome()

    def _update_chrome(self) -> None:
        header = self.query_one(ThreadHeader)
        header.loaded = self.model.loaded
        header.latest = self.model.latest_sequence
        if self.model.summary is not None:
            bar = participants_bar(
                self.model.summary, self.model.latest_sequence, self.model.waits_on
            )
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
        """Rebuild the footer only when what it offers changes (a rebuild restyles it).
        Called on every highlight change, including those set from code (a disabled row
        posts no OptionHighlighted, so the state compared is read afresh each time)."""
        try:
            option = self.thread.highlighted_option
        except NoMatches:
            option = None
        item = option.item if isinstance(option, RowOption) else None
        offered = (
            self.model.has_older,
            bool(self.model.pending),
            bool(self.model.by_id),
            type(item).__name__,  # a message expands, a gap loads rows, the marker neither
            isinstance(item, MailboxMessage) and item.id in self.model.expanded,  # collapses
        )
        if offered != self._offered:
            self._offered = offered
            self.refresh_bindings()
