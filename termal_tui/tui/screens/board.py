"""The board view: TermAl's coordination board, read-only. Per project its name,
generation and live/tombstoned counts; per key its revision, ``updatedAtGeneration``,
author, ``stateStamp``, age and value (pretty JSON, every character visible, long
values cut); enter shows a key's whole value and its last revisions.

Live by the scope generations: a tick reads them (one statement on the scopes table)
and nothing else while they are unchanged; a moved generation re-reads the project
list, and the shown project's keys only when its own generation moved. The timer runs
only while the screen is the one shown; an idle tick redraws only the ages that now
read differently. The first rows are built before the first paint and the rest in
chunks after it (a project holds up to 512 keys). Workers post typed messages; a failed read is
a :class:`ReadFailed`, shown as "Stale" while the last rows stay listed. The screen
opens its own read-only board reader (it never loads the writer).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.data_table import ColumnKey
from textual.widgets.option_list import Option

from termal_tui.board_view import (
    PREVIEW_LINES,
    age_text,
    author_text,
    cut_value,
    head_line,
    project_names,
    scope_counts,
    scope_title,
    value_text,
)
from termal_tui.sanitize import cap, visible_line
from termal_tui.store.board.reader import BoardReader, open_board_reader
from termal_tui.store.board.records import BoardHead, BoardScope
from termal_tui.tui.messages import ReadFailed, WorkerFailures
from termal_tui.tui.widgets.footer import FittingFooter
from termal_tui.tui.widgets.mailbox_view import ThreadHeader
from termal_tui.vocabulary import absolute_time, counted

FIRST_ROWS: Final = 40  # rows built before the first paint (more than a screen holds)
CHUNK_ROWS: Final = 64  # then this many per frame, so keys never wait on 512 rows
READER_BUSY_TIMEOUT_MS: Final = 250  # as the app's reader: Stale, then the next tick
MUTED: Final = "$foreground 65%"

# ------------------------------------------------------------- typed results


@dataclass
class BoardLoaded(Message):
    """A pass that found generations moved (or the first one): the projects, their
    names, and the shown project's heads when its generation moved (else None)."""

    generations: dict[str, int]
    scopes: list[BoardScope]
    names: dict[str, str]
    scope_id: str | None
    entries: list[BoardHead] | None


@dataclass
class BoardUnchanged(Message):
    """A tick that read the generations and found nothing moved."""


@dataclass
class ScopeEntries(Message):
    scope_id: str
    generation: int
    entries: list[BoardHead]


@dataclass
class KeyLoaded(Message):
    generation: int
    head: BoardHead | None  # None: the key is gone (its scope was deleted)
    history: list[BoardHead]
    opened: int = 0  # which file it was read from (BoardKeyScreen counts reopens)


# -------------------------------------------------------------------- header


class BoardHeader(Widget):
    """``● Live 12:00:00 · 3 projects · coordination.sqlite``: the tabs' states."""

    # One line while live; a Stale reason gets lines of its own below (never cut).
    DEFAULT_CSS = "BoardHeader { height: auto; max-height: 4; padding: 0 1; background: $panel; }"

    state: reactive[str] = reactive("loading")
    refreshed: reactive[str] = reactive("")
    detail: reactive[str] = reactive("")
    error: reactive[str] = reactive("", layout=True)  # a reason takes lines of its own

    def show_stale(self, reason: str) -> None:
        """A read failed: Stale, the reason on its own lines (the rows stay)."""
        self.state = "stale"
        self.error = reason

    def show_live(self, snapshot: bool, interval: float, moment: datetime) -> None:
        """A read succeeded: Live (or Paused, Snapshot) at ``moment``, no reason."""
        self.state = header_state(snapshot, interval)
        self.error = ""
        self.refreshed = moment.strftime("%H:%M:%S")

    def render(self) -> Content:
        label, style = ThreadHeader.STATES[self.state]
        parts: list[Content | str] = [Content.styled(label, style)]
        if self.refreshed:
            parts.append(Content.styled(f" {self.refreshed}", MUTED))
        if self.detail:
            parts.append(Content.styled(f" · {self.detail}", MUTED))
        head = Content.assemble(*parts)
        if not self.error:
            return head
        return Content("\n").join([head, Content.styled(visible_line(self.error, 300), "$error")])


def header_state(snapshot: bool, interval: float) -> str:
    if snapshot:
        return "snapshot"
    return "paused" if interval <= 0 else "live"


# ----------------------------------------------------------------------- rows


def scope_row(scope: BoardScope, names: dict[str, str], width: int) -> Content:
    """One line: the project's name (or id), its counts, and its id when it fits."""
    counts = f"  {scope_counts(scope)}"
    # One line at any width: a long name (or a bare id) gives way to its counts.
    title = cap(scope_title(scope, names), max(12, width - len(counts)))
    counts = cap(counts, max(0, width - len(title)))
    parts = [Content.styled(title, "bold"), Content.styled(counts, MUTED)]
    scope_id = f"  {visible_line(scope.scope_id, 60)}"
    if scope.scope_id in names and len(title) + len(counts) + len(scope_id) <= width:
        parts.append(Content.styled(scope_id, "$foreground 45%"))
    return Content.assemble(*parts)


def key_row(head: BoardHead, now: datetime, width: int) -> Content:
    """Two or more lines: the key and its facts, then the value cut to a few lines."""
    key = visible_line(head.key, max(20, width // 2))
    facts = head_line(head, now, max(0, width - len(key) - 2 - (12 if head.deleted else 0)))
    if head.deleted:  # the first line never wraps: the facts end in … when cut
        mark = f"✕ {key}"
        return Content.assemble(
            Content.styled(mark, "$text-muted strike"),
            Content.styled(cap(f"  deleted · {facts}", max(0, width - len(mark))), "$text-muted"),
        )
    first = Content.assemble(
        Content.styled(key, "bold"),
        Content.styled(cap(f"  {facts}", max(0, width - len(key))), MUTED),
    )
    cut = cut_value(value_text(head), PREVIEW_LINES, max(10, width - 2))
    lines = [first, *(Content("  " + line) for line in cut.text.split("\n"))]
    if cut.hidden_lines or cut.hidden_chars:
        noun = "line" if cut.hidden_lines == 1 else "lines"
        more = f"  … {cut.hidden_lines:,} more {noun}" if cut.hidden_lines else "  … cut"
        lines.append(Content.styled(f"{more} · enter shows the whole value", MUTED))
    return Content("\n").join(lines)


class KeyList(OptionList):
    """A project's keys; enter opens the whole value and the history."""

    BINDINGS = [Binding("enter", "select", "Value & history")]


class ScopeList(OptionList):
    """The projects; choosing one shows its keys."""

    BINDINGS = [Binding("enter", "select", "Keys")]


# ---------------------------------------------------------------------- screen


class BoardScreen(WorkerFailures, Screen[None]):
    """The coordination board of one database, read-only and live."""

    AUTO_FOCUS = "#keys"

    DEFAULT_CSS = """
    BoardScreen #scopes { height: auto; max-height: 7; border: none; }
    BoardScreen #scopes > .option-list--option { padding: 0 1; }
    BoardScreen #keys-status { height: 1; padding: 0 1; background: $panel; }
    BoardScreen #keys { height: 1fr; border: none; }
    BoardScreen #keys > .option-list--option { padding: 0 1; }
    BoardScreen #board-empty { padding: 1 2; display: none; }
    BoardScreen.-empty #board-empty { display: block; }
    BoardScreen.-empty #scopes, BoardScreen.-empty #keys, BoardScreen.-empty #keys-status {
        display: none;
    }
    """
    BINDINGS = [
        Binding("escape,b", "dismiss(None)", "Back", id="board-back"),
        Binding("t", "toggle_tombstones", "Tombstones", id="board-tombstones"),
        Binding("r", "refresh", "Refresh", id="board-refresh"),
        Binding("tab", "switch_list", "Projects/keys"),
    ]

    def __init__(
        self,
        db_path: Path,
        *,
        interval: float = 0.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__()
        self.db_path = db_path
        self.interval = interval
        self.clock = clock or (lambda: datetime.now().astimezone())
        self.reader: BoardReader | None = None
        self._stack = contextlib.AsyncExitStack()
        self._opening = asyncio.Lock()  # the board and its key screen share one reader
        self._timer: Timer | None = None
        self.polling = False
        self.show_tombstones = False
        self.generations: dict[str, int] | None = None
        self.scopes: list[BoardScope] = []
        self.names: dict[str, str] = {}
        self.scope_id: str | None = None
        self.heads: list[BoardHead] = []  # the shown project's heads, tombstones too
        self.heads_generation = -1
        self.shown: list[BoardHead] = []  # what the key list shows, in its order
        self._ages: list[str] = []  # the age each shown row was drawn with
        self._fill = 0  # numbers each rebuild of the key list
        self._highlight_at: int | None = None  # a row to highlight once it is added
        self._width = 0

    def compose(self) -> ComposeResult:
        with Vertical():
            yield BoardHeader()
            yield ScopeList(id="scopes")
            yield Static(Content(""), id="keys-status")
            yield KeyList(id="keys")
            yield Static(
                Content(
                    "No coordination board yet.\n\nNo agent has written a board key in this "
                    "database. When one does (termal_board_set over MCP, or termal-tui board "
                    "set), its project and keys appear here."
                ),
                id="board-empty",
            )
        yield FittingFooter()

    def on_mount(self) -> None:
        self.title = "termal-tui (read-only) — coordination board"
        header = self.query_one(BoardHeader)
        header.detail = visible_line(self.db_path.name, 60)
        if self.interval > 0:
            self._timer = self.set_interval(self.interval, self.poll, pause=True)
        self.load()

    async def on_unmount(self) -> None:
        await self._stack.aclose()

    def on_screen_resume(self) -> None:
        """Shown again (the key's screen closed): ticks resume, and a poll runs at once."""
        if self._timer is not None:
            self._timer.resume()
            if self.generations is not None:
                self.poll()

    def on_screen_suspend(self) -> None:
        if self._timer is not None:
            self._timer.pause()

    # ------------------------------------------------------------ actions

    def action_refresh(self) -> None:
        self.load(force=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_tombstones":  # nothing to show or hide: not offered
            return self.show_tombstones or any(head.deleted for head in self.heads)
        return True

    def action_toggle_tombstones(self) -> None:
        self.show_tombstones = not self.show_tombstones
        self._show_keys()

    def action_switch_list(self) -> None:
        keys, scopes = self.query_one("#keys", KeyList), self.query_one("#scopes", ScopeList)
        (scopes if keys.has_focus else keys).focus()

    def poll(self) -> None:
        if not self.polling:
            self.load()

    # ------------------------------------------------------------ workers

    async def _open(self) -> BoardReader:
        async with self._opening:
            if self.reader is None:
                self.reader = await self._stack.enter_async_context(
                    open_board_reader(self.db_path, busy_timeout_ms=READER_BUSY_TIMEOUT_MS)
                )
                if self.reader.snapshot is not None and self._timer is not None:
                    self._timer.stop()  # an immutable snapshot has no changes to follow
                    self._timer = None
            return self.reader

    def reopen(self, _mailboxes: object = None) -> None:
        """Another file is at the path (the App opened it for the mailboxes): the board
        is read from it too, from scratch (its projects and keys are not the old ones)."""
        self._reopen()

    @work(group="board-reopen", exclusive=True, exit_on_error=False)
    async def _reopen(self) -> None:
        async with self._opening:
            old, self._stack, self.reader = self._stack, contextlib.AsyncExitStack(), None
            await old.aclose()  # reads still running on it fail on their own
        self.generations = None
        self.heads_generation = -1
        self.polling = False
        self.load(force=True)

    @work(group="board", exclusive=False, exit_on_error=False)
    async def load(self, force: bool = False) -> None:
        """One tick: the generations; the rest only if they moved (or ``force``)."""
        if self.polling:
            return
        self.polling = True
        try:
            reader = await self._open()
            generations = await reader.generations()
            if generations == self.generations and not force:
                self.post_message(BoardUnchanged())
                return
            scopes = await reader.scopes()
            names = self.names
            if self.generations is None or set(generations) != set(self.generations) or force:
                names = await asyncio.to_thread(project_names, self.db_path)
            scope_id = self.scope_id
            if scope_id not in generations:
                # Two reads: a project committed between them is in the list but has no
                # generation read yet; the next tick shows it.
                scope_id = next((s.scope_id for s in scopes if s.scope_id in generations), None)
            entries = None
            if scope_id is not None and (
                force or scope_id != self.scope_id or generations[scope_id] != self.heads_generation
            ):
                entries = await reader.entries(scope_id, include_deleted=True)
        finally:
            self.polling = False
        self.post_message(BoardLoaded(generations, scopes, names, scope_id, entries))

    @work(group="board-scope", exclusive=True, exit_on_error=False)
    async def load_scope(self, scope_id: str) -> None:
        """Another project chosen: its heads (tombstones too; the toggle only filters)."""
        reader = await self._open()
        generation = await reader.generation(scope_id)
        entries = await reader.entries(scope_id, include_deleted=True)
        self.post_message(ScopeEntries(scope_id, generation, entries))

    # ------------------------------------------------------------ results

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        event.stop()
        self.query_one(BoardHeader).show_stale(event.error)

    @on(BoardUnchanged)
    def _unchanged(self, event: BoardUnchanged) -> None:
        """Nothing moved: only the ages that now read differently are redrawn."""
        event.stop()
        self._mark_live()
        now = self.clock()
        keys = self.query_one("#keys", KeyList)
        if keys.option_count != len(self.shown):
            return
        for index, head in enumerate(self.shown):
            age = age_text(head.updated_at, now)
            if age != self._ages[index]:
                self._ages[index] = age
                keys.replace_option_prompt_at_index(index, key_row(head, now, self._width))

    @on(BoardLoaded)
    def _loaded(self, event: BoardLoaded) -> None:
        event.stop()
        self.generations = event.generations
        self.names = event.names
        self._mark_live()
        self._show_scopes(event.scopes, event.scope_id)
        if event.scope_id is None:
            self.heads, self.heads_generation, self.scope_id = [], -1, None
            self._show_keys()
        elif event.entries is not None:
            self._set_heads(event.scope_id, event.generations.get(event.scope_id, 0), event.entries)

    @on(ScopeEntries)
    def _scope_entries(self, event: ScopeEntries) -> None:
        event.stop()
        if event.scope_id == self.scope_id:
            self._set_heads(event.scope_id, event.generation, event.entries)

    @on(OptionList.OptionHighlighted, "#scopes")
    def _scope_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        index = event.option_index
        if not 0 <= index < len(self.scopes):
            return
        scope_id = self.scopes[index].scope_id
        if scope_id != self.scope_id:
            self.scope_id = scope_id
            self.heads, self.heads_generation = [], -1
            self._show_keys(loading=True)
            self.load_scope(scope_id)

    @on(OptionList.OptionSelected, "#scopes")
    def _scope_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.query_one("#keys", KeyList).focus()

    @on(OptionList.OptionSelected, "#keys")
    def _key_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.reader is None or self.scope_id is None:
            return
        if not 0 <= event.option_index < len(self.shown):
            return
        head = self.shown[event.option_index]
        scope = next((s for s in self.scopes if s.scope_id == self.scope_id), None)
        title = scope_title(scope, self.names) if scope else visible_line(self.scope_id, 60)
        self.app.push_screen(
            BoardKeyScreen(
                self._open,
                self.scope_id,
                title,
                head,
                interval=self.interval if self._timer is not None else 0.0,
                snapshot=self.reader.snapshot is not None,
                clock=self.clock,
            )
        )

    def on_resize(self) -> None:
        if self.heads and self._row_width() != self._width:
            self._show_keys()

    # ---------------------------------------------------------- rendering

    def _mark_live(self) -> None:
        header = self.query_one(BoardHeader)
        snapshot = self.reader is not None and self.reader.snapshot is not None
        header.show_live(snapshot, self.interval, self.clock())
        projects = counted(len(self.generations or {}), "project")
        header.detail = f"{projects} · {visible_line(self.db_path.name, 60)}"

    def _show_scopes(self, scopes: list[BoardScope], selected: str | None) -> None:
        changed = scopes != self.scopes
        self.scopes = scopes
        self.scope_id = selected
        self.set_class(not scopes, "-empty")
        if not changed and self.query_one("#scopes", ScopeList).option_count:
            return
        listing = self.query_one("#scopes", ScopeList)
        width = max(20, (listing.size.width or self.size.width or 80) - 3)
        options = [
            Option(scope_row(s, self.names, width), id=f"scope-{i}") for i, s in enumerate(scopes)
        ]
        with self.app.batch_update(), self.prevent(OptionList.OptionHighlighted):
            listing.set_options(options)
            ids = [s.scope_id for s in scopes]
            if selected in ids:
                listing.highlighted = ids.index(selected)

    def _set_heads(self, scope_id: str, generation: int, heads: list[BoardHead]) -> None:
        self.scope_id = scope_id
        had = any(head.deleted for head in self.heads)
        self.heads = heads
        if had != any(head.deleted for head in heads):
            self.refresh_bindings()  # `t` is offered only with a tombstone to show
        self.heads_generation = generation
        self._show_keys()

    def _row_width(self) -> int:
        width = self.query_one("#keys", KeyList).size.width or self.size.width or 80
        return max(20, width - 5)

    def _show_keys(self, loading: bool = False) -> None:
        """The shown project's keys: rows whose head changed are replaced in place; the
        list is rebuilt only when keys come or go (or on the tombstone toggle)."""
        keys = self.query_one("#keys", KeyList)
        shown = [h for h in self.heads if self.show_tombstones or not h.deleted]
        width = self._row_width()
        now = self.clock()
        status = self.query_one("#keys-status", Static)
        scope = next((s for s in self.scopes if s.scope_id == self.scope_id), None)
        if scope is None:
            status.update(Content(""))
        else:
            tombstones = sum(1 for h in self.heads if h.deleted)
            shown_word = "shown" if self.show_tombstones else "hidden"
            toggle = f" · {counted(tombstones, 'tombstone')} {shown_word} (t)" if tombstones else ""
            reading = " · reading…" if loading else ""
            live = len(self.heads) - tombstones
            status.update(
                Content.assemble(
                    # The name takes what the counts leave of the line.
                    Content.styled(
                        cap(scope_title(scope, self.names), max(24, (width or 80) - 44)), "bold"
                    ),
                    Content.styled(f" · {counted(live, 'key')}{toggle}{reading}", MUTED),
                )
            )
        same_keys = width == self._width and [h.key for h in shown] == [h.key for h in self.shown]
        with self.app.batch_update():
            if same_keys and keys.option_count == len(shown):
                for index, (old, new) in enumerate(zip(self.shown, shown, strict=True)):
                    if old != new:
                        keys.replace_option_prompt_at_index(index, key_row(new, now, width))
            else:
                highlighted = keys.highlighted
                previous = (
                    self.shown[highlighted].key
                    if highlighted is not None and highlighted < len(self.shown)
                    else None
                )
                names = [h.key for h in shown]
                self._highlight_at = names.index(previous) if previous in names else 0
                self._fill += 1
                keys.set_options(self._options(shown, 0, FIRST_ROWS, now, width))
                self._after_rows(keys)
                if len(shown) > FIRST_ROWS:
                    self.call_after_refresh(self._add_rows, self._fill, FIRST_ROWS)
        self.shown = shown
        self._ages = [age_text(h.updated_at, now) for h in shown]
        self._width = width

    @property
    def filled(self) -> bool:
        """Every shown key is in the list (rows past the first screen come in chunks)."""
        return self.query_one("#keys", KeyList).option_count == len(self.shown)

    @staticmethod
    def _options(
        heads: list[BoardHead], start: int, count: int, now: datetime, width: int
    ) -> list[Option]:
        return [
            Option(key_row(head, now, width), id=f"key-{start + offset}")
            for offset, head in enumerate(heads[start : start + count])
        ]

    def _add_rows(self, fill: int, start: int) -> None:
        """The next chunk of rows after a paint (a superseded rebuild's chunks stop)."""
        if fill != self._fill:
            return
        keys = self.query_one("#keys", KeyList)
        keys.add_options(self._options(self.shown, start, CHUNK_ROWS, self.clock(), self._width))
        self._after_rows(keys)
        if start + CHUNK_ROWS < len(self.shown):
            self.call_after_refresh(self._add_rows, fill, start + CHUNK_ROWS)

    def _after_rows(self, keys: KeyList) -> None:
        """Highlight the row the reader was on, once it is in the list."""
        if self._highlight_at is not None and self._highlight_at < keys.option_count:
            keys.highlighted = self._highlight_at
            self._highlight_at = None


# ----------------------------------------------------------------- key screen


KEY_GONE: Final = (
    "this key is not on the board now (its project was deleted, or the file was replaced)"
)


class BoardKeyScreen(WorkerFailures, Screen[None]):
    """One key: its whole value (of the highlighted revision) and its last revisions.
    Live like the board: a tick reads the scope's generation, the key only if it moved."""

    DEFAULT_CSS = """
    BoardKeyScreen #key-meta { height: auto; padding: 0 1; }
    BoardKeyScreen #key-value-box { height: 1fr; padding: 0 1; border-top: solid $panel; }
    BoardKeyScreen #history { height: auto; max-height: 12; border-top: solid $panel; }
    """
    BINDINGS = [Binding("escape,q", "dismiss(None)", "Back", id="board-key-back")]

    def __init__(
        self,
        reader: Callable[[], Awaitable[BoardReader]],
        scope_id: str,
        scope_name: str,
        head: BoardHead,
        *,
        interval: float = 0.0,
        snapshot: bool = False,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__()
        self.reader = reader  # the board's reader (opened again after a replaced file)
        self.scope_id = scope_id
        self.scope_name = scope_name
        self.head: BoardHead | None = head
        self._key = head.key  # kept when the key is gone (its project deleted, a new file)
        self._opened = 0  # reopens seen (a replaced file)
        self.history: list[BoardHead] = []
        self._age_column: ColumnKey | None = None
        self.interval = interval
        self.snapshot = snapshot
        self.clock = clock or (lambda: datetime.now().astimezone())
        self.generation = -1
        self.reading = False
        self._timer: Timer | None = None

    @property
    def revisions(self) -> list[BoardHead]:
        return ([self.head] if self.head is not None else []) + self.history

    def compose(self) -> ComposeResult:
        yield BoardHeader()
        yield Static(Content(""), id="key-meta")
        with VerticalScroll(id="key-value-box"):
            yield Static(Content(""), id="key-value")
        yield DataTable(id="history", cursor_type="row", zebra_stripes=True)
        yield FittingFooter()

    def on_mount(self) -> None:
        self.title = "termal-tui (read-only) — coordination board key"
        table = self.query_one("#history", DataTable)
        self._age_column = table.add_columns("rev", "gen", "author", "stamp", "age", "value")[4]
        scope = cap(self.scope_name, 24)
        self.query_one(BoardHeader).detail = f"{scope} · {visible_line(self.key, 60)}"
        self._show_head()
        if self.interval > 0 and not self.snapshot:
            self._timer = self.set_interval(self.interval, self.poll, pause=True)
        self.load()
        table.focus()

    @property
    def key(self) -> str:
        return self._key

    def reopen(self, _mailboxes: object = None) -> None:
        """Another file is at the path: this key is read from it (the board's reader is
        opened again), or said to be gone. A read of the old file still running is
        dropped when it answers, and read again."""
        self._opened += 1
        self.generation = -1
        if not self.reading:
            self.load()

    def on_screen_resume(self) -> None:
        if self._timer is not None:
            self._timer.resume()

    def on_screen_suspend(self) -> None:
        if self._timer is not None:
            self._timer.pause()

    def poll(self) -> None:
        if not self.reading:
            self.load()

    @work(group="board-key", exclusive=False, exit_on_error=False)
    async def load(self) -> None:
        if self.reading:
            return
        self.reading = True
        opened = self._opened
        try:
            reader = await self.reader()
            generation = await reader.generation(self.scope_id)
            if generation == self.generation:
                self.post_message(BoardUnchanged())
                return
            key = self.key
            heads = await reader.entries(self.scope_id, include_deleted=True)
            head = next((h for h in heads if h.key == key), None)
            history = await reader.history(self.scope_id, key)
        finally:
            self.reading = False
        self.post_message(KeyLoaded(generation, head, history, opened))

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        event.stop()
        self.query_one(BoardHeader).show_stale(event.error)

    @on(BoardUnchanged)
    def _unchanged(self, event: BoardUnchanged) -> None:
        """Nothing moved: the time and the ages move on (the value stays as shown)."""
        event.stop()
        self._mark_live()
        self._show_meta()
        table = self.query_one("#history", DataTable)
        if self._age_column is None or table.row_count != len(self.revisions):
            return
        now = self.clock()
        for index, head in enumerate(self.revisions):
            age = Text(age_text(head.updated_at, now))  # may be wider ("2 min ago")
            table.update_cell(f"rev-{index}", self._age_column, age, update_width=True)

    @on(KeyLoaded)
    def _loaded(self, event: KeyLoaded) -> None:
        event.stop()
        if event.opened != self._opened:  # read from the file that was replaced
            self.load()
            return
        self.generation = event.generation
        self.head = event.head
        self.history = event.history
        self._mark_live()
        if event.head is None:  # nothing of what it was stays on screen
            self.query_one("#key-value", Static).update(Content(""))
        self._show_head()
        self._show_history()

    @on(DataTable.RowHighlighted, "#history")
    def _revision_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        revisions = self.revisions
        if 0 <= event.cursor_row < len(revisions):
            self._show_value(revisions[event.cursor_row])

    def _mark_live(self) -> None:
        header = self.query_one(BoardHeader)
        header.show_live(self.snapshot, self.interval, self.clock())
        if self.head is None:  # said on every tick while it lasts
            header.error = KEY_GONE

    def _show_head(self) -> None:
        self._show_meta()
        if self.head is not None:
            self._show_value(self.head)

    def _show_meta(self) -> None:
        head = self.head
        meta = self.query_one("#key-meta", Static)
        if head is None:
            meta.update(Content.styled("(no current head)", MUTED))
            return
        state = "deleted (tombstone) · " if head.deleted else ""
        count = len(self.history)
        retained = (
            f"{count:,} earlier revision{'' if count == 1 else 's'} kept"
            if count
            else "no earlier revisions"
        )
        meta.update(
            Content.assemble(
                Content.styled(visible_line(head.key, 100), "bold"),
                Content.styled(f"  {state}{head_line(head, self.clock())}", MUTED),
                Content.styled(
                    f"\nby {author_text(head, 60)} ({visible_line(head.author_session_id, 60)})"
                    f" · {absolute_time(head.updated_at)} · {retained}",
                    MUTED,
                ),
            )
        )

    def _show_value(self, head: BoardHead) -> None:
        label = Content.styled(
            f"revision {head.revision:,} (gen {head.updated_at_generation:,})\n", MUTED
        )
        self.query_one("#key-value", Static).update(label + Content(value_text(head)))

    def _show_history(self) -> None:
        table = self.query_one("#history", DataTable)
        now = self.clock()
        room = max(12, (self.size.width or 80) - 52)  # the value column fits the screen
        table.clear()
        for index, head in enumerate(self.revisions):
            first_line = value_text(head).replace("\n", " ")
            table.add_row(
                Text(f"{head.revision:,}" + (" ●" if index == 0 and self.head else "")),
                Text(f"{head.updated_at_generation:,}"),
                Text(author_text(head, 24)),
                Text(visible_line(head.state_stamp or "", 20)),
                Text(age_text(head.updated_at, now)),
                Text(cap(" ".join(first_line.split()), room)),
                key=f"rev-{index}",
            )
