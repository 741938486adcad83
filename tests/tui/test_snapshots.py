"""SVG snapshots at 60x20, 80x24 and 120x40 with a fixed clock, TZ and demo database (built in
this run's own temporary directory, so parallel runs never share a file)."""

from __future__ import annotations

import asyncio

import pytest

from termal_tui.store.writer import open_writer
from tests.viewer_support import app_for, demo_copy, mailbox_between, settle


@pytest.fixture(scope="module")
def snapshot_db(tmp_path_factory):
    return demo_copy(tmp_path_factory.mktemp("snapshot-demo"))


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("snapshot-empty") / "coordination.sqlite"

    async def create() -> None:
        async with open_writer(path):
            pass

    asyncio.run(create())
    return path


async def _settle(pilot) -> None:
    await settle(pilot.app, pilot)


def _open(*names: str, expand: int | None = None, older: int = 0, jump: int | None = None):
    async def run_before(pilot) -> None:
        app = pilot.app
        await _settle(pilot)
        app.open_mailbox(mailbox_between(app, *names))
        await _settle(pilot)
        view = app.active_view()
        for _ in range(older):
            await pilot.press("o")
            await _settle(pilot)
        if expand is not None:
            thread = view.query_one("#thread")
            thread.highlighted = thread.get_option_index(view.messages[expand].id)
            await pilot.press("enter")
        if jump is not None:
            view.jump_to(jump)
        await _settle(pilot)

    return run_before


def _press(key: str):
    async def run_before(pilot) -> None:
        await _settle(pilot)
        await pilot.press(key)
        await _settle(pilot)

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (60, 20)])
class TestSnapshots:
    def test_index(self, snap_compare, snapshot_db, size):
        assert snap_compare(app_for(snapshot_db), terminal_size=size, run_before=_settle)

    def test_mailbox_with_dividers(self, snap_compare, snapshot_db, size):
        run = _open("planner", "docs")
        assert snap_compare(app_for(snapshot_db), terminal_size=size, run_before=run)

    def test_expanded_row(self, snap_compare, snapshot_db, size):
        run = _open("backend", "reviewer", expand=0)
        assert snap_compare(app_for(snapshot_db), terminal_size=size, run_before=run)

    def test_hostile_content(self, snap_compare, snapshot_db, size):
        run = _open("planner", "frontend", expand=2)
        assert snap_compare(app_for(snapshot_db), terminal_size=size, run_before=run)

    def test_long_thread_with_shading_and_dividers(self, snap_compare, snapshot_db, size):
        run = _open("planner", "backend", jump=118)
        assert snap_compare(app_for(snapshot_db), terminal_size=size, run_before=run)

    def test_review_result_seen_by_its_sender(self, snap_compare, snapshot_db, size):
        run = _open("planner", "review-child", expand=0)
        app = app_for(snapshot_db, session_id="session-7")
        assert snap_compare(app, terminal_size=size, run_before=run)

    def test_health_view_with_every_problem_kind(self, snap_compare, snapshot_db, size):
        run = _press("h")
        assert snap_compare(app_for(snapshot_db), terminal_size=size, run_before=run)

    def test_health_view_when_nothing_is_stuck(self, snap_compare, empty_db, size):
        run = _press("h")
        assert snap_compare(app_for(empty_db), terminal_size=size, run_before=run)

    def test_empty_database(self, snap_compare, empty_db, size):
        assert snap_compare(app_for(empty_db), terminal_size=size, run_before=_settle)

    def test_help(self, snap_compare, snapshot_db, size):
        run = _press("question_mark")
        assert snap_compare(app_for(snapshot_db), terminal_size=size, run_before=run)

    def test_full_body_screen(self, snap_compare, snapshot_db, size):
        async def run_before(pilot) -> None:
            await _open("backend", "reviewer")(pilot)
            await pilot.press("f")
            await _settle(pilot)

        assert snap_compare(app_for(snapshot_db), terminal_size=size, run_before=run_before)

    def test_search_results(self, snap_compare, snapshot_db, size):
        async def run_before(pilot) -> None:
            await _open("planner", "backend")(pilot)
            await pilot.press("slash", *"migration", "enter")
            await _settle(pilot)

        assert snap_compare(app_for(snapshot_db), terminal_size=size, run_before=run_before)

    def test_index_filtered(self, snap_compare, snapshot_db, size):
        async def run_before(pilot) -> None:
            await _settle(pilot)
            # A blinking cursor would make the picture depend on the moment it is taken.
            pilot.app.query_one("#index-filter").cursor_blink = False
            await pilot.press("slash", *"docs")
            await _settle(pilot)

        assert snap_compare(app_for(snapshot_db), terminal_size=size, run_before=run_before)

    def test_stale_tab_says_why_in_full(self, snap_compare, tmp_path, size):
        from pathlib import Path

        from tests.viewer_support import advance_until

        path = demo_copy(tmp_path / "stale")

        async def run_before(pilot) -> None:
            await _open("planner", "backend")(pilot)
            for suffix in ("", "-wal", "-shm"):  # moved away: gone until it comes back
                source = Path(f"{path}{suffix}")
                if source.exists():
                    source.rename(Path(f"{path}.old{suffix}"))
            view = pilot.app.active_view()
            await advance_until(pilot.app, pilot, lambda: not view.live, 0.2)
            await _settle(pilot)

        app = app_for(path, poll_interval=0.2)
        assert snap_compare(app, terminal_size=size, run_before=run_before)
