"""Pilot tests for the viewer: index, tabs, paging, dividers, shading, refresh, stale, jump,
read-only proof and hostile content."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import OptionList

from termal_tui.store import open_writer
from termal_tui.store.errors import StoreError
from termal_tui.tui.widgets.mailbox_view import MailboxView, ThreadHeader
from termal_tui.tui.widgets.tabs import TabStrip
from tests.helpers import cursors, digest
from tests.viewer_support import (
    app_for,
    demo_copy,
    mailbox_between,
    open_view,
    press,
    settle,
    wait_for,
)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    return demo_copy(tmp_path_factory.mktemp("demo"))


@pytest.fixture
def fresh_demo(tmp_path) -> Path:
    return demo_copy(tmp_path / "fresh")


def thread(view: MailboxView) -> OptionList:
    return view.query_one("#thread", OptionList)


def highlight(view: MailboxView, index: int) -> None:
    """Highlight the index-th message row (dividers are options too)."""
    thread(view).highlighted = thread(view).get_option_index(view.messages[index].id)


def prompts(view: MailboxView) -> list[str]:
    options = thread(view)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_index_lists_cards_newest_first_and_enter_opens_a_tab(demo_db):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert len(app.summaries) == 6
        times = [s.latest_message_at for s in app.summaries]
        assert times == sorted(times, reverse=True)
        await pilot.press("enter")
        await settle(app, pilot)
        view = app.active_view()
        assert view is not None and view.mailbox_id == app.summaries[0].id


async def test_opening_an_open_mailbox_focuses_its_tab_instead_of_copying(demo_db):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first = await open_view(app, pilot, "planner", "backend")
        await open_view(app, pilot, "planner", "docs")
        app.open_mailbox(first.mailbox_id)
        await settle(app, pilot)
        assert app.active_view() is first
        assert len(app.query(MailboxView)) == 2
        await pilot.press("w")  # closes the active tab (first)
        await settle(app, pilot)
        assert len(app.query(MailboxView)) == 1 and app.active_view() is not first


async def test_close_and_cycle_tabs_from_the_keyboard(demo_db):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await open_view(app, pilot, "planner", "backend")
        await open_view(app, pilot, "planner", "docs")
        tabs = app.query_one(TabStrip)
        order = tabs.pane_ids
        assert app.active_pane == order[2]
        await pilot.press("right_square_bracket")  # ] works on every keyboard
        assert app.active_pane == order[0]
        await pilot.press("left_square_bracket")
        assert app.active_pane == order[2]
        await pilot.press("ctrl+right")  # the old chord still works
        assert app.active_pane == order[0]
        await pilot.press("ctrl+left")
        await pilot.press("w")
        await settle(app, pilot)
        assert len(app.query(MailboxView)) == 1
        assert order[2] not in tabs.pane_ids
        assert app.active_pane == order[1]  # the closed tab's neighbour, shown
        assert app.screen.focused is app.active_view().thread


async def test_paging_loads_50_at_a_time_down_to_the_first_message(demo_db):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "backend")
        assert [m.sequence for m in view.messages][:2] == [140, 139]
        assert len(view.messages) == 50 and view.has_older
        thread(view).highlighted = 10
        await pilot.press("o")
        await settle(app, pilot)
        assert len(view.messages) == 100
        assert thread(view).highlighted == 10  # the reader's position is kept
        await pilot.press("o")
        await settle(app, pilot)
        assert len(view.messages) == 140 and not view.has_older
        assert view.messages[-1].sequence == 1
        assert "start of mailbox" in prompts(view)[-1]
        sequences = [m.sequence for m in view.messages]
        assert sequences == sorted(set(sequences), reverse=True)


async def test_dividers_mark_where_lagging_participants_stand(demo_db):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "backend")
        await pilot.press("o")
        await settle(app, pilot)
        texts = prompts(view)
        planner = next(t for t in texts if "planner has processed to here (#120)" in t)
        backend = next(t for t in texts if "backend has processed to here (#96)" in t)
        # The divider is drawn right above the first row at or below the cursor.
        assert planner.split("\n")[1].lstrip("▸ ").startswith("#120")
        assert backend.split("\n")[1].lstrip("▸ ").startswith("#96")
        assert sum("has processed to here" in t for t in texts) == 2


async def test_shading_follows_the_target_participants_cursor(demo_db):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "backend")
        by_sequence = {m.sequence: t for m, t in zip(view.messages, _row_texts(view), strict=True)}
        assert "Processed" in by_sequence[120]  # backend → planner, planner at 120
        assert "Unread" in by_sequence[122]  # backend → planner, beyond 120
        assert "Unread" in by_sequence[121]  # planner → backend, backend at 96
        assert "●" in by_sequence[121] and "✓" in by_sequence[120]  # glyphs, not colour alone


def _row_texts(view: MailboxView) -> list[str]:
    return [str(thread(view).get_option(m.id).prompt) for m in view.messages]


async def test_enter_expands_a_row_with_wake_diagnostics_and_full_body_opens(demo_db):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "backend", "reviewer")
        highlight(view, 1)  # the 100 KiB log dump (#1)
        await pilot.press("enter")
        await pilot.pause()
        text = str(thread(view).get_option(view.messages[1].id).prompt)
        for label in (
            "Wake now",
            "Wake at send",
            "State stamp",
            "Unread at send",
            "Message id",
            "Idempotency key",
            "more lines — press f for the full body",
        ):
            assert label in text
        # Plain words first, TermAl's value beside them.
        assert "queued behind a turn (queuedBehindActiveTurn)" in text
        await pilot.press("f")
        await pilot.pause()
        assert type(app.screen).__name__ == "BodyScreen"
        await pilot.press("escape")
        await pilot.press("enter")
        await pilot.pause()
        assert "Wake now" not in str(thread(view).get_option(view.messages[1].id).prompt)


async def test_refresh_shows_new_rows_at_top_and_announces_them_below_the_top(fresh_demo):
    app = app_for(fresh_demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "backend")
        await _append(fresh_demo, "new at the top")
        await pilot.press("r")
        await settle(app, pilot)
        assert view.messages[0].sequence == 141 and not view.pending
        thread(view).highlighted = 5
        await pilot.pause()
        await _append(fresh_demo, "arrives while reading")
        await pilot.press("r")
        await settle(app, pilot)
        assert view.messages[0].sequence == 141 and [m.sequence for m in view.pending] == [142]
        assert view.has_class("-has-new")
        assert thread(view).highlighted == 5
        await pilot.press("n")
        await pilot.pause()
        assert view.messages[0].sequence == 142 and not view.pending


async def _append(path: Path, body: str) -> None:
    async with open_writer(path) as writer:
        await writer.append(
            sender_session_id="session-2",
            sender_name="backend",
            target_session_id="session-1",
            target_name="planner",
            body=body,
            idempotency_key=f"test-{body}",
        )


async def test_failed_refresh_keeps_content_and_shows_stale(demo_db, monkeypatch):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "backend")
        loaded = list(view.messages)

        async def broken(*args, **kwargs):
            raise StoreError("disk went away")

        monkeypatch.setattr(app.reader, "get_head", broken)
        await pilot.press("r")
        await settle(app, pilot)
        header = view.query_one(ThreadHeader)
        assert not view.live and header.state == "stale" and "disk went away" in header.error
        assert view.messages == loaded
        monkeypatch.undo()
        await pilot.press("r")
        await settle(app, pilot)
        assert view.live and header.state == "paused" and header.error == ""


async def test_jump_loads_older_pages_and_highlights_the_row(demo_db):
    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "backend")
        view.jump_to(7)
        await settle(app, pilot)
        highlighted = thread(view).highlighted_option
        assert highlighted is not None and view.message_by_id(highlighted.id).sequence == 7


async def test_command_palette_offers_jump_and_open(demo_db):
    from termal_tui.tui.commands import MailboxCommands

    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "backend")
        provider = MailboxCommands(app.screen)
        hits = [hit async for hit in provider.search("#12")]
        assert str(hits[0].text) == "Jump to #12 in the current mailbox"
        names = [str(hit.text) async for hit in provider.search("docs")]
        assert any("planner ⇄ docs" in name for name in names)
        hits[0].command()  # the view's own jump
        await settle(app, pilot)
        assert view.highlighted_message().sequence == 12


async def _palette(provider) -> list[str]:
    return [str(hit.text) async for hit in provider.discover()]


async def test_the_palette_offers_a_tabs_commands_only_while_a_tab_is_active(demo_db):
    from termal_tui.tui.commands import MailboxCommands

    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        provider = MailboxCommands(app.screen)
        on_the_index = await _palette(provider)
        assert "Refresh now" in on_the_index and "Delivery health" in on_the_index
        assert "Load older messages" not in on_the_index
        assert "Show new messages" not in on_the_index
        on_index = [str(hit.text) async for hit in provider.search("#12")]
        assert on_index and all(" in the current mailbox" not in t for t in on_index)
        view = await open_view(app, pilot, "planner", "backend")
        in_a_tab = await _palette(provider)
        assert "Load older messages" in in_a_tab
        assert "Show new messages" not in in_a_tab  # nothing announced
        (older,) = [h async for h in provider.discover() if str(h.text).startswith("Load")]
        older.command()
        await settle(app, pilot)
        assert len(view.messages) == 100


async def test_empty_database_shows_a_helpful_empty_state(tmp_path):
    path = tmp_path / "coordination.sqlite"
    async with open_writer(path):
        pass
    app = app_for(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.query_one("#mailbox-index").has_class("-empty")


async def test_a_whole_session_never_changes_the_database(fresh_demo):
    before = (digest(fresh_demo), cursors(fresh_demo))
    app = app_for(fresh_demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        for summary in list(app.summaries):
            app.open_mailbox(summary.id)
            await settle(app, pilot)
            view = app.active_view()
            while view.has_older:  # down to the first message (not four fixed presses)
                await pilot.press("o")
                await settle(app, pilot)
            for index in range(min(3, len(view.messages))):
                highlight(view, index)
                await pilot.press("enter")
            await pilot.press("r")
            await settle(app, pilot)
        while app.active_view() is not None:
            await pilot.press("w")
            await settle(app, pilot)
    assert (digest(fresh_demo), cursors(fresh_demo)) == before


WRITER_LOOP = """
import asyncio, sys
from termal_tui.store import open_writer
async def main(path):
    async with open_writer(path) as w:
        for i in range(60):
            await w.append(sender_session_id="session-8", sender_name="late", target_session_id="session-9",
                           target_name="later", body=f"concurrent {i}", idempotency_key=f"c-{i}")
            await asyncio.sleep(0.01)
asyncio.run(main(sys.argv[1]))
"""


async def test_viewer_changes_no_cursor_while_another_process_appends(fresh_demo):
    before_cursors = cursors(fresh_demo)
    proc = subprocess.Popen([sys.executable, "-c", WRITER_LOOP, str(fresh_demo)])
    # End to end, on real time: the file watcher and the poll read while the other writes.
    app = app_for(fresh_demo, poll_interval=0.05, live_clock=None, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: app.summaries)
        await settle(app, pilot)  # the cards have the keys (a focus moves tabs)
        view = await open_view(app, pilot, "planner", "backend")
        await wait_for(lambda: proc.poll() is not None, timeout=60)
        assert view.live
        app.action_show_index()
        await wait_for(lambda: any("late" in str(s.participants) for s in app.summaries))
    assert proc.returncode == 0
    after = [row for row in cursors(fresh_demo) if row[1] not in {"session-8", "session-9"}]
    assert after == before_cursors


async def test_hostile_content_is_literal_inert_and_escape_free(demo_db):
    app = app_for(demo_db)
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "frontend")
        for index in range(len(view.messages)):
            highlight(view, index)
            await pilot.press("enter")
        await pilot.pause()
        assert app.is_running  # [@click=app.quit] and [/x] did not crash or quit
        screen = app.export_screenshot()
        assert "\x1b" not in screen and "\x00" not in screen and "\x9b" not in screen
        text = "\n".join(prompts(view))
        assert "[bold]this should not be bold[/]" in text
        assert "[@click=app.quit]quit the viewer[/]" in text
        assert "Unterminated markup [b and a closing tag [/x]" in text
        assert "␛[31mred text␛[0m" in text and "␛]0;pwned␇" in text
        assert "␀" in text and "⟨C1:9B⟩" in text and "⟨RLO⟩exe.txt⟨PDF⟩" in text
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "termal_tui", *args], capture_output=True, text=True, timeout=60
    )


def test_cli_bad_input_gets_one_sentence_and_a_non_zero_exit(tmp_path, demo_db):
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database")
    # A path under a regular file can never appear (one that can is the first run: the
    # viewer opens and waits for it).
    cases = [
        ((str(garbage / "missing.sqlite"),), 3, "does not exist. Try `termal-tui --demo`"),
        (("--db", str(garbage)), 8, "is not a SQLite database"),
        (
            (str(demo_db), "--mailbox", "mailbox-nope"),
            3,
            "no visible mailbox with id `mailbox-nope`",
        ),
        ((str(demo_db), "--session", "session-nope"), 3, "no mailbox participant has session id"),
    ]
    for args, code, expected in cases:
        result = _cli(*args)
        assert result.returncode == code, args
        assert expected in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert _cli("--version").stdout.strip() == "termal-tui 0.1.0"
    assert _cli("--interval", "-3").returncode == 2


LAZY = (
    "termal_tui.views.findings",
    "termal_tui.views.export",
    "termal_tui.views.thread",
    "termal_tui.tui.commands",
    "termal_tui.tui.widgets.mailbox_view",
    "termal_tui.tui.screens.help",
    "termal_tui.tui.screens.health",
    "termal_tui.tui.screens.search",
    "termal_tui.tui.screens.body",
)


def test_starting_the_viewer_imports_only_what_the_first_screen_needs():
    """Health, export, the thread model and view, the palette's provider and every
    screen are imported where they are used, not at start-up."""
    code = (
        f"import sys, termal_tui.tui.app\nprint(sorted(m for m in {LAZY!r} if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


async def test_with_mailbox_the_tab_is_in_the_first_frame_and_the_index_follows(demo):
    """--mailbox on a file that is there: the tab is composed with the first frame
    (before the file is read) and the index is built behind it after the tab's first
    page; 0 then shows the index with its cards and keys."""
    from termal_tui.tui.widgets.index import MailboxIndex

    probe = app_for(demo)
    async with probe.run_test(size=(120, 40)) as pilot:
        await settle(probe, pilot)
        target = mailbox_between(probe, "planner", "backend")
    app = app_for(demo, mailbox_id=target)
    first_frame: list[tuple[int, int]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        first_frame.append((len(app.query(MailboxView)), len(app.query(MailboxIndex))))
        await settle(app, pilot)
        view = app.active_view()
        assert view is not None and len(view.messages) == 50
        await wait_for(lambda: app.query(MailboxIndex))
        await press(app, pilot, "0")
        await settle(app, pilot)
        index = app.query_one(MailboxIndex)
        assert index.summaries and app.focused is not None
        assert app.focused in (index, *index.query("*"))
    assert first_frame == [(1, 0)]
