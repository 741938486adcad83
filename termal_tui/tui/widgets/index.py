"""The mailbox index: compact two-line cards, newest activity first, polled while shown.

Cards are drawn as soon as the summaries are read; the health markers (a pass over
every unread range, at most every 30 s) follow in their own worker and restyle them.
The summaries are paged (keyset, ``PAGE_CARDS`` at a time): the first screenful is read
and drawn first, the next page when the highlight nears the last card, so a file of
100,000 mailboxes costs what is on screen; the totals come from one count apart.
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
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from termal_tui.models import MailboxSummary
from termal_tui.sanitize import visible_line
from termal_tui.store.reader import MailboxReader
from termal_tui.tui.messages import (
    IndexLoaded,
    IndexTotals,
    IndexUnchanged,
    MarkersLoaded,
    MatchesLoaded,
    OpenMailbox,
    ReadFailed,
    WorkerFailures,
)
from termal_tui.tui.render import card
from termal_tui.vocabulary import FINDING_WORDS, Ages, counted

if TYPE_CHECKING:
    from termal_tui.health import Thresholds

HEALTH_EVERY_SECONDS = 30.0
HIDDEN_HEALTH_EVERY = 300.0  # markers while a tab is shown (the title's stuck count)
HIDDEN_FACTOR = 20.0  # hidden, a read that took t seconds waits 20 t before the next
# Paged, the totals follow a commit, but a count that took t seconds waits 20 t before
# the next (100,000 mailboxes: about 2 s, so every 40 s or so; 1,000: at once).
TOTALS_FACTOR = 20.0
AGE_EVERY = 10.0  # seconds between checks of the ages on the cards
PAGE_CARDS = 100  # a page of cards: several screenfuls at 120x40
MORE_WITHIN = 10
FILTER_PAUSE = 0.25  # seconds of no typing before a paged index asks the store  # the next page is read when the highlight is this close to the end
PROBLEM_WORDS = FINDING_WORDS  # one vocabulary: cards, health view, help


class ScrolledNearEnd(Message):
    """The cards were scrolled (wheel, scrollbar) to within a screenful of the end."""


class CardList(OptionList):
    """The index's cards; enter opens (shown in the footer)."""

    BINDINGS = [Binding("enter", "select", "Open")]

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value > old_value and new_value >= self.max_scroll_y - self.size.height:
            self.post_message(ScrolledNearEnd())


class MailboxIndex(WorkerFailures, Vertical, can_focus=True):
    """Cards for every visible mailbox. Selecting one posts :class:`OpenMailbox`.

    Focusable itself, so that with no cards (an empty database) its keys still work.
    """

    DEFAULT_CSS = """
    MailboxIndex #index-status { height: auto; max-height: 4; padding: 0 1; color: $foreground 65%; }
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
        Binding("escape", "clear_filter", "Clear filter"),  # offered while filtering
        Binding("h", "app.health", "Health"),
        Binding("b", "app.board", "Board", id="board"),  # the app's id: one keymap for both
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
        self.more = False  # mailboxes beyond the loaded pages
        self.totals: tuple[int, int] | None = None  # (mailboxes, unread) when paged
        self.appending = False
        self._health_at = -1e9
        self.filter_text = ""
        # A paged index is filtered by the store (every mailbox, not only the pages
        # loaded): the matches, whether more follow, and how many match in all.
        self.matches: list[MailboxSummary] | None = None
        self.matches_more = False
        self.match_count: int | None = None
        self._filter_timer: Timer | None = None
        self._focused_once = False
        self._load_on_show = False
        self.ages = Ages()  # the age each card was drawn with
        self._version = -1  # PRAGMA data_version at the last read of the pages
        self._read_at = -1e9  # when the pages were last read, and how long it took
        self._read_took = 0.0
        self._totals_at = -1e9  # when the totals were last counted, and how long it took
        self._totals_took = 0.0
        self._counting = False
        self._totals_stale = False  # a commit since the last count
        self._good_at: str | None = None  # the time of the last good read (Stale shows it)
        self._stale_reason = ""  # why the last read failed, until one succeeds
        self._version_of: MailboxReader | None = None
        self._age_timer: Timer | None = None

    def _matches(self, summary: MailboxSummary) -> bool:
        needle = self.filter_text.casefold()
        return (
            not needle
            or needle in summary.id.casefold()
            or any(
                needle in p.display_name.casefold() or needle in p.session_id.casefold()
                for p in summary.participants
            )
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
        if interval > 0:  # it runs while a tab is shown too: the terminal's title and
            # the attention signals follow every mailbox (an idle poll reads no page)
            self._timer = self.set_interval(interval, self.poll)
        self._age_timer = self.set_interval(AGE_EVERY, self.tick_ages, pause=not self.visible_tab)
        if load_now:
            if self.visible_tab:
                self.load()
            else:
                self._load_on_show = True

    def reopen(self, reader: MailboxReader) -> None:
        """Another file is at the path: read that one from now on (cards, then markers)."""
        self.reader = reader
        self.problems = {}
        self._health_at = -1e9
        self.refreshing = False  # a read of the old file in flight fails on its own
        # The old file's totals are not this one's; a count still running on it is
        # dropped when it answers (load_totals).
        self.totals, self._counting, self._totals_at = None, False, -1e9
        self.load()

    def on_show(self) -> None:
        """Shown (laid out and drawn): the first load, or, coming back to the index,
        the timer resumes and a poll runs at once."""
        self.visible_tab = True
        if self.summaries and not self._focused_once and self._displayed():
            self._focused_once = True  # cards drawn while hidden: keys to them now
            self.focus_cards()
        if self._age_timer is not None:
            self._age_timer.resume()
            self.tick_ages()
        if self._load_on_show:
            self._load_on_show = False
            self.load()
        elif self._timer is not None:
            self.poll()

    def on_hide(self) -> None:
        if self._age_timer is not None:
            self._age_timer.pause()
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
        """A timer tick, shown or not (nothing before the first load)."""
        if not self.refreshing and not self._load_on_show and self.reader is not None:
            self.load(force=False)

    def action_refresh(self) -> None:
        self.load()

    def action_filter(self) -> None:
        """``/``: the filter box takes the keys at once (``set_focus``, not ``focus``,
        which waits for the queue: "/docs" typed fast would give "docs" to the cards)."""
        box = self.query_one("#index-filter", Input)
        box.can_focus = True
        self.screen.set_focus(box)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":  # offered while typing a filter or one applies
            box = self.query_one("#index-filter", Input)
            return bool(self.filter_text) or box.has_focus
        return True

    def action_clear_filter(self) -> None:
        """Escape: the filter emptied and left (the cards get the keys)."""
        box = self.query_one("#index-filter", Input)
        was_filtering = bool(self.filter_text)
        box.value = ""
        self._set_filter("")
        box.can_focus = False
        self.focus_cards()
        if was_filtering and self.summaries:
            self.show(self.summaries, self._status(self.summaries))

    @on(Input.Changed, "#index-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._set_filter(event.value.strip())
        if self.summaries and self.matches is None:
            self.show(self.summaries, self._status(self.summaries))

    def _set_filter(self, text: str) -> None:
        """A new filter: the loaded cards are filtered at once; a paged index asks the
        store too (after a pause in typing), as every mailbox may match."""
        if text == self.filter_text:
            return
        self.filter_text = text
        self.refresh_bindings()  # escape clears it: offered while a filter applies
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        if not text:
            self.matches, self.match_count, self.matches_more = None, None, False
            return
        if self.more or self.matches is not None:
            self.matches, self.match_count, self.matches_more = None, None, False
            self._filter_timer = self.set_timer(FILTER_PAUSE, self.load_matches)

    @on(Input.Submitted, "#index-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#index-filter", Input).can_focus = False
        self.focus_cards()

    @work(group="index", exclusive=False, exit_on_error=False)
    async def load(self, force: bool = True) -> None:
        """The summaries (cards drawn at once), then the health markers when due.

        A poll (``force`` false) first asks SQLite whether anything was committed since
        the last read (``PRAGMA data_version``): when nothing was, no page is read
        again; the status time and the ages move on, and the markers when due. Hidden
        (a tab is shown), the index still follows commits, for the terminal's title and
        the attention signals, but reads its page at most every ``HIDDEN_FACTOR`` times
        what the last read took, and its markers every ``HIDDEN_HEALTH_EVERY`` s."""
        if self.refreshing or self.reader is None:
            return
        self.refreshing = True
        limit = max(PAGE_CARDS, len(self.summaries))  # the pages loaded so far, again
        reader = self.reader
        now = time.monotonic()
        hidden = not self.visible_tab
        try:
            version = await reader.data_version()
            unchanged = not force and version == self._version and reader is self._version_of
            if not unchanged and not force and hidden and reader is self._version_of:
                # A commit, seen from behind a tab: not sooner than the read's cost allows.
                unchanged = now - self._read_at < HIDDEN_FACTOR * self._read_took
            if not unchanged:
                summaries = await reader.list_mailboxes(session_id=self.session_id, limit=limit)
                self._read_at, self._read_took = time.monotonic(), time.monotonic() - now
        finally:
            self.refreshing = False
        every = HIDDEN_HEALTH_EVERY if hidden else HEALTH_EVERY_SECONDS
        due = time.monotonic() - self._health_at >= every
        if unchanged:
            self.post_message(IndexUnchanged())
            if due:
                self._health_at = time.monotonic()
                self.load_markers()
            elif self.more and self._totals_stale and self._totals_due():
                self.load_totals()  # a commit came while the last count was recent
            return
        more = len(summaries) >= limit
        reason = ""
        if not summaries and self.session_id is not None:
            reason = self._empty_reason(*await reader.session_presence(self.session_id))
        self._version, self._version_of = version, reader  # read whole: later polls skip
        self.post_message(IndexLoaded(summaries, more, empty_reason=reason))
        if more:
            self._totals_stale = True  # counted again now, or on a later poll when due
        if due:
            self._health_at = time.monotonic()
            # After the cards are drawn: these passes must not delay the first screen.
            self.call_after_refresh(self._follow_up, more)
        elif more and self._totals_due():
            self.call_after_refresh(self.load_totals)

    def _follow_up(self, more: bool) -> None:
        if more:
            self.load_totals()
        self.load_markers()

    def _totals_due(self) -> bool:
        """Counted never (the index just outgrew a page: ``100+``), or long enough ago for
        what the last count cost."""
        return (
            self.totals is None
            or time.monotonic() - self._totals_at >= TOTALS_FACTOR * self._totals_took
        )

    @work(group="index-more", exclusive=False, exit_on_error=False)
    async def load_more(self) -> None:
        """The next page of cards, below the last one loaded."""
        if self.appending or self.refreshing or not self.more or self.reader is None:
            return
        last = self.summaries[-1] if self.summaries else None
        after = (last.latest_message_at or "", last.id) if last is not None else None
        self.appending = True
        try:
            rows = await self.reader.list_mailboxes(
                session_id=self.session_id, limit=PAGE_CARDS, after=after
            )
        finally:
            self.appending = False
        self.post_message(IndexLoaded(rows, len(rows) >= PAGE_CARDS, appended=True))

    @work(group="index-filter", exclusive=True, exit_on_error=False)
    async def load_matches(self) -> None:
        """The store's cards matching the filter (as many pages as are shown already,
        so a refresh keeps the place), and how many match in all."""
        needle, reader = self.filter_text, self.reader
        if not needle or reader is None:
            return
        limit = max(PAGE_CARDS, len(self.matches or ()))
        rows = await reader.list_mailboxes(session_id=self.session_id, limit=limit, matching=needle)
        count = await reader.count_matching(needle, session_id=self.session_id)
        self.post_message(MatchesLoaded(needle, rows, len(rows) >= limit, count))

    @work(group="index-filter-more", exclusive=True, exit_on_error=False)
    async def more_matches(self) -> None:
        """The next page of matches, below the last one shown."""
        needle, reader, shown = self.filter_text, self.reader, self.matches
        if not needle or reader is None or not shown or not self.matches_more:
            return
        last = shown[-1]
        rows = await reader.list_mailboxes(
            session_id=self.session_id,
            limit=PAGE_CARDS,
            after=(last.latest_message_at or "", last.id),
            matching=needle,
        )
        self.post_message(
            MatchesLoaded(needle, rows, len(rows) >= PAGE_CARDS, self.match_count, append=True)
        )

    @work(group="index-totals", exclusive=False, exit_on_error=False)
    async def load_totals(self) -> None:
        reader = self.reader
        if reader is None or self._counting:
            return  # one count at a time (it stays stale: a later poll counts again)
        self._counting = True
        self._totals_stale = False  # a commit from now on makes it stale again
        started = time.monotonic()
        try:
            mailboxes, unread = await reader.index_totals(session_id=self.session_id)
        except BaseException:
            self._totals_stale = True  # not counted: the next poll tries again
            raise
        finally:
            if reader is self.reader:
                self._counting = False
        if reader is not self.reader:
            return  # the file was replaced meanwhile: its count is not this one's
        self._totals_at, self._totals_took = time.monotonic(), time.monotonic() - started
        self.post_message(IndexTotals(mailboxes, unread))

    @work(group="index-markers", exclusive=False, exit_on_error=False)
    async def load_markers(self) -> None:
        """The worst finding per mailbox, as a word on its card."""
        if self.marking or self.reader is None:
            return
        from termal_tui.health import health_report

        self.marking = True
        self._health_at = time.monotonic()
        # Paged: markers for the loaded cards only (memory follows what is on screen).
        only = None
        if self.more or self.matches is not None:  # the loaded cards and the matches
            only = {summary.id for summary in (*self.summaries, *(self.matches or []))}
        try:
            report = await health_report(
                self.reader, now=self.clock(), thresholds=self.thresholds, mailbox_ids=only
            )
        finally:
            self.marking = False
        worst: dict[str, str] = {}
        for finding in report.findings:  # ranked: the first per mailbox is worst
            if self.session_id is not None and finding.session_id != self.session_id:
                continue  # a session's view: its own unread rows only, as its counts
            if finding.severity >= 2:
                worst.setdefault(finding.mailbox_id, PROBLEM_WORDS[finding.kind])
        self.post_message(MarkersLoaded(worst))

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        event.stop()
        self.loading = False
        self.show_error(event.error)

    def _read_well(self) -> None:
        """A read succeeded: Live again, as of now."""
        self._stale_reason = ""
        self._good_at = self.clock().strftime("%H:%M:%S")

    @on(IndexLoaded)
    def _loaded(self, event: IndexLoaded) -> None:
        self.loading = False
        self._read_well()
        if event.appended:
            self._append(event.summaries, event.more)
            return
        self.more = event.more
        if event.empty_reason:
            self.query_one("#index-empty", Static).update(Content(event.empty_reason))
        if not event.more:
            self.totals = None  # everything is loaded: counted from the cards
        self.show(event.summaries, self._status(event.summaries))
        if self.filter_text and (self.matches is not None or self.more):
            # Something changed (or the index just outgrew its first page): the store's
            # matches again, over every mailbox.
            self.load_matches()

    def _empty_reason(self, still_in: int, left: int) -> str:
        """Why a session's view lists nothing (TermAl's session view: mailboxes the
        session is still in, with a message it may see)."""
        who = visible_line(self.session_id or "", 40)
        if left and not still_in:
            return (
                f"{who} has left every mailbox it was in ({left:,}). A session's view, as "
                "in TermAl, lists only mailboxes it is still in; run without --session to "
                "see them all."
            )
        if still_in:
            return (
                f"{who} is in {counted(still_in, 'mailbox', 'mailboxes')}, but none "
                "holds a message it may see (rows addressed to it as control-plane review "
                "results are hidden, as in TermAl); run without --session to see them."
            )
        return f"{who} takes part in no mailbox in this database."

    @on(MatchesLoaded)
    def _matches_loaded(self, event: MatchesLoaded) -> None:
        event.stop()
        if event.needle != self.filter_text:
            return  # typed on meanwhile: its own read follows
        if event.append and self.matches is not None:
            known = {summary.id for summary in self.matches}
            fresh = [summary for summary in event.summaries if summary.id not in known]
            self.matches = self.matches + fresh
            self.matches_more = event.more and bool(fresh)
            now = self.clock()
            self.query_one("#cards", OptionList).add_options(
                [Option(self._card(s, self._width or 60, now), id=s.id) for s in fresh]
            )
            self.set_status(self._status(self.summaries))
            return
        self.matches, self.matches_more, self.match_count = (
            event.summaries,
            event.more,
            event.count,
        )
        self.show(self.summaries, self._status(self.summaries))
        self.load_markers()  # the matches get their ⚠ markers like the cards

    @on(IndexUnchanged)
    def _unchanged(self, event: IndexUnchanged) -> None:
        """A poll found nothing committed: the time moves on, and the ages."""
        event.stop()
        self.loading = False
        self._read_well()
        if self.summaries and self.visible_tab:  # hidden: redrawn when shown (a status
            # update lays the screen out again, a cost for nothing behind a tab)
            self.set_status(self._status(self.summaries))
            self.tick_ages()

    @on(IndexTotals)
    def _totals(self, event: IndexTotals) -> None:
        event.stop()
        self.totals = (event.mailboxes, event.unread)
        if self.summaries:
            self.set_status(self._status(self.summaries))

    def _append(self, rows: list[MailboxSummary], more: bool) -> None:
        """One more page of cards at the end (those already loaded are not rebuilt)."""
        known = {summary.id for summary in self.summaries}
        fresh = [summary for summary in rows if summary.id not in known]
        self.more = more and bool(fresh)
        self.summaries = self.summaries + fresh
        shown = [s for s in fresh if self._matches(s)] if self.matches is None else []
        if shown:
            width = self._width or max(20, (self.size.width or 80) - 5)
            now = self.clock()
            self.query_one("#cards", OptionList).add_options(
                [Option(self._card(s, width, now), id=s.id) for s in shown]
            )
        self.set_status(self._status(self.summaries))

    @on(OptionList.OptionHighlighted, "#cards")
    def _near_end(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option_index >= event.option_list.option_count - MORE_WITHIN:
            self._more_cards()

    @on(ScrolledNearEnd)
    def _scrolled_near_end(self, event: ScrolledNearEnd) -> None:
        event.stop()
        self._more_cards()

    def _more_cards(self) -> None:
        """The next page of what is shown: the store's matches, or the index."""
        if self.matches is not None:
            if self.matches_more:
                self.more_matches()
        elif self.more:
            self.load_more()

    @on(MarkersLoaded)
    def _markers_loaded(self, event: MarkersLoaded) -> None:
        # Not stopped: the app retitles the terminal with the stuck count.
        if event.problems != self.problems:
            self.problems = event.problems
            if self.summaries:
                self.show(self.summaries, self._status(self.summaries))

    def _status(self, summaries: list[MailboxSummary]) -> Content:
        """``● Live 12:00:00 · 6 mailboxes · 42 unread``; Stale (the last read failed):
        the time and counts of the last good read, the reason on its own line. Any
        redraw (a resize, the filter, markers) says the same until a read succeeds."""
        stale = self._stale_reason
        if stale:
            state = Content.styled("● Stale", "bold $error")
        elif self.snapshot:
            state = Content.styled("◼ Snapshot", "bold $warning")
        elif self.interval <= 0:
            state = Content.styled("⏸ Paused", "bold $warning")
        else:
            state = Content.styled("● Live", "bold $success")
        unread = sum(summary.unread_count for summary in summaries)
        count = len(summaries)
        total_text = f"{count:,}"
        if self.more and self.totals is not None:
            count, unread = self.totals
            total_text = f"{count:,}"
        elif self.more:  # the totals follow
            total_text = f"{count:,}+"
        if self.filter_text:  # the count follows the filter
            needle = visible_line(self.filter_text, 40)
            if self.matches is not None:  # the store's count, over every mailbox
                matched = self.match_count if self.match_count is not None else len(self.matches)
            else:
                matched = sum(1 for summary in summaries if self._matches(summary))
            if self.more and self.matches is None:  # the store is asked after a pause
                found = f"searching {total_text} mailboxes for “{needle}”…"
            elif matched:
                found = f"{matched:,} of {total_text} mailboxes match “{needle}”"
            else:
                found = f"no mailbox matches “{needle}” (of {total_text}) · escape clears"
            words = found
        else:
            words = (
                f"{total_text} mailbox{'es' if count != 1 else ''} · "
                f"{unread:,}{'+' if total_text[-1] == '+' else ''} unread"
            )
        good_at = self._good_at or self.clock().strftime("%H:%M:%S")
        status = Content.assemble(state, Content.styled(f" {good_at} · {words}", "$foreground 65%"))
        if stale:
            status += Content("\n") + Content.styled(visible_line(stale, 300), "$error")
        return status

    def show_error(self, reason: str) -> None:
        """Stale: the time and counts of the last good read, and why this one failed."""
        self._stale_reason = reason
        if not self.summaries:
            self.set_status(
                Content.assemble(
                    Content.styled("● Stale", "bold $error"),
                    " ",
                    Content.styled(visible_line(reason, 300), "$error"),
                )
            )
            return
        self.set_status(self._status(self.summaries))

    def show(self, summaries: list[MailboxSummary], status: Content) -> None:
        cards = self.query_one("#cards", OptionList)
        highlighted = cards.highlighted_option.id if cards.highlighted_option else None
        self.summaries = summaries
        width = max(20, (self.size.width or 80) - 5)  # padding and a scrollbar
        self._width = width
        shown = (
            self.matches if self.matches is not None else [s for s in summaries if self._matches(s)]
        )
        now = self.clock()
        self.ages.forget()
        with self.app.batch_update():
            cards.clear_options()
            cards.add_options([Option(self._card(s, width, now), id=s.id) for s in shown])
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

    def _card(self, summary: MailboxSummary, width: int, now: datetime) -> Content:
        stamp = summary.latest_message_at
        age = self.ages.shown(summary.id, stamp, now) if stamp else None
        return card(summary, width, self.problems.get(summary.id), now, age=age)

    def tick_ages(self) -> None:
        """Redraw the cards whose age reads differently now (nothing is read)."""
        shown = self.matches if self.matches is not None else self.summaries
        if not shown or not self._width:
            return
        now = self.clock()
        by_id = {s.id: s for s in shown if s.latest_message_at}
        stale = self.ages.changed({key: s.latest_message_at or "" for key, s in by_id.items()}, now)
        if stale:
            cards = self.query_one("#cards", OptionList)
            with self.app.batch_update():
                for key in stale:
                    cards.replace_option_prompt(key, self._card(by_id[key], self._width, now))

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
