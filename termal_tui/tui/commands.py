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

from termal_tui.core.sanitize import visible_line
from termal_tui.views.presentation import latest_shown, summary_title

if TYPE_CHECKING:
    from termal_tui.tui.app import MailboxApp

JUMP_OFFERS = 8  # #N on the index: a jump offered in at most this many mailboxes
JUMP_HINT = "#N jumps to a message in a mailbox tab: open one with enter, then ctrl+p #N."
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

    def _jump_hits(self, sequence: int) -> list[tuple[float, str, object, str]]:
        """``#N``: a jump in the open tab, never beyond its latest sequence (offered as
        "latest is #M"); on the index, the jump in each mailbox that holds #N (opened
        there), or a hint to open a mailbox first."""
        app = self.mailbox_app
        view = app.active_view()
        if view is not None:
            latest = view.model.latest_sequence
            if sequence < 1:
                return [
                    (
                        100,
                        "Jump to #1, the first message (there is no #0)",
                        partial(view.jump_to, 1),
                        "Messages are numbered from #1",
                    )
                ]
            if latest and sequence > latest:
                return [
                    (
                        100,
                        f"No #{sequence:,} here: latest is #{latest:,} (jump to it)",
                        partial(view.jump_to, latest),
                        f"This mailbox holds #1–#{latest:,}",
                    )
                ]
            return [
                (
                    100,
                    f"Jump to #{sequence:,} in the current mailbox",
                    partial(view.jump_to, sequence),
                    "Loads older pages as needed",
                )
            ]
        holding = [s for s in app.summaries if 1 <= sequence <= latest_shown(s)]
        hits: list[tuple[float, str, object, str]] = [
            (
                100 - index * 0.01,
                f"Jump to #{sequence:,} in {visible_line(summary_title(summary), 60)}",
                partial(app.open_mailbox, summary.id, at_sequence=sequence),
                f"Opens {visible_line(summary.id)} at #{sequence:,} "
                f"(latest #{latest_shown(summary):,})",
            )
            for index, summary in enumerate(holding[:JUMP_OFFERS])
        ]
        if not hits:
            hits.append(
                (
                    100,
                    f"#{sequence:,}: open a mailbox first, then #N jumps in it",
                    partial(app.notify, JUMP_HINT, markup=False),
                    "No mailbox listed here holds that number"
                    if app.summaries
                    else "No mailbox is listed yet",
                )
            )
        return hits

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
        jump = _JUMP.match(query)
        if jump:
            for score, title, callback, help_text in self._jump_hits(int(jump.group(1))):
                yield Hit(score, Content(title), callback, text=title, help=help_text)  # type: ignore[arg-type]
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
