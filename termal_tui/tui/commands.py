"""Command-palette provider: open a mailbox by id or name, delivery health, refresh; and,
only while a mailbox tab is active, that tab's own commands (jump to #N, load older, show
new), which call the view directly; Textual's own commands come after them."""

from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher

from termal_tui.presentation import latest_shown, summary_title
from termal_tui.sanitize import visible_line

if TYPE_CHECKING:
    from termal_tui.tui.app import MailboxApp

_JUMP = re.compile(r"^\s*(?:jump\s*(?:to)?\s*)?#\s*(\d+)\s*$", re.IGNORECASE)


class MailboxCommands(Provider):
    @property
    def mailbox_app(self) -> MailboxApp:
        return self.app  # type: ignore[return-value]

    def _commands(self) -> list[tuple[str, object, str]]:
        app = self.mailbox_app
        commands: list[tuple[str, object, str]] = []
        for summary in app.summaries:
            names = visible_line(summary_title(summary), 80)
            commands.append(
                (
                    f"Open mailbox: {names} ({visible_line(summary.id)})",
                    partial(app.open_mailbox, summary.id),
                    f"{summary.unread_count:,} unread, latest #{latest_shown(summary):,}",
                )
            )
        commands.append(("Delivery health", app.action_health, "Stuck hand-offs, ranked"))
        commands.append(("Board", app.action_board, "The coordination board: projects and keys"))
        commands.append(("activity", app.action_activity, "What just happened, anywhere (a)"))
        commands.append(("sessions", app.action_sessions, "One row per agent: who is stuck (s)"))
        view = app.active_view()
        if view is None:
            if app.index_model is not None:  # the index's model, not its widget
                refresh = app.index_model.request_refresh
                commands.append(("Refresh now", refresh, "Re-read every summary"))
            return commands
        commands.append(("Refresh now", view.action_refresh, "Re-read this tab's cursors"))
        if view.has_older:
            commands.append(("Load older messages", view.load_older, "Next 50 in this tab"))
        if view.pending:
            commands.append(("Show new messages", view.show_new, "Bring announced rows in"))
        return commands

    def _system_commands(self, discovering: bool) -> list[tuple[str, object, str]]:
        """Textual's own (Keys, Maximize, Screenshot, Theme, Quit), after the mailboxes."""
        return [
            (command.title, command.callback, command.help)
            for command in self.app.get_system_commands(self.screen)
            if command.discover or not discovering
        ]

    async def discover(self) -> Hits:
        for name, callback, help_text in self._commands() + self._system_commands(True):
            # Content, never a str: a str prompt would be parsed as markup.
            yield DiscoveryHit(Content(name), callback, text=name, help=help_text)  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        view = self.mailbox_app.active_view()
        jump = _JUMP.match(query)
        if jump and view is not None:
            sequence = int(jump.group(1))
            yield Hit(
                100,
                f"Jump to #{sequence:,} in the current mailbox",
                partial(view.jump_to, sequence),
                help="Loads older pages as needed",
            )
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands() + self._system_commands(False):
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, _highlight(matcher, name), callback, text=name, help=help_text)  # type: ignore[arg-type]


def _highlight(matcher: Matcher, candidate: str) -> Content:
    """The fuzzy match highlighted on literal text (``Matcher.highlight`` parses markup,
    and names come from the database)."""
    content = Content(candidate)
    score, offsets = matcher.fuzzy_search.match(matcher.query, candidate)
    if not score:
        return content
    for offset in offsets:
        if not candidate[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content
