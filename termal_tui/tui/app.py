"""MailboxApp: the read-only Textual viewer, and ``make_app`` used by the CLI and tests.

The App holds the one live source (``views/live.py``: the reader, the file watcher, the
change checks, Live/Stale, reopening) and the index's model (``views/index.py``), manages
tabs and global keys, and routes messages: every view subscribes to the source, and the
App reads what it needs (the title's counts, tab names) from the models, never from a
widget. What the first screen does not need (the health model and screen, the palette's
provider, the help screen, the mailbox view itself when no tab is open) is imported where
it is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.command import Provider
from textual.content import Content
from textual.css.query import NoMatches

from termal_tui.core.models import MailboxSummary
from termal_tui.core.sanitize import visible_line
from termal_tui.core.vocabulary import counted
from termal_tui.store.errors import StoreError
from termal_tui.store.reader import MailboxReader
from termal_tui.tui.cells import cap_cells, wrap_cells
from termal_tui.tui.legible import legible_variables
from termal_tui.tui.messages import (
    CloseRequested,
    LiveChanged,
    OpenMailbox,
    TitleKnown,
    follow_live,
)
from termal_tui.tui.widgets.footer import FittingFooter
from termal_tui.tui.widgets.tabs import Panes, TabStrip
from termal_tui.tui.widgets.title import TitleBar
from termal_tui.views.index import IndexModel, Update
from termal_tui.views.live import Clock, LiveSource, SystemClock
from termal_tui.views.presentation import summary_title

if TYPE_CHECKING:
    from termal_tui.tui.widgets.index import MailboxIndex
    from termal_tui.tui.widgets.mailbox_view import MailboxView
    from termal_tui.views.activity import Jump
    from termal_tui.views.attention import Watch
    from termal_tui.views.config import ViewerConfig
    from termal_tui.views.findings import Thresholds

INDEX_PANE: Final = "index"  # the index's tab (its widget is #mailbox-index)
INDEX_WIDGET: Final = "mailbox-index"
DEFAULT_POLL_SECONDS: Final = 8.0
MAX_CONFIG_SHOWN: Final = 5  # config problems listed in the one notification
# A viewer never waits long for a lock: it shows Stale and tries again soon.
READER_BUSY_TIMEOUT_MS = 250
TAB_TITLE_CELLS: Final = 28  # a tab's title, cut with … (a CJK character takes two)


def _mailbox_commands() -> type[Provider]:
    """The palette's provider, imported when the palette first opens."""
    from termal_tui.tui.commands import MailboxCommands

    return MailboxCommands


@functools.lru_cache(maxsize=8)
def _legible(variables: tuple[tuple[str, str], ...]) -> dict[str, str]:
    return legible_variables(dict(variables))


class MailboxApp(App[None]):
    """Browse TermAl mailboxes without ever writing to the database."""

    CSS_PATH = "app.tcss"
    # The footer stays under a maximized widget, as Textual's Footer does.
    ALLOW_IN_MAXIMIZED_VIEW = "FittingFooter"
    TITLE = "termal-tui (read-only)"
    # One provider: the mailboxes first, then Textual's own commands (Keys, Theme, …).
    COMMANDS = {_mailbox_commands}
    PALETTE_HINT: Final = "Open a mailbox by name or id · #N jumps to a message in this tab"
    BINDINGS = [
        Binding("q", "quit", "Quit", show=False, id="quit"),  # shown by the index
        Binding("question_mark", "help", "Help", id="help"),
        Binding("left_square_bracket", "previous_tab", "Tabs", key_display="[ ]", id="prev-tab"),
        Binding("right_square_bracket", "next_tab", "Next tab", show=False, id="next-tab"),
        Binding("ctrl+right", "next_tab", "Next tab", show=False),
        Binding("ctrl+left", "previous_tab", "Prev tab", show=False),
        Binding("0", "show_index", "Index", id="index"),
        Binding("h", "health", "Health", show=False, id="health"),
        Binding("b", "board", "Board", show=False, id="board"),
        Binding("a", "activity", "Activity", show=False, id="activity"),
        Binding("s", "sessions", "Sessions", show=False, id="sessions"),
    ]

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        mailbox_id: str | None = None,
        poll_interval: float = DEFAULT_POLL_SECONDS,
        clock: Callable[[], datetime] | None = None,
        thresholds: Thresholds | None = None,
        config: ViewerConfig | None = None,
        live_clock: Clock | None = None,
        watch: bool = True,
        greeting: str | None = None,
    ) -> None:
        super().__init__()
        self.greeting = greeting  # said once at start (the demo's path, a first run)
        self.config = config  # None (tests): no file, defaults everywhere
        self.thresholds = thresholds  # None: health.py's defaults, applied where used
        # A path, or a postgresql:// URL (never shown: ``self.live.name`` is its
        # redacted form).
        self.db_path: Path | str = db_path if isinstance(db_path, str) else Path(db_path)
        self.session_id = session_id
        self.initial_mailbox = mailbox_id
        self.poll_interval = poll_interval
        self._clock = clock or (lambda: datetime.now().astimezone())
        # The one live source of this file (``live_clock``: a test's ManualClock; else
        # the event loop's timers with this app's wall clock), and the index's model.
        self.live = LiveSource(
            self.db_path,
            interval=poll_interval,
            clock=live_clock or SystemClock(self._clock),
            watch=watch,
            busy_timeout_ms=READER_BUSY_TIMEOUT_MS,
        )
        self.index_model: IndexModel | None = None
        self._panes: dict[str, str] = {}
        self._views: dict[str, MailboxView] = {}  # pane id → its view
        self._index_lock = asyncio.Lock()
        self._pane_counter = 0
        self._opened_once = False
        self._focused = True  # AppBlur/AppFocus: attention signals only while away
        self._theme_at_start = ""  # the theme set from the config at start (not a choice)
        self._watch: Watch | None = None
        self.keymap_applied: dict[str, str] = {}
        self.sub_title = self._subtitle()
        # The config's theme before the first frame: set after mounting, it restyled
        # (and parsed again) every widget of a screen already drawn once.
        self._theme_problems = self._start_theme(config) if config is not None else []

    def _start_theme(self, config: ViewerConfig) -> list[str]:
        """The remembered or configured theme; a problem as one sentence."""
        from termal_tui.views.config import remembered_theme

        theme = remembered_theme(config.theme) or config.theme
        if not theme:
            return []
        if theme not in self.available_themes:
            return [f"There is no theme {theme!r}; the default theme stays."]
        self.theme = theme
        return []

    def get_css_variables(self) -> dict[str, str]:
        """The theme's variables and the viewer's own colours derived from them (see
        :mod:`termal_tui.tui.legible`); a theme that names one of those keeps its own."""
        variables = super().get_css_variables()
        combined = {**_legible(tuple(variables.items())), **variables}
        self.theme_variables = combined
        return combined

    def _subtitle(self) -> str:
        viewer = f" · as {visible_line(self.session_id, 40)}" if self.session_id else ""
        snapshot = " · snapshot" if self.live.status.snapshot else ""
        return f"{visible_line(self.live.name, 60)}{viewer}{snapshot}"

    @property
    def reader(self) -> MailboxReader:
        reader = self.live.reader
        assert reader is not None, "the reader is opened by the live source"
        return reader

    def live_source(self) -> LiveSource:
        """The one live source every view subscribes to."""
        return self.live

    @property
    def summaries(self) -> list[MailboxSummary]:
        return self.index_model.summaries if self.index_model is not None else []

    def now_text(self) -> str:
        return self._clock().strftime("%H:%M:%S")

    def compose(self) -> ComposeResult:
        # With --mailbox on a file that is there, its tab is in the first frame (drawn
        # before the reader opens: "◌ Loading", then the page), not added to a drawn index.
        first = self._first_pane() if self.initial_mailbox else None
        yield TitleBar()
        tabs = [(INDEX_PANE, Content("Mailboxes"))]
        if first is not None:
            tabs.append((first.id or "", self._tab_title(first.mailbox_id)))
        yield TabStrip(*tabs, active=tabs[-1][0], id="tabs")
        with Panes(id="panes"):
            if first is None:  # else built behind the tab once its page is drawn
                from termal_tui.tui.widgets.index import MailboxIndex

                yield MailboxIndex(id=INDEX_WIDGET)
            else:
                yield first
        yield FittingFooter()  # compact; leaves out the least needed keys when narrow

    def _first_pane(self) -> MailboxView | None:
        """The --mailbox tab, built before the file is read (None when there is no file
        yet: the index says it is waiting, and the tab opens when the file appears)."""
        assert self.initial_mailbox is not None
        if not os.path.lexists(self.db_path):
            return None
        return self._new_pane(self.initial_mailbox)

    async def on_load(self) -> None:
        """The file starts opening before anything is composed: its connect and checks
        run on the reader's thread while the first frame is built and drawn."""
        model = IndexModel(
            self.live,
            session_id=self.session_id,
            thresholds=self.thresholds,
            deferred=bool(self.initial_mailbox),  # the tab's first page comes first
        )
        self.index_model = model
        model.listeners.append(self._index_update)
        follow_live(self, self.live)
        await self.live.start()

    async def on_mount(self) -> None:
        # The index's status line says "Loading mailboxes…" (no LoadingIndicator: it
        # would animate for nothing, and it hides the index until the cards arrive).
        self._show(self.active_pane)
        self.call_later(self._focus_active)
        if self.config is not None:
            self._apply_config(self.config)
        if self.index_model is not None:
            for index in self.query(f"#{INDEX_WIDGET}"):  # composed (no --mailbox tab)
                cast("MailboxIndex", index).attach(self.index_model)
        if self.greeting:
            self.notify(greeting_lines(self.greeting, self.size.width), timeout=30, markup=False)

    # ---------------------------------------------------------------- config

    def _apply_config(self, config: ViewerConfig) -> None:
        """Theme, keymap and attention from the config file; each problem one sentence
        in a notification (the defaults stay), never a traceback."""
        from termal_tui.views.config import checked_keymap

        problems = [*config.problems, *self._theme_problems]
        # Only a theme chosen from now on is remembered (the signal for the one just
        # set may still be on its way: the theme is compared when it arrives).
        self._theme_at_start = self.theme
        self.theme_changed_signal.subscribe(self, self._theme_chosen)
        if config.keys:
            keymap, key_problems = checked_keymap(config.keys, self.binding_ids())
            problems.extend(key_problems)
            if keymap:
                self.keymap_applied = keymap
                self.set_keymap(keymap)
        if config.attention.enabled:
            from termal_tui.views.attention import Watch

            self._watch = Watch(config.attention.watch, config.attention.every)
        if problems:  # one notification, however many: several would push off the screen
            shown = [f"• {visible_line(problem, 400)}" for problem in problems[:MAX_CONFIG_SHOWN]]
            if len(problems) > MAX_CONFIG_SHOWN:
                shown.append(f"… and {len(problems) - MAX_CONFIG_SHOWN:,} more")
            self.notify(
                "\n".join(shown) if len(problems) > 1 else visible_line(problems[0], 400),
                title=f"Config: {counted(len(problems), 'problem')} (defaults kept there)",
                severity="warning",
                markup=False,
                timeout=20,
            )

    def binding_ids(self) -> dict[str, tuple[str, str]]:
        """Binding id → (scope, default keys) for every binding a config may remap."""
        from termal_tui.tui.widgets.mailbox_view import MailboxView

        ids: dict[str, tuple[str, str]] = {}
        from termal_tui.tui.widgets.index import MailboxIndex

        for scope, owner in (("app", MailboxApp), ("index", MailboxIndex), ("tab", MailboxView)):
            for binding in owner.BINDINGS:
                if isinstance(binding, Binding) and binding.id:
                    ids.setdefault(binding.id, (scope, binding.key))
        return ids

    def _theme_chosen(self, theme: object) -> None:
        from termal_tui.views.config import remember_theme

        if self.theme == self._theme_at_start:
            return  # the config's own theme (or the last remembered), not a new choice
        self._theme_at_start = self.theme
        problem = remember_theme(self.theme, self.config.theme if self.config else None)
        if problem:
            self.notify(problem, severity="warning", markup=False)

    def on_app_blur(self) -> None:
        self._focused = False

    def on_app_focus(self) -> None:
        self._focused = True

    def write_terminal(self, text: str) -> None:
        """Bytes straight to the terminal (title, bell, desktop notifications)."""
        driver = self._driver
        if driver is not None and text:
            driver.write(text)
            driver.flush()

    async def on_unmount(self) -> None:
        if self.index_model is not None:
            # Widgets are being taken down: nothing the closing model or source says may
            # reach them (a status update then met an index with no status line).
            self.index_model.listeners.clear()
            self.index_model.close()
        await self.live.close()

    # ---------------------------------------------------------------- the file

    @on(LiveChanged)
    def _live_changed(self, message: LiveChanged) -> None:
        """A file was opened (the first, or another at the path): a snapshot is said, the
        --mailbox tab opens, a replacement is announced."""
        event = message.event
        if event.kind != "opened":
            return
        self.sub_title = self._subtitle()
        if not self._opened_once:
            self._opened_once = True
            if event.status.snapshot is not None:
                self.notify(
                    visible_line(event.status.snapshot, 300), title="Snapshot", markup=False
                )
            if self.initial_mailbox:
                # The tab's first page comes first; the index (which counts) follows it.
                self.open_mailbox(self.initial_mailbox)
            return
        if self.live.url is not None:
            return  # a server has no file to replace: this was a reconnection
        self.notify(
            f"{visible_line(str(self.db_path), 200)} was replaced by another file: "
            "showing the new one.",
            title="Database replaced",
            markup=False,
        )

    # ------------------------------------------------------------------ tabs

    @on(OpenMailbox)
    def _open_requested(self, event: OpenMailbox) -> None:
        self.open_mailbox(event.mailbox_id)

    def open_mailbox(self, mailbox_id: str, at_sequence: int | None = None) -> None:
        """Open the mailbox's tab, or focus it if it is already open (never a copy);
        with ``at_sequence``, select that message once the tab has loaded."""
        if self.live.reader is None:
            return
        pane_id = self._panes.get(mailbox_id)
        if pane_id is not None:
            self.activate(pane_id)
            if at_sequence is not None:
                view = self.active_view()
                if view is not None:
                    view.request_jump(at_sequence)
            return
        view = self._new_pane(mailbox_id, at_sequence)
        pane_id = view.id or ""
        self.query_one("#tabs", TabStrip).add_tab(pane_id, self._tab_title(mailbox_id))
        view.display = False  # shown by activate, with the others hidden
        self.query_one("#panes", Panes).mount(view)
        self.activate(pane_id)

    def _new_pane(self, mailbox_id: str, at_sequence: int | None = None) -> MailboxView:
        """A tab for ``mailbox_id`` (its view reads when the source has a file open)."""
        from termal_tui.tui.widgets.mailbox_view import MailboxView

        self._pane_counter += 1
        pane_id = f"mailbox-pane-{self._pane_counter}"
        self._panes[mailbox_id] = pane_id
        view = MailboxView(
            mailbox_id,
            self.live,
            session_id=self.session_id,
            export_dir=self.config.export_dir if self.config is not None else None,
            id=pane_id,
        )
        if at_sequence is not None:
            view.request_jump(at_sequence)
        self._views[pane_id] = view
        return view

    def _tab_title(self, mailbox_id: str) -> Content:
        for summary in self.summaries:
            if summary.id == mailbox_id:
                return Content(cap_cells(visible_line(summary_title(summary)), TAB_TITLE_CELLS))
        return Content(visible_line(mailbox_id.removeprefix("mailbox-")[:8]))

    def _label_tab(self, mailbox_id: str, title: str) -> None:
        pane_id = self._panes.get(mailbox_id)
        if pane_id is None:
            return
        with contextlib.suppress(NoMatches):  # shutting down
            label = Content(cap_cells(visible_line(title), TAB_TITLE_CELLS))
            self.query_one("#tabs", TabStrip).relabel(pane_id, label)

    @on(TitleKnown)
    def _title_known(self, event: TitleKnown) -> None:
        self._label_tab(event.mailbox_id, event.title)
        first = self.initial_mailbox and event.mailbox_id == self.initial_mailbox
        if first and self.index_model is not None:
            self.index_model.release()  # after the first page, never before
            self.call_after_refresh(self._build_index_behind)  # once the page is drawn

    async def _build_index_behind(self) -> None:
        with contextlib.suppress(NoMatches):  # shutting down
            await self.build_index()

    async def build_index(self) -> MailboxIndex:
        """The index's widget: composed at start, or (when the first frame shows a
        --mailbox tab) built behind that tab once its page is drawn, or when the index
        is shown first, whichever comes first."""
        async with self._index_lock:
            from termal_tui.tui.widgets.index import MailboxIndex

            for index in self.query(MailboxIndex).results(MailboxIndex):
                return index
            index = MailboxIndex(id=INDEX_WIDGET)
            index.display = self.active_pane == INDEX_PANE
            await self.query_one("#panes", Panes).mount(index)
            if self.index_model is not None:
                index.attach(self.index_model)
            return index

    def _index_update(self, update: Update) -> None:
        """The index's model read something: name tabs that were opened before the index
        knew their participants; the terminal's title carries the counts and the stuck
        hand-offs (time alone can make one stuck); mail while away is signalled (opt-in)."""
        model = self.index_model
        if model is None or update not in ("cards", "markers", "totals"):
            return
        if update == "cards":
            for summary in model.summaries:
                if summary.id in self._panes:
                    self._label_tab(summary.id, summary_title(summary))
        self.signal_changes(model.summaries, self.stuck_pairs())

    def on_key(self, event: events.Key) -> None:
        """A printable key that bubbled up here while a text box has the focus was typed
        for it (a box consumes its own keys): a terminal delivers "/docs" in one read,
        and each key goes to what had the focus when it arrived, before ``/`` moved it
        to the index filter or the search screen's query."""
        from textual.widgets import Input

        box = self.screen.focused
        typed = event.character if event.is_printable else None
        if typed and isinstance(box, Input):
            event.stop()
            box.insert_text_at_cursor(typed)

    def stuck_pairs(self) -> list[tuple[str, str]]:
        """(mailbox id, problem) for each card the health check marked."""
        return self.index_model.stuck_pairs() if self.index_model is not None else []

    def signal_changes(self, summaries: list[MailboxSummary], stuck: list[tuple[str, str]]) -> None:
        from termal_tui.views.attention import signal_bytes, window_title

        model = self.index_model
        more = model is not None and model.more
        if model is not None and summaries is model.summaries:
            unread = model.unread  # a paged index: the counted total
        else:
            unread = sum(summary.unread_count for summary in summaries)
        self.write_terminal(window_title(unread, len(stuck), more=more))
        if self._watch is None or self.config is None:
            return
        latest = {s.id: (s.latest_sequence, summary_title(s)) for s in summaries}
        news = self._watch.changes(latest, stuck)
        if news and not self._focused and self._watch.due():
            attention = self.config.attention
            self.write_terminal(signal_bytes(news, bell=attention.bell, desktop=attention.desktop))

    @on(CloseRequested)
    async def _close_requested(self, event: CloseRequested) -> None:
        pane_id = self._panes.pop(event.mailbox_id, None)
        if pane_id is None:
            return
        view = self._views.pop(pane_id, None)
        active = self.query_one("#tabs", TabStrip).remove_tab(pane_id)
        if view is not None:
            await view.remove()
        self.activate(active, force=True)

    @property
    def active_pane(self) -> str:
        """The active tab's id: INDEX_PANE, or a mailbox tab's (its view's id)."""
        for strip in self.query("#tabs").results(TabStrip):
            return strip.active
        return ""  # shutting down

    def active_view(self) -> MailboxView | None:
        """The mailbox view of the active tab (None on the index)."""
        pane_id = self.active_pane
        if pane_id == INDEX_PANE or not pane_id:
            return None
        view = self._views.get(pane_id)
        return view if view is not None and view.is_attached else None

    def activate(self, pane_id: str, *, force: bool = False) -> None:
        """Show the tab ``pane_id`` (INDEX_PANE or a mailbox tab's id); the keys go to
        what it shows. (Each widget pauses and resumes its own timer when it is hidden
        and shown.)"""
        strip = self.query_one("#tabs", TabStrip)
        if pane_id not in strip.pane_ids or (pane_id == strip.active and not force):
            return
        strip.activate(pane_id)
        self._show(pane_id)
        self.refresh_bindings()
        self.call_later(self._focus_active)

    def _show(self, pane_id: str) -> None:
        self.query_one("#panes", Panes).show(INDEX_WIDGET if pane_id == INDEX_PANE else pane_id)

    @on(TabStrip.Activated)
    def _tab_chosen(self, event: TabStrip.Activated) -> None:
        self.activate(event.pane_id)

    async def _focus_active(self) -> None:
        """Keys go to what the active tab shows (the tab active now: a queued call may
        follow another choice)."""
        pane_id = self.active_pane
        if pane_id == INDEX_PANE:
            with contextlib.suppress(NoMatches):  # shutting down
                index = await self.build_index()
                index.focus_cards()
        elif pane_id:
            view = self.active_view()
            if view is not None:
                view.focus_thread()  # safe before the view has built its children

    def _cycle(self, step: int) -> None:
        order = self.query_one("#tabs", TabStrip).pane_ids
        if len(order) < 2:
            return
        current = order.index(self.active_pane) if self.active_pane in order else 0
        self.activate(order[(current + step) % len(order)])

    def action_next_tab(self) -> None:
        self._cycle(1)

    def action_previous_tab(self) -> None:
        self._cycle(-1)

    def action_show_index(self) -> None:
        self.activate(INDEX_PANE)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        tab_action = action in ("next_tab", "previous_tab", "show_index")
        stack = self.screen_stack
        if tab_action and stack and stack[-1] is not stack[0]:
            return False  # the tabs are not on screen (the health view, help, a body)
        if action in ("next_tab", "previous_tab"):
            return len(self._panes) > 0
        if action == "show_index":
            return self.active_pane != INDEX_PANE
        return True

    # --------------------------------------------------------------- actions

    def action_command_palette(self) -> None:
        """The palette, with a hint for ``#N`` (App's own, otherwise)."""
        from textual.command import CommandPalette

        if self.use_command_palette and not CommandPalette.is_open(self):  # type: ignore[arg-type]
            self.push_screen(CommandPalette(id="--command-palette", placeholder=self.PALETTE_HINT))

    def action_help(self) -> None:
        from termal_tui.tui.screens.help import HelpScreen

        shown = {
            binding_id: ",".join(self.get_key_display(Binding(key, "")) for key in keys.split(","))
            for binding_id, keys in self.keymap_applied.items()
        }
        self.push_screen(HelpScreen(shown))

    def action_health(self) -> None:
        """Stuck hand-offs across every mailbox; choosing one opens it at the message."""
        from termal_tui.tui.screens.health import HealthScreen

        def chosen(result: tuple[str, int] | None) -> None:
            if result is not None:
                self.open_mailbox(result[0], at_sequence=result[1])

        self.push_screen(HealthScreen(self.live, self.thresholds), chosen)

    def action_board(self) -> None:
        """The coordination board (projects, keys, values, history), read-only and live."""
        from termal_tui.tui.screens.board import BoardScreen

        if any(isinstance(screen, BoardScreen) for screen in self.screen_stack):
            return  # already open (the palette offers it there too)
        self.push_screen(BoardScreen(self.live))

    def action_activity(self) -> None:
        """What happens anywhere in the file, newest first; enter jumps to it."""
        from termal_tui.tui.screens.activity import ActivityScreen

        if any(isinstance(screen, ActivityScreen) for screen in self.screen_stack):
            return
        self.push_screen(ActivityScreen(self.live), self._jump)

    def action_sessions(self) -> None:
        """One row per agent; enter shows its mailboxes (the index filtered to it)."""
        from termal_tui.tui.screens.sessions import SessionsScreen

        if any(isinstance(screen, SessionsScreen) for screen in self.screen_stack):
            return

        async def chosen(session_id: str | None) -> None:
            if session_id is None:
                return
            self.action_show_index()
            index = await self.build_index()
            index.filter_to(session_id)

        self.push_screen(SessionsScreen(self.live), chosen)

    def _jump(self, jump: Jump | None) -> None:
        """Enter on an activity event: the message, the mailbox, or the board key."""
        if jump is None:
            return
        if jump.kind == "message":
            self.open_mailbox(jump.mailbox_id, at_sequence=jump.sequence)
        elif jump.kind == "mailbox":
            self.open_mailbox(jump.mailbox_id)
        else:
            self._open_key(jump.scope_id, jump.key)

    @work(exclusive=True, group="jump", exit_on_error=False)
    async def _open_key(self, scope_id: str, key: str) -> None:
        from termal_tui.tui.screens.board import BoardKeyScreen
        from termal_tui.views.board_values import project_names

        try:
            found = await self.live.read_board(lambda board: board.get(scope_id, key))
        except StoreError as error:
            self.notify(f"That key cannot be shown: {visible_line(str(error), 160)}", markup=False)
            return
        names = await asyncio.to_thread(project_names, self.live.target)
        name = names.get(scope_id, scope_id)
        self.push_screen(BoardKeyScreen(self.live, scope_id, name, found.head))


def make_app(
    db_path: str | os.PathLike[str],
    *,
    session_id: str | None = None,
    mailbox_id: str | None = None,
    poll_interval: float = DEFAULT_POLL_SECONDS,
    clock: Callable[[], datetime] | None = None,
    thresholds: Thresholds | None = None,
    config: ViewerConfig | None = None,
    live_clock: Clock | None = None,
    watch: bool = True,
    greeting: str | None = None,
) -> MailboxApp:
    """Build the viewer for the CLI and for tests (``config``: the config file's theme,
    keys, export directory and attention; the caller has merged interval and
    thresholds with the command line; ``live_clock``: a test's ManualClock that drives
    every refresh; ``watch``: file-change notifications, else the poll alone)."""
    return MailboxApp(
        db_path,
        session_id=session_id,
        mailbox_id=mailbox_id,
        poll_interval=poll_interval,
        clock=clock,
        thresholds=thresholds,
        config=config,
        live_clock=live_clock,
        watch=watch,
        greeting=greeting,
    )


# Textual's toast: 60 cells wide at most, half the screen, less its padding and border.
TOAST_CELLS: Final = 60


def greeting_lines(greeting: str, screen_width: int) -> str:
    """The greeting laid out for its toast on a screen ``screen_width`` cells wide: lines
    broken at spaces, and a path between two of its folders (the toast would cut a file
    name in two)."""
    room = max(16, min(TOAST_CELLS, (screen_width or 80) // 2) - 4)
    return "\n".join(
        line for paragraph in greeting.split("\n") for line in wrap_cells(paragraph, room, "/")
    )
