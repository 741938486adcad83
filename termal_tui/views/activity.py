"""The activity stream (headless): what happened in the file, anywhere, newest first.

Events come from two kinds of source:

- **rows with their own times**: messages (``created_at``), board revisions
  (``updated_at``, from the board's history) and participants joining or leaving a
  mailbox (``joined_at``/``left_at``). They are read by keyset, newest first, and merged;
- **what was observed between two reads**: a cursor that moved (TermAl keeps no time for
  an acknowledgement) and a wake state that changed. These carry the time they were seen
  and say so (``observed``).

Messages are read by keyset on ``rowid`` (a page at a time; on PostgreSQL the order
rows were inserted in, where a row may commit after a higher-numbered one: a read of
what is new also brings the numbers just below the newest seen, and only the ones not
seen yet are added); the board (bounded by
TermAl's caps) and the participants are read whole. The model shows only the events at
or above the *horizon*, the time of the oldest loaded message while older ones remain,
so nothing is missing above what it shows; :meth:`ActivityModel.older` moves it down.

A sender's own cursor moves to the message it sends (TermAl's append does that); such a
move is part of the send and is not shown as an acknowledgement.

"New since you last looked": every event gets a serial as it arrives; those above the
serial recorded by :meth:`ActivityModel.mark_seen` are new.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Final, Literal, NamedTuple

from termal_tui.core.formats import parse_timestamp, preview
from termal_tui.core.sanitize import visible_line
from termal_tui.core.vocabulary import wake_words
from termal_tui.store.activity import BoardRow, MessageRow, ParticipantRow

Kind = Literal["message", "cursor", "wake", "board", "joined", "left"]
KINDS: Final[tuple[Kind, ...]] = ("message", "cursor", "wake", "board", "joined", "left")
KIND_LABELS: Final[dict[Kind, str]] = {
    "message": "messages",
    "cursor": "cursors",
    "wake": "wake states",
    "board": "board",
    "joined": "joins",
    "left": "departures",
}
# Join/leave events and board revisions kept from the tables read whole (newest first):
# a 100,000-mailbox file has 200,000 participant rows; the stream is about what just
# happened.
MEMBERSHIP_CAP: Final = 1000
BOARD_CAP: Final = 1000
# Messages whose wake state is followed for changes (the newest loaded ones).
WAKE_WATCH: Final = 500
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class Jump(NamedTuple):
    """Where enter on an event goes: a message (mailbox + sequence), a mailbox, or a key."""

    kind: Literal["message", "mailbox", "key"]
    mailbox_id: str = ""
    sequence: int = 0
    scope_id: str = ""
    key: str = ""


class ActivityEvent(NamedTuple):
    serial: int
    kind: Kind
    at: datetime
    observed: bool  # True: ``at`` is when the change was seen, not a time from the file
    actor_id: str  # the session that did it (sender, author, the participant)
    actor_name: str
    other_id: str  # the other side (the target), or ""
    other_name: str
    mailbox_id: str
    sequence: int  # a message's #N, or the cursor's new position
    scope_id: str
    key: str
    revision: int
    detail: str  # a preview, a wake state, "deleted" …
    jump: Jump

    def sessions(self) -> tuple[str, ...]:
        return (self.actor_id, self.other_id) if self.other_id else (self.actor_id,)


def _time(text: str) -> datetime:
    try:
        return parse_timestamp(text)
    except Exception:  # a malformed stamp in a foreign row sorts as oldest, never fails
        return _EPOCH


class ActivityModel:
    """Holds the merged stream, its filters and the "new since you looked" mark."""

    def __init__(self, now: Callable[[], datetime], *, page: int = 100) -> None:
        self._now = now
        self.page = page
        self._serial = 0
        self._events: list[ActivityEvent] = []  # every event, any order
        self._message_floor: tuple[int, datetime] | None = None  # oldest loaded (rowid, time)
        self._message_top = 0  # newest message rowid seen
        self._board: dict[tuple[str, str], int] = {}  # (scope, key) -> newest revision seen
        self.messages_more = False
        self._cursors: dict[tuple[str, str], int] = {}
        self._members: dict[tuple[str, str], str | None] = {}  # (mailbox, session) -> left_at
        self._names: dict[str, str] = {}
        self._wakes: dict[int, tuple[str, MessageRow]] = {}
        self._seen = 0
        self.loaded = False
        self.session_filter: str | None = None
        self.mailbox_filter: str | None = None
        self.kinds: set[Kind] = set(KINDS)

    # -- reading -------------------------------------------------------------------

    @property
    def message_floor(self) -> int | None:
        """The rowid to read older messages below (None: nothing loaded yet)."""
        return None if self._message_floor is None else self._message_floor[0]

    @property
    def message_top(self) -> int:
        """The rowid to read newer messages above."""
        return self._message_top

    def wake_window(self) -> tuple[int, int] | None:
        """The rowids whose wake states :meth:`update` wants (the newest loaded)."""
        if not self._wakes:
            return None
        return min(self._wakes), max(self._wakes)

    # -- feeding -------------------------------------------------------------------

    def load(
        self,
        messages: Sequence[MessageRow],
        board: Sequence[BoardRow],
        participants: Iterable[ParticipantRow],
    ) -> None:
        """The first read: a page of messages (newest first), every board revision and
        every participant."""
        self._events.clear()
        self._serial = 0
        self._message_floor = None
        self._message_top = 0
        self._wakes.clear()
        self._board.clear()
        self._add_messages(messages, newest_first=True)
        self.messages_more = len(messages) >= self.page
        self._add_board(board, cap=BOARD_CAP)
        self._cursors.clear()
        self._members.clear()
        memberships: list[ParticipantRow] = []
        for row in participants:
            self._cursors[(row.mailbox_id, row.session_id)] = row.processed_through
            self._members[(row.mailbox_id, row.session_id)] = row.left_at
            self._names[row.session_id] = row.display_name
            memberships.append(row)
        stamps: list[tuple[str, Kind, ParticipantRow]] = [
            (r.joined_at, "joined", r) for r in memberships
        ]
        stamps += [(r.left_at, "left", r) for r in memberships if r.left_at]
        stamps.sort(key=lambda item: _time(item[0]), reverse=True)
        for stamp, kind, row in reversed(stamps[:MEMBERSHIP_CAP]):
            self._membership(kind, row, _time(stamp), observed=False)
        self.loaded = True
        self._seen = self._serial  # what is there on opening is not "new"

    def older(self, messages: Sequence[MessageRow]) -> None:
        """An older page of messages (read below :attr:`message_floor`)."""
        if self.messages_more:
            self._add_messages(messages, newest_first=True, older=True)
            self.messages_more = len(messages) >= self.page

    def update(
        self,
        messages: Sequence[MessageRow],
        board: Sequence[BoardRow],
        participants: Iterable[ParticipantRow] | None,
        wake_states: dict[int, str] | None = None,
    ) -> int:
        """What a read after a change found: newer messages (oldest first), the board's
        revisions now, the participants now (cursor moves and joins/leaves are the
        differences), and the wake states of :meth:`wake_window`. Returns how many events
        it added."""
        before = self._serial
        if wake_states:
            seen_at = self._now()
            for rowid, state in sorted(wake_states.items()):
                known = self._wakes.get(rowid)
                if known is not None and known[0] != state:
                    row = known[1]
                    self._wakes[rowid] = (state, row)
                    self._push(
                        "wake",
                        seen_at,
                        True,
                        row.target_id,
                        row.target_name,
                        row.sender_id,
                        row.sender_name,
                        row.mailbox_id,
                        row.sequence,
                        detail=state,
                        jump=Jump("message", row.mailbox_id, row.sequence),
                    )
        sent = {
            (row.mailbox_id, row.sender_id, row.sequence)
            for row in messages
            if not self._seen_row(row.rowid)
        }
        self._add_messages(messages, newest_first=False)
        self._add_board(board)
        if participants is not None:
            self._diff_participants(participants, sent)
        return self._serial - before

    def _diff_participants(
        self, participants: Iterable[ParticipantRow], sent: set[tuple[str, str, int]]
    ) -> None:
        seen_at = self._now()
        for row in participants:
            pair = (row.mailbox_id, row.session_id)
            self._names[row.session_id] = row.display_name
            cursor = self._cursors.get(pair)
            if pair not in self._members:
                self._membership("joined", row, _time(row.joined_at), observed=False)
            elif row.left_at and not self._members[pair]:
                self._membership("left", row, _time(row.left_at), observed=False)
            own_send = (row.mailbox_id, row.session_id, row.processed_through) in sent
            if cursor is not None and row.processed_through > cursor and not own_send:
                self._push(
                    "cursor",
                    seen_at,
                    True,
                    row.session_id,
                    row.display_name,
                    "",
                    "",
                    row.mailbox_id,
                    row.processed_through,
                    detail=f"was #{cursor:,}",
                    jump=Jump("message", row.mailbox_id, row.processed_through),
                )
            self._cursors[pair] = row.processed_through
            self._members[pair] = row.left_at

    def _membership(self, kind: Kind, row: ParticipantRow, at: datetime, *, observed: bool) -> None:
        self._push(
            kind,
            at,
            observed,
            row.session_id,
            row.display_name,
            "",
            "",
            row.mailbox_id,
            0,
            jump=Jump("mailbox", row.mailbox_id),
        )

    def _add_messages(
        self, rows: Sequence[MessageRow], *, newest_first: bool, older: bool = False
    ) -> None:
        ordered = list(reversed(rows)) if newest_first else list(rows)
        for row in ordered:
            if not older and self._seen_row(row.rowid):
                continue
            at = _time(row.created_at)
            self._push(
                "message",
                at,
                False,
                row.sender_id,
                row.sender_name,
                row.target_id,
                row.target_name,
                row.mailbox_id,
                row.sequence,
                scope_id="",
                key=row.topic or "",
                detail=preview(row.preview),
                jump=Jump("message", row.mailbox_id, row.sequence),
            )
            self._wakes[row.rowid] = (row.wake_state, row)
            if self._message_floor is None or row.rowid < self._message_floor[0]:
                self._message_floor = (row.rowid, at)
            self._message_top = max(self._message_top, row.rowid)
        while len(self._wakes) > WAKE_WATCH:
            del self._wakes[min(self._wakes)]

    def _seen_row(self, rowid: int) -> bool:
        """Already in the stream: below the newest seen, and either among the rows still
        followed or below them (a row that committed late is above them and unseen)."""
        if rowid > self._message_top:
            return False
        return rowid in self._wakes or not self._wakes or rowid < min(self._wakes)

    def _add_board(self, rows: Iterable[BoardRow], cap: int | None = None) -> None:
        """Revisions not seen before, oldest first (with ``cap``, only the newest ones)."""
        fresh = [
            (_time(row.updated_at), row)
            for row in rows
            if row.revision > self._board.get((row.scope_id, row.key), 0)
        ]
        fresh.sort(key=lambda item: (item[0], item[1].revision))
        for row in (r for _, r in fresh):
            pair = (row.scope_id, row.key)
            self._board[pair] = max(self._board.get(pair, 0), row.revision)
        if cap is not None:
            fresh = fresh[-cap:]
        for at, row in fresh:
            self._push(
                "board",
                at,
                False,
                row.author_id,
                row.author_name,
                "",
                "",
                "",
                row.revision,
                scope_id=row.scope_id,
                key=row.key,
                revision=row.revision,
                detail="deleted" if row.deleted else "written",
                jump=Jump("key", scope_id=row.scope_id, key=row.key),
            )

    def _push(
        self,
        kind: Kind,
        at: datetime,
        observed: bool,
        actor_id: str,
        actor_name: str,
        other_id: str,
        other_name: str,
        mailbox_id: str,
        sequence: int,
        *,
        scope_id: str = "",
        key: str = "",
        revision: int = 0,
        detail: str = "",
        jump: Jump,
    ) -> None:
        self._serial += 1
        self._events.append(
            ActivityEvent(
                self._serial,
                kind,
                at,
                observed,
                actor_id,
                actor_name,
                other_id,
                other_name,
                mailbox_id,
                sequence,
                scope_id,
                key,
                revision,
                detail,
                jump,
            )
        )

    # -- what the screen shows -------------------------------------------------------

    @property
    def horizon(self) -> datetime | None:
        """Events older than this are held back: a stream may have unloaded rows above them."""
        if self.messages_more and self._message_floor is not None:
            return self._message_floor[1]
        return None

    @property
    def has_older(self) -> bool:
        return self.messages_more

    def _matches(self, event: ActivityEvent) -> bool:
        if event.kind not in self.kinds:
            return False
        if self.session_filter is not None and self.session_filter not in event.sessions():
            return False
        return self.mailbox_filter is None or event.mailbox_id == self.mailbox_filter

    def events(self) -> list[ActivityEvent]:
        """The stream as shown: filtered, newest first, down to the horizon."""
        horizon = self.horizon
        shown = [
            e for e in self._events if self._matches(e) and (horizon is None or e.at >= horizon)
        ]
        shown.sort(key=lambda e: (e.at, e.serial), reverse=True)
        return shown

    def is_new(self, event: ActivityEvent) -> bool:
        return event.serial > self._seen

    @property
    def new_count(self) -> int:
        return sum(1 for e in self._events if e.serial > self._seen and self._matches(e))

    def mark_seen(self) -> None:
        """The person has looked: what is there now is no longer new."""
        self._seen = self._serial

    def mailbox_titles(self) -> dict[str, str]:
        """Mailbox id → its participants' names, ``planner ⇄ backend``, in the order the
        tabs and cards give them (TermAl's participant order: the rows as read), never
        sorted by name (``backend ⇄ planner`` beside a tab saying ``planner ⇄ backend``)."""
        names: dict[str, list[str]] = {}
        for mailbox_id, session_id in self._members:
            names.setdefault(mailbox_id, []).append(self._names.get(session_id, session_id))
        return {m: " ⇄ ".join(n) for m, n in names.items()}

    def name_of(self, session_id: str) -> str:
        return self._names.get(session_id, session_id)

    def known_sessions(self) -> list[str]:
        return sorted(self._names)

    # -- filters ---------------------------------------------------------------------

    def toggle_kind(self, kind: Kind) -> None:
        if kind in self.kinds and len(self.kinds) > 1:
            self.kinds.discard(kind)
        else:
            self.kinds.add(kind)

    def only_kind(self, kind: Kind | None) -> None:
        self.kinds = set(KINDS) if kind is None else {kind}

    def filter_session(self, session_id: str | None) -> None:
        self.session_filter = session_id

    def filter_mailbox(self, mailbox_id: str | None) -> None:
        self.mailbox_filter = mailbox_id

    def describe_filters(self) -> str:
        parts = []
        if self.kinds != set(KINDS):
            parts.append(" + ".join(KIND_LABELS[k] for k in KINDS if k in self.kinds))
        if self.session_filter is not None:
            parts.append(f"session {self.name_of(self.session_filter)}")
        if self.mailbox_filter is not None:
            parts.append(f"mailbox {self.mailbox_filter[:8]}")
        return " · ".join(parts)


class EventWords(NamedTuple):
    """An event in words, for one line: a glyph, who did what, where, and what."""

    glyph: str
    headline: str  # "Alice → Bob #12", "Bob processed through #12", "plan r3"
    where: str  # the mailbox (short id) or the board's project
    detail: str  # the preview, the wake words, "written by Alice"
    observed: bool


def short_mailbox(mailbox_id: str) -> str:
    """``mailbox-3fcb1a2e-…`` → ``3fcb1a2e``, as cards show it."""
    tail = mailbox_id.removeprefix("mailbox-")
    return visible_line(tail[:8])


def event_words(event: ActivityEvent, titles: dict[str, str] | None = None) -> EventWords:
    """Agent-written text (names, keys, previews) is made visible here: stand-ins for
    control and invisible characters, one line. ``titles``: mailbox id → "a ⇄ b"."""
    actor = visible_line(event.actor_name or event.actor_id, 40)
    where = ""
    if event.mailbox_id:
        title = (titles or {}).get(event.mailbox_id)
        where = visible_line(title, 60) if title else short_mailbox(event.mailbox_id)
    if event.kind == "message":
        other = visible_line(event.other_name or event.other_id, 40)
        topic = f"[{visible_line(event.key, 40)}] " if event.key else ""
        return EventWords(
            "✉",
            f"{actor} → {other} #{event.sequence:,}",
            "",  # who → whom names the mailbox already
            topic + visible_line(event.detail),
            False,
        )
    if event.kind == "cursor":
        return EventWords(
            "✓",
            f"{actor} processed through #{event.sequence:,}",
            where,
            event.detail,
            True,
        )
    if event.kind == "wake":
        return EventWords(
            "⏰", f"{actor}: {wake_words(event.detail)}", where, f"#{event.sequence:,}", True
        )
    if event.kind == "board":
        key = visible_line(event.key, 60)
        verb = "deleted" if event.detail == "deleted" else "written"
        return EventWords(
            "▤",
            f"{key} r{event.revision}",
            visible_line(event.scope_id, 24),
            f"{verb} by {actor}",
            False,
        )
    verb = "joined" if event.kind == "joined" else "left"
    return EventWords("+" if event.kind == "joined" else "−", f"{actor} {verb}", where, "", False)
