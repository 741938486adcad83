"""``/`` search in a tab: hit (enter jumps), no hit, streamed progress, cancel, failure."""

from __future__ import annotations

import asyncio

import pytest
from textual.widgets import Input

from termal_tui.store.errors import StoreError
from termal_tui.tui.screens import search as search_module
from termal_tui.tui.screens.search import SearchScreen
from tests.tui.test_following_the_file import _big_mailbox
from tests.viewer_support import app_for, settle, wait_for


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
        assert app.focused is screen.query_one("#results")  # enter moved to the results
        await pilot.press("enter")  # choose the first
        await settle(app, pilot)
        assert app.active_view().highlighted_message().sequence == 1234


async def test_no_hit_says_so(tmp_path):
    app = await _open(tmp_path, 3_000)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        screen = await _search(app, pilot, "absent words")
        await settle(app, pilot)
        assert screen.matches == [] and screen.done
        assert "No message in alpha ⇄ beta contains “absent words”." in str(
            screen.query_one("#search-status").render()
        )


def _status(screen: SearchScreen) -> str:
    return str(screen.query_one("#search-status").render())


async def test_escape_cancels_a_running_scan(tmp_path, monkeypatch):
    monkeypatch.setattr(search_module, "SCAN_STEP", 100)  # 200 steps
    app = await _open(tmp_path, 3_000)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        original = app.reader.search_chunk
        steps: list[int | None] = []
        stuck = asyncio.Event()  # a disk that stops answering after two steps

        async def slow(*args, **kwargs):
            steps.append(args[2])
            if len(steps) > 2:
                await stuck.wait()
            return await original(*args, **kwargs)

        monkeypatch.setattr(app.reader, "search_chunk", slow)
        screen = await _search(app, pilot, "nothing matches this")
        await wait_for(lambda: "searching" in _status(screen) and len(steps) > 2)
        workers = list(screen.workers)
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is not screen and not screen.done
        assert all(worker.is_cancelled or worker.is_finished for worker in workers)


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (StoreError("the disk went away"), "the disk went away"),
        (RuntimeError("boom"), "unexpected error: RuntimeError: boom"),
    ],
)
async def test_a_failing_step_shows_one_failed_state_and_keeps_what_was_found(
    tmp_path, monkeypatch, error, shown
):
    monkeypatch.setattr(search_module, "SCAN_STEP", 1_000)
    app = await _open(tmp_path, 3_000)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        original = app.reader.search_chunk
        steps: list[int | None] = []

        async def failing(*args, **kwargs):
            steps.append(args[2])
            if len(steps) == 2:
                raise error
            return await original(*args, **kwargs)

        monkeypatch.setattr(app.reader, "search_chunk", failing)
        screen = await _search(app, pilot, "ROW 2999.")  # in the first step
        await settle(app, pilot)
        status = _status(screen)
        assert status.startswith("● Search failed") and shown in status
        assert screen.failed and not screen.done
        assert "1 found before it failed" in status
        assert [m.sequence for m in screen.matches] == [2999]
        assert app.is_running
