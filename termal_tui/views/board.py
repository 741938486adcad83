"""What the board view and its key screen show, headless (no textual, no rich).

:class:`BoardView` holds the projects, their names, the shown project's heads, the
tombstone toggle, the ages each row was drawn with and the header's state, and decides
what a refresh reads: the scope generations (one statement) and nothing else while
they are unchanged; the project list when one moved; names when the set of projects
changed; the shown project's keys only when its own generation moved.
:class:`BoardKeyView` does the same for one key (its head and retained revisions).

Both read through the reader they are handed (the live source's), never open one, and
take their time from an injected clock: tests drive them with calls, no Textual, no
timer. The screens render them and own only their keys.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final

from termal_tui.core.sanitize import cap, visible_line
from termal_tui.core.vocabulary import counted
from termal_tui.views.board_values import age_text, scope_title

if TYPE_CHECKING:
    from termal_tui.store.board.reader import BoardReader
    from termal_tui.store.board.records import BoardHead, BoardScope

KEY_GONE: Final = (
    "this key is not on the board now (its project was deleted, or the file was replaced)"
)


def _wall() -> datetime:
    return datetime.now().astimezone()


@dataclass
class HeaderState:
    """``● Live 12:00:00 · 3 projects · coordination.sqlite`` and a Stale reason."""

    state: str = "loading"  # loading, live, paused, snapshot, stale (ThreadHeader's)
    refreshed: str = ""  # the time of the last good read ("" before the first)
    detail: str = ""
    error: str = ""

    def live(self, moment: datetime, *, paused: bool, snapshot: bool) -> None:
        """A read succeeded: Live (or Paused, Snapshot) at ``moment``, no reason."""
        self.state = "snapshot" if snapshot else ("paused" if paused else "live")
        self.error = ""
        self.refreshed = moment.strftime("%H:%M:%S")

    def stale(self, reason: str) -> None:
        """A read failed: Stale, the time of the last good read kept, the reason said."""
        self.state = "stale"
        self.error = reason


@dataclass
class BoardChange:
    """What a refresh changed, for the screen to redraw no more than that."""

    read: bool = False  # False: another refresh was running, nothing was done
    moved: bool = False  # the generations moved (or a forced read)
    scopes: bool = False  # the project list (or a name) changed
    keys: bool = False  # the shown project's heads were read again


class BoardView:
    """The coordination board of one database, as the board screen shows it."""

    def __init__(
        self,
        file_name: str,
        names: Callable[[], dict[str, str]],
        *,
        clock: Callable[[], datetime] | None = None,
        paused: bool = False,
        snapshot: bool = False,
    ) -> None:
        self.file_name = file_name
        self._read_names = names  # synchronous (files beside the database): run off-loop
        self.clock = clock or _wall
        self.paused = paused
        self.snapshot = snapshot
        self.header = HeaderState(detail=visible_line(file_name, 60))
        self.reading = False
        self.show_tombstones = False
        self.generations: dict[str, int] | None = None
        self.scopes: list[BoardScope] = []
        self.names: dict[str, str] = {}
        self.scope_id: str | None = None
        self.heads: list[BoardHead] = []  # the shown project's heads, tombstones too
        self.heads_generation = -1
        self.ages: list[str] = []  # the age each shown row was drawn with
        self._opened = 0  # reopens seen: a read of a replaced file is dropped

    # ---------------------------------------------------------------- reads

    async def refresh(self, reader: BoardReader, *, force: bool = False) -> BoardChange:
        """One refresh: the generations; the rest only if they moved (or ``force``).
        A failed read raises (the caller shows Stale); the state is left as it was."""
        if self.reading:
            return BoardChange()
        self.reading = True
        opened = self._opened
        try:
            generations = await reader.generations()
            if generations == self.generations and not force:
                self.mark_live()
                return BoardChange(read=True)
            scopes = await reader.scopes()
            names = self.names
            new_set = self.generations is None or set(generations) != set(self.generations)
            if new_set or force:
                names = await asyncio.to_thread(self._read_names)
            scope_id = self.scope_id
            if scope_id not in generations:
                # Two reads: a project committed between them is in the list but has no
                # generation read yet; the next refresh shows it.
                scope_id = next((s.scope_id for s in scopes if s.scope_id in generations), None)
            entries = None
            if scope_id is not None and (
                force or scope_id != self.scope_id or generations[scope_id] != self.heads_generation
            ):
                entries = await reader.entries(scope_id, include_deleted=True)
        except Exception:
            if opened == self._opened:
                raise
            return BoardChange()  # the old file failed after the reopen: not this one's
        finally:
            if opened == self._opened:  # (a reopen let the new file's refresh start)
                self.reading = False
        if opened != self._opened:  # read from a file that was replaced meanwhile
            return BoardChange()
        change = BoardChange(read=True, moved=True)
        change.scopes = scopes != self.scopes or names != self.names
        self.generations, self.scopes, self.names = generations, scopes, names
        if scope_id is None:
            change.keys = bool(self.heads) or self.scope_id is not None
            self.scope_id, self.heads, self.heads_generation = None, [], -1
        elif entries is not None:
            self.scope_id = scope_id
            self.heads, self.heads_generation = entries, generations.get(scope_id, 0)
            change.keys = True
        self.mark_live()
        return change

    async def choose(self, reader: BoardReader, scope_id: str) -> bool:
        """Another project chosen: its heads (tombstones too; the toggle only filters).
        False when another project was chosen meanwhile (the answer is dropped)."""
        self.scope_id = scope_id
        self.heads, self.heads_generation = [], -1
        generation = await reader.generation(scope_id)
        entries = await reader.entries(scope_id, include_deleted=True)
        if scope_id != self.scope_id:
            return False
        self.heads, self.heads_generation = entries, generation
        return True

    def reopened(self) -> None:
        """Another file is at the path: everything is read from it again, from scratch."""
        self._opened += 1
        self.generations = None
        self.heads_generation = -1
        self.reading = False

    # ------------------------------------------------------------- the state

    def mark_live(self) -> None:
        self.header.live(self.clock(), paused=self.paused, snapshot=self.snapshot)
        projects = counted(len(self.generations or {}), "project")
        self.header.detail = f"{projects} · {visible_line(self.file_name, 60)}"

    def mark_stale(self, reason: str) -> None:
        self.header.stale(reason)

    @property
    def empty(self) -> bool:
        """No project at all (after the first read): "No coordination board yet"."""
        return self.generations is not None and not self.scopes

    @property
    def scope(self) -> BoardScope | None:
        return next((s for s in self.scopes if s.scope_id == self.scope_id), None)

    @property
    def tombstones(self) -> int:
        return sum(1 for head in self.heads if head.deleted)

    @property
    def shown(self) -> list[BoardHead]:
        """The shown project's keys as listed: tombstones only on the toggle."""
        return [h for h in self.heads if self.show_tombstones or not h.deleted]

    def can_toggle(self) -> bool:
        """``t`` is offered only with a tombstone to show (or shown ones to hide)."""
        return self.show_tombstones or self.tombstones > 0

    def toggle_tombstones(self) -> None:
        self.show_tombstones = not self.show_tombstones

    def scope_title(self) -> str:
        scope = self.scope
        if scope is not None:
            return scope_title(scope, self.names)
        return visible_line(self.scope_id or "", 60)

    def keys_status(self, *, loading: bool = False) -> tuple[str, str]:
        """The line above the keys: the project's name and ``· 6 keys · 1 tombstone
        hidden (t)``; empty with no project. The viewer cuts the name to what the counts
        leave of the line (in terminal cells)."""
        scope = self.scope
        if scope is None:
            return ("", "")
        tombstones = self.tombstones
        word = "shown" if self.show_tombstones else "hidden"
        toggle = f" · {counted(tombstones, 'tombstone')} {word} (t)" if tombstones else ""
        reading = " · reading…" if loading else ""
        live = len(self.heads) - tombstones
        name = scope_title(scope, self.names)
        return (name, f" · {counted(live, 'key')}{toggle}{reading}")

    def drawn(self, now: datetime | None = None) -> None:
        """The rows were drawn (at ``now``): their ages are remembered."""
        moment = now or self.clock()
        self.ages = [age_text(head.updated_at, moment) for head in self.shown]

    def aged(self, now: datetime | None = None) -> list[int]:
        """The shown rows whose age now reads differently from when they were drawn
        (an idle refresh redraws only those); their new ages are remembered."""
        moment = now or self.clock()
        changed = []
        shown = self.shown
        if len(shown) != len(self.ages):
            return []
        for index, head in enumerate(shown):
            age = age_text(head.updated_at, moment)
            if age != self.ages[index]:
                self.ages[index] = age
                changed.append(index)
        return changed


class BoardKeyView:
    """One key: its head, its retained revisions and whether it is still on the board.
    A refresh reads the scope's generation, and the key only when it moved."""

    def __init__(
        self,
        scope_id: str,
        scope_name: str,
        head: BoardHead,
        *,
        clock: Callable[[], datetime] | None = None,
        paused: bool = False,
        snapshot: bool = False,
    ) -> None:
        self.scope_id = scope_id
        self.scope_name = scope_name
        self.key = head.key  # kept when the key is gone (its project deleted, a new file)
        self.head: BoardHead | None = head
        self.history: list[BoardHead] = []
        self.clock = clock or _wall
        self.paused = paused
        self.snapshot = snapshot
        self.generation = -1
        self.reading = False
        self._opened = 0
        self.header = HeaderState(detail=f"{cap(scope_name, 24)} · {visible_line(self.key, 60)}")

    @property
    def revisions(self) -> list[BoardHead]:
        """The head (when there is one) and then the earlier revisions, newest first."""
        return ([self.head] if self.head is not None else []) + self.history

    async def refresh(self, reader: Callable[[], BoardReader]) -> bool:
        """One refresh through ``reader()`` (the live source's reader now); True when the
        key was read again (False: nothing moved, or another refresh runs). A read of a
        file replaced meanwhile is dropped when it answers, and read again."""
        if self.reading:
            return False
        self.reading = True
        try:
            while True:
                opened = self._opened
                current = reader()
                try:
                    generation = await current.generation(self.scope_id)
                    if opened != self._opened:
                        continue
                    if generation == self.generation:
                        self.mark_live()
                        return False
                    heads = await current.entries(self.scope_id, include_deleted=True)
                    history = await current.history(self.scope_id, self.key)
                except Exception:
                    if opened == self._opened:
                        raise
                    continue  # the old file failed after the reopen: read the new one
                if opened == self._opened:
                    break
        finally:
            self.reading = False
        self.generation = generation
        self.head = next((h for h in heads if h.key == self.key), None)
        self.history = history
        self.mark_live()
        return True

    def reopened(self) -> None:
        """Another file is at the path: the key is read from it (or said to be gone);
        a read of the old file still running is dropped when it answers."""
        self._opened += 1
        self.generation = -1

    def mark_live(self) -> None:
        self.header.live(self.clock(), paused=self.paused, snapshot=self.snapshot)
        if self.head is None:  # said on every refresh while it lasts
            self.header.error = KEY_GONE

    def mark_stale(self, reason: str) -> None:
        self.header.stale(reason)
