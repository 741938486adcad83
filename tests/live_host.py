"""A bare App over a LiveSource driven by a ManualClock, for the screens that subscribe
to it (health, board): ``await host.advance(pilot, seconds)`` runs the checks that fall
due and lets the screens read and draw; nothing waits for a timer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App
from textual.screen import Screen

from termal_tui.views.live import LiveSource, ManualClock
from tests.viewer_support import FIXED_NOW, settle, without_animation


class Host:
    def __init__(self, path: Path, interval: float = 8.0) -> None:
        self.clock = ManualClock(FIXED_NOW)
        self.source = LiveSource(path, interval=interval, clock=self.clock, watch=False)
        source = self.source

        class _App(App[None]):
            live = source  # what tests.viewer_support.settle waits on
            index_model = None

            async def on_mount(self) -> None:
                await source.start()
                await source.settled()

            async def on_unmount(self) -> None:
                await source.close()

        self.app = without_animation(_App())  # type: ignore[arg-type]

    async def advance(self, pilot: Any, seconds: float) -> None:
        self.clock.advance(seconds)
        await self.source.settled()
        await settle(self.app, pilot)  # type: ignore[arg-type]

    async def show(self, pilot: Any, screen: Screen[Any]) -> Screen[Any]:
        await settle(self.app, pilot)  # type: ignore[arg-type]
        await self.app.push_screen(screen)
        await settle(self.app, pilot)  # type: ignore[arg-type]
        return screen
