"""What the mailbox index shows, headless (no textual, no rich): the cards, their pages,
the filter and its matches, the totals, the health markers and the status line.

:class:`IndexModel` subscribes to the one :class:`~termal_tui.views.live.LiveSource`
and decides every read the index makes: the first page when a file is opened, the
pages again when something was committed (behind a tab: not sooner than the last
read's cost allows), the next page when asked, the store's matches for a filter (after a
pause in typing, on the source's clock), the totals of a paged index (counted again after
a commit, spaced out by what a count costs) and the health markers (every
``HEALTH_EVERY_SECONDS``, ``HIDDEN_HEALTH_EVERY`` behind a tab). Its reads run as tasks
of its own; each result is announced to its listeners as an :data:`Update` (the widget
renders, the app retitles the terminal) and nothing is read back out of a widget.

Time is the source's clock: tests drive it (``ManualClock.advance``) and await
:meth:`IndexModel.idle`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from termal_tui.core.models import MailboxSummary
from termal_tui.core.sanitize import visible_line
from termal_tui.core.vocabulary import FINDING_WORDS, counted
from termal_tui.store.errors import StoreError
from termal_tui.views.live import LiveEvent, LiveSource, Superseded

if TYPE_CHECKING:
    from termal_tui.store.health_queries import HealthRows
    from termal_tui.views.findings import Thresholds
    from termal_tui.views.live import Handle

HEALTH_EVERY_SECONDS: Final = 30.0
HIDDEN_HEALTH_EVERY: Final = 300.0  # markers while a tab is shown (the title's stuck count)
HIDDEN_FACTOR: Final = 20.0  # hidden, a read that took t seconds waits 20 t before the next
# Paged, the totals follow a commit, but a count that took t seconds waits 20 t before
# the next (100,000 mailboxes: about 2 s, so every 40 s or so; 1,000: at once).
TOTALS_FACTOR: Final = 20.0
PAGE_CARDS: Final = 100  # a page of cards: several screenfuls at 120x40
MORE_WITHIN: Final = 10  # the next page is read when the highlight is this close to the end
FILTER_PAUSE: Final = 0.25  # seconds of no typing before a paged index asks the store
PROBLEM_WORDS: Final = FINDING_WORDS  # one vocabulary: cards, health view, help

# What changed, for the listeners: the cards (all of them), one more page of cards, the
# store's matches (all, or one more page), the markers, the totals, the status line only.
Update = Literal["cards", "appended", "matches", "matches-appended", "markers", "totals", "status"]


@dataclass(frozen=True)
class StatusLine:
    """``● Live 12:00:00 · 6 mailboxes · 42 unread`` in parts (the widget styles them):
    ``state`` is one of live, paused, snapshot, stale, missing, loading."""

    state: str
    text: str  # after the state label: the time and the counts (empty: none yet)
    reason: str  # Stale/missing: why, on a line of its own


STATE_LABELS: Final = {
    "live": "● Live",
    "paused": "⏸ Paused",
    "snapshot": "◼ Snapshot",
    "stale": "● Stale",
    "missing": "◌ Waiting",
    "loading": "",
}


def empty_reason(session_id: str, still_in: int, left: int) -> str:
    """Why a session's view lists nothing (TermAl's session view: mailboxes the session
    is still in, with a message it may see)."""
    who = visible_line(session_id, 40)
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


class IndexModel:
    """The index's state and decisions, fed by the live source."""

    def __init__(
        self,
        source: LiveSource,
        *,
        session_id: str | None = None,
        thresholds: Thresholds | None = None,
        deferred: bool = False,
    ) -> None:
        self.source = source
        self.clock = source.clock
        self.session_id = session_id
        self.thresholds = thresholds  # None: health.py's defaults
        self.summaries: list[MailboxSummary] = []
        self.loaded = False  # a first page was read (from this file or an earlier one)
        self.more = False  # mailboxes beyond the loaded pages
        self.totals: tuple[int, int] | None = None  # (mailboxes, unread) when paged
        self.empty_reason = ""  # with no cards, in a session's view: why
        self.problems: dict[str, str] = {}  # mailbox id → a word for its worst finding
        self.filter_text = ""
        # A paged index is filtered by the store (every mailbox, not only the pages
        # loaded): the matches, whether more follow, and how many match in all.
        self.matches: list[MailboxSummary] | None = None
        self.matches_more = False
        self.match_count: int | None = None
        self.visible = False  # the index is on screen (else a tab or a screen covers it)
        # The first page waits for release() (a --mailbox tab reads its page first).
        self.deferred = deferred
        self.listeners: list[Callable[[Update], object]] = []
        self.appended: list[MailboxSummary] = []  # the last page added (cards or matches)
        self.error = ""  # the last read's failure that is this view's own (not the file's)
        self._dirty = False  # a commit not read yet (hidden, or deferred)
        self._refreshing = False
        self._again = False  # asked to read while a read ran: once more after it
        self._appending = False
        self._appending_matches = False
        self._marking = False
        self._markers_again = False  # asked for markers while a pass ran: once more after
        self._counting = False
        self._totals_stale = False  # a commit since the last count
        self._health_at = -1e18
        self._health_rows: tuple[object, HealthRows | None] = (None, None)  # (key, rows)
        self._read_at = -1e18  # when the pages were last read, and how long it took
        self._read_took = 0.0
        self._totals_at = -1e18
        self._totals_took = 0.0
        self._generation = 0  # the source generation the pages were read from
        self._filter_timer: Handle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._subscription = source.subscribe(self._on_event)

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self._subscription.close()
        for task in self._tasks:
            task.cancel()
        if self._filter_timer is not None:
            self._filter_timer.cancel()

    async def idle(self) -> None:
        """Every read started so far (and those they start) has finished (tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        async def guarded() -> None:
            try:
                await work()
            except Superseded:
                pass  # read from a file that was replaced meanwhile: "opened" follows
            except StoreError as error:
                self.error = str(error)  # the source is Stale already when it is the file's
                self._emit("status")

        task = asyncio.get_running_loop().create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _emit(self, update: Update) -> None:
        for listener in list(self.listeners):
            listener(update)

    # ------------------------------------------------------------ the source's news

    def _on_event(self, event: LiveEvent) -> None:
        kind = event.kind
        if kind == "opened":
            # Another file (or the first): its markers and totals are not the old ones'.
            self.problems = {}
            self._health_at = -1e18
            self.totals, self._counting, self._totals_at = None, False, -1e18
            self._dirty = True
            if self.matches is not None:
                self.matches, self.match_count, self.matches_more = None, None, False
            self._read_if_due(force=True)
        elif kind == "changed":
            self._dirty = True
            self._totals_stale = self._totals_stale or self.more
            self._read_if_due()
        elif kind == "unchanged":
            if self._dirty:
                self._read_if_due()
            else:
                self._follow_ups()
            self._emit("status")
        else:  # tick, state
            self._emit("status")

    def _read_if_due(self, force: bool = False) -> None:
        """A commit (or a new file) to read: now when shown, not sooner than the last
        read's cost allows behind a tab; never before ``release`` when deferred."""
        if self.deferred:
            return
        if not force and not self.visible and self.loaded:
            spent = self.clock.monotonic() - self._read_at
            if spent < HIDDEN_FACTOR * self._read_took:
                self._emit("status")
                return
        self._spawn(self.refresh)

    def release(self) -> None:
        """Deferred no more: the first page now (a --mailbox tab has read its own)."""
        if self.deferred:
            self.deferred = False
            if self.source.reader is not None:
                self._spawn(self.refresh)

    def set_visible(self, visible: bool) -> None:
        """The index shown (a commit held back behind a tab is read now) or hidden."""
        was, self.visible = self.visible, visible
        if visible and not was and self._dirty and self.source.reader is not None:
            self._read_if_due(force=True)

    def request_refresh(self) -> None:
        """``r``: the pages again now, and the markers, whatever the version says."""
        self._health_at = -1e18
        self._health_rows = (None, None)
        self._dirty = True
        self.source.request_check()
        if self.source.reader is not None and not self.deferred:
            self._spawn(self.refresh)

    # ------------------------------------------------------------ reads

    async def refresh(self) -> None:
        """The loaded pages again (the cards drawn at once), then totals and markers."""
        if self._refreshing:
            self._again = True
            return
        self._refreshing = True
        try:
            while True:
                self._again = False
                self._dirty = False
                try:
                    await self._read_pages()
                except Superseded:
                    if not self._again:  # the new file's "opened" asks again: it did
                        raise
                    continue  # read from the replaced file: the new one's pages now
                if not self._again:
                    break
        finally:
            self._refreshing = False
        self._follow_ups()

    async def _read_pages(self) -> None:
        limit = max(PAGE_CARDS, len(self.summaries))  # the pages loaded so far, again
        session_id = self.session_id
        started = self.clock.monotonic()
        generation = self.source.generation
        summaries = await self.source.read(
            lambda reader: reader.list_mailboxes(session_id=session_id, limit=limit)
        )
        self._read_at = self.clock.monotonic()
        self._read_took = self._read_at - started
        reason = ""
        if not summaries and session_id is not None:
            still_in, left = await self.source.read(
                lambda reader: reader.session_presence(session_id)
            )
            reason = empty_reason(session_id, still_in, left)
        more = len(summaries) >= limit
        self.error = ""
        self.summaries, self.more, self.empty_reason = summaries, more, reason
        self.loaded = True
        self._generation = generation
        if not more:
            self.totals = None  # everything is loaded: counted from the cards
        else:
            self._totals_stale = True  # counted again now, or later when due
        self._emit("cards")
        if self.filter_text and (self.matches is not None or more):
            # Something changed (or the index just outgrew its first page): the store's
            # matches again, over every mailbox.
            self._spawn(self.load_matches)

    def _follow_ups(self) -> None:
        """After a read or an idle check: the markers when due, the totals when stale
        and due (both after the cards, never before the first screen)."""
        if not self.loaded or self.deferred or self.source.reader is None:
            return
        if self.more and self._totals_stale and self._totals_due():
            self._spawn(self.load_totals)
        if self._markers_due():
            self._spawn(self.load_markers)

    def _markers_due(self) -> bool:
        if not self.source.following and self._health_at > -1e18:
            return False  # paused: markers with each read asked for (r), not on time
        every = HEALTH_EVERY_SECONDS if self.visible else HIDDEN_HEALTH_EVERY
        return self.clock.monotonic() - self._health_at >= every

    def _totals_due(self) -> bool:
        """Counted never (the index just outgrew a page: ``100+``), or long enough ago for
        what the last count cost."""
        return (
            self.totals is None
            or self.clock.monotonic() - self._totals_at >= TOTALS_FACTOR * self._totals_took
        )

    def wants_more(self, highlighted: int, count: int) -> bool:
        """The highlight (or the scroll) reached within ``MORE_WITHIN`` of the end."""
        return highlighted >= count - MORE_WITHIN

    def more_cards(self) -> None:
        """The next page of what is shown: the store's matches, or the index."""
        if self.matches is not None:
            if self.matches_more:
                self._spawn(self.more_matches)
        elif self.more:
            self._spawn(self.load_more)

    async def load_more(self) -> None:
        """The next page of cards, below the last one loaded."""
        if self._appending or self._refreshing or not self.more:
            return
        last = self.summaries[-1] if self.summaries else None
        after = (last.latest_message_at or "", last.id) if last is not None else None
        session_id = self.session_id
        self._appending = True
        try:
            rows = await self.source.read(
                lambda reader: reader.list_mailboxes(
                    session_id=session_id, limit=PAGE_CARDS, after=after
                )
            )
        finally:
            self._appending = False
        known = {summary.id for summary in self.summaries}
        fresh = [summary for summary in rows if summary.id not in known]
        self.more = len(rows) >= PAGE_CARDS and bool(fresh)
        self.summaries = self.summaries + fresh
        self.appended = fresh
        self._emit("appended")

    async def load_matches(self) -> None:
        """The store's cards matching the filter (as many pages as are shown already, so
        a refresh keeps the place), and how many match in all."""
        needle, session_id = self.filter_text, self.session_id
        if not needle:
            return
        limit = max(PAGE_CARDS, len(self.matches or ()))
        rows = await self.source.read(
            lambda reader: reader.list_mailboxes(
                session_id=session_id, limit=limit, matching=needle
            )
        )
        count = await self.source.read(
            lambda reader: reader.count_matching(needle, session_id=session_id)
        )
        if needle != self.filter_text:
            return  # typed on meanwhile: its own read follows
        self.matches, self.matches_more, self.match_count = rows, len(rows) >= limit, count
        self._emit("matches")
        self._spawn(self.load_markers)  # the matches get their ⚠ markers like the cards

    async def more_matches(self) -> None:
        needle, shown, session_id = self.filter_text, self.matches, self.session_id
        if not needle or not shown or not self.matches_more or self._appending_matches:
            return  # one page at a time: a second read would read the same page
        last = shown[-1]
        self._appending_matches = True
        try:
            rows = await self._read_matches_after(needle, session_id, last)
        finally:
            self._appending_matches = False
        if needle != self.filter_text or self.matches is None:
            return
        known = {summary.id for summary in self.matches}
        fresh = [summary for summary in rows if summary.id not in known]
        self.matches = self.matches + fresh
        self.matches_more = len(rows) >= PAGE_CARDS and bool(fresh)
        self.appended = fresh
        self._emit("matches-appended")

    async def _read_matches_after(
        self, needle: str, session_id: str | None, last: MailboxSummary
    ) -> list[MailboxSummary]:
        return await self.source.read(
            lambda reader: reader.list_mailboxes(
                session_id=session_id,
                limit=PAGE_CARDS,
                after=(last.latest_message_at or "", last.id),
                matching=needle,
            )
        )

    async def load_totals(self) -> None:
        if self._counting:
            return  # one count at a time (it stays stale: a later check counts again)
        self._counting = True
        self._totals_stale = False  # a commit from now on makes it stale again
        generation = self.source.generation
        started = self.clock.monotonic()
        session_id = self.session_id
        try:
            mailboxes, unread = await self.source.read(
                lambda reader: reader.index_totals(session_id=session_id)
            )
        except BaseException:
            self._totals_stale = True  # not counted: the next check tries again
            raise
        finally:
            if generation == self.source.generation:
                self._counting = False
        self._totals_at = self.clock.monotonic()
        self._totals_took = self._totals_at - started
        self.totals = (mailboxes, unread)
        self._emit("totals")

    async def load_markers(self) -> None:
        """The worst finding per mailbox, as a word on its card."""
        if self._marking:
            # A pass runs (perhaps on a file just replaced: it ends Superseded). Once more
            # after it, so a new file's markers come with its cards, not a pass later.
            self._markers_again = True
            return
        from termal_tui.views.findings import health_report

        self._marking = True
        self._markers_again = False
        self._health_at = self.clock.monotonic()
        # Paged: markers for the loaded cards only (memory follows what is on screen).
        only = None
        if self.more or self.matches is not None:
            only = {summary.id for summary in (*self.summaries, *(self.matches or []))}
        now, thresholds = self.clock.now(), self.thresholds
        # Nothing committed since the last pass over the same cards: its rows are still
        # the file's; only the ages move on (a pass over a 1,000,000-message file cost
        # ~0.7 s of CPU every 30 s, idle).
        mark = self.source.change_mark
        key = None if mark is None else (mark, None if only is None else frozenset(only))
        rows = self._health_rows[1] if key is not None and self._health_rows[0] == key else None
        try:
            report = await self.source.read(
                lambda reader: health_report(
                    reader, now=now, thresholds=thresholds, mailbox_ids=only, rows=rows
                )
            )
            if report.rows is not None:
                self._health_rows = (key, report.rows)
        finally:
            self._marking = False
            if self._markers_again:
                self._markers_again = False
                self._spawn(self.load_markers)
        worst: dict[str, str] = {}
        for finding in report.findings:  # ranked: the first per mailbox is worst
            if self.session_id is not None and finding.session_id != self.session_id:
                continue  # a session's view: its own unread rows only, as its counts
            if finding.severity >= 2:
                worst.setdefault(finding.mailbox_id, PROBLEM_WORDS[finding.kind])
        changed = worst != self.problems
        self.problems = worst
        if changed:
            self._emit("markers")

    # ------------------------------------------------------------ the filter

    def matches_filter(self, summary: MailboxSummary) -> bool:
        needle = self.filter_text.casefold()
        return (
            not needle
            or needle in summary.id.casefold()
            or any(
                needle in p.display_name.casefold() or needle in p.session_id.casefold()
                for p in summary.participants
            )
        )

    def set_filter(self, text: str) -> bool:
        """A new filter: the loaded cards are filtered at once; a paged index asks the
        store too, after ``FILTER_PAUSE`` s without typing (on the source's clock).
        Returns whether it changed."""
        text = text.strip()
        if text == self.filter_text:
            return False
        self.filter_text = text
        if self._filter_timer is not None:
            self._filter_timer.cancel()
            self._filter_timer = None
        if not text:
            self.matches, self.match_count, self.matches_more = None, None, False
            return True
        if self.more or self.matches is not None:
            self.matches, self.match_count, self.matches_more = None, None, False
            self._filter_timer = self.clock.call_later(FILTER_PAUSE, self._filter_paused)
        return True

    def _filter_paused(self) -> None:
        self._filter_timer = None
        if self.filter_text and self.source.reader is not None:
            self._spawn(self.load_matches)

    # ------------------------------------------------------------ what is shown

    def shown(self) -> list[MailboxSummary]:
        """The cards on screen: the store's matches, or the loaded cards filtered."""
        if self.matches is not None:
            return self.matches
        return [s for s in self.summaries if self.matches_filter(s)]

    @property
    def unread(self) -> int:
        """Unread rows over every mailbox the index lists (the counted total when paged)."""
        if self.more and self.totals is not None:
            return self.totals[1]
        return sum(summary.unread_count for summary in self.summaries)

    def stuck_pairs(self) -> list[tuple[str, str]]:
        """(mailbox id, problem) for each card the health check marked."""
        return [(mailbox_id, problem) for mailbox_id, problem in self.problems.items() if problem]

    def status(self) -> StatusLine:
        """``● Live 12:00:00 · 6 mailboxes · 42 unread``; Stale (the last read failed):
        the time and counts of the last good read, the reason on its own line. Any
        redraw (a resize, the filter, markers) says the same until a read succeeds."""
        live = self.source.status
        reason = live.reason if live.phase in ("stale", "missing") else self.error
        state = live.phase if live.phase != "opening" else "loading"
        if self.error and state not in ("stale", "missing"):
            state = "stale"
        if not self.loaded:
            if state in ("loading", "live", "paused", "snapshot"):  # open, not read yet
                return StatusLine("loading", "Loading mailboxes…", "")
            return StatusLine(state, "", reason)
        summaries = self.summaries
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
                matched = sum(1 for summary in summaries if self.matches_filter(summary))
            if self.more and self.matches is None:  # the store is asked after a pause
                words = f"searching {total_text} mailboxes for “{needle}”…"
            elif matched:
                words = f"{matched:,} of {total_text} mailboxes match “{needle}”"
            else:
                words = f"no mailbox matches “{needle}” (of {total_text}) · escape clears"
        else:
            words = (
                f"{total_text} mailbox{'es' if count != 1 else ''} · "
                f"{unread:,}{'+' if total_text[-1] == '+' else ''} unread"
            )
        moment = live.good_time(self.clock.now())
        return StatusLine(state, f"{moment} · {words}", reason)


__all__ = [
    "FILTER_PAUSE",
    "HEALTH_EVERY_SECONDS",
    "HIDDEN_FACTOR",
    "HIDDEN_HEALTH_EVERY",
    "MORE_WITHIN",
    "PAGE_CARDS",
    "PROBLEM_WORDS",
    "TOTALS_FACTOR",
    "IndexModel",
    "StatusLine",
    "Update",
    "empty_reason",
]
