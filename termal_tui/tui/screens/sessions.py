"""The sessions view: one row per agent, most stuck first.

Renders :class:`termal_tui.views.sessions.SessionsModel` and owns only its keys; reads
through the one live source. Dismisses with the chosen session id (enter: the app shows
that agent's mailboxes) or None.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

from textual import on, work
from textual.binding import Binding
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from termal_tui.core.sanitize import visible_line
from termal_tui.core.vocabulary import age_words, counted
from termal_tui.store.errors import StoreError
from termal_tui.tui.cells import cap_cells, cells, first_fit, option_room, pad_cells
from termal_tui.tui.messages import LiveChanged
from termal_tui.tui.screens.live_list import LiveListScreen
from termal_tui.views.live import LiveSource, Superseded
from termal_tui.views.notifiers import Notifier, read_notifiers
from termal_tui.views.sessions import SPARK_HOURS, SessionRow, SessionsModel

DIM = "$termal-muted"
NAME_CELLS = 24  # a name's column: longer names are cut with …
HOOK_WINDOW = 600.0  # a hook run this recent counts as listening (as health does)


def notifier_words(notifier: Notifier | None, now: float) -> str | None:
    """Who listens for a session: its channel's holder, or its hooks; None: unknown."""
    if notifier is None:
        return None
    if notifier.channel:
        holder = notifier.holder
        if holder is not None:
            where = "remote" if holder.kind == "remote" else "local"
            return f"channel {where} pid {holder.pid}"
        return "channel"
    if notifier.hook_seen_at is not None and now - notifier.hook_seen_at <= HOOK_WINDOW:
        return f"hook {age_words(now - notifier.hook_seen_at)}"
    return "nobody listening"


def _ago(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "—"
    return age_words(max(0.0, (now - at).total_seconds()))


def session_line(row: SessionRow, width: int, now: datetime, name_cells: int = 0) -> Content:
    """One line that never wraps: the state glyph, the name, the sparkline, then what
    fits of the load, the last ack, the notifier and the last board write (in that order
    of giving way, from the end)."""
    glyph = (
        Content.styled("● ", "bold $termal-warning") if row.behind else Content.styled("✓ ", DIM)
    )
    name = cap_cells(visible_line(row.name), NAME_CELLS)
    # the names in one column: the sparklines line up
    head = Content.assemble(
        glyph, Content.styled(pad_cells(name, max(name_cells, cells(name))), "bold")
    )
    heads = [head]
    if row.name != row.session_id and width >= 90:
        sid = Content.styled(f" ({cap_cells(visible_line(row.session_id), 20)})", DIM)
        heads.insert(0, head + sid)
    load = f"{counted(row.mailboxes, 'mailbox', 'mailboxes')}"
    if row.left:
        load += f" (left {row.left:,})"
    loads = [load]
    if row.behind:
        load += f" · {row.unread:,} unread"
        loads.insert(0, load)
        if row.waiting_since is not None:  # given way whole: never "since 335 d…"
            loads.insert(0, f"{load} since {_ago(row.waiting_since, now)}")
    extras = []
    if row.last_ack is not None:
        extras.append(Content.styled(f" · ack {_ago(row.last_ack, now)} (seen)", DIM))
    if row.notifier is not None:
        style = "bold $termal-error" if row.notifier == "nobody listening" else DIM
        extras.append(Content.styled(f" · {row.notifier}", style))
    if row.last_board_write is not None:
        extras.append(Content.styled(f" · board {_ago(row.last_board_write, now)}", DIM))
    spark = Content.styled(f"  {row.sparkline()}", "$termal-accent")
    whole = Content(f" · {loads[0]}")
    return first_fit(
        width,
        *(
            Content.assemble(first, spark, whole, *extras[:keep])
            for first in heads
            for keep in range(len(extras), -1, -1)
        ),
        *(Content.assemble(head, Content(f" · {words}")) for words in loads),
    )


class SessionList(OptionList):
    BINDINGS = [Binding("enter", "select", "Mailboxes")]


class SessionsScreen(LiveListScreen[str | None]):
    DEFAULT_CSS = """
    SessionsScreen #sessions-status { height: auto; padding: 0 1; background: $panel; }
    SessionsScreen #sessions { height: 1fr; border: none; }
    SessionsScreen #sessions > .option-list--option { padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,s", "dismiss(None)", "Back"),
        Binding("r", "reload", "Refresh", show=False),
    ]

    NAME = "sessions"
    LIST_ID = "sessions"
    READING = "◌ Reading the sessions…"

    def __init__(self, source: LiveSource) -> None:
        super().__init__(source)
        self.model = SessionsModel(source.clock.now)

    def make_list(self) -> OptionList:
        return SessionList(id=self.LIST_ID)

    @on(LiveChanged)
    def _live(self, message: LiveChanged) -> None:
        message.stop()
        if message.event.reread or not self.model.loaded:
            self.reload()
        else:
            self.draw()

    @work(exclusive=True, exit_on_error=False)
    async def reload(self) -> None:
        try:
            overview = await self.source.read(lambda r: r.sessions_overview())
        except Superseded:
            return
        except StoreError as error:
            self._problem = str(error)
            self.draw()
            return
        moment = time.time()
        found = await asyncio.to_thread(read_notifiers, self.source.target, moment)
        listeners = None
        if found is not None:
            listeners = {
                session: words
                for session, notifier in found.items()
                if (words := notifier_words(notifier, moment)) is not None
            }
        self._problem = ""
        participants, loads, writes, senders = overview
        self.model.load(participants, loads, writes, senders, listeners)
        self.draw()

    def draw(self) -> None:
        state = self.live_state()
        now = self.source.clock.now()
        model = self.model
        summary = f" · {counted(len(model.rows), 'session')}"
        if model.behind_count:
            summary += f", {model.behind_count:,} behind"
        line = Content.assemble(Content.styled("Sessions · ", "bold"), state, Content(summary))
        traffic = Content.styled(f" · traffic over {SPARK_HOURS} h", DIM)
        # the traffic note is said where it fits; the bars speak for themselves
        if cells(line) + cells(traffic) <= (self.size.width or 80) - 2:
            line += traffic
        self.query_one("#sessions-status", Static).update(self.with_problem(line))
        sessions = self.query_one(SessionList)
        width = max(20, option_room(sessions, self))
        chosen = model.current()
        with self.app.batch_update():
            sessions.clear_options()
            if not model.rows:
                sessions.add_option(
                    Option(
                        Content.styled("No session takes part in a mailbox yet.", DIM),
                        disabled=True,
                    )
                )
                return
            name_cells = max(cells(cap_cells(visible_line(r.name), NAME_CELLS)) for r in model.rows)
            sessions.add_options(
                Option(session_line(row, width, now, name_cells), id=f"s{index}")
                for index, row in enumerate(model.rows)
            )
            if chosen is not None:
                model.select_session(chosen.session_id)
            sessions.highlighted = model.selected

    def on_resize(self) -> None:
        if self.model.loaded:
            self.draw()

    @on(OptionList.OptionHighlighted, "#sessions")
    def _moved(self, event: OptionList.OptionHighlighted) -> None:
        self.model.selected = event.option_index

    @on(OptionList.OptionSelected, "#sessions")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.model.selected = event.option_index
        row = self.model.current()
        if row is not None:
            self.dismiss(row.session_id)

    def action_reload(self) -> None:
        self.source.request_check()
