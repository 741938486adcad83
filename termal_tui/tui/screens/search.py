"""``/`` in a tab: substring search over the mailbox's bodies and topics, newest first.

The scan runs in bounded keyset steps (20,000 rows each, one short read snapshot per
step) in a worker: results stream in with a progress line, a new query or escape cancels
the old scan, and at most MAX_RESULTS are kept. Enter jumps to the row. Each step is a
typed :class:`SearchProgress`; a failed step is a :class:`ReadFailed`, shown as one
"search failed" status line. Reads go through the one live source; when another file
is opened at the path, the scan of the old one is dropped and the query searched again
in the new file (what the old file held is not listed as the new one's).
"""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Final

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from termal_tui.core.models import MailboxMessage
from termal_tui.core.sanitize import visible, visible_line
from termal_tui.core.vocabulary import counted, relative_age
from termal_tui.store.reader import MailboxReader
from termal_tui.tui.cells import cap_cells, cells, fit
from termal_tui.tui.messages import (
    LiveChanged,
    ReadFailed,
    SearchProgress,
    WorkerFailures,
    follow_live,
)
from termal_tui.tui.screens.mounting import popped_before_mount
from termal_tui.tui.widgets.footer import FittingFooter
from termal_tui.views.live import LiveSource, Subscription
from termal_tui.views.presentation import row_title

MAX_RESULTS: Final = 500
SCAN_STEP: Final = 20_000
SNIPPET_CHARS: Final = 100


def snippet(text: str, needle: str, room: int = SNIPPET_CHARS) -> tuple[str, int, int]:
    """One line of ``text`` in at most ``room`` cells around the first match of
    ``needle`` (case-insensitive), with ``…`` where it is cut, and where the match lies
    in it, in characters ((-1, -1) if nowhere)."""
    flat = visible_line(visible(text))
    at = flat.lower().find(needle.lower()) if needle else -1
    if at < 0:
        return cap_cells(flat, room), -1, -1
    if cells(flat) <= room:
        return flat, at, at + len(needle)
    inner = room - 2  # room for an ellipsis each side
    start, before = at, 0  # a third of the line before the match, in cells
    while start > 0 and before + cells(flat[start - 1]) <= inner // 3:
        start -= 1
        before += cells(flat[start])
    end = start
    while end < len(flat) and cells(flat[start : end + 1]) <= inner:
        end += 1
    while start > 0 and cells(flat[start - 1 : end]) <= inner:  # the end reached: more before
        start -= 1
    head = "…" if start > 0 else ""
    tail = "…" if end < len(flat) else ""
    shown = head + flat[start:end] + tail
    offset = len(head) + at - start
    return shown, offset, min(len(shown) - len(tail), offset + len(needle))


class QueryInput(Input):
    """The query box: down goes to the results, and the footer says so (the input's
    own hidden binding for down would hide the screen's)."""

    BINDINGS = [Binding("down", "screen.to_results", "Results")]


class _Results(OptionList):
    """The results list: tells its screen when its own size changed, once its layout is
    done (the screen's resize comes before the list has its new width)."""

    def on_resize(self) -> None:
        screen = self.screen
        if isinstance(screen, SearchScreen):
            screen.results_resized()


class SearchScreen(WorkerFailures, ModalScreen[int | None]):
    DEFAULT_CSS = """
    SearchScreen { align: center top; }
    SearchScreen > Vertical {
        width: 100%; height: 90%; border: round $accent; background: $surface;
    }
    SearchScreen #search-status { height: auto; max-height: 3; padding: 0 1; }
    SearchScreen #results { height: 1fr; border: none; }
    """
    # Its own footer: the tab's keys do nothing here.
    BINDINGS = [
        Binding("escape", "close", "Close", id="search-close"),
        Binding("down", "to_results", "Results", show=False),
    ]

    def __init__(
        self,
        source: LiveSource,
        mailbox_id: str,
        session_id: str | None,
        latest: int,
        *,
        title: str = "",
        now: datetime | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self._generation = source.generation
        self._subscription: Subscription | None = None
        self.mailbox_title = visible_line(title, 60)
        self.now = now
        self._needle = ""
        self._to_results = False  # enter was pressed: results get the keys when in
        self.mailbox_id = mailbox_id
        self.session_id = session_id
        self.latest = max(1, latest)
        self.matches: list[MailboxMessage] = []
        self.done = False
        self.failed = False
        self._scan_number = 0  # results of a superseded scan are dropped
        self._drawn_room = 0  # the width the results were drawn for

    def compose(self) -> ComposeResult:
        with Vertical():
            yield QueryInput(
                placeholder="search bodies and topics (enter: search, then ↓ to the results)",
                id="query",
            )
            yield Static(Content(""), id="search-status")
            yield _Results(id="results")
        yield FittingFooter()

    def on_mount(self) -> None:
        if popped_before_mount(self):
            return
        self._subscription = follow_live(self, self.source)

    def on_unmount(self) -> None:
        if self._subscription is not None:
            self._subscription.close()

    @on(LiveChanged)
    def _live_changed(self, message: LiveChanged) -> None:
        """Another file at the path: the results were the old file's; search again."""
        message.stop()
        event = message.event
        if event.kind != "opened" or event.status.generation == self._generation:
            return
        self._generation = event.status.generation
        if self._needle:
            self._start(self._needle)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "to_results":  # down in the query box; the list moves itself
            return self.focused is self.query_one("#query", Input) and bool(self.matches)
        return True

    def action_to_results(self) -> None:
        results = self.query_one("#results", OptionList)
        results.focus()
        if results.highlighted is None and results.option_count:
            results.highlighted = 0

    def action_close(self) -> None:
        self.workers.cancel_all()
        self.dismiss(None)

    @on(Input.Submitted, "#query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        needle = event.value.strip()
        if needle and needle == self._needle and self.matches:
            self.action_to_results()  # the same query again: go to what it found
            return
        if needle:
            self._to_results = True
            self._start(needle)

    def _start(self, needle: str) -> None:
        """A new scan from the newest row (the old one's late steps are dropped)."""
        if needle:
            self._needle = needle
            self.matches = []
            self.refresh_bindings()  # nothing to go down to until this one finds some
            self.done = False
            self.failed = False
            self._scan_number += 1
            self.query_one("#results", OptionList).clear_options()
            self.scan(needle, self._scan_number)

    @work(exclusive=True, group="search", exit_on_error=False)
    async def scan(self, needle: str, number: int = 0) -> None:
        """Keyset steps, newest first, until the mailbox is searched or enough is found;
        each step posts what it found (a new scan cancels this one)."""
        before: int | None = None
        wanted = MAX_RESULTS
        while True:
            found, before = await self.source.read(partial(self._chunk, needle, before))
            found = found[:wanted]
            wanted -= len(found)
            self.post_message(SearchProgress(number, needle, found, before))
            if before is None or wanted <= 0:
                break

    async def _chunk(
        self, needle: str, before: int | None, reader: MailboxReader
    ) -> tuple[list[MailboxMessage], int | None]:
        return await reader.search_chunk(
            self.mailbox_id, needle, before, SCAN_STEP, session_id=self.session_id
        )

    @on(SearchProgress)
    def _progress(self, event: SearchProgress) -> None:
        event.stop()
        if event.scan != self._scan_number:
            return
        shown = visible_line(event.needle, 60)
        self._add(event.found[: MAX_RESULTS - len(self.matches)])
        if len(self.matches) >= MAX_RESULTS:
            self._status(f"{MAX_RESULTS}+ matches for “{shown}”: showing the newest; refine")
        elif event.before is None:
            self.done = True
            count = len(self.matches)
            self._status(
                f"{counted(count, 'match', 'matches')} for “{shown}” · whole mailbox searched"
                if count
                else f"No message in {self.mailbox_title or 'this mailbox'} contains “{shown}”."
            )
        else:
            scanned = max(0, self.latest - event.before + 1)
            found = f"{len(self.matches):,} found"
            room = max(20, self.size.width - 2)
            for text in (  # the first that fits on the one line: none is cut
                f"searching “{shown}”… {found} · scanned {scanned:,} of {self.latest:,} "
                f"(down to #{event.before:,}) · escape cancels",
                f"searching “{shown}”… {found} · scanned {scanned:,} of {self.latest:,} "
                "· escape cancels",
                f"searching… {found} · {scanned:,} of {self.latest:,} · escape cancels",
                f"searching… {found} · escape cancels",
            ):
                if cells(text) <= room:
                    break
            self._status(text)

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        """The one failed state: what was found so far stays listed."""
        event.stop()
        self.failed = True
        count = len(self.matches)
        kept = f" · {count:,} found before it failed" if count else ""
        self.query_one("#search-status", Static).update(
            Content.assemble(
                Content.styled("● Search failed", "bold $termal-error"),
                " ",
                Content.styled(visible_line(event.error, 200) + kept, "$termal-error"),
            )
        )

    def _status(self, text: str) -> None:
        self.query_one("#search-status", Static).update(Content(text))

    def _add(self, found: list[MailboxMessage]) -> None:
        if not found:
            return
        results = self.query_one("#results", OptionList)
        start = len(self.matches)
        self.matches.extend(found)
        self._drawn_room = self._room()
        results.add_options(
            Option(self._result(m), id=f"result-{start + offset}") for offset, m in enumerate(found)
        )
        if start == 0:
            results.highlighted = 0
            self.refresh_bindings()  # ↓ Results is offered from the query box now
            if self._to_results:
                self._to_results = False
                results.focus()

    def _result(self, message: MailboxMessage) -> Content:
        """``#1,234  sender → target  3 min ago · A ⇄ B`` / title / a snippet of the match."""
        when = (
            relative_age(message.created_at, self.now)
            if self.now is not None
            else visible_line(message.created_at, 40)
        )
        # The mailbox last: the same on every row, it is what a narrow line gives up.
        where = f"  · {self.mailbox_title}" if self.mailbox_title else ""
        room = self._room()
        head = Content.assemble(
            Content.styled(f"#{message.sequence:,}  ", "bold"),
            Content(cap_cells(visible_line(f"{message.sender_name} → {message.target_name}"), 40)),
            Content.styled(f"  {when}", "$termal-muted"),
            "  ",
            Content.styled(cap_cells(visible_line(row_title(message)), 80), "bold"),
            Content.styled(where, "$termal-muted"),
        )
        head = fit(head, room)  # one line, cut with an ellipsis (never wrapped)
        searched = f"{message.topic} — {message.body}" if message.topic else message.body
        text, start, end = snippet(searched, self._needle, max(10, room - 3))
        line = Content("   " + text)
        if start >= 0:
            line = line.stylize("bold reverse", start + 3, end + 3)
        return Content("\n").join([head, line])

    def _room(self) -> int:
        """Cells a result line may take: the list less its padding and scrollbar."""
        results = self.query_one("#results", OptionList)
        width = results.scrollable_content_region.width or max(20, self.size.width - 4)
        width -= results.get_component_styles("option-list--option").padding.width
        if not results.show_vertical_scrollbar:  # it comes with the results
            width -= results.styles.scrollbar_size_vertical
        return max(20, width)

    def on_resize(self) -> None:
        """Results follow the width (each stays a title line and a snippet line)."""
        self.call_after_refresh(self._rewrap)

    def results_resized(self) -> None:
        """The list's own size changed (its layout is done: its region is the new one)."""
        self._rewrap()

    def _rewrap(self) -> None:
        results = self.query_one("#results", OptionList)
        room = self._room()
        if not self.matches or room == self._drawn_room:
            return
        self._drawn_room = room
        highlighted = results.highlighted
        results.clear_options()
        results.add_options(
            Option(self._result(m), id=f"result-{index}") for index, m in enumerate(self.matches)
        )
        results.highlighted = highlighted

    @on(OptionList.OptionSelected, "#results")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.workers.cancel_all()
        self.dismiss(self.matches[event.option_index].sequence)
