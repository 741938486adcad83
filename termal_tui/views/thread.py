"""The state of one mailbox thread, without a screen (no textual or rich here).

A thread is a newest-first list of *items*: loaded messages, gaps (a run of rows not
loaded, e.g. between the newest rows and a jump target) and the start-of-mailbox
marker. Every change is returned as a :class:`Splice` (replace ``count`` items at
``index`` with ``items``) plus the ids of items whose rendering changed, so a widget can
apply exactly that change instead of rebuilding everything.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from termal_tui.core.models import MailboxMessage, MailboxParticipant, MailboxSummary
from termal_tui.views.presentation import lagging_participants, latest_shown


@dataclass(frozen=True)
class Gap:
    """Rows between two loaded ones that are not loaded (``older`` is 0 at the bottom)."""

    newer: int
    older: int

    @property
    def key(self) -> str:
        return f"gap-{self.newer}-{self.older}"

    @property
    def at_most(self) -> int:
        """How many rows may be missing (hidden control rows make it an upper bound)."""
        return max(0, self.newer - self.older - 1)


def gap_parts(
    gap: Gap, participants: Sequence[MailboxParticipant]
) -> list[Gap | MailboxParticipant]:
    """A gap row as it is drawn, top to bottom, with the cursors that lie inside it.

    A divider stands just above the rows it is above: a cursor inside the gap splits it
    into the unloaded rows newer than the cursor (``Gap(gap.newer, cursor)``; none when
    the cursor is the gap's newest row), the divider, then the rows at or below the
    cursor (``Gap(cursor + 1, gap.older)``). Never a divider above rows it is not above.
    Participants outside the gap are not drawn here (the caller placed them).
    """
    inside = sorted(
        (p for p in participants if gap.older < p.processed_through < gap.newer),
        key=lambda p: -p.processed_through,
    )
    parts: list[Gap | MailboxParticipant] = []
    newer = gap.newer
    for participant in inside:
        cursor = participant.processed_through
        if newer - cursor - 1 > 0:  # unloaded rows above this cursor
            parts.append(Gap(newer, cursor))
        newer = cursor + 1
        parts.append(participant)
    parts.append(Gap(newer, gap.older))
    return parts


@dataclass(frozen=True)
class StartMarker:
    key: str = "start-of-mailbox"


Item = MailboxMessage | Gap | StartMarker


def item_key(item: Item) -> str:
    return item.id if isinstance(item, MailboxMessage) else item.key


def item_sequence(item: Item) -> int:
    """Where an item sorts, newest first (a gap sorts just below its newer row)."""
    if isinstance(item, MailboxMessage):
        return item.sequence
    if isinstance(item, Gap):
        return item.newer - 1
    return -(2**62)


@dataclass(frozen=True)
class Splice:
    index: int
    count: int
    items: tuple[Item, ...]


@dataclass
class Change:
    """What a widget must do: splices in order, then re-render ``changed`` keys."""

    splices: list[Splice] = field(default_factory=list)
    changed: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.splices or self.changed)


def _cursor_of(summary: MailboxSummary | None, session_id: str) -> int:
    if summary is not None:
        for participant in summary.participants:
            if participant.session_id == session_id:
                return participant.processed_through
    return 0


class ThreadModel:
    """Messages by id, newest first, gaps, expanded rows, pending new rows, ``has_older``."""

    def __init__(self) -> None:
        self.summary: MailboxSummary | None = None
        self.items: list[Item] = []
        self.by_id: dict[str, MailboxMessage] = {}
        self.has_older = False
        self.expanded: set[str] = set()
        self.pending: list[MailboxMessage] = []
        self.pending_more = False  # a bounded refresh stopped with more rows to fetch
        self._keys: list[int] | None = None  # -sequence per item, for binary search
        self._gaps: list[Gap] = []

    # ------------------------------------------------------------------ reading

    @property
    def loaded(self) -> int:
        return len(self.by_id)

    @property
    def newest_sequence(self) -> int:
        """The newest sequence known (loaded or pending), 0 if none."""
        candidates = [m.sequence for m in self.pending[:1]]
        candidates += [item_sequence(i) for i in self.items[:1] if isinstance(i, MailboxMessage)]
        return max(candidates, default=0)

    @property
    def oldest_sequence(self) -> int | None:
        for item in reversed(self.items):
            if isinstance(item, MailboxMessage):
                return item.sequence
        return None

    @property
    def latest_sequence(self) -> int:
        """The latest sequence to show: never below a loaded row or a cursor."""
        latest = latest_shown(self.summary) if self.summary else 0
        return max(latest, self.newest_sequence)

    def index_of(self, key: str) -> int | None:
        message = self.by_id.get(key)
        if message is not None:
            return self.index_of_item(message)
        for gap in self._gaps:
            if gap.key == key:
                return self.index_of_item(gap)
        for index in range(len(self.items) - 1, -1, -1):  # the start marker: at the end
            if item_key(self.items[index]) == key:
                return index
        return None

    def _search_keys(self) -> list[int]:
        if self._keys is None:
            self._keys = [-item_sequence(item) for item in self.items]
        return self._keys

    def index_of_sequence(self, sequence: int) -> int | None:
        """The loaded message with this sequence (binary search, newest first)."""
        keys = self._search_keys()
        position = bisect.bisect_left(keys, -sequence)
        if position < len(self.items):
            item = self.items[position]
            if isinstance(item, MailboxMessage) and item.sequence == sequence:
                return position
        return None

    def gap_containing(self, sequence: int) -> tuple[int, Gap] | None:
        for gap in self._gaps:
            if gap.older < sequence < gap.newer:
                index = self.index_of(gap.key)
                return None if index is None else (index, gap)
        return None

    def index_of_item(self, item: Item) -> int | None:
        """Binary search by sequence, then a short scan for this exact item."""
        keys = self._search_keys()
        position = bisect.bisect_left(keys, -item_sequence(item))
        key = item_key(item)
        for index in range(max(0, position - 2), min(len(self.items), position + 3)):
            if item_key(self.items[index]) == key:
                return index
        return None

    def is_processed(self, message: MailboxMessage) -> bool:
        return message.sequence <= _cursor_of(self.summary, message.target_session_id)

    def lagging(self) -> list[MailboxParticipant]:
        if self.summary is None:
            return []
        return lagging_participants(self.summary, self.latest_sequence)

    def waits_on(self, participant: MailboxParticipant) -> bool:
        """Whether a row addressed to ``participant`` may lie above its cursor: a loaded
        one does, or rows above the cursor are not loaded (a gap, older pages), so it
        cannot be ruled out. A cursor below the latest row over nothing but the
        participant's own rows waits on nothing (its chip says so)."""
        cursor = participant.processed_through
        if cursor >= self.latest_sequence:
            return False
        newest_visible = self.summary.latest_sequence if self.summary is not None else 0
        if self.pending_more or self.newest_sequence < newest_visible:
            return True  # newer rows not read yet (a capped burst) may be addressed to it
        for item in (*self.pending, *self.items):
            if isinstance(item, MailboxMessage):
                if item.sequence <= cursor:
                    return False
                if item.target_session_id == participant.session_id:
                    return True
            elif isinstance(item, Gap) and item.newer - 1 > max(cursor, item.older):
                return True  # rows above the cursor not read yet
        oldest = self.oldest_sequence  # every loaded row is above the cursor
        return self.has_older and (oldest is None or oldest - 1 > cursor)

    def dividers(self) -> dict[str, list[MailboxParticipant]]:
        """Item key → lagging participants whose cursor stands just above that item.

        TermAl's rule: above the first row (newest first) at or below the cursor; a cursor
        inside a gap marks the gap; a cursor below every loaded row marks nothing yet.
        """
        placed: dict[str, list[MailboxParticipant]] = {}
        keys = self._search_keys()
        for participant in self.lagging():
            cursor = participant.processed_through
            gap = self.gap_containing(cursor)
            if gap is not None:
                placed.setdefault(gap[1].key, []).append(participant)
                continue
            position = bisect.bisect_left(keys, -cursor)
            while position < len(self.items) and not isinstance(
                self.items[position], MailboxMessage
            ):
                position += 1
            if position < len(self.items):
                placed.setdefault(item_key(self.items[position]), []).append(participant)
        return placed

    # ------------------------------------------------------------------ changes

    def _remember(self, messages: Iterable[MailboxMessage]) -> list[MailboxMessage]:
        fresh = []
        for message in messages:
            if message.id not in self.by_id:
                self.by_id[message.id] = message
                fresh.append(message)
        return fresh

    def _splice(self, index: int, count: int, items: Sequence[Item]) -> Splice:
        kept = {id(item) for item in items}
        for item in self.items[index : index + count]:
            # Only the very row removed: a page read again brings new objects with the
            # same ids, already remembered (forgetting by id would forget them).
            if (
                isinstance(item, MailboxMessage)
                and id(item) not in kept
                and self.by_id.get(item.id) is item
            ):
                del self.by_id[item.id]
        self.items[index : index + count] = list(items)
        if self._keys is not None and index == len(self._keys) and count == 0:
            self._keys.extend(-item_sequence(item) for item in items)  # an append
        else:
            self._keys = None
        self._gaps = (
            [item for item in self.items if isinstance(item, Gap)]
            if (any(isinstance(item, Gap) for item in items) or self._gaps)
            else []
        )
        return Splice(index, count, tuple(items))

    def load_first(
        self, summary: MailboxSummary, messages: Sequence[MailboxMessage], has_older: bool
    ) -> Change:
        """The newest page: replaces everything."""
        count = len(self.items)
        self.by_id.clear()
        self.summary = summary
        self.has_older = has_older
        self.pending, self.pending_more = [], False
        rows: list[Item] = list(self._remember(messages))
        if not has_older and rows:
            rows.append(StartMarker())
        return Change([self._splice(0, count, rows)])

    def add_older(self, messages: Sequence[MailboxMessage], has_older: bool) -> Change:
        """A page below the lowest loaded row: appended (the only change at the bottom)."""
        oldest = self.oldest_sequence
        below = [m for m in messages if oldest is None or m.sequence < oldest]
        rows: list[Item] = list(self._remember(below))
        self.has_older = has_older
        if not has_older and not any(isinstance(i, StartMarker) for i in self.items):
            rows.append(StartMarker())
        change = Change([self._splice(len(self.items), 0, rows)]) if rows else Change()
        change.changed |= self._divider_keys_after(change)
        return change

    def add_newer(
        self, messages: Sequence[MailboxMessage], more: bool, cap: int | None = None
    ) -> None:
        """Rows newer than everything known: held as pending until shown, at most ``cap``
        of them (the oldest first: the rest are read after these are shown)."""
        known = set(self.by_id) | {m.id for m in self.pending}
        fresh = sorted((m for m in messages if m.id not in known), key=lambda m: m.sequence)
        if cap is not None and len(self.pending) + len(fresh) > cap:
            fresh = fresh[: max(0, cap - len(self.pending))]
            more = True
        self.pending = sorted([*self.pending, *fresh], key=lambda m: m.sequence, reverse=True)
        self.pending_more = more or self.pending_more

    def show_pending(self) -> Change:
        """Bring pending rows in at the top."""
        if not self.pending:
            return Change()
        rows = self._remember(self.pending)
        self.pending = []
        before = self.dividers()
        change = Change([self._splice(0, 0, rows)])
        change.changed |= self._moved_dividers(before)
        return change

    def place_window(
        self, window: Sequence[MailboxMessage], has_older: bool, newer_exist: bool
    ) -> Change:
        """Rows around a jump target, below the loaded rows or inside a gap.

        ``newer_exist``: rows newer than the window exist but are not in it. A gap row
        marks what is left unloaded on each side.
        """
        rows = sorted(window, key=lambda m: m.sequence, reverse=True)
        rows = [m for m in rows if m.id not in self.by_id]
        if not rows:
            return Change()
        top, bottom = rows[0].sequence, rows[-1].sequence
        before = self.dividers()
        found = self.gap_containing(top)
        if found is not None:
            index, gap = found
            replacement: list[Item] = []
            if top + 1 < gap.newer and newer_exist:
                replacement.append(Gap(gap.newer, top))
            replacement.extend(self._remember(rows))
            if bottom - 1 > gap.older and (has_older or gap.older > 0):
                replacement.append(Gap(bottom, gap.older))
            change = Change([self._splice(index, 1, replacement)])
        else:
            oldest = self.oldest_sequence
            tail: list[Item] = []
            if oldest is not None and top + 1 < oldest:
                tail.append(Gap(oldest, top))
            tail.extend(self._remember(rows))
            self.has_older = has_older
            if not has_older:
                tail.append(StartMarker())
            change = Change([self._splice(len(self.items), 0, tail)])
        change.changed |= self._moved_dividers(before)
        return change

    def fill_gap(self, gap: Gap, rows: Sequence[MailboxMessage], complete: bool) -> Change:
        """Rows read just below ``gap.newer``; ``complete`` when they reach ``gap.older``."""
        index = self.index_of(gap.key)
        if index is None:
            return Change()
        inside = sorted(
            (m for m in rows if gap.older < m.sequence < gap.newer and m.id not in self.by_id),
            key=lambda m: m.sequence,
            reverse=True,
        )
        before = self.dividers()
        replacement: list[Item] = list(self._remember(inside))
        lowest = inside[-1].sequence if inside else gap.newer
        if not complete and lowest - 1 > gap.older:
            replacement.append(Gap(lowest, gap.older))
        change = Change([self._splice(index, 1, replacement)])
        change.changed |= self._moved_dividers(before)
        return change

    def update_summary(self, summary: MailboxSummary) -> Change:
        """New cursors: re-render only rows whose processed state or divider changed."""
        old = self.summary
        before = self.dividers()
        self.summary = summary
        change = Change()
        change.changed |= self._moved_dividers(before)
        if old is None:
            return change
        for participant in summary.participants:
            previous = _cursor_of(old, participant.session_id)
            now = participant.processed_through
            if previous == now:
                continue
            low, high = min(previous, now), max(previous, now)
            for item in self._messages_between(low, high):
                if item.target_session_id == participant.session_id:
                    change.changed.add(item.id)
        return change

    def toggle(self, message_id: str) -> Change:
        if message_id not in self.by_id:
            return Change()
        self.expanded.symmetric_difference_update({message_id})
        return Change(changed={message_id})

    # ---------------------------------------------------------------- helpers

    def _messages_between(self, low: int, high: int) -> list[MailboxMessage]:
        """Loaded messages with ``low < sequence <= high`` (binary search)."""
        keys = self._search_keys()
        start = bisect.bisect_left(keys, -high)
        end = bisect.bisect_left(keys, -low)
        return [i for i in self.items[start:end] if isinstance(i, MailboxMessage)]

    def _moved_dividers(self, before: dict[str, list[MailboxParticipant]]) -> set[str]:
        after = self.dividers()
        return {
            key
            for key in set(before) | set(after)
            if [p.session_id for p in before.get(key, [])]
            != [p.session_id for p in after.get(key, [])]
            or [p.processed_through for p in before.get(key, [])]
            != [p.processed_through for p in after.get(key, [])]
        }

    def _divider_keys_after(self, change: Change) -> set[str]:
        """After an append, dividers that now land on a newly loaded row."""
        if not change.splices:
            return set()
        new_keys = {item_key(i) for s in change.splices for i in s.items}
        return {key for key in self.dividers() if key in new_keys}
