"""The viewer left open all day: one vocabulary, narrow terminals, keys that match what
happens, the config file and attention signals (Pilot; timers are waited out)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Input, OptionList, TextArea

from termal_tui.store import open_writer
from termal_tui.tui.app import MailboxApp
from termal_tui.tui.cells import cells
from termal_tui.tui.render import card
from termal_tui.tui.screens.body import BodyScreen
from termal_tui.tui.screens.help import HelpScreen
from termal_tui.tui.screens.search import SearchScreen
from termal_tui.tui.widgets.mailbox_view import MailboxView, clipboard_note
from termal_tui.tui.widgets.tabs import TabStrip
from termal_tui.views.config import load_config
from termal_tui.views.thread import StartMarker
from tests.viewer_support import (
    advance,
    app_for,
    mailbox_between,
    screen_lines,
    screen_text,
    settle,
    wait_for,
)

BIG = "mailbox-00000000-0000-4000-8000-00000000beef"


# Every test reads and writes its own XDG directories (never the user's).
pytestmark = pytest.mark.usefixtures("xdg")


def write_config(tmp_path: Path, text: str) -> None:
    path = tmp_path / "xdg_config_home" / "termal-tui" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def big_mailbox(path: Path, count: int, body: str = "Row {n}. Detail.") -> str:
    async def create() -> None:
        async with open_writer(path):
            pass

    asyncio.run(create())
    db = sqlite3.connect(path)
    db.execute(
        "INSERT INTO mailboxes VALUES (?, '[\"a\",\"b\"]', '2026-01-01T00:00:00+00:00', ?)",
        (BIG, count + 1),
    )
    db.executemany(
        "INSERT INTO mailbox_participants VALUES (?, ?, ?, ?, '2026-01-01T00:00:00+00:00', NULL)",
        [(BIG, "a", "alpha", 0), (BIG, "b", "beta", count)],
    )
    db.executemany(
        "INSERT INTO mailbox_messages VALUES (?,?,?,?,?,?,?,?,'routine',NULL,NULL,?,?,1,"
        "'durableButNotWoken','durableButNotWoken')",
        (
            (
                f"m-{n}",
                BIG,
                n,
                "b",
                "beta",
                "a",
                "alpha",
                f"2026-11-30T11:{n % 60:02d}:00+00:00",
                body.format(n=n),
                f"k-{n}",
            )
            for n in range(1, count + 1)
        ),
    )
    db.commit()
    db.close()
    return BIG


async def big(tmp_path: Path, count: int, body: str = "Row {n}. Detail.") -> Path:
    path = tmp_path / "big" / "coordination.sqlite"
    path.parent.mkdir()
    await asyncio.to_thread(big_mailbox, path, count, body)
    return path


async def open_tab(app: MailboxApp, pilot: object, *names: str) -> MailboxView:
    await settle(app, pilot)
    app.open_mailbox(mailbox_between(app, *names))
    await settle(app, pilot)
    view = app.active_view()
    assert view is not None
    return view


def footer(app: MailboxApp) -> str:
    return screen_lines(app)[-1]


# ---------------------------------------------------------------- 3. words


async def test_rows_say_how_long_ago_and_the_expanded_row_the_time_with_its_zone(tmp_path):
    path = await big(tmp_path, 1_300)
    app = app_for(path, mailbox_id=BIG)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = app.active_view()
        head = str(view.thread.get_option(view.messages[0].id).prompt).splitlines()[0]
        assert "#1,300" in head  # one number format everywhere
        assert "min ago" in head and "2026-" not in head  # relative, not a stamp
        await pilot.press("enter")
        await settle(app, pilot)
        text = str(view.thread.get_option(view.messages[0].id).prompt)
        assert "Sent             2026-11-30 11:40:00 UTC" in text
        assert "UTC (UTC+00:00)" not in text  # the zone said once
        assert "Wake now         never woken (durableButNotWoken)" in text


def test_cards_say_how_long_ago_and_keep_the_short_id_on_their_first_line():
    from datetime import UTC, datetime

    from termal_tui.core.models import MailboxParticipant, MailboxSummary

    names = ["a-very-long-participant-name-for-the-backend", "another-long-name-planner"]
    summary = MailboxSummary(
        id="mailbox-3fcb1a2e-0000-4000-8000-000000000000",
        participants=[
            MailboxParticipant(session_id=n, display_name=n, processed_through=0) for n in names
        ],
        latest_sequence=1221,
        unread_count=1221,
        latest_message_preview="Details follow " * 10,
        latest_message_at="2026-11-30T11:57:00+00:00",
    )
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    for width in (75, 55):
        first, second = card(summary, width, "never woken", now).plain.split("\n")
        assert cells(first) <= width  # no line wider than its width in cells
        assert "#1,221 · 3 min ago" in first  # the age stays (a monitor reads it)
        # At 80 columns the short id stays too; narrower, it gives way first.
        assert first.endswith("3fcb1a2e") == (width == 75)
        assert second.startswith("never woken · ") and second.endswith("…")
    assert "3 min ago" in card(summary, 75, None, now).plain


async def test_help_explains_every_state_and_marker_in_the_same_words(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        from termal_tui.tui.screens.help import help_text

        text = help_text(app.screen.keys)
        for words in (
            "never woken",
            "durableButNotWoken",
            "woken on recovery",
            "receiver gone",
            "nobody listening",
            "woken, not processed",
            "● Stale",
            "filter the cards",
            "Home / End",
            "▲ N new messages",
        ):
            assert words in text, words
        # No phrase wraps at 120 columns: every help line is inside the box.
        from termal_tui.tui.screens.help import HELP_TEXT

        assert max(len(line) for line in HELP_TEXT.splitlines()) <= 100
        assert "PgDn reads a tall row page by page" in screen_text(app)


# ----------------------------------------------------------- 5. narrow, resize


def test_a_row_s_second_line_says_when_more_of_the_body_is_cut():
    """At 60 columns a row showed its first sentence and nothing after it, with no sign
    the body goes on; at every width the line fits and ends with … when text is cut."""
    from termal_tui.core.models import MailboxMessage, MailboxSummary
    from termal_tui.tui.render import message_row

    message = MailboxMessage(
        id="m-1",
        mailbox_id="mb",
        sequence=1,
        sender_session_id="s-a",
        sender_name="planner",
        target_session_id="s-b",
        target_name="backend",
        created_at="2026-11-30T12:00:00Z",
        body="Step 139: please take the perf work next. Keep the change small and report.",
        notification_state="durableButNotWoken",
    )
    summary = MailboxSummary(id="mb", participants=[], latest_sequence=1, unread_count=1)
    for width in range(30, 121):
        second = message_row(message, summary, False, width=width).plain.splitlines()[1]
        assert len(second) <= width, (width, second)
        assert second.endswith("report.") or second.endswith("…"), (width, second)


async def test_rows_follow_the_width_both_ways_with_an_ellipsis(tmp_path):
    long_body = "Row {n}. Details follow in the attached log with many more words " * 3
    path = await big(tmp_path, 600, long_body)
    app = app_for(path, mailbox_id=BIG)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = app.active_view()
        while len(view.messages) < 600:
            await pilot.press("o")
            await settle(app, pilot)

        def preview() -> str:
            return str(view.thread.get_option(view.messages[0].id).prompt).splitlines()[1]

        wide = preview()
        assert wide.endswith("…") and len(wide) > 100
        for width in (110, 100, 90, 80):  # a drag: many sizes, quickly
            await pilot.resize_terminal(width, 24)
        await settle(app, pilot)
        narrow = preview()
        assert narrow.endswith("…") and len(narrow) <= 80 - 5
        for width in (90, 100, 110, 120):
            await pilot.resize_terminal(width, 40)
        await settle(app, pilot)
        assert preview() == wide


async def test_at_60_columns_the_unread_mark_stays_whole_and_the_footer_fits(demo):
    app = app_for(demo)
    async with app.run_test(size=(60, 20)) as pilot:
        view = await open_tab(app, pilot, "planner", "backend")
        lines = screen_lines(app)
        heads = [line for line in lines if "Unread" in line or "Processed" in line]
        assert heads and all("● Unread" in line or "✓ Processed" in line for line in heads)
        assert not any(line.rstrip().endswith("●") for line in lines)
        assert footer(app).rstrip().endswith("palette")
        assert "Tab▏" not in footer(app)
        assert view.thread.size.width <= 60


async def test_six_tabs_at_80_columns_keep_the_active_tab_on_the_strip(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for summary in list(app.summaries):
            app.open_mailbox(summary.id)
            await settle(app, pilot)
            strip = app.query_one(TabStrip)
            start, end = strip.region_of(app.active_pane)
            assert start >= 0 and end <= strip.size.width
            label = strip.label(app.active_pane).plain
            assert label in screen_lines(app)[strip.region.y], label  # drawn whole
        assert len(app.query(MailboxView)) == 6


# ---------------------------------------------------------------- 6. keys


async def test_the_full_body_and_search_screens_show_their_own_footers(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(app, pilot, "backend", "reviewer")
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, BodyScreen)
        keys = footer(app)
        assert "Close" in keys and "end Last line" in keys and "home First line" in keys
        assert "w " not in keys and "Older" not in keys
        await pilot.press("escape")
        await pilot.press("slash")
        await pilot.pause()
        assert isinstance(app.screen, SearchScreen)
        keys = footer(app)
        assert "esc Close" in keys and "w " not in keys and "Older" not in keys


async def test_the_full_body_screen_has_end_and_home(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await open_tab(app, pilot, "backend", "reviewer")
        view.thread.highlighted = 1  # the 1,600-line log
        await pilot.press("f")
        await pilot.pause()
        area = app.screen.query_one(TextArea)
        await pilot.press("end")
        await pilot.pause()
        assert area.cursor_location[0] == area.document.line_count - 1
        assert area.scroll_y > 1000
        await pilot.press("home")
        await pilot.pause()
        assert area.cursor_location == (0, 0) and area.scroll_y == 0


async def test_a_gap_row_offers_to_load_rows_not_to_expand(tmp_path):
    path = await big(tmp_path, 2_000)
    app = app_for(path, mailbox_id=BIG)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = app.active_view()
        view.jump_to(1_000)
        await settle(app, pilot)
        assert "⏎ Expand" in footer(app)
        gap = next(i for i, item in enumerate(view.model.items) if type(item).__name__ == "Gap")
        view.thread.highlighted = gap
        await settle(app, pilot)
        assert "Load rows" in footer(app) and "Expand" not in footer(app)
        await pilot.press("enter")
        await settle(app, pilot)
        assert len(view.messages) > 101  # enter loaded the rows there


async def test_at_60_columns_the_index_footer_keeps_the_filter_over_the_tab_keys(demo):
    app = app_for(demo)
    async with app.run_test(size=(60, 20)) as pilot:
        await open_tab(app, pilot, "planner", "backend")
        await pilot.press("0")
        await settle(app, pilot)
        line = footer(app)
        assert "/ Filter" in line and "h Health" in line, line  # [ ] Tabs gave way first
        assert len(line) <= 60


async def test_the_tab_footer_offers_search_copy_export_and_quit_at_120(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_tab(app, pilot, "planner", "backend")
        keys = footer(app)
        for shown in ("/ Search", "c Copy", "C Id", "e Export", "q Quit", "[ ] Tabs"):
            assert shown in keys, shown
        assert keys.rstrip().endswith("palette")


async def test_search_enter_and_down_move_to_results_with_snippet_time_and_mailbox(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_tab(app, pilot, "planner", "backend")
        await pilot.press("slash")
        await pilot.press(*"migration")
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await wait_for(lambda: screen.done)
        await settle(app, pilot)
        results = screen.query_one("#results", OptionList)
        assert app.focused is results  # enter went to the results
        prompt = str(results.get_option_at_index(0).prompt)
        assert "ago" in prompt and "planner ⇄ backend" in prompt
        assert "migration" in prompt.splitlines()[-1].lower()
        screen.query_one("#query", Input).focus()
        await pilot.pause()
        offered = {
            key: b.binding.description
            for key, b in app.active_bindings.items()
            if b.binding.show and b.enabled
        }
        assert offered.get("down") == "Results"  # the footer says where down goes
        await pilot.press("down")
        assert app.focused is results
        await pilot.press("enter")  # a result: jumps there
        await settle(app, pilot)
        assert not isinstance(app.screen, SearchScreen)


def test_a_snippet_never_exceeds_its_room_and_keeps_the_match():
    from termal_tui.tui.screens.search import snippet

    body = "x" * 300 + " the needle here " + "y" * 300
    for room in range(12, 120, 7):
        for text in (body, body[:200], "short needle", "no match at all " * 20):
            shown, start, end = snippet(text, "needle", room)
            assert len(shown) <= room, (room, shown)
            if "needle" in text:
                assert shown[start:end] == "needle"
            else:
                assert (start, end) == (-1, -1)


async def test_each_search_result_is_a_title_line_and_a_snippet_line_at_any_width(demo):
    """A result never wraps (it split over four lines at 80 columns): the title line is
    cut with an ellipsis, the snippet fits under it, and both follow a resize."""
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(app, pilot, "planner", "backend")
        await pilot.press("slash", *"step", "enter")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await wait_for(lambda: screen.done)
        await settle(app, pilot)
        results = screen.query_one("#results", OptionList)
        for size in ((80, 24), (60, 20), (120, 40)):
            await pilot.resize_terminal(*size)
            await settle(app, pilot)
            padding = results.get_component_styles("option-list--option").padding.width
            room = results.scrollable_content_region.width - padding
            lines_of = [str(results.get_option_at_index(i).prompt).splitlines() for i in range(3)]
            assert all(len(lines) == 2 for lines in lines_of), (size, lines_of)
            assert all(len(line) <= room for lines in lines_of for line in lines), (size, room)
            assert any(lines[0].endswith("…") for lines in lines_of) == (size[0] < 120)
            assert "step" in lines_of[0][1].lower()
        assert "No message in" not in screen_text(app)
        await pilot.press("escape", "slash", *"zzzq", "enter")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await wait_for(lambda: screen.done)
        assert "No message in planner ⇄ backend contains “zzzq”." in screen_text(app)


async def test_the_index_filter_escape_clears_and_no_match_says_so(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("slash", *"zzz")
        await pilot.pause()
        text = screen_text(app)
        assert "no mailbox matches “zzz” (of 6)" in text and "6 mailboxes" not in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.query_one("#index-filter", Input).value == ""
        assert app.focused is not None and app.focused.id == "cards"
        assert "6 mailboxes" in screen_text(app)
        await pilot.press("slash", *"docs")
        await pilot.pause()
        assert "1 of 6 mailboxes match “docs”" in screen_text(app)


async def test_end_lands_on_the_start_of_the_mailbox_in_one_press(tmp_path):
    path = await big(tmp_path, 5_000)
    app = app_for(path, mailbox_id=BIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        view = app.active_view()
        await pilot.press("end")
        await settle(app, pilot)
        await pilot.pause()
        # The oldest row is highlighted (keys act on it), the marker shows below it.
        assert view.highlighted_message().sequence == 1
        assert isinstance(view.model.items[view.thread.highlighted + 1], StartMarker)
        assert "— start of mailbox —" in screen_text(app)
        assert "#1 " in screen_text(app)


async def test_n_shows_the_new_rows_with_the_top_row_whole(tmp_path):
    path = await big(tmp_path, 200)
    app = app_for(path, mailbox_id=BIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        view = app.active_view()
        view.thread.highlighted = 30  # reading below the top
        await settle(app, pilot)
        async with open_writer(path) as writer:
            for n in range(5):
                await writer.append(
                    sender_session_id="b",
                    sender_name="beta",
                    target_session_id="a",
                    target_name="alpha",
                    body=f"New {n}.",
                    idempotency_key=f"new-{n}",
                )
        view.refresh_thread(force=True)
        await settle(app, pilot)
        assert view.model.pending
        await pilot.press("n")
        await settle(app, pilot)
        await pilot.pause()
        assert view.thread.highlighted == 0 and view.thread.scroll_y == 0
        assert "#205" in screen_lines(app)[5] or "#205" in screen_text(app).split("\n", 8)[-1]


async def test_quick_repeated_o_loads_one_page_per_press(tmp_path):
    path = await big(tmp_path, 2_000)
    app = app_for(path, mailbox_id=BIG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        view = app.active_view()
        await pilot.press(*["o"] * 8)  # faster than a page is read
        await settle(app, pilot)
        await wait_for(lambda: len(view.messages) == 50 + 8 * 50 and not view._older_busy)


async def test_an_expanded_body_wraps_under_its_text_at_80_columns(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await open_tab(app, pilot, "planner", "backend")
        message = next(m for m in view.messages if len(max(m.body.split("\n"), key=len)) > 80)
        view.thread.highlighted = view.model.index_of(message.id)
        await pilot.press("enter")
        await settle(app, pilot)
        lines = str(view.thread.get_option(message.id).prompt).splitlines()
        body = lines[lines.index("   Body") + 1 :]
        assert len(body) > 1 and all(line.startswith("     ") for line in body)
        assert all(len(line) <= 80 - 5 for line in lines)


# ------------------------------------------------------------- 8. small things


async def test_the_palette_lists_mailboxes_before_textual_s_own_and_hints_at_jumps(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+p")
        await wait_for(lambda: "Theme" in screen_text(app))
        text = screen_text(app)
        assert "#N jumps to a message" in text
        assert text.index("Open mailbox") < text.index("Theme")  # ours first, then Textual's


def test_the_copy_note_says_what_the_terminal_must_allow():
    under_tmux = clipboard_note("12 characters", {"TMUX": "/tmp/tmux-0/default,1,0"})
    assert "OSC 52" in under_tmux and "set-clipboard on" in under_tmux
    assert not under_tmux.startswith("Copied")
    assert "terminal allows" in clipboard_note("12 characters", {})


async def test_export_goes_to_the_configured_directory(demo, xdg, monkeypatch):
    monkeypatch.chdir(xdg)
    write_config(xdg, f'export_dir = "{xdg / "exports"}"\n')
    app = app_for(demo, config=load_config())
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(app, pilot, "planner", "docs")
        await pilot.press("e")
        await pilot.pause()
        (written,) = (xdg / "exports").glob("termal-*.jsonl")
        assert not list(xdg.glob("*.jsonl"))
        note = next(n for n in app._notifications if n.title.startswith("Exported"))
        assert note.message.split("\n")[0] == written.name


# ---------------------------------------------------------------- 9. config


async def test_a_remapped_key_works_and_shows_in_footer_and_help(demo, xdg):
    write_config(xdg, '[keys]\nsearch = "ctrl+f"\nolder = "O"\n')
    app = app_for(demo, config=load_config())
    async with app.run_test(size=(120, 40)) as pilot:
        view = await open_tab(app, pilot, "planner", "backend")
        keys = footer(app)
        assert "^f Search" in keys and "/ Search" not in keys and "O Older" in keys
        await pilot.press("question_mark")
        await pilot.pause()
        assert "  ^f                     search bodies" in screen_text(app)
        await pilot.press("escape")
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert isinstance(app.screen, SearchScreen)
        await pilot.press("escape")
        await pilot.press("O")
        await settle(app, pilot)
        assert len(view.messages) == 100


async def test_a_collision_or_unknown_id_is_one_sentence_and_the_defaults_stay(demo, xdg):
    write_config(xdg, '[keys]\nsearch = "r"\nfrobnicate = "x"\n')
    app = app_for(demo, config=load_config())
    async with app.run_test(size=(120, 40)) as pilot:
        await open_tab(app, pilot, "planner", "backend")
        (note,) = [n for n in app._notifications if n.title.startswith("Config")]
        assert note.title == "Config: 2 problems (defaults kept there)"
        assert "keys.search: r is already refresh's key" in note.message
        assert "keys.frobnicate: no binding has that id" in note.message
        assert "/ Search" in footer(app)


async def test_many_config_problems_are_one_notification_that_fits(demo, xdg):
    """Six problems were six notifications, and the first was pushed off the top."""
    bad = "\n".join(f'frob{n} = "x"' for n in range(7))
    write_config(xdg, f"interval = -1\n[keys]\n{bad}\n")
    app = app_for(demo, config=load_config())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        (note,) = [n for n in app._notifications if n.title.startswith("Config")]
        lines = note.message.splitlines()
        assert len(lines) == 6 and lines[-1] == "… and 3 more"
        assert note.title == "Config: 8 problems (defaults kept there)"
        assert any("interval" in line for line in lines)


async def test_a_broken_config_never_stops_the_viewer(demo, xdg):
    write_config(xdg, "theme = \n[[[\n")
    app = app_for(demo, config=load_config())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert len(app.summaries) == 6
        (note,) = [n for n in app._notifications if n.title.startswith("Config")]
        assert "is not valid TOML" in note.message and "using the defaults" in note.message


async def test_the_theme_chosen_is_kept_across_restarts(demo, xdg):
    write_config(xdg, 'theme = "nord"\n')
    state = xdg / "xdg_state_home" / "termal-tui" / "theme"
    app = app_for(demo, config=load_config())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.theme == "nord"
        assert not state.exists()  # the config's own theme is not a choice to remember
        app.theme = "gruvbox"  # what the palette's Theme command does
        await pilot.pause()
    assert state.read_text() == "gruvbox\nnord\n"
    again = app_for(demo, config=load_config())
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(again, pilot)
        assert again.theme == "gruvbox"
    write_config(xdg, 'theme = "dracula"\n')  # the file changed since: it wins
    third = app_for(demo, config=load_config())
    async with third.run_test(size=(80, 24)) as pilot:
        await settle(third, pilot)
        assert third.theme == "dracula"
        assert state.read_text() == "gruvbox\nnord\n"  # nothing new was chosen


# ------------------------------------------------------------- 9. attention


async def test_attention_rings_only_while_away_and_the_title_carries_the_counts(demo, xdg):
    write_config(xdg, "[attention]\nbell = true\ndesktop = true\nevery = 0\n")
    app = app_for(demo, config=load_config(), poll_interval=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        written: list[str] = []
        driver = app._driver
        original = driver.write
        driver.write = lambda data: (written.append(data), original(data))[1]  # type: ignore[method-assign]

        async def arrive(body: str) -> None:
            async with open_writer(demo) as writer:
                await writer.append(
                    sender_session_id="session-2",
                    sender_name="backend\x1b]0;pwned\x07",
                    target_session_id="session-1",
                    target_name="planner",
                    body=body,
                    idempotency_key=f"attention-{body}",
                )

        await arrive("While you look.")
        # The check that sees it retitles the terminal with the new count.
        await advance(app, pilot, 0.2)
        assert any(w.startswith("\x1b]2;termal-tui · ") for w in written)
        assert any("43 unread" in w for w in written if w.startswith("\x1b]2;")), written
        for _ in range(3):  # checks happen; the app has focus: no signal
            await advance(app, pilot, 0.2)
        assert not any(w == "\a" or "\x1b]777;" in w for w in written)
        app.post_message(events.AppBlur())
        await pilot.pause()
        await arrive("While you are away.")
        await advance(app, pilot, 0.2)
        assert any("\x1b]777;notify;termal-tui;" in w for w in written)
        signal = next(w for w in written if "\x1b]777;" in w)
        assert signal.startswith("\a") and "new message" in signal
        assert signal.count("\x1b") == 2  # the agent's name brought no escape of its own
