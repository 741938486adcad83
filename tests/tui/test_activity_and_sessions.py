"""The activity and sessions screens over a live source driven by a ManualClock: another
writer commits, the clock moves, the screen shows it (nothing waits on a timer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App
from textual.screen import Screen
from textual.widgets import OptionList

from termal_tui.store.writer import MailboxWriter
from termal_tui.tui.screens.activity import ActivityScreen
from termal_tui.tui.screens.sessions import SessionsScreen
from termal_tui.views.activity import Jump
from termal_tui.views.live import LiveSource, ManualClock
from tests.helpers import send
from tests.viewer_support import FIXED_NOW, settle


class Host(App[None]):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.animation_level = "none"
        self.clock = ManualClock(FIXED_NOW)
        self.source = LiveSource(path, interval=1.0, clock=self.clock, watch=False)
        self.live = self.source  # what tests.viewer_support.settle waits on
        self.index_model = None
        self.results: list[Any] = []

    async def on_mount(self) -> None:
        await self.source.start()
        await self.source.settled()

    async def on_unmount(self) -> None:
        await self.source.close()

    async def advance(self, pilot: Any, seconds: float) -> None:
        self.clock.advance(seconds)
        await self.source.settled()
        await settle(self, pilot)  # type: ignore[arg-type]

    async def show(self, pilot: Any, screen: Screen[Any]) -> None:
        await settle(self, pilot)  # type: ignore[arg-type]
        await self.push_screen(screen, self.results.append)
        await settle(self, pilot)  # type: ignore[arg-type]


def lines(screen: Screen[Any]) -> list[str]:
    options = screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_activity_shows_a_send_and_an_ack_without_a_key(
    writer: MailboxWriter, db_path: Path
) -> None:
    first = await send(writer, body="hello bob")
    app = Host(db_path)
    async with app.run_test(size=(100, 24)) as pilot:
        screen = ActivityScreen(app.source)
        await app.show(pilot, screen)
        assert any("Alice → Bob #1" in line and "hello bob" in line for line in lines(screen))
        assert "new event" not in str(screen.query_one("#activity-status").render())

        await send(writer, body="second \x1b[31mred\u202e")
        await writer.acknowledge("session-b", first.mailbox_id, 0, 1)
        await app.advance(pilot, 1.0)
        shown = lines(screen)
        sent = next(line for line in shown if "Alice → Bob #2" in line)
        assert sent.startswith("●")  # new since the person looked
        assert "␛" in sent and "\x1b" not in sent and "\u202e" not in sent  # made visible
        assert any("Bob processed through #1" in line and "(seen)" in line for line in shown)
        assert any("seen before" in line for line in shown)
        status = str(screen.query_one("#activity-status").render())
        assert "2 new events" in status

        await pilot.press("c", "f")  # messages only
        assert all("processed" not in line for line in lines(screen))
        assert "only messages" in str(screen.query_one("#activity-status").render())
        await pilot.press("home", "enter")
        await settle(app, pilot)  # type: ignore[arg-type]
    assert app.results and app.results[-1] == Jump("message", first.mailbox_id, 2)


async def test_activity_lines_never_wrap_at_any_width(writer: MailboxWriter, db_path: Path) -> None:
    await send(writer, body="漢字" * 80, sender_name="名前がとても長いエージェント" * 3)
    app = Host(db_path)
    for width in (40, 60, 80, 120):
        async with app.run_test(size=(width, 20)) as pilot:
            screen = ActivityScreen(app.source)
            await app.show(pilot, screen)
            events = screen.query_one(OptionList)
            for index in range(events.option_count):
                prompt = events.get_option_at_index(index).prompt
                assert prompt.cell_length <= events.size.width - 2, (width, str(prompt))  # type: ignore[union-attr]
        app = Host(db_path)


async def test_sessions_view_one_row_per_agent_and_enter_opens_its_mailboxes(
    writer: MailboxWriter, db_path: Path
) -> None:
    await send(writer, "session-a", "session-b", body="to bob")
    app = Host(db_path)
    async with app.run_test(size=(120, 24)) as pilot:
        screen = SessionsScreen(app.source)
        await app.show(pilot, screen)
        shown = lines(screen)
        assert len(shown) == 2
        assert shown[0].startswith("● Bob") and "1 unread" in shown[0]
        assert shown[1].startswith("✓ Alice")
        await send(writer, "session-c", "session-a", body="to alice")
        await app.advance(pilot, 1.0)
        shown = lines(screen)
        assert len(shown) == 3 and any(line.startswith("● Alice") for line in shown)
        await pilot.press("home", "enter")
        await settle(app, pilot)  # type: ignore[arg-type]
    assert app.results and app.results[-1] in {"session-a", "session-b"}


async def test_a_and_s_open_the_views_from_the_app_and_enter_goes_where_it_says(
    demo: Path,
) -> None:
    from termal_tui.tui.widgets.index import MailboxIndex
    from tests.viewer_support import app_for

    app = app_for(demo)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)  # type: ignore[arg-type]
        await pilot.press("a")
        await settle(app, pilot)  # type: ignore[arg-type]
        assert isinstance(app.screen, ActivityScreen)
        await pilot.press("f")  # messages only: the top line is the newest message
        await pilot.press("home", "enter")
        await settle(app, pilot)  # type: ignore[arg-type]
        assert not isinstance(app.screen, ActivityScreen)
        assert app.active_view() is not None  # its mailbox opened in a tab

        await pilot.press("s")
        await settle(app, pilot)  # type: ignore[arg-type]
        assert isinstance(app.screen, SessionsScreen)
        first = app.screen.model.rows[0]
        await pilot.press("home", "enter")
        await settle(app, pilot)  # type: ignore[arg-type]
        index = app.query_one(MailboxIndex)
        assert index.filter_text == first.session_id  # that agent's mailboxes


async def test_the_demo_registers_its_sessions_so_a_send_lands_in_what_is_shown(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    from termal_tui.cli.viewer import register_demo_sessions
    from termal_tui.demo import build_demo

    path = tmp_path / "coordination.sqlite"
    await build_demo(path)
    register_demo_sessions(path)
    register_demo_sessions(path)  # again: nothing changes, no error
    sent = subprocess.run(
        [
            sys.executable,
            "-m",
            "termal_tui",
            "send",
            "--db",
            str(path),
            "--as",
            "planner",
            "backend",
            "hello from outside",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert sent.returncode == 0, sent.stderr
    assert "sent #" in sent.stdout


def test_a_first_run_waits_only_where_a_file_can_appear(tmp_path: Path):
    from termal_tui.cli.viewer import first_run_possible

    assert first_run_possible(tmp_path / "coordination.sqlite")
    assert first_run_possible(tmp_path / "not" / "yet" / "coordination.sqlite")
    link = tmp_path / "dangling.sqlite"
    link.symlink_to(tmp_path / "nowhere")
    assert not first_run_possible(link)  # said, not waited for
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert not first_run_possible(blocker / "coordination.sqlite")


async def test_activity_names_each_mailbox_as_its_tab_and_card_do(demo: Path) -> None:
    """The activity view said ``backend ⇄ planner`` (names sorted) for the mailbox its
    tab and card call ``planner ⇄ backend`` (TermAl's participant order)."""
    from termal_tui.views.presentation import summary_title
    from tests.viewer_support import app_for

    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.action_activity()
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ActivityScreen)
        titles = screen.model.mailbox_titles()
        assert titles
        for summary in app.summaries:
            assert titles[summary.id] == summary_title(summary)
