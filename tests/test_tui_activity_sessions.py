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
