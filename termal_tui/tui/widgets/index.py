"""The mailbox index: compact two-line cards, newest activity first, live.

The widget renders :class:`~termal_tui.views.index.IndexModel` (the cards, pages,
filter, totals, markers and status line, all decided there, fed by the one live source)
and owns only its keys: ``/`` filter, escape, ``r`` refresh, enter opens a card.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from termal_tui.core.models import MailboxSummary
from termal_tui.core.sanitize import visible_line
from termal_tui.core.vocabulary import Ages
from termal_tui.tui.cells import option_room
from termal_tui.tui.messages import OpenMailbox
from termal_tui.tui.render import card
from termal_tui.views.index import STATE_LABELS, IndexModel, StatusLine, Update

STATE_STYLES = {
    "live": "bold $termal-success",
    "paused": "bold $termal-warning",
    "snapshot": "bold $termal-warning",
    "stale": "bold $termal-error",
    "missing": "bold $termal-warning",
    "loading": "",
}
WAITING = (
    "No database here yet. It appears when an agent sends its first message (connect "
    "agents with `termal-tui setup`); this view shows it the moment it does."
)


class ScrolledNearEnd(Message):
    """The cards were scrolled (wheel, scrollbar) to within a screenful of the end."""


class CardList(OptionList):
    """The index's cards; enter opens (shown in the footer)."""

    BINDINGS = [Binding("enter", "select", "Open")]

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value > old_value and new_value >= self.max_scroll_y - self.size.height:
            self.post_message(ScrolledNearEnd())


def status_content(line: StatusLine) -> Content:
    """The status line's parts, styled: the state, the time and counts, the reason."""
    if line.state == "loading":
        return Content(line.text)
    label = Content.styled(STATE_LABELS[line.state], STATE_STYLES[line.state])
    if not line.text:  # nothing read yet: the state and why
        if not line.reason:
            return label
        return Content.assemble(
            label, " ", Content.styled(visible_line(line.reason, 300), "$termal-error")
        )
    status = Content.assemble(label, Content.styled(f" {line.text}", "$termal-muted"))
    if line.reason:
        status += Content("\n") + Content.styled(visible_line(line.reason, 300), "$termal-error")
    return status


# A tab's keys pressed on the index: what they do, and where (one notification each).
TAB_KEY_WORDS: Final = {
    "older": "loads older messages",
    "full_body": "shows the highlighted message's whole body",
    "show_new": "brings announced new messages in",
    "close": "closes the tab",
    "copy_body": "copies the highlighted message's body",
    "copy_id": "copies the highlighted message's id",
    "export": "exports the mailbox to a file",
    "hidden_rows": "shows the review results a tab hides",
}


@dataclass
class IndexNews(Message):
    """What changed in the index's model (see :data:`~termal_tui.views.index.Update`)."""

    update: Update


class MailboxIndex(Vertical, can_focus=True):
    """Cards for every visible mailbox. Selecting one posts :class:`OpenMailbox`.

    Focusable itself, so that with no cards (an empty database) its keys still work.
    """

    DEFAULT_CSS = """
    MailboxIndex #index-status { height: auto; max-height: 4; padding: 0 1; color: $termal-muted; }
    MailboxIndex #index-empty { padding: 1 2; display: none; }
    MailboxIndex.-empty #index-empty { display: block; }
    MailboxIndex.-empty #cards { display: none; }
    MailboxIndex #cards { height: 1fr; border: none; }
    MailboxIndex #cards > .option-list--option { padding: 0 1; }
    MailboxIndex #index-filter { margin: 0 1; }
    MailboxIndex.-none #index-filter { display: none; }
    """
    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter"),  # offered while filtering
        Binding("h", "app.health", "Health"),
        Binding("b", "app.board", "Board", id="board"),  # the app's id: one keymap for both
        Binding("a", "app.activity", "Activity", show=False, id="activity"),
        Binding("s", "app.sessions", "Sessions", show=False, id="sessions"),
        Binding("r", "refresh", "Refresh"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.model: IndexModel | None = None
        self.visible_tab = False  # set by Show / Hide
        self._width = 0
        self._focused_once = False
        self.ages = Ages()  # the age each card was drawn with
        self._now: datetime | None = None  # the moment the cards on screen are drawn at

    # What the model holds, for readers of the widget (tests): nothing is decided here.
    @property
    def summaries(self) -> list[MailboxSummary]:
        return self.model.summaries if self.model is not None else []

    @property
    def problems(self) -> dict[str, str]:
        return self.model.problems if self.model is not None else {}

    @property
    def more(self) -> bool:
        return self.model is not None and self.model.more

    @property
    def totals(self) -> tuple[int, int] | None:
        return self.model.totals if self.model is not None else None

    @property
    def matches(self) -> list[MailboxSummary] | None:
        return self.model.matches if self.model is not None else None

    @property
    def match_count(self) -> int | None:
        return self.model.match_count if self.model is not None else None

    @property
    def filter_text(self) -> str:
        return self.model.filter_text if self.model is not None else ""

    def now(self) -> datetime:
        """The one moment the cards on screen are drawn at: taken at each tick or full
        draw, kept for the cards drawn in between (a page appended, a card redrawn)."""
        assert self.model is not None
        if self._now is None:
            self._now = self.model.clock.now()
        return self._now

    def compose(self) -> ComposeResult:
        yield Static(Content("Loading mailboxes…"), id="index-status")
        filter_box = Input(placeholder="/ filter by participant", id="index-filter", compact=True)
        filter_box.can_focus = False  # focused only by / (never takes ordinary keys)
        yield filter_box
        yield Static(
            Content(
                "No mailboxes yet.\n\nAgents have not sent each other any visible messages in "
                "this database. When they do, their mailboxes appear here (press r to refresh)."
            ),
            id="index-empty",
        )
        yield CardList(id="cards")

    def attach(self, model: IndexModel) -> None:
        """Render ``model`` from now on (its updates arrive on the event loop)."""
        self.model = model
        model.listeners.append(self._news)
        model.set_visible(self._displayed())
        if model.loaded:  # read before this widget was built (behind a tab, or early)
            self._update("cards")
        self._update("status")

    def on_unmount(self) -> None:
        if self.model is not None and self._news in self.model.listeners:
            self.model.listeners.remove(self._news)

    def _news(self, update: Update) -> None:
        """The model's news, through this widget's own queue: a widget being taken down
        (its queue closed, its children already gone) gets none."""
        self.post_message(IndexNews(update))

    @on(IndexNews)
    def _on_news(self, message: IndexNews) -> None:
        message.stop()
        self._update(message.update)

    def on_show(self) -> None:
        """Shown (laid out and drawn): a commit held back behind a tab is read now."""
        self.visible_tab = True
        if self.summaries and not self._focused_once and self._displayed():
            self._focused_once = True  # cards drawn while hidden: keys to them now
            self.focus_cards()
        if self.model is not None:
            self.model.set_visible(True)
            self.tick_ages()

    def on_hide(self) -> None:
        self.visible_tab = False
        if self.model is not None:
            self.model.set_visible(False)

    def _displayed(self) -> bool:
        """Shown now: Show/Hide arrive after the next layout, ``display`` changes at once
        when another tab is chosen."""
        return self.visible_tab and all(
            node.display for node in self.ancestors_with_self if isinstance(node, Widget)
        )

    def focus_cards(self) -> None:
        if self.summaries:
            self.query_one("#cards", OptionList).focus()
        else:
            self.focus()

    # ------------------------------------------------------------ the model's news

    def _update(self, update: Update) -> None:
        if not self.is_attached or self.model is None:
            return
        if update in ("cards", "matches", "markers"):
            if update == "cards" and not self.model.summaries and self.model.empty_reason:
                self.query_one("#index-empty", Static).update(Content(self.model.empty_reason))
            if self.model.loaded:
                self.show()
        elif update in ("appended", "matches-appended"):
            self._append(self.model.appended, update == "appended")
        else:  # totals, status
            if update == "status" and self.visible_tab:
                self.tick_ages()
            self.set_status()

    # ------------------------------------------------------------ keys

    def action_refresh(self) -> None:
        if self.model is not None:
            self.model.request_refresh()

    def tab_key_hint(self, key: str) -> str:
        """What a tab's key does and where, when it is not one of the index's own keys
        (the config's keymap applied); "" for any other key."""
        from termal_tui.tui.widgets.mailbox_view import MailboxView

        app = self.app
        keymap: dict[str, str] = getattr(app, "keymap_applied", {})

        def keys_of(binding: Binding) -> list[str]:
            bound = keymap.get(binding.id, binding.key) if binding.id else binding.key
            return [k.strip() for k in bound.split(",")]

        here = {
            k
            for owner in (MailboxIndex, type(app))
            for binding in owner.BINDINGS
            if isinstance(binding, Binding)
            for k in keys_of(binding)
        }
        if key in here:
            return ""
        for binding in MailboxView.BINDINGS:
            if not isinstance(binding, Binding) or binding.action not in TAB_KEY_WORDS:
                continue
            if key in keys_of(binding):
                shown = app.get_key_display(Binding(key, ""))
                return (
                    f"{shown} {TAB_KEY_WORDS[binding.action]} in a mailbox tab: "
                    "open one with enter."
                )
        return ""

    def on_key(self, event: events.Key) -> None:
        """A tab's key on the index does nothing there: say what it does and where."""
        if isinstance(self.app.focused, Input):
            return  # typing a filter
        hint = self.tab_key_hint(event.key)
        if hint:
            event.stop()
            self.app.notify(hint, markup=False, timeout=4)

    def action_filter(self) -> None:
        """``/``: the filter box takes the keys at once (``set_focus``, not ``focus``,
        which waits for the queue: "/docs" typed fast would give "docs" to the cards)."""
        box = self.query_one("#index-filter", Input)
        box.can_focus = True
        self.screen.set_focus(box)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":  # offered while typing a filter or one applies
            box = self.query_one("#index-filter", Input)
            return bool(self.filter_text) or box.has_focus
        return True

    def filter_to(self, text: str) -> None:
        """Show only the cards matching ``text`` (the sessions view's enter: one agent's
        mailboxes), as if typed into the filter; escape clears it."""
        box = self.query_one("#index-filter", Input)
        box.value = text  # Input.Changed applies it
        box.can_focus = False
        self.focus_cards()

    def action_clear_filter(self) -> None:
        """Escape: the filter emptied and left (the cards get the keys)."""
        box = self.query_one("#index-filter", Input)
        was_filtering = bool(self.filter_text)
        box.value = ""
        self._set_filter("")
        box.can_focus = False
        self.focus_cards()
        if was_filtering and self.summaries:
            self.show()

    @on(Input.Changed, "#index-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._set_filter(event.value)
        if self.summaries and self.matches is None:
            self.show()

    def _set_filter(self, text: str) -> None:
        if self.model is not None and self.model.set_filter(text):
            self.refresh_bindings()  # escape clears it: offered while a filter applies

    @on(Input.Submitted, "#index-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#index-filter", Input).can_focus = False
        self.focus_cards()

    @on(OptionList.OptionHighlighted, "#cards")
    def _near_end(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if self.model is not None and self.model.wants_more(
            event.option_index, event.option_list.option_count
        ):
            self.model.more_cards()

    @on(ScrolledNearEnd)
    def _scrolled_near_end(self, event: ScrolledNearEnd) -> None:
        event.stop()
        if self.model is not None:
            self.model.more_cards()

    # ------------------------------------------------------------ rendering

    def _append(self, fresh: list[MailboxSummary], cards: bool) -> None:
        """One more page at the end (those already shown are not rebuilt)."""
        assert self.model is not None
        if cards:
            shown = (
                [s for s in fresh if self.model.matches_filter(s)] if self.matches is None else []
            )
        else:
            shown = fresh
        if shown:
            width = self._width or self._card_width()
            self._now = None  # the new cards, and those above, at one new moment
            self._redraw_aged()
            now = self.now()
            self.query_one("#cards", OptionList).add_options(
                [Option(self._card(s, width, now), id=s.id) for s in shown]
            )
        self.set_status()

    def set_status(self) -> None:
        if self.model is None:
            return
        line = self.model.status()
        if line.state == "missing" and not self.model.loaded:
            self.query_one("#index-empty", Static).update(Content(WAITING))
            self.set_class(True, "-empty")
            self.set_class(True, "-none")
        self.query_one("#index-status", Static).update(status_content(line))

    def show(self) -> None:
        assert self.model is not None
        cards = self.query_one("#cards", OptionList)
        highlighted = cards.highlighted_option.id if cards.highlighted_option else None
        summaries = self.model.summaries
        width = self._card_width()
        self._width = width
        shown = self.model.shown()
        self._now = None  # every card drawn again: at a new moment
        now = self.now()
        self.ages.forget()
        with self.app.batch_update():
            cards.clear_options()
            cards.add_options([Option(self._card(s, width, now), id=s.id) for s in shown])
            if highlighted is not None and any(s.id == highlighted for s in shown):
                cards.highlighted = cards.get_option_index(highlighted)
            elif shown:
                cards.highlighted = 0
            self.set_class(not summaries, "-empty")
            # Nothing at all to filter: no filter box (it would take the keys).
            self.set_class(not summaries, "-none")
            typing = self.query_one("#index-filter").has_focus
            # Focus only what is shown: focusing into a hidden tab would switch to it.
            on_screen = self._displayed()
            if on_screen and not typing and not self._focused_once:
                self._focused_once = True  # the first load: keys go to the cards
                self.focus_cards()
            elif not summaries and on_screen and not typing:
                self.focus()
            elif summaries and on_screen and self.app.focused is self:
                cards.focus()
            self.set_status()

    def _card(self, summary: MailboxSummary, width: int, now: datetime) -> Content:
        stamp = summary.latest_message_at
        age = self.ages.shown(summary.id, stamp, now) if stamp else None
        return card(summary, width, self.problems.get(summary.id), now, age=age)

    def tick_ages(self) -> None:
        """Redraw the cards whose age reads differently now (nothing is read)."""
        self._now = None
        self._redraw_aged()

    def _redraw_aged(self) -> None:
        shown = self.matches if self.matches is not None else self.summaries
        if not shown or not self._width:
            return
        now = self.now()
        by_id = {s.id: s for s in shown if s.latest_message_at}
        stale = self.ages.changed({key: s.latest_message_at or "" for key, s in by_id.items()}, now)
        if stale:
            cards = self.query_one("#cards", OptionList)
            with self.app.batch_update():
                for key in stale:
                    cards.replace_option_prompt(key, self._card(by_id[key], self._width, now))

    def _card_width(self) -> int:
        """The cells a card may use: the card list's real width less its option padding
        and its scrollbar (counted whether or not it shows yet: the cards that follow
        may bring it, and every card keeps its two lines either way)."""
        return max(20, option_room(self.query_one("#cards", OptionList), self))

    def on_resize(self) -> None:
        if self.summaries and self._card_width() != self._width:
            self.show()

    @on(OptionList.OptionSelected, "#cards")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(OpenMailbox(event.option.id))
