"""The viewer on a ``postgresql://`` URL: the same screens as on TermAl's file for the same
data, read in READ ONLY transactions (a role with only SELECT is enough), live (a commit
by another connection shows at the next poll of a driven clock), and Stale while the
server is down, then Live again by itself."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from textual.widgets import Input

from termal_tui.demo import build_demo
from termal_tui.store import open_writer
from termal_tui.tui.app import MailboxApp
from termal_tui.tui.screens.search import SearchScreen
from termal_tui.views.live import RETRY_SECONDS, SERVER_POLL_SECONDS
from tests.helpers import rows
from tests.pg_server import PgServer
from tests.viewer_support import (
    advance,
    advance_until,
    app_for,
    mailbox_between,
    press,
    screen_lines,
    settle,
    wide_names_database,
)

SIZE = (100, 32)


def _schema_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["options"][0].split("=", 1)[1]


def select_only_role(pg_server: PgServer, url: str) -> str:
    """A role that may only read the test's schema; its URL."""
    schema = _schema_of(url)
    role = f"viewer_{schema}"
    for statement in (
        f"CREATE ROLE {role} LOGIN",
        f"GRANT USAGE ON SCHEMA {schema} TO {role}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
    ):
        pg_server.execute(statement, "tests")
    return pg_server.url("tests", user=role) + f"?options=-csearch_path%3D{schema}"


def _shown(app: MailboxApp) -> list[str]:
    """The screen without the title bar (it names the file or the URL), the database's
    name made the same on both engines."""
    return [line.replace(app.live.name, "DB") for line in screen_lines(app)[1:]]


async def _shown_once_reachable(app: MailboxApp, pilot: object) -> list[str]:
    """:func:`_shown`, after the retries a busy server gets (on a loaded machine a read
    can outlast its deadline: the screen says so, and the next try shows the rows)."""
    for _ in range(5):
        if not any("cannot be reached or is busy" in line for line in screen_lines(app)):
            break
        await advance(app, pilot, RETRY_SECONDS)
    return _shown(app)


async def _screens(target: Path | str, keys: list[list[str]]) -> list[list[str]]:
    """What each key sequence shows, from the index (one app, screens closed between)."""
    app = app_for(target)
    shown = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        shown.append(await _shown_once_reachable(app, pilot))
        for sequence in keys:
            await press(app, pilot, *sequence)
            shown.append(await _shown_once_reachable(app, pilot))
            await press(app, pilot, "escape")
            await press(app, pilot, "0")
    return shown


@pytest.fixture
async def demo_pg(pg_url: str) -> str:
    await build_demo(pg_url)
    return pg_url


@pytest.fixture
async def demo(tmp_path: Path) -> Path:
    """The same demo on a file (without the NUL character PostgreSQL cannot hold)."""
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir()
    await build_demo(path, portable=True)
    return path


async def test_every_screen_shows_on_postgresql_what_it_shows_on_the_file(demo, demo_pg):
    # index, a tab (the first card: the long thread), health, board, activity, sessions
    keys = [["enter"], ["h"], ["b"], ["a"], ["s"]]
    on_file = await _screens(demo, keys)
    on_server = await _screens(demo_pg, keys)
    for number, (file_screen, server_screen) in enumerate(zip(on_file, on_server, strict=True)):
        assert server_screen == file_screen, f"screen {number}"
    assert any("planner" in line for line in on_server[0])  # not two empty screens


async def _one_screen(target: Path | str, keys: list[str]) -> list[str]:
    app = app_for(target)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await press(app, pilot, *keys)
        return await _shown_once_reachable(app, pilot)


@pytest.mark.parametrize(
    "keys",
    [["b"], ["b", "tab", "enter"], ["b", "t"], ["a"], ["s"], ["enter"]],
    ids=["board", "board key", "tombstones", "activity", "sessions", "tab"],
)
async def test_the_board_and_wide_names_show_the_same_on_postgresql(tmp_path, pg_url, keys):
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir()
    await wide_names_database(path, 6)
    await wide_names_database(pg_url, 6)  # type: ignore[arg-type]  # a URL, as the writers take
    on_file = await _one_screen(path, keys)
    on_server = await _one_screen(pg_url, keys)
    assert on_server == on_file
    assert len({line for line in on_server if line.strip()}) > 3


async def test_search_finds_the_same_rows_on_postgresql(demo, demo_pg):
    found = []
    for target in (demo, demo_pg):
        app = app_for(target)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            app.open_mailbox(mailbox_between(app, "planner", "backend"))
            await settle(app, pilot)
            await pilot.press("slash")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, SearchScreen)
            screen.query_one(Input).value = "STEP 1"
            await press(app, pilot, "enter")
            found.append([m.sequence for m in screen.matches])
    assert found[0] == found[1] and found[0]


async def test_a_role_with_only_select_shows_every_screen_and_writes_nothing(demo_pg, pg_server):
    url = select_only_role(pg_server, demo_pg)
    before = rows(demo_pg, "SELECT COUNT(*), SUM(processed_through) FROM mailbox_participants")
    owner = await _screens(demo_pg, [["enter"], ["h"], ["b"], ["a"], ["s"]])
    reader = await _screens(url, [["enter"], ["h"], ["b"], ["a"], ["s"]])
    assert reader == owner
    assert rows(demo_pg, "SELECT COUNT(*), SUM(processed_through) FROM mailbox_participants") == (
        before
    )
    connections = rows(
        demo_pg,
        "SELECT COUNT(*) FROM pg_stat_activity WHERE usename = %s",
        (f"viewer_{_schema_of(demo_pg)}",),
    )
    assert connections == [(0,)]  # the viewer closed what it opened


async def _append(url: str, body: str, key: str) -> None:
    async with open_writer(url) as writer:
        await writer.append(
            sender_session_id="session-2",
            sender_name="backend",
            target_session_id="session-1",
            target_name="planner",
            body=body,
            idempotency_key=key,
        )


async def test_a_commit_by_another_connection_shows_at_the_next_poll(demo_pg, pg_server):
    url = select_only_role(pg_server, demo_pg)
    app = app_for(url, poll_interval=8.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        mailbox = mailbox_between(app, "planner", "backend")
        app.open_mailbox(mailbox)
        await settle(app, pilot)
        view = app.active_view()
        assert view is not None
        newest = view.model.newest_sequence
        checks = app.live.checks
        await advance(app, pilot, SERVER_POLL_SECONDS)  # nothing new: one cheap check
        assert app.live.checks == checks + 1
        assert app.live.status.phase == "live"
        await _append(demo_pg, "committed elsewhere", "pg-live-1")
        await advance(app, pilot, SERVER_POLL_SECONDS)  # the next poll, well within 1 s
        assert app.live.checks == checks + 2
        assert view.model.newest_sequence == newest + 1
        assert any("committed elsewhere" in line for line in screen_lines(app))
        index = app.index_model
        assert index is not None and index.summaries[0].id == mailbox


async def test_the_server_going_away_is_stale_with_the_last_good_time_then_live_again(
    demo_pg, pg_server
):
    app = app_for(demo_pg, poll_interval=8.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        good_at = app.live.status.good_at
        await advance(app, pilot, SERVER_POLL_SECONDS)
        assert app.live.status.phase == "live"
        good_at = app.live.status.good_at
        await asyncio.to_thread(pg_server.down)
        try:
            await advance_until(
                app, pilot, lambda: app.live.status.phase == "stale", SERVER_POLL_SECONDS
            )
            status = app.live.status
            assert status.good_at == good_at  # the last good read, kept
            assert "cannot be reached" in status.reason and app.live.name in status.reason
            text = " ".join(" ".join(screen_lines(app)).split())
            assert "● Stale 12:00:00" in text and "cannot be reached" in text
            await advance(app, pilot, SERVER_POLL_SECONDS)  # still down: still Stale
            assert app.live.status.phase == "stale"
        finally:
            await asyncio.to_thread(pg_server.up)
        await _append(demo_pg, "sent while the viewer was away", "pg-back-1")
        await advance_until(
            app, pilot, lambda: app.live.status.phase == "live", SERVER_POLL_SECONDS
        )
        await advance(app, pilot, SERVER_POLL_SECONDS)
        assert app.live.status.good_at is not None and app.live.status.good_at > good_at
        assert any("sent while the viewer was away" in line for line in screen_lines(app))
        assert not any("replaced" in line for line in screen_lines(app))


async def test_a_viewer_started_while_the_server_is_down_waits_stale_then_shows_it(
    demo_pg, pg_server
):
    app = app_for(demo_pg, poll_interval=8.0)
    await asyncio.to_thread(pg_server.down)
    down = True
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert app.live.status.phase == "stale" and app.live.reader is None
            assert "trying again every 0.5 s" in app.live.status.reason
            await asyncio.to_thread(pg_server.up)
            down = False
            await advance_until(
                app, pilot, lambda: app.index_model is not None and app.index_model.loaded, 0.5
            )
            assert app.live.status.phase == "live"
            assert any("planner" in line for line in screen_lines(app))
    finally:
        if down:
            await asyncio.to_thread(pg_server.up)
