"""The board view: TermAl's coordination board, read-only. Per project its name,
generation and live/tombstoned counts; per key its revision, ``updatedAtGeneration``,
author, ``stateStamp``, age and value (pretty JSON, every character visible, long
values cut); enter shows a key's whole value and its last revisions.

The screens render a :class:`~termal_tui.views.board.BoardView` and a
:class:`~termal_tui.views.board.BoardKeyView` (what they show, what a refresh reads)
and own only their keys. They read nothing on a schedule of their own and open no
reader: they subscribe to the app's one live source and read through it. A commit
(``changed``) reads the scope generations, then only what moved; a check that found
nothing new (``unchanged``, ``tick``) redraws only the ages that now read differently
and the time; a replaced file (``opened``) is read from scratch. Events that arrive
while another screen covers one are kept for when it is shown again. The first rows
are built before the first paint and the rest in chunks after it (a project holds up
to 512 keys). A failed read is a :class:`ReadFailed`, shown as "Stale" while the last
rows stay listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.data_table import ColumnKey
from textual.widgets.option_list import Option

from termal_tui.core.sanitize import cap, visible_line
from termal_tui.core.vocabulary import absolute_time
from termal_tui.store.board.records import BoardHead, BoardScope
from termal_tui.tui.cells import cap_cells, cells, first_fit, fit, option_room
from termal_tui.tui.messages import LiveChanged, ReadFailed, WorkerFailures, follow_live
from termal_tui.tui.screens.mounting import popped_before_mount
from termal_tui.tui.widgets.footer import FittingFooter
from termal_tui.tui.widgets.mailbox_view import ThreadHeader
from termal_tui.views.board import KEY_GONE as KEY_GONE
from termal_tui.views.board import BoardKeyView, BoardView, HeaderState
from termal_tui.views.board_values import (
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
from termal_tui.views.live import Superseded

if TYPE_CHECKING:
    from termal_tui.views.live import LiveEvent, LiveSource, Subscription

FIRST_ROWS: Final = 40  # rows built before the first paint (more than a screen holds)
CHUNK_ROWS: Final = 64  # then this many per frame, so keys never wait on 512 rows
MUTED: Final = "$termal-muted"


# -------------------------------------------------------------------- header


class BoardHeader(Widget):
    """``● Live 12:00:00 · 3 projects · coordination.sqlite``: the tabs' states."""

    # One line while live; a Stale reason gets lines of its own below (never cut).
    DEFAULT_CSS = "BoardHeader { height: auto; max-height: 4; padding: 0 1; background: $panel; }"

    state: reactive[str] = reactive("loading")
    refreshed: reactive[str] = reactive("")
    detail: reactive[str] = reactive("")
    error: reactive[str] = reactive("", layout=True)  # a reason takes lines of its own

    def show(self, header: HeaderState) -> None:
        """What the model's header says now."""
        self.state, self.refreshed = header.state, header.refreshed
        self.detail, self.error = header.detail, header.error

    def render(self) -> Content:
        label, style = ThreadHeader.STATES[self.state]
        parts: list[Content | str] = [Content.styled(label, style)]
        if self.refreshed:
            parts.append(Content.styled(f" {self.refreshed}", MUTED))
        if self.detail:
            parts.append(Content.styled(f" · {self.detail}", MUTED))
        head = fit(Content.assemble(*parts), self.size.width or 80)  # one line
        if not self.error:
            return head
        return Content("\n").join(
            [head, Content.styled(visible_line(self.error, 300), "$termal-error")]
        )


# ----------------------------------------------------------------------- rows


def scope_row(scope: BoardScope, names: dict[str, str], width: int) -> Content:
    """One line: the project's name (or id), its counts, and its id when it fits."""
    counts = f"  {scope_counts(scope)}"
    # One line at any width: a long name (or a bare id) gives way to its counts.
    title = cap_cells(scope_title(scope, names), max(12, width - cells(counts)))
    parts = [Content.styled(title, "bold"), Content.styled(counts, MUTED)]
    scope_id = Content.styled(f"  {visible_line(scope.scope_id, 60)}", "$termal-dim")
    if scope.scope_id in names:
        return first_fit(width, Content.assemble(*parts, scope_id), Content.assemble(*parts))
    return fit(Content.assemble(*parts), width)


def key_row(head: BoardHead, now: datetime, width: int) -> Content:
    """Two or more lines: the key and its facts, then the value cut to a few lines. No
    line is wider than ``width`` cells; the facts give way (``head_line``), then the
    author is cut: the age stays whole."""
    key = cap_cells(visible_line(head.key), max(20, width // 2))
    mark = f"✕ {key}" if head.deleted else key
    lead = "  deleted · " if head.deleted else "  "
    room = max(0, width - cells(mark) - cells(lead))
    facts = head_line(head, now, room, measure=cells)
    if cells(facts) > room:  # who and when: the author is cut, the age stays whole
        age = age_text(head.updated_at, now)
        facts = f"{cap_cells(author_text(head), max(1, room - cells(age) - 3))} · {age}"
    if head.deleted:  # the first line never wraps: the facts end in … when cut
        return fit(
            Content.assemble(
                Content.styled(mark, "$termal-dim strike"),
                Content.styled(f"{lead}{facts}", "$termal-dim"),
            ),
            width,
        )
    first = fit(
        Content.assemble(Content.styled(key, "bold"), Content.styled(f"{lead}{facts}", MUTED)),
        width,
    )
    cut = cut_value(value_text(head), PREVIEW_LINES, max(10, width - 2), cut=cap_cells)
    lines = [first, *(Content("  " + line) for line in cut.text.split("\n"))]
    if cut.hidden_lines or cut.hidden_chars:
        noun = "line" if cut.hidden_lines == 1 else "lines"
        more = f"  … {cut.hidden_lines:,} more {noun}" if cut.hidden_lines else "  … cut"
        lines.append(
            first_fit(
                width,
                Content.styled(f"{more} · enter shows the whole value", MUTED),
                Content.styled(more, MUTED),
            )
        )
    return Content("\n").join(lines)


class KeyList(OptionList):
    """A project's keys; enter opens the whole value and the history."""

    BINDINGS = [Binding("enter", "select", "Value & history")]


class ScopeList(OptionList):
    """The projects; choosing one shows its keys."""

    BINDINGS = [Binding("enter", "select", "Keys")]


# ------------------------------------------------------------ the source


class FollowsSource:
    """What both board screens do with the live source: subscribe on mount, hand each
    event to ``_source`` while shown (the last one waits while covered), unsubscribe
    on unmount. A refresh asked for while one runs runs again when it ends."""

    source: LiveSource
    _subscription: Subscription | None = None
    _covered = False
    _waiting: LiveEvent | None = None  # the event that came while covered

    def _subscribe(self) -> None:
        self._subscription = follow_live(self, self.source)  # type: ignore[arg-type]

    def _unsubscribe(self) -> None:
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None

    def on_screen_suspend(self) -> None:
        self._covered = True

    def on_screen_resume(self) -> None:
        self._covered = False
        waiting, self._waiting = self._waiting, None
        if waiting is not None:
            self._source(waiting)

    def on_live_changed(self, message: LiveChanged) -> None:  # (a mixin: by name, not @on)
        message.stop()
        event = message.event
        if self._covered:
            # Kept for when the screen is shown again: a reopen wins over a change, and
            # a change over a later "nothing new", which would hide it.
            if self._waiting is None or _RANK[event.kind] >= _RANK[self._waiting.kind]:
                self._waiting = event
            return
        self._source(event)

    def _source(self, event: LiveEvent) -> None:
        raise NotImplementedError


_RANK: Final = {"opened": 2, "changed": 1, "unchanged": 0, "tick": 0, "state": 0}


def _flags(event: LiveEvent) -> tuple[bool, bool]:
    """(paused, snapshot) as the source says."""
    return event.status.phase == "paused", event.status.phase == "snapshot"


# ---------------------------------------------------------------------- screen


class BoardScreen(FollowsSource, WorkerFailures, Screen[None]):
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

    def __init__(self, source: LiveSource) -> None:
        super().__init__()
        self.source = source
        target = source.target
        self.model = BoardView(
            source.name,
            lambda: project_names(target),
            clock=source.clock.now,
            paused=source.status.phase == "paused",
            snapshot=source.status.phase == "snapshot",
        )
        self._again = False  # a refresh was asked for while one ran
        self._force = False
        self.shown: list[BoardHead] = []  # what the key list shows, in its order
        self._fill = 0  # numbers each rebuild of the key list
        self._highlight_at: int | None = None  # a row to highlight once it is added
        self._width = 0

    # the model's state, as tests and the key screen read it
    @property
    def scope_id(self) -> str | None:
        return self.model.scope_id

    @property
    def generations(self) -> dict[str, int] | None:
        return self.model.generations

    @property
    def scopes(self) -> list[BoardScope]:
        return self.model.scopes

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
        if popped_before_mount(self):
            return
        self.title = "termal-tui (read-only) — coordination board"
        self._subscribe()
        self.query_one(BoardHeader).show(self.model.header)
        status = self.source.status
        if self.source.reader is not None:
            self.load(force=True)
        elif status.reason:
            self.model.mark_stale(status.reason)
            self.query_one(BoardHeader).show(self.model.header)

    def on_unmount(self) -> None:
        self._unsubscribe()

    def _source(self, event: LiveEvent) -> None:
        self.model.paused, self.model.snapshot = _flags(event)
        if event.kind == "opened":
            self.model.reopened()
            self.load(force=True)
        elif event.kind == "changed":
            self.load()
        elif event.kind == "state":
            if not event.status.live and event.status.reason:
                self.model.mark_stale(event.status.reason)
                self.query_one(BoardHeader).show(self.model.header)
        elif self.model.generations is not None and not self.model.header.error:
            # Nothing new (or no check made): the time and the ages move on.
            self.model.mark_live()
            self.query_one(BoardHeader).show(self.model.header)
            self._redraw_ages()

    # ------------------------------------------------------------ actions

    def action_refresh(self) -> None:
        self.load(force=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_tombstones":  # nothing to show or hide: not offered
            return self.model.can_toggle()
        return True

    def action_toggle_tombstones(self) -> None:
        self.model.toggle_tombstones()
        self._show_keys()

    def action_switch_list(self) -> None:
        keys, scopes = self.query_one("#keys", KeyList), self.query_one("#scopes", ScopeList)
        (scopes if keys.has_focus else keys).focus()

    # ------------------------------------------------------------ workers

    @work(group="board", exclusive=False, exit_on_error=False)
    async def load(self, force: bool = False) -> None:
        """One refresh through the live source; the rest only if the generations moved
        (or ``force``). One at a time: asked for meanwhile, it runs again after."""
        if self.model.reading:
            self._again, self._force = True, self._force or force
            return
        had_tombstones = self.model.can_toggle()
        try:
            change = await self.source.read_board(
                lambda reader: self.model.refresh(reader, force=force)
            )
        except Superseded:
            return  # the file was replaced meanwhile: the "opened" event reads it
        finally:
            if self._again:
                again, self._again, self._force = self._force, False, False
                self.call_later(self.load, again)
        if not change.read:
            return
        self.query_one(BoardHeader).show(self.model.header)
        if change.scopes or change.moved:
            self._show_scopes()
        if change.keys:
            if had_tombstones != self.model.can_toggle():
                self.refresh_bindings()  # `t` is offered only with a tombstone to show
            self._show_keys()
        elif not change.moved:
            self._redraw_ages()

    @work(group="board-scope", exclusive=True, exit_on_error=False)
    async def load_scope(self, scope_id: str) -> None:
        """Another project chosen: its heads (tombstones too; the toggle only filters)."""
        try:
            chosen = await self.source.read_board(
                lambda reader: self.model.choose(reader, scope_id)
            )
        except Superseded:
            return
        if chosen:
            self.refresh_bindings()
            self._show_keys()

    # ------------------------------------------------------------ results

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        event.stop()
        self.model.mark_stale(event.error)
        self.query_one(BoardHeader).show(self.model.header)

    @on(OptionList.OptionHighlighted, "#scopes")
    def _scope_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        index = event.option_index
        scopes = self.model.scopes
        if not 0 <= index < len(scopes):
            return
        scope_id = scopes[index].scope_id
        if scope_id != self.model.scope_id:
            self.model.scope_id = scope_id
            self.model.heads, self.model.heads_generation = [], -1
            self._show_keys(loading=True)
            self.load_scope(scope_id)

    @on(OptionList.OptionSelected, "#scopes")
    def _scope_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.query_one("#keys", KeyList).focus()

    @on(OptionList.OptionSelected, "#keys")
    def _key_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        scope_id = self.model.scope_id
        if scope_id is None or not 0 <= event.option_index < len(self.shown):
            return
        head = self.shown[event.option_index]
        self.app.push_screen(BoardKeyScreen(self.source, scope_id, self.model.scope_title(), head))

    def on_resize(self) -> None:
        if self.model.heads and self._row_width() != self._width:
            self._show_keys()

    # ---------------------------------------------------------- rendering

    def _show_scopes(self) -> None:
        model = self.model
        scopes, selected = model.scopes, model.scope_id
        self.set_class(model.empty, "-empty")
        listing = self.query_one("#scopes", ScopeList)
        width = max(20, option_room(listing, self))
        options = [
            Option(scope_row(s, model.names, width), id=f"scope-{i}") for i, s in enumerate(scopes)
        ]
        with self.app.batch_update(), self.prevent(OptionList.OptionHighlighted):
            listing.set_options(options)
            ids = [s.scope_id for s in scopes]
            if selected in ids:
                listing.highlighted = ids.index(selected)

    def _row_width(self) -> int:
        return max(20, option_room(self.query_one("#keys", KeyList), self))

    def _redraw_ages(self) -> None:
        """Only the rows whose age now reads differently."""
        keys = self.query_one("#keys", KeyList)
        if keys.option_count != len(self.shown):
            return
        now = self.model.clock()
        for index in self.model.aged(now):
            head = self.shown[index]
            keys.replace_option_prompt_at_index(index, key_row(head, now, self._width))

    def _show_keys(self, loading: bool = False) -> None:
        """The shown project's keys: rows whose head changed are replaced in place; the
        list is rebuilt only when keys come or go (or on the tombstone toggle)."""
        keys = self.query_one("#keys", KeyList)
        model = self.model
        shown = model.shown
        width = self._row_width()
        now = model.clock()
        name, counts = model.keys_status(loading=loading)
        name = cap_cells(name, max(12, width - cells(counts)))  # the counts stay whole
        self.query_one("#keys-status", Static).update(
            fit(
                Content.assemble(Content.styled(name, "bold"), Content.styled(counts, MUTED)), width
            )
            if name or counts
            else Content("")
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
        model.drawn(now)
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
        now = self.model.clock()
        keys.add_options(self._options(self.shown, start, CHUNK_ROWS, now, self._width))
        self._after_rows(keys)
        if start + CHUNK_ROWS < len(self.shown):
            self.call_after_refresh(self._add_rows, fill, start + CHUNK_ROWS)

    def _after_rows(self, keys: KeyList) -> None:
        """Highlight the row the reader was on, once it is in the list."""
        if self._highlight_at is not None and self._highlight_at < keys.option_count:
            keys.highlighted = self._highlight_at
            self._highlight_at = None


# ----------------------------------------------------------------- key screen


class BoardKeyScreen(FollowsSource, WorkerFailures, Screen[None]):
    """One key: its whole value (of the highlighted revision) and its last revisions.
    Live like the board: a commit reads the scope's generation, the key only if it
    moved; a replaced file reads the key from the new one (or says it is gone)."""

    DEFAULT_CSS = """
    BoardKeyScreen #key-meta { height: auto; padding: 0 1; }
    BoardKeyScreen #key-value-box { height: 1fr; padding: 0 1; border-top: solid $panel; }
    BoardKeyScreen #history { height: auto; max-height: 12; border-top: solid $panel; }
    """
    BINDINGS = [Binding("escape,q", "dismiss(None)", "Back", id="board-key-back")]

    def __init__(self, source: LiveSource, scope_id: str, scope_name: str, head: BoardHead) -> None:
        super().__init__()
        self.source = source
        self.model = BoardKeyView(
            scope_id,
            scope_name,
            head,
            clock=source.clock.now,
            paused=source.status.phase == "paused",
            snapshot=source.status.phase == "snapshot",
        )
        self._age_column: ColumnKey | None = None
        self._history_width = 0  # the screen width the history was laid out for
        self._again = False

    # the model's state, as tests read it
    @property
    def key(self) -> str:
        return self.model.key

    @property
    def head(self) -> BoardHead | None:
        return self.model.head

    @property
    def generation(self) -> int:
        return self.model.generation

    @property
    def revisions(self) -> list[BoardHead]:
        return self.model.revisions

    def compose(self) -> ComposeResult:
        yield BoardHeader()
        yield Static(Content(""), id="key-meta")
        with VerticalScroll(id="key-value-box"):
            yield Static(Content(""), id="key-value")
        yield DataTable(id="history", cursor_type="row", zebra_stripes=True)
        yield FittingFooter()

    def on_mount(self) -> None:
        if popped_before_mount(self):
            return
        self.title = "termal-tui (read-only) — coordination board key"
        table = self.query_one("#history", DataTable)
        self._age_column = table.add_columns("rev", "gen", "author", "stamp", "age", "value")[4]
        self.query_one(BoardHeader).show(self.model.header)
        self._show_head()
        self._subscribe()
        self.load()
        table.focus()

    def on_unmount(self) -> None:
        self._unsubscribe()

    def _source(self, event: LiveEvent) -> None:
        self.model.paused, self.model.snapshot = _flags(event)
        if event.kind == "opened":
            self.model.reopened()
            self.load()
        elif event.kind == "changed":
            self.load()
        elif event.kind == "state":
            if not event.status.live and event.status.reason:
                self.model.mark_stale(event.status.reason)
                self.query_one(BoardHeader).show(self.model.header)
        elif self.model.header.state != "stale":
            self._unchanged()

    @work(group="board-key", exclusive=False, exit_on_error=False)
    async def load(self) -> None:
        if self.model.reading:
            self._again = True
            return
        try:
            changed = await self.source.read_board(
                lambda reader: self.model.refresh(lambda: reader)
            )
        except Superseded:
            return  # the "opened" event reads the new file
        finally:
            if self._again:
                self._again = False
                self.call_later(self.load)
        self.query_one(BoardHeader).show(self.model.header)
        if not changed:
            self._unchanged()
            return
        if self.model.head is None:  # nothing of what it was stays on screen
            self.query_one("#key-value", Static).update(Content(""))
        self._show_head()
        self._show_history()

    @on(ReadFailed)
    def _failed(self, event: ReadFailed) -> None:
        event.stop()
        self.model.mark_stale(event.error)
        self.query_one(BoardHeader).show(self.model.header)

    def _unchanged(self) -> None:
        """Nothing moved: the time and the ages move on (the value stays as shown)."""
        self.model.mark_live()
        self.query_one(BoardHeader).show(self.model.header)
        self._show_meta()
        table = self.query_one("#history", DataTable)
        revisions = self.model.revisions
        if self._age_column is None or table.row_count != len(revisions):
            return
        now = self.model.clock()
        ages = [Text(age_text(head.updated_at, now)) for head in revisions]
        for index, age in enumerate(ages):  # may be wider ("2 min ago")
            table.update_cell(f"rev-{index}", self._age_column, age, update_width=True)
        column = table.columns[self._age_column]
        column.content_width = max([column.label.cell_len, *(age.cell_len for age in ages)])

    @on(DataTable.RowHighlighted, "#history")
    def _revision_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        revisions = self.model.revisions
        if 0 <= event.cursor_row < len(revisions):
            self._show_value(revisions[event.cursor_row])

    def _show_head(self) -> None:
        self._show_meta()
        if self.model.head is not None:
            self._show_value(self.model.head)

    def _show_meta(self) -> None:
        head = self.model.head
        meta = self.query_one("#key-meta", Static)
        if head is None:
            meta.update(Content.styled("(no current head)", MUTED))
            return
        state = "deleted (tombstone) · " if head.deleted else ""
        count = len(self.model.history)
        retained = (
            f"{count:,} earlier revision{'' if count == 1 else 's'} kept"
            if count
            else "no earlier revisions"
        )
        meta.update(
            Content.assemble(
                Content.styled(visible_line(head.key, 100), "bold"),
                Content.styled(f"  {state}{head_line(head, self.model.clock())}", MUTED),
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

    def on_resize(self, event: events.Resize) -> None:
        """The value column is cut to the screen's width: laid out again at the real one
        (a history read before the first layout was cut for 80 columns)."""
        if popped_before_mount(self):
            return
        if self.model.revisions and event.size.width != self._history_width:
            self._show_history()

    def _show_history(self) -> None:
        table = self.query_one("#history", DataTable)
        self._history_width = self.size.width
        now = self.model.clock()
        room = max(12, (self.size.width or 80) - 52)  # the value column fits the screen
        table.clear()
        rows = [
            (
                Text(f"{head.revision:,}" + (" ●" if index == 0 and self.model.head else "")),
                Text(f"{head.updated_at_generation:,}"),
                Text(author_text(head, 24)),
                Text(visible_line(head.state_stamp or "", 20)),
                Text(age_text(head.updated_at, now)),
                Text(cap(" ".join(value_text(head).replace("\n", " ").split()), room)),
            )
            for index, head in enumerate(self.model.revisions)
        ]
        for index, row in enumerate(rows):
            table.add_row(*row, key=f"rev-{index}")
        _fit_columns(table, rows)


def _fit_columns(table: DataTable[Any], rows: Sequence[tuple[Text, ...]]) -> None:
    """Each column as wide as its widest cell, now: the table would measure the new rows
    only when it next idles, and a frame drawn before that cut them to the old widths."""
    for column, cells_of in zip(table.columns.values(), zip(*rows, strict=True), strict=False):
        column.content_width = max([column.label.cell_len, *(cell.cell_len for cell in cells_of)])
