"""Deterministic demo databases and app factories for viewer tests and snapshots."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from datetime import UTC, datetime
from pathlib import Path

from termal_tui.demo import build_demo
from termal_tui.tui.app import MailboxApp, make_app

FIXED_NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
SNAPSHOT_ROOT = Path("/tmp/termal-tui-snapshots")


def fixed_clock() -> datetime:
    return FIXED_NOW


def demo_copy(directory: Path) -> Path:
    """A fresh demo database at ``directory/coordination.sqlite``."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    path = directory / "coordination.sqlite"
    asyncio.run(build_demo(path))
    return path


def app_for(path: Path, **kwargs: object) -> MailboxApp:
    kwargs.setdefault("poll_interval", 0)
    return without_animation(make_app(path, clock=fixed_clock, **kwargs))  # type: ignore[arg-type]


def without_animation(app: MailboxApp) -> MailboxApp:
    """Tab underlines animate for half a second: tests (and snapshots) do not wait on it.
    (TEXTUAL_ANIMATIONS is read when textual is imported, before conftest can set it.)"""
    app.animation_level = "none"
    return app


async def settle(app: MailboxApp, pilot: object) -> None:
    """The one wait helper: until no worker runs and no message is pending.

    A worker that failed is the app's business (it shows Stale); waiting goes on.
    """
    from textual.worker import WorkerFailed

    for _ in range(3):
        with contextlib.suppress(WorkerFailed):
            await app.workers.wait_for_complete()
        await pilot.pause()  # type: ignore[attr-defined]
