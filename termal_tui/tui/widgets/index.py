"""The mailbox index: notification cards, newest activity first."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from termal_tui.models import MailboxSummary
from termal_tui.tui.messages import OpenMailbox
from termal_tui.tui.render import card


class MailboxIndex(Vertical):
    """Cards for every visible mailbox. Selecting one posts :class:`OpenMailbox`."""

    DEFAULT_CSS = """
    MailboxIndex #index-status { height: 1; padding: 0 1; color: $text-muted; }
    MailboxIndex #index-empty { padding: 1 2; display: none; }
    MailboxIndex.-empty #index-empty { display: block; }
    MailboxIndex.-empty #cards { display: none; }
    MailboxIndex #cards { height: 1fr; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.summaries: list[MailboxSummary] = []

    def compose(self) -> ComposeResult:
        yield Static(Content("Loading mailboxes…"), id="index-status")
        yield Static(
            Content(
                "No mailboxes yet.\n\nAgents have not sent each other any visible messages in "
                "this database. When they do, their mailboxes appear here (press r to refresh)."
            ),
            id="index-empty",
        )
        yield OptionList(id="cards")

    def show(self, summaries: list[MailboxSummary], status: Content) -> None:
        cards = self.query_one("#cards", OptionList)
        highlighted = cards.highlighted_option.id if cards.highlighted_option else None
        self.summaries = summaries
        with self.app.batch_update():
            cards.clear_options()
            options: list[Option | None] = []
            for summary in summaries:
                if options:
                    options.append(None)  # a separator line between cards
                options.append(Option(card(summary), id=summary.id))
            cards.add_options(options)
            if highlighted is not None and any(s.id == highlighted for s in summaries):
                cards.highlighted = cards.get_option_index(highlighted)
            elif summaries:
                cards.highlighted = 0
            self.set_class(not summaries, "-empty")
            self.query_one("#index-status", Static).update(status)

    def set_status(self, status: Content) -> None:
        self.query_one("#index-status", Static).update(status)

    @on(OptionList.OptionSelected, "#cards")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(OpenMailbox(event.option.id))
