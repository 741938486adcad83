"""The viewer's chrome drawn as single widgets (title bar, tab strip, footer): each does
what Textual's Header, TabbedContent and Footer did for a person — clicks on tabs, on
footer keys and on the palette's icon, ←/→ on the focused tab row, a hover, the active
tab kept on a strip narrower than its labels."""

from __future__ import annotations

from textual.command import CommandPalette

from termal_tui.tui.app import INDEX_PANE
from termal_tui.tui.screens.help import HelpScreen
from termal_tui.tui.widgets.footer import FittingFooter, FooterKey, fitted
from termal_tui.tui.widgets.tabs import TabStrip
from termal_tui.tui.widgets.title import ICON_CELLS, TitleBar
from tests.viewer_support import app_for, open_view, screen_lines, settle


async def test_a_click_on_a_tab_label_shows_that_tab_and_gives_it_the_keys(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "backend")
        strip = app.query_one(TabStrip)
        start, _end = strip.region_of(INDEX_PANE)
        await pilot.click(TabStrip, offset=(start + 2, 0))
        await settle(app, pilot)
        assert app.active_pane == INDEX_PANE and not view.display
        assert app.screen.focused is app.query_one("#cards")
        start, _end = strip.region_of(view.id)
        await pilot.click(TabStrip, offset=(start + 2, 1))  # the bar under it too
        await settle(app, pilot)
        assert app.active_pane == view.id and view.display
        assert app.screen.focused is view.thread


async def test_left_and_right_on_the_focused_tab_row_move_between_tabs(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first = await open_view(app, pilot, "planner", "backend")
        second = await open_view(app, pilot, "planner", "docs")
        strip = app.query_one(TabStrip)
        strip.focus()
        await pilot.press("left")
        await settle(app, pilot)
        assert app.active_pane == first.id
        strip.focus()
        await pilot.press("right")
        await pilot.press("right")  # the thread has the keys now: down the list instead
        await settle(app, pilot)
        assert app.active_pane == second.id


async def test_a_click_on_a_footer_key_presses_it_and_on_the_palette_opens_it(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        footer = app.screen.query_one(FittingFooter)
        help_key = next(key for key in footer.shown_keys() if key.description == "Help")
        x = screen_lines(app)[-1].index(f"{help_key.key_display} Help")
        await pilot.hover(FittingFooter, offset=(x, 0))  # drawn on the hover colour
        await pilot.click(FittingFooter, offset=(x, 0))
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        app.pop_screen()
        await pilot.pause()
        x = screen_lines(app)[-1].index("palette")
        await pilot.click(FittingFooter, offset=(x, 0))
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)


async def test_a_click_on_the_title_bar_icon_opens_the_palette_elsewhere_it_grows(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        bar = app.query_one(TitleBar)
        assert "termal-tui (read-only) — coordination.sqlite" in screen_lines(app)[0]
        await pilot.click(TitleBar, offset=(ICON_CELLS + 20, 0))
        await pilot.pause()
        assert bar.size.height == 3
        assert "termal-tui (read-only)" in screen_lines(app)[1]  # the middle line
        await pilot.click(TitleBar, offset=(ICON_CELLS + 20, 0))
        await pilot.pause()
        assert bar.size.height == 1
        await pilot.click(TitleBar, offset=(1, 0))
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)


async def test_the_title_follows_the_app_title_and_subtitle(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.sub_title = "elsewhere.sqlite"
        await pilot.pause()
        assert "termal-tui (read-only) — elsewhere.sqlite" in screen_lines(app)[0]


async def test_a_strip_narrower_than_its_labels_shows_whole_tabs_and_marks_the_rest(demo):
    """Labels wider than the strip: whole tabs around the active one, never a label cut
    in two (Textual's strip scrolled by cells: ``hild  planner ⇄ backend``), ``‹`` and
    ``›`` where tabs are hidden, and a click on one goes one tab further."""
    app = app_for(demo)
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(app, pilot)
        views = []
        for summary in list(app.summaries):
            app.open_mailbox(summary.id)
            await settle(app, pilot)
            views.append(app.active_view())
        strip = app.query_one(TabStrip)
        assert strip.spans()[-1][1] > strip.size.width  # the labels do not fit
        labels = {pane: strip.label(pane).plain for pane in strip.pane_ids}
        for view in (views[0], views[-1], views[2]):
            app.activate(view.id)
            await settle(app, pilot)
            start, end = strip.region_of(view.id)
            assert 0 <= start < end <= strip.size.width
            row = screen_lines(app)[strip.region.y]
            assert labels[view.id] in row
            drawn, more_left, more_right = strip.window()
            assert row.startswith("‹") == more_left and row.rstrip().endswith("›") == more_right
            words = row.strip("‹› ").split("  ")  # whole labels only
            assert all(word.strip() in labels.values() for word in words if word.strip())
        app.activate(views[2].id)
        await settle(app, pilot)
        drawn, more_left, more_right = strip.window()
        assert more_left and more_right
        ids = strip.pane_ids
        beyond = ids[ids.index(drawn[-1][2].pane_id) + 1]
        await pilot.click(TabStrip, offset=(strip.size.width - 1, 0))
        await settle(app, pilot)
        assert app.active_pane == beyond


def test_fitting_leaves_out_the_least_needed_keys_first_and_never_help():
    keys = [
        FooterKey("enter", "⏎", "Expand", "expand"),
        FooterKey("slash", "/", "Search", "search"),
        FooterKey("C", "C", "Id", "copy_id"),
        FooterKey("e", "e", "Export", "export"),
        FooterKey("q", "q", "Quit", "app.quit"),
        FooterKey("question_mark", "?", "Help", "app.help"),
    ]
    everything = sum(key.cells for key in keys)
    assert fitted(keys, everything) == keys
    narrower = fitted(keys, everything - 1)
    assert [key.action for key in narrower] == [
        "expand",
        "search",
        "export",
        "app.quit",
        "app.help",
    ]
    # At the least: the first key (what enter does here) and help.
    assert [key.action for key in fitted(keys, 7)] == ["expand", "app.help"]


async def test_the_footer_stays_under_a_maximized_thread(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "backend")
        app.screen.maximize(view.thread)
        await pilot.pause()
        assert app.screen.maximized is view.thread
        assert "Quit" in screen_lines(app)[-1] and "palette" in screen_lines(app)[-1]
