"""The activity view: one live, newest-first stream of what happens in the file.

It renders :class:`termal_tui.views.activity.ActivityModel` and owns only its keys. It
reads through the one live source (no timer, no reader of its own): each ``changed``
event reads what is new; ``opened`` (a replaced file) reads it all again.

Dismisses with a :class:`~termal_tui.views.activity.Jump` (enter) or None.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from textual import on, work
from textual.binding import Binding
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from termal_tui.core.sanitize import visible_line
from termal_tui.core.vocabulary import counted
from termal_tui.store.errors import StoreError
from termal_tui.tui.cells import center_cells, fit, option_room
from termal_tui.tui.messages import LiveChanged
from termal_tui.tui.screens.live_list import LiveListScreen
from termal_tui.views.activity import (
    KIND_LABELS,
    KINDS,
    ActivityEvent,
    ActivityModel,
    Jump,
    event_words,
)
from termal_tui.views.live import LiveSource, Superseded

NEW_MARK = "● "
OLD_MARK = "  "
UPDATE_LIMIT = 2_000  # messages read after a change (more: the stream starts again)
DIM = "$termal-muted"


def _when(at: datetime, now: datetime) -> str:
    local = at.astimezone()
    if abs(now - local) < timedelta(hours=20):
        return local.strftime("%H:%M:%S")
    return local.strftime("%b %d %H:%M").replace(" 0", "  ")


def event_line(
    event: ActivityEvent,
    width: int,
    now: datetime,
    new: bool,
    titles: dict[str, str] | None = None,
) -> Content:
    """One line that never wraps at ``width`` cells: the mark, the time, a glyph, who
    did what, where, and the rest cut with …; an observed time says "seen"."""
    words = event_words(event, titles)
    when = _when(event.at, now)
    head = Content.assemble(
        Content.styled(NEW_MARK if new else OLD_MARK, "bold $termal-accent"),
        Content.styled(f"{when} ", DIM),
        Content.styled(f"{words.glyph} ", "bold"),
        Content.styled(words.headline, "bold"),
    )
    tail = []
    if words.where:
        tail.append(Content.styled(f" · {words.where}", DIM))
    if words.detail:
        tail.append(Content(f" · {words.detail}"))
    if words.observed:
        tail.append(Content.styled(" (seen)", "italic " + DIM))
    return fit(Content.assemble(head, *tail), width)


class EventList(OptionList):
    BINDINGS = [Binding("enter", "select", "Open")]


class ActivityScreen(LiveListScreen[Jump | None]):
    DEFAULT_CSS = """
    ActivityScreen #activity-status { height: auto; padding: 0 1; background: $panel; }
    ActivityScreen #events { height: 1fr; border: none; }
    ActivityScreen #events > .option-list--option { padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,a", "dismiss(None)", "Back"),
        Binding("f", "kind", "Kind"),
        Binding("s", "session", "Session"),
        Binding("m", "mailbox", "Mailbox"),
        Binding("c", "clear", "Clear filters", show=False),
        Binding("o", "older", "Older"),
        Binding("space", "seen", "Mark seen", show=False),
        Binding("r", "reload", "Refresh", show=False),
    ]

    NAME = "activity"
    LIST_ID = "events"
    READING = "◌ Reading the activity…"

    def __init__(self, source: LiveSource, *, page: int = 100) -> None:
        super().__init__(source)
        self.model = ActivityModel(source.clock.now, page=page)
        self._shown: list[ActivityEvent] = []

    def make_list(self) -> OptionList:
        return EventList(id=self.LIST_ID)

    def on_screen_suspend(self) -> None:
        self.model.mark_seen()  # covered (help, a tab): what was shown has been seen

    @on(LiveChanged)
    def _live(self, message: LiveChanged) -> None:
        message.stop()
        event = message.event
        if event.kind == "opened" or not self.model.loaded:
            self.reload()
        elif event.reread:
            self.refresh_stream()
        else:
            self.draw()

    # -- reading ---------------------------------------------------------------------

    @work(exclusive=True, group="activity", exit_on_error=False)
    async def reload(self) -> None:
        """Everything again (the first read, or a replaced file)."""
        try:
            snap = await self.source.read(
                lambda r: r.activity_snapshot(after_rowid=None, limit=self.model.page)
            )
        except Superseded:
            return
        except StoreError as error:
            self._problem = str(error)
            self.draw()
            return
        self._problem = ""
        self.model.load(snap.messages, snap.board, snap.participants)
        self.draw()

    @work(exclusive=True, group="activity", exit_on_error=False)
    async def refresh_stream(self) -> None:
        """What is new since the last read."""
        model = self.model
        try:
            snap = await self.source.read(
                lambda r: r.activity_snapshot(
                    after_rowid=model.message_top,
                    limit=UPDATE_LIMIT,
                    wake_window=model.wake_window(),
                )
            )
        except Superseded:
            return
        except StoreError as error:
            self._problem = str(error)
            self.draw()
            return
        self._problem = ""
        fresh = sum(1 for row in snap.messages if row.rowid > model.message_top)
        if fresh >= UPDATE_LIMIT:  # a flood: start from the newest again
            self.reload()
            return
        model.update(snap.messages, snap.board, snap.participants, snap.wake_states)
        self.draw()

    @work(exclusive=True, group="older", exit_on_error=False)
    async def action_older(self) -> None:
        if not self.model.has_older:
            self.notify("This is the start of the file's activity.", markup=False)
            return
        floor = self.model.message_floor
        try:
            rows = await self.source.read(
                lambda r: r.activity_page(before_rowid=floor, limit=self.model.page)
            )
        except (Superseded, StoreError):
            return
        if floor == self.model.message_floor:
            self.model.older(rows)
            self.draw()

    # -- drawing ---------------------------------------------------------------------

    def _status(self) -> Content:
        model = self.model
        parts = [Content.styled("Activity · ", "bold"), self.live_state()]
        new = model.new_count
        if new:
            parts.append(Content.styled(f" · {counted(new, 'new event')}", "bold $termal-accent"))
        filters = model.describe_filters()
        if filters:
            parts.append(Content.styled(f" · only {visible_line(filters, 80)}", "bold"))
        return self.with_problem(Content.assemble(*parts))

    def draw(self) -> None:
        self.query_one("#activity-status", Static).update(self._status())
        events_list = self.query_one(EventList)
        previous = self._current()
        shown = self.model.events()
        self._shown = shown
        now = self.source.clock.now()
        titles = self.model.mailbox_titles()
        # The list less its scrollbar (counted whether or not it shows yet) and padding.
        width = max(20, option_room(events_list, self))
        options: list[Option] = []
        divider_at = None
        for index, event in enumerate(shown):
            new = self.model.is_new(event)
            if divider_at is None and not new and index > 0 and self.model.is_new(shown[0]):
                divider_at = index
            line = event_line(event, width, now, new, titles)
            options.append(Option(line, id=f"e{event.serial}"))
        if divider_at is not None:
            options.insert(
                divider_at,
                Option(
                    Content.styled(center_cells("── seen before ──", width), DIM),
                    id="divider",
                    disabled=True,
                ),
            )
        if not shown:
            empty = "Nothing has happened in this file yet."
            if self.model.describe_filters():
                empty = "Nothing matches these filters (c clears them)."
            options.append(Option(Content.styled(empty, DIM), id="empty", disabled=True))
        elif self.model.has_older:
            options.append(Option(Content.styled("… older activity: o loads more", DIM), id="more"))
        with self.app.batch_update():
            events_list.clear_options()
            events_list.add_options(options)
            ids = [option.id for option in options]
            wanted = f"e{previous.serial}" if previous is not None else None
            events_list.highlighted = ids.index(wanted) if wanted in ids else 0

    def _current(self) -> ActivityEvent | None:
        events_list = self.query_one(EventList)
        at = events_list.highlighted
        if at is None or at >= events_list.option_count:
            return None
        option_id = events_list.get_option_at_index(at).id or ""
        if not option_id.startswith("e"):
            return None
        serial = int(option_id[1:])
        return next((e for e in self._shown if e.serial == serial), None)

    def on_resize(self) -> None:
        if self.model.loaded:
            self.draw()

    # -- keys ------------------------------------------------------------------------

    @on(OptionList.OptionSelected, "#events")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id == "more":
            self.action_older()
            return
        current = self._current()
        if current is not None:
            self.model.mark_seen()
            self.dismiss(current.jump)

    def action_kind(self) -> None:
        """All kinds → messages → cursors → … → all."""
        kinds = self.model.kinds
        if len(kinds) == len(KINDS):
            self.model.only_kind(KINDS[0])
        else:
            current = next(iter(kinds))
            after = KINDS.index(current) + 1
            self.model.only_kind(KINDS[after] if after < len(KINDS) else None)
        label = self.model.describe_filters() or "every kind"
        self.notify(f"Showing {label}.", markup=False, timeout=2)
        self.draw()

    def action_session(self) -> None:
        """Only the highlighted event's session (again: every session)."""
        current = self._current()
        if self.model.session_filter is not None or current is None:
            self.model.filter_session(None)
        else:
            self.model.filter_session(current.actor_id)
        self.draw()

    def action_mailbox(self) -> None:
        """Only the highlighted event's mailbox (again: every mailbox)."""
        current = self._current()
        if self.model.mailbox_filter is not None:
            self.model.filter_mailbox(None)
        elif current is not None and current.mailbox_id:
            self.model.filter_mailbox(current.mailbox_id)
        else:
            self.notify("This event is not in a mailbox.", markup=False, timeout=2)
            return
        self.draw()

    def action_clear(self) -> None:
        self.model.only_kind(None)
        self.model.filter_session(None)
        self.model.filter_mailbox(None)
        self.draw()

    def action_seen(self) -> None:
        self.model.mark_seen()
        self.draw()

    def action_reload(self) -> None:
        self.source.request_check()


__all__ = ["KIND_LABELS", "ActivityScreen", "event_line"]
