"""Deterministic demo databases, app factories and the waits shared by the viewer tests.

- :func:`settle` waits until no worker runs, no read of the index model runs and no
  message is pending;
- :func:`advance` moves the app's live clock (a ManualClock: every refresh is driven,
  nothing waits for a timer) and settles; :func:`advance_until` does so in steps until
  a condition holds;
- :func:`wait_for` waits until a condition holds that real time brings (another
  process, a real terminal), at most ``timeout`` seconds;
- :func:`mailbox_between` finds a mailbox by its participants' names;
- :func:`screen_text` reads what the screen shows through public API only.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import html
import os
import re
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rich.cells import cell_len

from termal_tui.demo import build_demo, fill_pair_mailboxes
from termal_tui.store import open_writer
from termal_tui.tui.app import MailboxApp, make_app
from termal_tui.views.live import ManualClock

FIXED_NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
WAIT_STEP = 0.02
# For bench/screenshots.py only (the tests use pytest's per-run tmp_path): a root of this
# process's own, removed when it exits, so parallel runs never share a database.
SNAPSHOT_ROOT = Path(tempfile.gettempdir()) / f"termal-tui-snapshots-{os.getpid()}"
atexit.register(shutil.rmtree, SNAPSHOT_ROOT, True)


def fixed_clock() -> datetime:
    return FIXED_NOW


_DEMO_TEMPLATE: list[Path] = []  # built once per test process, then copied


def demo_copy(directory: Path) -> Path:
    """A fresh demo database at ``directory/coordination.sqlite`` (a copy of one demo
    built through the writer once per run, in that run's own temporary directory)."""
    if not _DEMO_TEMPLATE:
        root = Path(tempfile.mkdtemp(prefix="termal-tui-demo-"))
        atexit.register(shutil.rmtree, root, True)
        asyncio.run(build_demo(root / "coordination.sqlite"))
        _DEMO_TEMPLATE.append(root)
    if directory.exists():
        shutil.rmtree(directory)
    shutil.copytree(_DEMO_TEMPLATE[0], directory)
    return directory / "coordination.sqlite"


def app_for(path: Path, **kwargs: object) -> MailboxApp:
    """The viewer on a driven clock (``advance``), with no file watcher: tests decide
    when time passes."""
    kwargs.setdefault("poll_interval", 0)
    kwargs.setdefault("live_clock", ManualClock(FIXED_NOW))
    kwargs.setdefault("watch", False)
    return without_animation(make_app(path, clock=fixed_clock, **kwargs))  # type: ignore[arg-type]


def without_animation(app: MailboxApp) -> MailboxApp:
    """Tab underlines animate for half a second: tests (and snapshots) do not wait on it.
    (TEXTUAL_ANIMATIONS is read when textual is imported, before conftest can set it.)"""
    app.animation_level = "none"
    return app


def mailbox_between(app: MailboxApp, *names: str) -> str:
    """The id of the mailbox whose participants are exactly ``names`` (any order)."""
    for summary in app.summaries:
        if sorted(p.display_name for p in summary.participants) == sorted(names):
            return summary.id
    raise AssertionError(f"no mailbox between {names}")


async def settle(app: MailboxApp, pilot: object) -> None:
    """Until no worker runs and no message is pending.

    A worker that failed is the app's business (it shows Stale); waiting goes on.
    """
    from textual.worker import WorkerFailed

    for _ in range(3):
        await app.live.settled()
        if app.index_model is not None:
            await app.index_model.idle()
        with contextlib.suppress(WorkerFailed):
            await app.workers.wait_for_complete()
        await pilot.pause()  # type: ignore[attr-defined]


async def advance(app: MailboxApp, pilot: object, seconds: float) -> None:
    """Move the app's ManualClock on by ``seconds`` (its timers fire), then settle."""
    clock = app.live.clock
    assert isinstance(clock, ManualClock), "app_for's driven clock"
    clock.advance(seconds)
    await settle(app, pilot)


async def advance_until(
    app: MailboxApp, pilot: object, predicate: Callable[[], object], step: float, steps: int = 10
) -> None:
    """:func:`advance` by ``step`` until ``predicate()`` holds (at most ``steps`` times)."""
    for _ in range(steps):
        if predicate():
            return
        await advance(app, pilot, step)
    assert predicate(), f"not true after {steps} steps of {step:g} s: {predicate}"


async def press(app: MailboxApp, pilot: object, *keys: str) -> None:
    """Press ``keys``, then :func:`settle` (what each key started has finished)."""
    await pilot.press(*keys)  # type: ignore[attr-defined]
    await settle(app, pilot)


async def send(
    path: Path,
    body: str,
    key: str,
    *,
    sender: tuple[str, str] = ("session-2", "backend"),
    target: tuple[str, str] = ("session-1", "planner"),
) -> None:
    """One message appended by another writer (as another process would)."""
    async with open_writer(path) as writer:
        await writer.append(
            sender_session_id=sender[0],
            sender_name=sender[1],
            target_session_id=target[0],
            target_name=target[1],
            body=body,
            idempotency_key=key,
        )


async def wait_for(predicate: Callable[[], object], timeout: float = 5.0) -> None:
    """Until ``predicate()`` is true, checked every 20 ms; fails after ``timeout`` s.

    The app runs on the same event loop, so its timers and workers go on meanwhile.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout:g} s: {predicate}")
        await asyncio.sleep(WAIT_STEP)


_TEXT = re.compile(r'<text [^>]*x="([\d.]+)" y="[\d.]+"[^>]*clip-path="url\(#[\w-]+-line-(\d+)\)"')


def screen_lines(app: MailboxApp) -> list[str]:
    """The screen's text, one string per row, from the SVG ``export_screenshot`` makes
    (public API; no private compositor)."""
    svg = app.export_screenshot(simplify=True)
    char_width = 0.61 * 20  # rich's export_svg: font size 20
    rows: dict[int, list[tuple[int, str]]] = {}
    for match in re.finditer(_TEXT.pattern + r"[^>]*>(.*?)</text>", svg):
        x, line, text = match.groups()
        rows.setdefault(int(line), []).append((round(float(x) / char_width), text))
    lines = []
    for number in range(app.size.height):
        out = ""
        for column, text in sorted(rows.get(number, [])):
            out += " " * max(0, column - cell_len(out))
            out += html.unescape(text).replace("\xa0", " ")
        lines.append(out)
    return lines


def screen_text(app: MailboxApp) -> str:
    return "\n".join(screen_lines(app))


async def many_mailboxes(path: Path, count: int) -> Path:
    """``count`` two-message mailboxes, bulk-inserted into a schema the writer made."""
    async with open_writer(path):
        pass
    with contextlib.closing(sqlite3.connect(path)) as db:
        fill_pair_mailboxes(db, count, name="agent-{n}", body="Message {seq} in mailbox {n}.")
    return path
