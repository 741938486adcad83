"""Deterministic demo databases and app factories for viewer tests and snapshots."""

from __future__ import annotations

import asyncio
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
    return make_app(path, poll_interval=0, clock=fixed_clock, **kwargs)  # type: ignore[arg-type]
