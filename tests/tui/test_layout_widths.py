"""Layout truth: every card and row fits the width it is drawn at, in terminal cells.

A database with wide names (CJK, Korean, emoji, combining marks, a long ASCII name,
control and bidi characters drawn as stand-ins) and enough mailboxes for a scrollbar.
The real widgets are driven at 60x20, 80x24 (a scrollbar) and 120x40 (none): no line of
a card or row is wider than the room its list really gives it, and each card keeps its
two lines and its reason. The line builders those widgets call are then walked over
every width from 40 to 90 and every 5th to 200, with the rows the widgets were given:
no line wider than the width, the same number of lines at every width, the reason line
on every card, and no age cut or split (``335 d ago`` stays whole or goes whole).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from textual.content import Content
from textual.widgets import OptionList

from termal_tui.core.models import MailboxMessage, MailboxSummary
from termal_tui.tui.cells import cells
from termal_tui.tui.render import card, divider_line, gap_row, message_row
from termal_tui.tui.screens.activity import ActivityScreen, EventList, event_line
from termal_tui.tui.screens.board import BoardScreen, KeyList, ScopeList, key_row, scope_row
from termal_tui.tui.screens.health import HealthScreen, finding_row
from termal_tui.tui.screens.sessions import SessionList, SessionsScreen, session_line
from termal_tui.tui.widgets.mailbox_view import MailboxView, hidden_marker
from termal_tui.views.board_values import PREVIEW_LINES
from termal_tui.views.findings import format_age
from termal_tui.views.thread import Gap
from tests.viewer_support import (
    FIXED_NOW,
    WIDE_NAMES,
    app_for,
    press,
    screen_lines,
    settle,
    wait_for,
    wide_names_database,
)

MAILBOXES = 14  # two-line cards: more than 80x24 shows, so the list scrolls
WIDTHS = [*range(40, 91), *range(95, 201, 5)]
SIZES = [(60, 20), (80, 24), (120, 40)]
# An age cut short (``335 d…``, ``3 min a…``) or without its ``ago`` (``335 d``), and a
# line that starts with the ``ago`` another line lost.
AGE_CUT = re.compile(r"\b\d[\d,]*(?: (?:s|m|mi|min|h|d)(?: a| ag)?)? ?…")
AGE_WITHOUT_AGO = re.compile(r"(?<![#\w])\d[\d,]* (?:s|min|h|d)\b(?! ago)")
AGO_ALONE = re.compile(r"^\W*ago\b")
# Health rows say an age without "ago" (``oldest 335 d``); it stays whole there too.
HEALTH_AGE_CUT = re.compile(r"oldest(?: \S*){0,2}…")


@pytest.fixture(scope="module")
def wide_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("wide") / "coordination.sqlite"
    return asyncio.run(wide_names_database(path, MAILBOXES))


def lines_of(prompt: Content) -> list[str]:
    return prompt.plain.split("\n")


def real_room(options: OptionList) -> int:
    """The cells an option really has on screen now: the list's content region (less
    the scrollbar when it shows) less the option padding."""
    padding = options.get_component_styles("option-list--option").padding.width
    return options.scrollable_content_region.width - padding


def assert_rows_fit(options: OptionList, where: str) -> list[list[str]]:
    """Every option of ``options`` fits its real room: none wraps on screen."""
    room = real_room(options)
    assert room > 0, where
    prompts = []
    for index in range(options.option_count):
        prompt = options.get_option_at_index(index).prompt
        assert isinstance(prompt, Content), (where, index)
        lines = lines_of(prompt)
        wide = [line for line in lines if cells(line) > room]
        assert not wide, (where, room, wide)
        prompts.append(lines)
    return prompts


def assert_ages_whole(line: str, where: object) -> None:
    assert not AGE_CUT.search(line), (where, line)
    assert not AGE_WITHOUT_AGO.search(line), (where, line)
    assert not AGO_ALONE.search(line), (where, line)


@dataclass
class Seen:
    """What the widgets were given, for the walk over every width."""

    summaries: list[MailboxSummary] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    messages: list[tuple[MailboxMessage, MailboxSummary]] = field(default_factory=list)
    findings: list[Any] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)
    sessions: list[Any] = field(default_factory=list)
    scopes: list[Any] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    heads: list[Any] = field(default_factory=list)


async def drive(path: Path, size: tuple[int, int], seen: Seen | None = None) -> None:
    """The index, a tab, health, activity, sessions and the board at ``size``: every
    row fits the room its list really has (scrollbar or not)."""
    app = app_for(path)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        index = app.index_model
        assert index is not None
        await wait_for(lambda: len(index.problems) == MAILBOXES)  # every card has a reason
        await settle(app, pilot)
        cards = app.query_one("#cards", OptionList)
        assert cards.option_count == MAILBOXES
        if size == (80, 24):
            assert cards.show_vertical_scrollbar  # the case that broke every card
        for lines in assert_rows_fit(cards, ("cards", size)):
            assert len(lines) == 2, lines
            assert lines[1].startswith("never woken · "), lines  # the reason line stays
            assert_ages_whole(lines[0], size)
        # On screen: each card's head is followed by its reason (nothing wrapped).
        screen = screen_lines(app)
        heads = [i for i, line in enumerate(screen) if line.startswith("  ⚠ ")]
        assert len(heads) >= 3, screen
        for at in heads:
            if at + 1 < len(screen) - 1:  # the last row is the footer
                assert screen[at + 1].startswith("  never woken · "), screen
        assert not any(AGO_ALONE.search(line) for line in screen), screen
        if seen is not None:
            seen.summaries = list(index.summaries)
            seen.problems = dict(index.problems)

        # A tab: the CJK agent's mailbox (its rows name it on both sides of the arrow).
        await press(app, pilot, "enter")
        view = app.query_one(MailboxView)
        await wait_for(lambda: view.messages)
        await settle(app, pilot)
        for lines in assert_rows_fit(view.thread, ("tab", size)):
            assert_ages_whole(lines[0], ("tab", size))
        if seen is not None:
            summary = view.model.summary
            assert summary is not None
            seen.messages += [(message, summary) for message in view.messages]
        await press(app, pilot, "w")  # the tab closed: the index again

        for key, screen_type, list_type in (
            ("h", HealthScreen, OptionList),
            ("a", ActivityScreen, EventList),
            ("s", SessionsScreen, SessionList),
            ("b", BoardScreen, KeyList),
        ):
            await press(app, pilot, key)
            shown = app.screen
            assert isinstance(shown, screen_type), (key, shown)
            if isinstance(shown, HealthScreen):
                await wait_for(lambda s=shown: s.model.report is not None)
                options = shown.query_one("#findings", OptionList)
            else:
                if isinstance(shown, BoardScreen):
                    await wait_for(lambda s=shown: s.shown and s.filled)
                await settle(app, pilot)
                options = shown.query_one(list_type)
            await settle(app, pilot)
            assert options.option_count, key
            prompts = assert_rows_fit(options, (key, size))
            if key == "b":
                assert_rows_fit(shown.query_one(ScopeList), ("scopes", size))
            if key == "h":
                assert all(len(lines) == 2 for lines in prompts[:-1]), prompts
            if key in ("a", "s"):
                assert all(len(lines) == 1 for lines in prompts), prompts
            if key == "s":
                for lines in prompts:
                    assert_ages_whole(lines[0], ("sessions", size))
            if seen is not None:
                if isinstance(shown, HealthScreen):
                    seen.findings = list(shown.report.findings)
                elif isinstance(shown, ActivityScreen):
                    seen.events = list(shown.model.events())
                    seen.titles = shown.model.mailbox_titles()
                elif isinstance(shown, SessionsScreen):
                    seen.sessions = list(shown.model.rows)
                else:
                    seen.scopes, seen.names = shown.model.scopes, shown.model.names
                    shown.action_toggle_tombstones()  # the deleted key too
                    seen.heads = list(shown.model.shown)
            await press(app, pilot, "escape")


@pytest.mark.parametrize("size", SIZES[::2])
async def test_the_real_widgets_fit_their_rows_with_and_without_a_scrollbar(wide_db, size):
    await drive(wide_db, size)


@pytest.fixture(scope="module")
def seen(wide_db: Path) -> Seen:
    """The rows the widgets were given at 80x24 (checked there too, with a scrollbar)."""
    seen = Seen()
    asyncio.run(drive(wide_db, (80, 24), seen))
    return seen


def walk(build: Callable[[int], Iterable[Content]], what: str, steady: bool = True) -> None:
    """Every width: no line wider than it, the same number of lines at each (unless
    not ``steady``: a board value says "… cut" only where a line of it is cut)."""
    counts: list[int] | None = None
    for width in WIDTHS:
        built = list(build(width))
        for prompt in built:
            for line in lines_of(prompt):
                assert cells(line) <= width, (what, width, line, cells(line))
        shape = [len(lines_of(prompt)) for prompt in built]
        if counts is None:
            counts = shape
        if steady:
            assert shape == counts, (what, width)


def test_cards_keep_two_lines_and_their_reason_at_every_width(seen):
    assert {name for s in seen.summaries for name in (p.session_id for p in s.participants)} == set(
        WIDE_NAMES
    )

    def build(width: int) -> Iterable[Content]:
        for summary in seen.summaries:
            problem = seen.problems.get(summary.id, "never woken")
            built = card(summary, width, problem, FIXED_NOW)
            head, reason = lines_of(built)
            assert reason.startswith(f"{problem} · "), (width, reason)
            assert_ages_whole(head, width)
            yield built
            yield card(summary, width, None, FIXED_NOW)

    walk(build, "cards")
    # Old cards say their age whole where it fits at all (60 columns: the report's case).
    heads = [lines_of(card(s, 56, "never woken", FIXED_NOW))[0] for s in seen.summaries]
    assert any(head.endswith("· 335 d ago") for head in heads), heads


def test_thread_rows_fit_every_width(seen):
    assert seen.messages
    participants = seen.messages[0][1].participants

    def collapsed(width: int) -> Iterable[Content]:
        for message, summary in seen.messages:
            built = message_row(message, summary, False, width=width, now=FIXED_NOW)
            assert_ages_whole(lines_of(built)[0], width)
            yield built
        yield from (divider_line(p, width) for p in participants)
        # an unloaded stretch of a million rows with the cursors inside it, and hidden rows
        yield gap_row(Gap(newer=999_651, older=0), list(participants), width)
        yield hidden_marker(74_990, 74_997, width)

    walk(collapsed, "rows")
    for width in WIDTHS:  # expanded: the body wraps (more lines when narrower), never wider
        for message, summary in seen.messages:
            built = message_row(message, summary, True, width=width, now=FIXED_NOW)
            assert all(cells(line) <= width for line in lines_of(built)), width


def test_health_rows_fit_every_width(seen):
    assert seen.findings

    def build(width: int) -> Iterable[Content]:
        for finding in seen.findings:
            built = finding_row(finding, width)
            assert format_age(finding.age_seconds) in built.plain, (width, built.plain)
            for line in lines_of(built):
                assert not HEALTH_AGE_CUT.search(line), (width, line)
            yield built

    walk(build, "health")


def test_activity_and_sessions_rows_fit_every_width(seen):
    assert seen.events and seen.sessions
    name_cells = max(cells(row.name) for row in seen.sessions)

    def events(width: int) -> Iterable[Content]:
        for index, event in enumerate(seen.events):
            yield event_line(event, width, FIXED_NOW, index % 2 == 0, seen.titles)

    def sessions(width: int) -> Iterable[Content]:
        for row in seen.sessions:
            built = session_line(row, width, FIXED_NOW, min(24, name_cells))
            assert_ages_whole(built.plain, width)
            yield built

    walk(events, "activity")
    walk(sessions, "sessions")


def test_board_rows_fit_every_width(seen):
    assert seen.scopes and any(head.deleted for head in seen.heads)

    def build(width: int) -> Iterable[Content]:
        for scope in seen.scopes:
            yield scope_row(scope, seen.names, width)
        for head in seen.heads:
            built = key_row(head, FIXED_NOW, width)
            assert_ages_whole(lines_of(built)[0], width)
            yield built

    walk(build, "board", steady=False)
    for head in seen.heads:  # the key's line and at most the preview and a note
        assert all(len(lines_of(key_row(head, FIXED_NOW, w))) <= PREVIEW_LINES + 2 for w in WIDTHS)


async def test_cards_follow_a_resize_both_ways(wide_db):
    """Resized (narrower, wider, the scrollbar coming and going), the cards are laid out
    again at the room their list has then: still two lines, none wider."""
    app = app_for(wide_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        cards = app.query_one("#cards", OptionList)
        scrollbars = set()
        for size in ((60, 20), (97, 30), (45, 12), (200, 50), (80, 24)):
            await pilot.resize_terminal(*size)
            await settle(app, pilot)
            scrollbars.add(cards.show_vertical_scrollbar)
            for lines in assert_rows_fit(cards, ("resized", size)):
                assert len(lines) == 2 and lines[1].startswith("never woken · "), lines
        assert scrollbars == {True, False}
