"""The monitor left open: cards say who is behind, ages move on while nothing else does,
an idle poll reads no page, and the index filter looks at every mailbox, not only the
loaded pages. Time is the live source's driven clock (``advance``): nothing waits for a
timer, and nothing is forced with r."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, Static

from termal_tui.core.models import MailboxMessage, MailboxParticipant, MailboxSummary
from termal_tui.core.vocabulary import Ages
from termal_tui.store.reader import open_reader
from termal_tui.tui.app import MailboxApp, make_app
from termal_tui.tui.cells import cells
from termal_tui.tui.render import card, short_id
from termal_tui.tui.widgets.index import MailboxIndex
from termal_tui.tui.widgets.mailbox_view import MailboxView, ThreadHeader
from termal_tui.views.index import FILTER_PAUSE, PAGE_CARDS
from termal_tui.views.live import ManualClock
from termal_tui.views.presentation import behind_words
from tests.viewer_support import (
    FIXED_NOW,
    advance,
    advance_until,
    mailbox_between,
    many_mailboxes,
    press,
    screen_text,
    send,
    settle,
    wait_for,
    without_animation,
)

# Every test reads and writes its own XDG directories (never the user's).
pytestmark = pytest.mark.usefixtures("xdg")


class Clock(ManualClock):
    """The live source's clock, moved on by the test (``advance``): the app's ages and
    every refresh follow it."""

    def __init__(self, now: datetime = FIXED_NOW) -> None:
        super().__init__(now)

    def __call__(self) -> datetime:
        return self.now()


def clocked_app(path: Path, clock: Clock, interval: float = 0.0, **kwargs: object) -> MailboxApp:
    return without_animation(
        make_app(
            path,
            clock=clock,
            poll_interval=interval,
            live_clock=clock,
            watch=False,
            **kwargs,  # type: ignore[arg-type]
        )
    )


async def until(app: MailboxApp, pilot: object, predicate, step: float = 0.3) -> None:
    """The clock moved on in steps (polls, the filter's pause) until ``predicate``."""
    await advance_until(app, pilot, predicate, step)


async def opened(app: MailboxApp, pilot: object, *names: str) -> None:
    """The tab of the mailbox between ``names`` opened and read."""
    app.open_mailbox(mailbox_between(app, *names))
    await settle(app, pilot)


def index_of(app: MailboxApp) -> MailboxIndex:
    return app.screen_stack[0].query_one(MailboxIndex)


def card_text(app: MailboxApp, mailbox_id: str) -> str:
    cards = index_of(app).query_one("#cards", OptionList)
    return str(cards.get_option(mailbox_id).prompt)


def participant(name: str, unread: int, cursor: int = 0) -> MailboxParticipant:
    return MailboxParticipant(
        session_id=f"session-{name}",
        display_name=name,
        processed_through=cursor,
        unread_count=unread,
    )


def summary_of(*participants: MailboxParticipant) -> MailboxSummary:
    return MailboxSummary(
        id="mailbox-3fcb1a2e-0000-4000-8000-000000000000",
        participants=list(participants),
        latest_sequence=140,
        unread_count=sum(p.unread_count for p in participants),
        latest_message_preview="Done with step 139.",
        latest_message_at="2026-11-30T11:57:00+00:00",
    )


# ------------------------------------------------------------ who is behind


def test_who_is_behind_names_the_most_behind_first_and_counts_the_rest():
    pair = summary_of(participant("planner", 10), participant("backend", 22))
    assert behind_words(pair) == "backend 22 · planner 10"
    one = summary_of(participant("planner", 0), participant("backend", 3))
    assert behind_words(one) == "backend 3"
    crowd = summary_of(*(participant(f"agent{n}", n) for n in range(1, 5)))
    assert behind_words(crowd) == "agent4 4 · agent3 3 · +2 more"
    caught_up = summary_of(participant("planner", 0), participant("backend", 0))
    assert behind_words(caught_up) == ""
    hostile = summary_of(participant("evil\x1b[31m", 2))
    assert "\x1b" not in behind_words(hostile)


def test_a_card_says_who_is_behind_and_gives_way_when_narrow():
    pair = summary_of(participant("planner", 10), participant("backend", 22))
    wide = card(pair, 118, now=FIXED_NOW).plain.splitlines()[0]
    assert wide.startswith("● backend 22 · planner 10 unread  planner ⇄ backend")
    assert "3 min ago" in wide
    short = short_id(pair.id)
    assert short in wide
    # Narrower, in this order: the short id goes, then who is behind, then the age; at
    # no width is the short id kept while who is behind or the age is dropped.
    seen = []
    for width in range(118, 30, -1):
        first = card(pair, width, now=FIXED_NOW).plain.splitlines()[0]
        assert cells(first) <= width  # no line wider than its width in cells
        named, aged, with_id = "backend 22 ·" in first, "3 min ago" in first, short in first
        assert not with_id or (named and aged), (width, first)
        assert not named or aged, (width, first)
        if width >= 52:
            assert "planner ⇄ backe" in first  # the names stay readable (16 cells at least)
        seen.append((with_id, named, aged))
    assert seen == sorted(seen, reverse=True)  # each gives way once, for good
    assert (False, False, True) in seen and seen[-1] == (False, False, False)
    stuck = card(pair, 118, "never woken", now=FIXED_NOW).plain
    assert stuck.startswith("⚠ backend 22 · planner 10 unread")


async def test_the_human_index_counts_unread_per_participant(demo):
    async with open_reader(demo) as reader:
        summaries = await reader.list_mailboxes()
        session_view = await reader.list_mailboxes(session_id="session-1")
    for summary in summaries:
        assert sum(p.unread_count for p in summary.participants) == summary.unread_count
    thread = next(s for s in summaries if s.latest_sequence == 140)
    counts = {p.display_name: p.unread_count for p in thread.participants}
    assert counts == {"planner": 10, "backend": 22}
    # A session's view counts only the session's own unread rows: nobody is named.
    assert all(p.unread_count == 0 for s in session_view for p in s.participants)
    # Never part of the wire shape (TermAl's participant JSON has no such key).
    assert "unreadCount" not in thread.participants[0].to_wire()


async def test_a_session_s_view_marks_only_its_own_stuck_rows(demo):
    """A session's view counts the session's own unread rows; its ⚠ markers are its own
    too (a card showed the other side's "woken, not processed")."""
    from termal_tui.core.vocabulary import FINDING_WORDS
    from termal_tui.views.findings import Thresholds, health_report

    async with open_reader(demo) as reader:
        report = await health_report(reader, now=FIXED_NOW, thresholds=Thresholds())
    own: dict[str, str] = {}
    others: dict[str, str] = {}
    for finding in report.findings:
        if finding.severity >= 2:
            side = own if finding.session_id == "session-1" else others
            side.setdefault(finding.mailbox_id, FINDING_WORDS[finding.kind])
    assert set(others) - set(own)  # the demo has mailboxes stuck on the other side only
    app = clocked_app(demo, Clock(), session_id="session-1")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        index = index_of(app)
        assert index.problems
        shown = {s.id for s in index.summaries}
        assert index.problems == {key: word for key, word in own.items() if key in shown}


async def test_the_index_cards_say_who_is_behind(demo):
    app = clocked_app(demo, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        thread = mailbox_between(app, "planner", "backend")
        assert "backend 22 · planner 10 unread" in card_text(app, thread)
        assert "backend 22 · planner 10 unread" in screen_text(app)


# ------------------------------------------------------------------- ages


def test_ages_name_only_the_rows_whose_words_changed():
    ages = Ages()
    now = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    stamps = {
        "fresh": "2026-11-30T11:58:30+00:00",
        "old": "2026-11-30T06:00:00+00:00",
        "broken": "not a time\x1b[2J",
    }
    for key, stamp in stamps.items():
        ages.shown(key, stamp, now)
    assert ages.words("fresh", stamps["fresh"], now) == "1 min ago"
    assert ages.words("broken", stamps["broken"], now) == "not a time␛[2J"
    assert ages.changed(stamps, now) == []
    assert ages.changed(stamps, now + timedelta(seconds=20)) == []  # still "1 min ago"
    assert ages.changed(stamps, now + timedelta(minutes=2)) == ["fresh"]
    assert sorted(ages.changed(stamps, now + timedelta(hours=2))) == ["fresh", "old"]
    # Never drawn: never reported.
    assert ages.changed({"unseen": stamps["old"]}, now + timedelta(hours=5)) == []
    # A key whose stamp moved on (a card's newest message) is parsed again.
    assert ages.words("old", "2026-11-30T11:59:59+00:00", now) == "just now"
    ages.forget({"fresh"})
    assert len(ages) == 1


async def test_card_and_row_ages_move_on_while_nothing_changes(demo, monkeypatch):
    clock = Clock()
    app = clocked_app(demo, clock)  # polling off: nothing is read again
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        thread = mailbox_between(app, "planner", "backend")
        assert "#140 · 1 h ago" in card_text(app, thread)
        clock.advance(3 * 3600)
        await until(app, pilot, lambda: "#140 · 4 h ago" in card_text(app, thread))
        app.open_mailbox(thread)
        await settle(app, pilot)
        view = app.query_one(MailboxView)
        top = view.thread.get_option_at_index(0)
        assert "1 h ago" not in str(top.prompt) and "4 h ago" in str(top.prompt)
        reads = 0
        original = view.reader.read_page

        async def counting(*args: object, **kwargs: object):
            nonlocal reads
            reads += 1
            return await original(*args, **kwargs)  # type: ignore[arg-type]

        view.reader.read_page = counting  # type: ignore[method-assign]
        clock.advance(2 * 86_400)
        await until(app, pilot, lambda: "2 d ago" in str(view.thread.get_option_at_index(0).prompt))
        assert "2 d ago" in screen_text(app)
        assert reads == 0  # the ages moved on without a read


# ------------------------------------------------------------- idle polls


async def test_an_idle_index_poll_reads_no_page_and_a_commit_is_seen(demo):
    app = clocked_app(demo, Clock(), interval=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        index = index_of(app)
        pages = 0
        reader = app.reader
        original = reader.list_mailboxes

        async def counting(*args: object, **kwargs: object):
            nonlocal pages
            pages += 1
            return await original(*args, **kwargs)  # type: ignore[arg-type]

        reader.list_mailboxes = counting  # type: ignore[method-assign]
        versions = 0
        original_version = reader.data_version

        async def counting_version() -> int:
            nonlocal versions
            versions += 1
            return await original_version()

        reader.data_version = counting_version  # type: ignore[method-assign]
        await until(app, pilot, lambda: versions >= 4, step=0.1)  # four polls
        assert versions == 4 and pages == 0
        await send(demo, "Step 141 is in.", "watch-141")
        thread = mailbox_between(app, "planner", "backend")
        await until(app, pilot, lambda: "backend 22 · planner 11 unread" in card_text(app, thread))
        assert pages >= 1
        assert "43 unread" in str(index.query_one("#index-status", Static).render())


async def test_data_version_moves_only_when_another_connection_commits(demo):
    async with open_reader(demo) as reader:
        first = await reader.data_version()
        await reader.list_mailboxes()
        assert await reader.data_version() == first  # reading is not a change
        await send(demo, "A change.", "watch-version")
        assert await reader.data_version() != first


# ------------------------------------------------- the filter over every mailbox


async def test_the_store_filter_matches_names_session_ids_and_mailbox_ids(tmp_path):
    path = await many_mailboxes(tmp_path / "coordination.sqlite", 30)
    async with open_reader(path) as reader:
        by_name = await reader.list_mailboxes(matching="AGENT-7")
        assert {s.id for s in by_name} == {
            f"mailbox-{n:08d}-0000-4000-8000-000000000000" for n in (6, 7)
        }  # agent-7 sits in mailboxes 6 (as b) and 7 (as a)
        assert await reader.count_matching("AGENT-7") == 2
        assert [s.id for s in await reader.list_mailboxes(matching="session-29")] == [
            f"mailbox-{n:08d}-0000-4000-8000-000000000000" for n in (29, 28)
        ]
        assert len(await reader.list_mailboxes(matching="mailbox-00000003")) == 1
        assert await reader.list_mailboxes(matching="nobody") == []
        assert await reader.count_matching("nobody") == 0
        # Paged like the index: the same order, page after page.
        first = await reader.list_mailboxes(matching="agent-1", limit=5)
        last = first[-1]
        rest = await reader.list_mailboxes(
            matching="agent-1", limit=50, after=(last.latest_message_at or "", last.id)
        )
        everything = await reader.list_mailboxes(matching="agent-1")
        assert [s.id for s in first + rest] == [s.id for s in everything]
        assert await reader.count_matching("agent-1") == len(everything)
        # A session's view filters only what that session may see.
        mine = await reader.list_mailboxes(session_id="session-3", matching="agent")
        assert {s.id for s in mine} == {
            f"mailbox-{n:08d}-0000-4000-8000-000000000000" for n in (2, 3)
        }
        assert await reader.count_matching("agent", session_id="session-3") == 2


async def test_the_index_filter_finds_a_mailbox_beyond_the_loaded_pages(tmp_path):
    count = 2 * PAGE_CARDS + 30
    path = await many_mailboxes(tmp_path / "coordination.sqlite", count)
    app = clocked_app(path, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        index = index_of(app)
        cards = index.query_one("#cards", OptionList)
        assert cards.option_count == PAGE_CARDS  # mailbox 0 is far below the first page
        await pilot.press("slash")
        for key in "agent-0":
            await pilot.press(key if key != "-" else "minus")
        oldest = "mailbox-00000000-0000-4000-8000-000000000000"
        await advance(app, pilot, FILTER_PAUSE)  # the store is asked after a pause
        assert cards.option_count >= 1 and cards.get_option_at_index(-1).id == oldest
        # agent-0 is in mailbox 0 only (agent-00… would be another name).
        assert "1 of 230 mailboxes match “agent-0”" in str(
            index.query_one("#index-status", Static).render()
        )
        assert "agent-0 ⇄ agent-1" in card_text(app, oldest)
        await pilot.press("enter")  # leaves the box: the cards take the keys
        await pilot.press("enter")  # opens the mailbox found
        await settle(app, pilot)
        assert app.active_view() is not None and app.active_view().mailbox_id == oldest
        await pilot.press("0")
        await settle(app, pilot)
        await press(app, pilot, "slash", "escape")  # escape empties the filter and leaves it
        assert cards.option_count == PAGE_CARDS
        assert "230 mailboxes" in str(index.query_one("#index-status", Static).render())


async def test_the_index_filter_pages_its_matches_and_says_when_none_match(tmp_path):
    count = 2 * PAGE_CARDS + 30
    path = await many_mailboxes(tmp_path / "coordination.sqlite", count)
    app = clocked_app(path, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        index = index_of(app)
        cards = index.query_one("#cards", OptionList)
        box = index.query_one("#index-filter", Input)
        await pilot.press("slash")
        box.value = "agent"  # every mailbox matches: the matches come a page at a time
        await until(app, pilot, lambda: index.match_count == count)
        assert cards.option_count == PAGE_CARDS
        assert f"{count} of {count} mailboxes match" in str(
            index.query_one("#index-status", Static).render()
        )
        cards.focus()
        await press(app, pilot, "end")
        assert cards.option_count == 2 * PAGE_CARDS
        await press(app, pilot, "end")
        assert cards.option_count == count
        box.value = "nobody-at-all"
        await until(app, pilot, lambda: index.match_count == 0)
        assert cards.option_count == 0
        status = str(index.query_one("#index-status", Static).render())
        assert "no mailbox matches “nobody-at-all” (of 230) · escape clears" in status


# ------------------------------------------------------ narrow: nothing is cut


@pytest.mark.parametrize("size", [(60, 20), (80, 24), (120, 40)])
async def test_health_rows_fit_the_width_with_both_lines(demo, size):
    from termal_tui.tui.screens.health import HealthScreen

    app = clocked_app(demo, Clock())
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await press(app, pilot, "h")
        assert isinstance(app.screen, HealthScreen)
        findings = app.screen.query_one("#findings", OptionList)
        usable = findings.size.width - findings.styles.scrollbar_size_vertical - 2
        for index in range(findings.option_count):
            lines = findings.get_option_at_index(index).prompt.plain.splitlines()
            assert len(lines) == 2 and all(len(line) <= usable for line in lines), lines
        text = screen_text(app)
        # Each finding's sentence is on screen under its label (no row lost a line).
        assert "1 unread for release-bot, who has left" in text
        status = app.screen.query_one("#health-status", Static)
        assert status.size.height == 1  # the status line says it in one line


@pytest.mark.parametrize("width", [60, 80])
async def test_a_stale_reason_is_shown_whole_on_a_narrow_terminal(demo, width):
    from termal_tui.tui.widgets.mailbox_view import ThreadHeader

    app = clocked_app(demo, Clock(), interval=0.2)
    async with app.run_test(size=(width, 24)) as pilot:
        await settle(app, pilot)
        await opened(app, pilot, "planner", "backend")
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{demo}{suffix}")
            if source.exists():
                source.rename(Path(f"{demo}.old{suffix}"))
        header = app.query_one(ThreadHeader)
        await until(app, pilot, lambda: header.state == "stale", step=0.2)
        text = " ".join(line.strip() for line in screen_text(app).splitlines())
        assert "waiting for it to come back" in text, screen_text(app)  # not cut
        assert "● Stale" in text


# ------------------------------------------------------ health on a huge file


async def test_the_health_view_lists_the_worst_and_says_how_many_more(tmp_path):
    from termal_tui.tui.screens.health import MAX_SHOWN, HealthScreen

    count = MAX_SHOWN // 2  # two unread rows each: never woken and lagging, four findings
    path = await many_mailboxes(tmp_path / "coordination.sqlite", count)
    app = clocked_app(path, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await press(app, pilot, "h")
        assert isinstance(app.screen, HealthScreen)
        findings = app.screen.query_one("#findings", OptionList)
        # Only the listed findings are kept; the counts are of all of them.
        assert len(app.screen.report.findings) == MAX_SHOWN
        assert findings.option_count == MAX_SHOWN + 1
        last = findings.get_option_at_index(MAX_SHOWN)
        assert f"… and {2 * count:,} more findings" in str(last.prompt)
        assert "termal-tui doctor" in str(last.prompt)
        status = str(app.screen.query_one("#health-status", Static).render())
        assert f"in {count:,} of {count:,} mailboxes" in status
        # The keys reach it (End), and enter on it says where the rest are.
        await press(app, pilot, "end")
        assert findings.highlighted == MAX_SHOWN
        await press(app, pilot, "enter")
        assert isinstance(app.screen, HealthScreen)  # not dismissed
        # Resizing redraws from what is kept, with the same counts.
        await pilot.resize_terminal(80, 24)
        await settle(app, pilot)
        assert f"… and {2 * count:,} more findings" in str(
            findings.get_option_at_index(MAX_SHOWN).prompt
        )
        status = str(app.screen.query_one("#health-status", Static).render())
        assert f"{count:,}" in status and status.count("\n") == 0


# A slow health pass spacing out the next ones: test_health.py, on a driven clock.


# ------------------------------------------- the title and signals from a tab


async def test_title_and_attention_follow_every_mailbox_while_a_tab_is_shown(demo, xdg):
    from textual import events

    from termal_tui.views.config import load_config

    config = xdg / "xdg_config_home" / "termal-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[attention]\nbell = true\nevery = 0\n", encoding="utf-8")
    app = clocked_app(demo, Clock(), 0.1, config=load_config())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        # A tab on another mailbox is shown; the index is hidden.
        app.open_mailbox(mailbox_between(app, "planner", "docs"))
        await settle(app, pilot)
        assert app.active_view() is not None
        written: list[str] = []
        driver = app._driver
        original = driver.write
        driver.write = lambda data: (written.append(data), original(data))[1]  # type: ignore[method-assign]
        app.post_message(events.AppBlur())
        await pilot.pause()
        await send(demo, "Arrived in another mailbox.", "watch-away")
        await until(
            app, pilot, lambda: any("43 unread" in w for w in written if w.startswith("\x1b]2;"))
        )
        await until(app, pilot, lambda: "\a" in written)
        assert app.active_view() is not None  # nobody went back to the index


# ----------------------------------------------------- End and the footer


async def test_end_highlights_the_oldest_row_and_the_footer_offers_its_keys(demo):
    from tests.viewer_support import screen_lines

    app = clocked_app(demo, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await opened(app, pilot, "planner", "backend")
        await press(app, pilot, "end")
        view = app.active_view()
        assert view is not None
        assert view.highlighted_message() is not None
        assert view.highlighted_message().sequence == 1
        footer = screen_lines(app)[-1]
        assert "⏎ Expand" in footer and "f Body" in footer, footer
        assert "— start of mailbox —" in screen_text(app)
        for key in ("up", "home", "down"):
            await press(app, pilot, key)
            footer = screen_lines(app)[-1]
            assert "⏎ Expand" in footer and "f Body" in footer, (key, footer)
        await press(app, pilot, "end")
        await press(app, pilot, "enter")  # the oldest row expands, into view
        text = screen_text(app)
        assert "Wake now" in text and "#1 " in text, text


# ------------------------------------------------------------------- help


@pytest.mark.parametrize("size", [(60, 20), (80, 24), (120, 40)])
async def test_help_wraps_under_its_text_at_every_size_and_names_every_marker(demo, size):
    from termal_tui.tui.screens.help import HelpScreen, HelpText, help_text

    app = clocked_app(demo, Clock())
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await press(app, pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = app.screen.query_one(HelpText)
        width = shown.size.width
        text = help_text(app.screen.keys, width)
        assert str(shown.render()) == text  # wrapped at the width it has
        lines = text.splitlines()
        assert max(len(line) for line in lines) <= width
        # Every entry's continuation starts under the text, never at column 0.
        import textwrap

        from termal_tui.tui.screens.help import SECTIONS

        prose = [
            "termal-tui — a read-only viewer for TermAl agent mailboxes",
            "Nothing you do here changes the database: no cursor moves, no state changes.",
            "Wake state of a row (plain words first, TermAl's value beside them)",
            "⚠ on cards and in the health view (◷ for lagging)",
            *(title for title, _ in SECTIONS),
        ]
        allowed = {part for sentence in prose for part in textwrap.wrap(sentence, width)}
        for line in lines:
            assert not line or line.startswith("  ") or line in allowed, line
        for words in ("v ", "control-plane rows hidden", "departed", "not decided yet"):
            assert words in text, words
        assert "(queuedBehindActiveTurn)" in text


# ------------------------------------------------------------------ chips


async def test_a_chip_warns_only_for_a_participant_that_rows_wait_on(demo):
    app = clocked_app(demo, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await opened(app, pilot, "backend", "reviewer")
        view = app.active_view()
        bar = str(view.query_one("#participants", Static).render())
        # Both cursors stand at #1 of 2; only #2 (to backend) is unread.
        assert "● backend 1/2" in bar and "✓ reviewer 1/2" in bar, bar
        model = view.model
        backend, reviewer = (
            next(p for p in model.summary.participants if p.display_name == name)
            for name in ("backend", "reviewer")
        )
        assert model.waits_on(backend) and not model.waits_on(reviewer)
        await opened(app, pilot, "planner", "backend")
        # 140 rows, 50 loaded: planner at #120 has unread rows loaded above it; backend
        # at #96 too. Both wait.
        bar = str(app.active_view().query_one("#participants", Static).render())
        assert "● planner 120/140" in bar and "● backend 96/140" in bar, bar


def row(sequence: int, target: str) -> MailboxMessage:
    """Row ``sequence`` of a two-party mailbox (a ⇄ b), addressed to ``target``."""
    sender = "b" if target == "a" else "a"
    return MailboxMessage(
        id=f"m-{sequence}",
        mailbox_id="mailbox-1",
        sequence=sequence,
        sender_session_id=sender,
        sender_name=sender,
        target_session_id=target,
        target_name=target,
        created_at="2026-11-30T11:00:00+00:00",
        body=f"Row {sequence}.",
        notification_state="deliveredToIdleSession",
    )


def test_rows_above_a_cursor_not_loaded_yet_count_as_waiting():
    from termal_tui.views.thread import ThreadModel

    a = MailboxParticipant(session_id="a", display_name="a", processed_through=10)
    b = MailboxParticipant(session_id="b", display_name="b", processed_through=95)
    summary = MailboxSummary(
        id="mailbox-1", participants=[a, b], latest_sequence=100, unread_count=0
    )
    model = ThreadModel()
    # Rows 96–100 all from b to a... except none to b: b waits on nothing loaded, and
    # nothing above its cursor is unloaded.
    model.load_first(summary, [row(n, "a") for n in range(100, 95, -1)], has_older=True)
    assert not model.waits_on(b)
    # a's cursor (#10) is below the loaded rows: rows 11–95 are not loaded; and loaded
    # rows to a stand above it anyway.
    assert model.waits_on(a)
    only_mine = ThreadModel()
    only_mine.load_first(summary, [row(n, "b") for n in range(100, 95, -1)], has_older=True)
    assert only_mine.waits_on(b)  # #96–#100 are addressed to b, above #95
    assert only_mine.waits_on(a)  # nothing loaded to a, but #11–#95 are not read yet


async def test_card_palette_and_tab_say_one_latest_number(demo):
    from termal_tui.tui.commands import MailboxCommands
    from termal_tui.tui.widgets.mailbox_view import ThreadHeader

    app = clocked_app(demo, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        mailbox = mailbox_between(app, "planner", "review-child")  # #2: a review result
        on_card = card_text(app, mailbox)
        app.open_mailbox(mailbox)
        await settle(app, pilot)
        latest = app.query_one(ThreadHeader).latest
        assert latest == 2
        assert f"#{latest:,} · " in on_card, on_card
        helps = [h for name, _, h in MailboxCommands(app.screen)._commands() if mailbox in name]
        assert helps and f"latest #{latest:,}" in helps[0]


async def test_v_shows_a_review_result_read_first_and_the_stored_json_below(demo):
    from textual.widgets import TextArea

    from termal_tui.tui.screens.body import BodyScreen

    app = clocked_app(demo, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await opened(app, pilot, "planner", "review-child")
        await press(app, pilot, "v")
        assert isinstance(app.screen, BodyScreen)
        text = app.screen.query_one(TextArea).text
        head, _, stored = text.partition("\n\n— as stored (JSON) —\n")
        assert stored.lstrip().startswith("{") and head and not head.startswith("{")
        assert ": " in head.splitlines()[0]  # "status: summary"
        title = str(app.screen.query_one("#body-title", Static).render())
        assert title.startswith("Review result #2")


# ----------------------------------------------------------- start-up header


@pytest.mark.parametrize("arrival", ["at once", "a tick later", "after the layout"])
async def test_the_header_counts_the_rows_on_screen_however_the_first_page_races_layout(
    demo, arrival, monkeypatch
):
    """The first page may arrive before the view is laid out (kept, drawn once at the
    real width) or long after: either way the header ends up counting the rows shown,
    never ``0 of latest``. (Its arrival is held back by events, not by time.)"""
    from termal_tui.store.reader import MailboxReader

    original = MailboxReader.read_page
    laid_out = asyncio.Event()

    async def held(self, *args, **kwargs):
        if arrival == "a tick later":
            await asyncio.sleep(0)
        elif arrival == "after the layout":
            await laid_out.wait()
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(MailboxReader, "read_page", held)
    header, text = await _header_three_polls_after_start(demo, laid_out)
    assert header.loaded == 50 and header.latest == 140
    assert "50 of latest #140 loaded" in text
    assert "0 of latest" not in text.replace("50 of latest", "")


async def _header_three_polls_after_start(
    demo: Path, laid_out: asyncio.Event | None = None
) -> tuple[ThreadHeader, str]:
    """The 140-row thread opened at start (polling every 0.1 s): its header and the
    screen's text three polls after its first page was applied. ``laid_out`` is set
    once the view and its header are built and laid out."""
    async with open_reader(demo) as reader:
        thread = next(s.id for s in await reader.list_mailboxes() if s.latest_sequence == 140)
    app = clocked_app(demo, Clock(), 0.1, mailbox_id=thread)
    async with app.run_test(size=(80, 24)) as pilot:
        # The page races the layout: the view and its header built, however it goes.
        await wait_for(lambda: app.active_view() is not None and app.query(ThreadHeader))
        header = app.query_one(ThreadHeader)
        if laid_out is not None:
            await wait_for(lambda: header.size.width > 0)  # laid out, at its real width
            laid_out.set()
        await wait_for(lambda: header.loaded > 0)
        await settle(app, pilot)
        for _ in range(3):  # three polls later
            await advance(app, pilot, 0.1)
        return header, screen_text(app)


async def test_a_poll_while_the_first_page_waits_to_be_applied_does_not_read_it_again(
    demo, monkeypatch
):
    """The race behind ``0 of latest``: a poll between the first page's read and its
    arrival (or while it waits for the first layout) read the page again, and the second
    copy made the model forget its rows. The page counts as being read until applied."""
    from termal_tui.store.reader import MailboxReader
    from termal_tui.tui.widgets.mailbox_view import MailboxView, PageLoaded

    firsts: list[int] = []
    original_read = MailboxReader.read_page

    async def counted(self, mailbox_id, before, *args, **kwargs):
        if before is None:
            firsts.append(1)
        return await original_read(self, mailbox_id, before, *args, **kwargs)

    original_apply = MailboxView._page_loaded

    def poll_first(self, event: PageLoaded) -> None:
        self.poll()  # a timer tick that lands just before the page is applied
        original_apply(self, event)

    monkeypatch.setattr(MailboxReader, "read_page", counted)
    monkeypatch.setattr(MailboxView, "_page_loaded", poll_first)
    header, text = await _header_three_polls_after_start(demo)
    assert firsts == [1]
    assert header.loaded == 50 and "50 of latest #140 loaded" in text


async def test_stale_says_when_the_last_good_read_was_in_the_index_and_the_health_view(demo):
    """Like a tab's header: Stale keeps the time (and the index its counts) of the last
    read that worked, with the reason on a line of its own; not the time of the failure."""
    from tests.tui.test_replaced_and_vanished_file import move_away

    clock = Clock()
    app = clocked_app(demo, clock, interval=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        index = index_of(app)

        def status() -> str:
            return str(index.query_one("#index-status", Static).render())

        assert "● Live 12:00:00 · 6 mailboxes · 42 unread" in status()
        await press(app, pilot, "h")
        health = app.screen
        line = lambda: str(health.query_one("#health-status", Static).render())  # noqa: E731
        assert "● Live 12:00:00" in line()
        move_away(demo)
        await until(app, pilot, lambda: "Stale" in line() and "gone" in line(), step=0.1)
        # Later failing passes (and redraws) do not move the time on.
        clock.advance(300)
        await press(app, pilot, "r")
        assert "Stale" in line() and "gone" in line()
        await pilot.resize_terminal(110, 36)  # redraws the rows, not a Live line
        await settle(app, pilot)
        assert line().startswith("● Stale 12:00:00") and "\nthe database file" in line()
        await press(app, pilot, "escape")
        assert "Stale" in status()
        await press(app, pilot, "r")
        await pilot.resize_terminal(100, 30)  # a redraw that is not a read
        await settle(app, pilot)
        assert status().startswith("● Stale 12:00:00 · 6 mailboxes · 42 unread\n"), status()
        assert "gone" in status()


# ------------------------------------------------------------------ export


async def test_export_names_its_file_from_the_id_safely_and_follows_no_link(demo, tmp_path, xdg):
    """A mailbox id is the database's text: ``../`` in it never leaves the export
    directory, and a link planted at the export's name is not followed."""
    import sqlite3

    from termal_tui.views.config import load_config

    path = demo
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys = OFF")
    old = db.execute("SELECT id FROM mailboxes WHERE next_sequence = 141").fetchone()[0]
    new = "mailbox-../../x"
    for table, column in (
        ("mailboxes", "id"),
        ("mailbox_participants", "mailbox_id"),
        ("mailbox_messages", "mailbox_id"),
    ):
        db.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?", (new, old))
    db.commit()
    db.close()
    exports = xdg / "exports"
    config = xdg / "xdg_config_home" / "termal-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'export_dir = "{exports}"\n', encoding="utf-8")
    exports.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (exports / "termal-______x-91-140.jsonl").symlink_to(victim)
    app = without_animation(make_app(path, clock=Clock(), config=load_config()))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.open_mailbox(new)
        await settle(app, pilot)
        await press(app, pilot, "e")
    assert victim.read_text() == "keep me\n"  # the link was not followed
    assert not (tmp_path / "x-91-140.jsonl").exists()
    assert sorted(p.name for p in exports.iterdir()) == ["termal-______x-91-140.jsonl"]
    notes = [n.message for n in app._notifications]
    assert any("Could not write" in n for n in notes), notes
    (exports / "termal-______x-91-140.jsonl").unlink()  # the link gone: it writes, inside
    again = without_animation(make_app(path, clock=Clock(), config=load_config()))
    async with again.run_test(size=(120, 40)) as pilot:
        await settle(again, pilot)
        again.open_mailbox(new)
        await settle(again, pilot)
        await press(again, pilot, "e")
    (written,) = exports.iterdir()
    assert written.name == "termal-______x-91-140.jsonl" and not written.is_symlink()
    assert len(written.read_text().splitlines()) == 50


def test_newer_rows_not_read_yet_count_as_waiting():
    from termal_tui.views.thread import ThreadModel

    a = MailboxParticipant(session_id="a", display_name="a", processed_through=5)
    b = MailboxParticipant(session_id="b", display_name="b", processed_through=10)
    loaded = MailboxSummary(id="mailbox-1", participants=[a, b], latest_sequence=10, unread_count=0)
    model = ThreadModel()
    model.load_first(loaded, [row(n, "b") for n in range(10, 0, -1)], has_older=False)
    assert not model.waits_on(a)  # #6–#10 are all addressed to b
    # A burst: the summary moved on to #3,000 while only #11 was read (capped).
    moved = MailboxSummary(
        id="mailbox-1", participants=[a, b], latest_sequence=3000, unread_count=0
    )
    model.update_summary(moved)
    model.add_newer([row(11, "b")], True, cap=1)
    assert model.waits_on(a)  # rows not read yet may be addressed to a


async def test_a_filter_typed_on_a_small_index_asks_the_store_once_it_outgrows_a_page(
    tmp_path, monkeypatch
):
    path = await many_mailboxes(tmp_path / "coordination.sqlite", PAGE_CARDS - 1)
    app = clocked_app(path, Clock(), interval=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        index = index_of(app)
        assert not index.more
        index.query_one("#index-filter", Input).value = "agent-5"
        await settle(app, pilot)
        assert index.matches is None  # everything is loaded: filtered on the cards
        for n in (1, 2):  # two new mailboxes: the index no longer fits one page
            await send(
                path,
                f"Hello {n}.",
                f"grow-{n}",
                sender=(f"session-new-{n}", f"newcomer-{n}"),
                target=(f"session-far-{n}", f"agent-5{n}99"),
            )
        # agent-5 is in mailboxes 4 and 5, agent-50…59 in 49…59, and the two new ones.
        await until(app, pilot, lambda: index.more and index.match_count == 2 + 11 + 2)

        def status() -> str:
            return str(index.query_one("#index-status", Static).render())

        # The totals follow (a count spaced by what the last one cost).
        await until(app, pilot, lambda: "15 of 101 mailboxes match “agent-5”" in status())
        assert "searching" not in status()


async def test_a_paged_index_counts_its_totals_again_after_a_commit(tmp_path, monkeypatch):
    """Paged, the header's totals come from a count apart; a commit moves them on at the
    next poll (not at the next health pass, 30 s later)."""
    # Counts are spaced by 20x what the last one took, on the source's clock: a driven
    # clock does not move during a count, so the next one is due at once.
    path = await many_mailboxes(tmp_path / "coordination.sqlite", PAGE_CARDS + 20)
    app = clocked_app(path, Clock(), interval=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        index = index_of(app)
        count = PAGE_CARDS + 20  # each with two unread rows, one for each side
        assert index.totals == (count, 2 * count)
        await send(
            path,
            "One more.",
            "more-1",
            sender=("session-3", "agent-3"),
            target=("session-4", "agent-4"),
        )
        await until(app, pilot, lambda: index.totals == (count, 2 * count + 1), step=0.1)
        status = str(index.query_one("#index-status", Static).render())
        assert f"{count} mailboxes · {2 * count + 1} unread" in status, status


async def test_filtered_cards_keep_their_place_on_a_commit_and_their_ages_move_on(
    tmp_path, monkeypatch
):
    count = 2 * PAGE_CARDS + 30
    path = await many_mailboxes(tmp_path / "coordination.sqlite", count)
    clock = Clock()
    app = clocked_app(path, clock, interval=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        index = index_of(app)
        cards = index.query_one("#cards", OptionList)
        index.query_one("#index-filter", Input).value = "agent"
        await until(app, pilot, lambda: index.match_count == count)
        cards.focus()
        await press(app, pilot, "end")
        assert cards.option_count == 2 * PAGE_CARDS
        cards.highlighted = 2 * PAGE_CARDS - 5
        chosen = cards.get_option_at_index(cards.highlighted).id
        await send(path, "A commit.", "keep-place", target=("session-0", "agent-0"))
        await until(app, pilot, lambda: index.match_count == count + 1)  # the new one matches
        await settle(app, pilot)
        assert cards.option_count >= 2 * PAGE_CARDS
        assert cards.get_option_at_index(cards.highlighted).id == chosen
        # A match far below the loaded pages: its age moves on like any card's.
        oldest = "mailbox-00000000-0000-4000-8000-000000000000"
        index.query_one("#index-filter", Input).value = "agent-0"
        await until(
            app,
            pilot,
            lambda: (
                index.match_count is not None
                and index.matches
                and any(s.id == oldest for s in index.matches)
            ),
        )
        await settle(app, pilot)
        first = str(cards.get_option(oldest).prompt)
        clock.advance(3 * 86_400)
        await until(app, pilot, lambda: str(cards.get_option(oldest).prompt) != first)
        assert "d ago" in str(cards.get_option(oldest).prompt)


async def test_a_filter_typed_in_one_burst_keeps_every_letter(demo):
    """A terminal delivers "/hbq" in one read: each key goes to what had the focus when
    it arrived (the cards), yet every letter lands in the box and no binding fires."""
    from textual import events

    app = clocked_app(demo, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        for key in ("slash", "h", "b", "q", "d"):
            app.post_message(events.Key(key, "/" if key == "slash" else key))
        await settle(app, pilot)
        box = index_of(app).query_one("#index-filter", Input)
        assert box.value == "hbqd" and box.has_focus
        assert app.screen is app.screen_stack[0] and app.is_running  # no health, no quit


async def test_a_search_typed_in_one_burst_keeps_every_letter(demo):
    from textual import events

    from termal_tui.tui.screens.search import SearchScreen

    app = clocked_app(demo, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await opened(app, pilot, "planner", "backend")
        for key in ("slash", "s", "t", "e", "p"):
            app.post_message(events.Key(key, "/" if key == "slash" else key))
        await settle(app, pilot)
        assert isinstance(app.screen, SearchScreen)
        assert app.screen.query_one(Input).value == "step"
