"""``/`` search in a tab: hit (enter jumps), no hit, streamed progress, cancel."""

from __future__ import annotations

import asyncio

from textual.widgets import Input

from termal_tui.tui.screens import search as search_module
from termal_tui.tui.screens.search import SearchScreen
from tests.test_viewer_live import _big_mailbox
from tests.viewer_support import app_for, settle


async def _open(tmp_path, count: int = 20_000):
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir()
    mailbox = await asyncio.to_thread(_big_mailbox, path, count)
    return app_for(path, mailbox_id=mailbox)


async def _search(app, pilot, text: str) -> SearchScreen:
    await pilot.press("slash")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, SearchScreen)
    screen.query_one(Input).value = text
    await pilot.press("enter")
    return screen


async def test_a_hit_streams_in_and_enter_jumps_to_it(tmp_path, monkeypatch):
    monkeypatch.setattr(search_module, "SCAN_STEP", 2_000)  # ten keyset steps
    app = await _open(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        screen = await _search(app, pilot, "ROW 1234.")  # case folded
        await settle(app, pilot)
        assert [m.sequence for m in screen.matches] == [1234]
        assert "1 match for “ROW 1234.” · whole mailbox searched" in str(
            screen.query_one("#search-status").render()
        )
        await pilot.press("tab", "enter")  # focus the results, choose the first
        await settle(app, pilot)
        assert app.active_view().highlighted_message().sequence == 1234


async def test_no_hit_says_so(tmp_path):
    app = await _open(tmp_path, 3_000)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        screen = await _search(app, pilot, "absent words")
        await settle(app, pilot)
        assert screen.matches == [] and screen.done
        assert "No message contains “absent words”." in str(
            screen.query_one("#search-status").render()
        )


async def test_escape_cancels_a_running_scan(tmp_path, monkeypatch):
    monkeypatch.setattr(search_module, "SCAN_STEP", 100)  # 200 steps
    app = await _open(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        original = app.reader.search_chunk

        async def slow(*args, **kwargs):  # a slow disk: each step takes a while
            await asyncio.sleep(0.02)
            return await original(*args, **kwargs)

        monkeypatch.setattr(app.reader, "search_chunk", slow)
        screen = await _search(app, pilot, "nothing matches this")
        await pilot.pause(0.05)
        assert "searching" in str(screen.query_one("#search-status").render())
        workers = list(screen.workers)
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is not screen and not screen.done
        assert all(worker.is_cancelled or worker.is_finished for worker in workers)
