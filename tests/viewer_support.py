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
from termal_tui.tui.widgets.mailbox_view import MailboxView
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


async def open_view(app: MailboxApp, pilot: object, *names: str) -> MailboxView:
    """Open the mailbox between ``names`` in a tab and settle: its view."""
    app.open_mailbox(mailbox_between(app, *names))
    await settle(app, pilot)
    view = app.active_view()
    assert view is not None
    return view


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


# Names that are wide on screen, or not what they look like: CJK (two cells a character),
# Korean, emoji (a joined sequence is two cells), combining marks (no cell), a long ASCII
# name, and control and bidi characters (drawn as stand-ins: ␇, ⟨RLO⟩).
WIDE_NAMES = {
    "s-cjk": "計画担当エージェント",
    "s-kana": "レビュー担当者",
    "s-emoji": "👩\u200d💻開発者🚀",
    "s-marks": "re\u0301viewer-e\u0301te\u0301",
    "s-long": "a-very-long-ascii-agent-name-that-goes-on",
    "s-evil": "evil\u202egnp.exe\x07",
    "s-korean": "데이터-분석가",
    "s-plain": "planner",
}
WIDE_BODIES = (
    "計画の第{n}段階を完了しました。次はレビューをお願いします。",
    "Step {n}: 👩\u200d💻 deployed 🚀 the build; waiting for the go-ahead from review.",
    "Plain words only, step {n}, but long enough to be cut at any narrow width at all.",
    "Control characters \x1b[31m red \u202e reversed \x07 bell, step {n}.",
)


async def wide_names_database(path: Path, mailboxes: int = 14, now: datetime = FIXED_NOW) -> Path:
    """``mailboxes`` two-agent mailboxes between :data:`WIDE_NAMES`, written through the
    store's writer: the older ones last written 335 days before ``now`` (``335 d ago``),
    the newest minutes before it; every row unread by its receiver and never woken (a
    health finding: cards carry their reason line)."""
    from datetime import timedelta
    from itertools import combinations, count

    stamps = count()
    base = now - timedelta(days=335, hours=2)

    def clock() -> datetime:
        step = next(stamps)
        # the first half of the rows 335 days old, the rest minutes old
        return (
            base + timedelta(seconds=step)
            if step < mailboxes
            else now - timedelta(minutes=3 * mailboxes - step)
        )

    pairs = list(combinations(WIDE_NAMES, 2))[:mailboxes]
    ids = (f"00000000-0000-4000-8000-{n:012d}" for n in count(1))
    async with open_writer(path, clock=clock, new_id=lambda: next(ids)) as writer:
        for n, (sender, target) in enumerate(pairs):
            for turn in range(2):
                who, whom = (sender, target) if turn == 0 else (target, sender)
                await writer.append(
                    sender_session_id=who,
                    sender_name=WIDE_NAMES[who],
                    target_session_id=whom,
                    target_name=WIDE_NAMES[whom],
                    body=WIDE_BODIES[(n + turn) % len(WIDE_BODIES)].format(n=n),
                    idempotency_key=f"wide-{n}-{turn}",
                )
    await _wide_board(path, base, now)
    return path


WIDE_SCOPE = "project-wide-names"


async def _wide_board(path: Path, old: datetime, now: datetime) -> None:
    """A board project with wide authors and values and a long key (keys are ASCII by
    the board's grammar): one key written at ``old``
    (``335 d ago``), the others minutes before ``now``, one of them deleted."""
    from datetime import timedelta

    from termal_tui.store.board.writer import open_board_writer

    stamps = iter([old, *(now - timedelta(minutes=30 - step) for step in range(20))])
    keys = [
        ("plan.state", {"段階": "レビュー待ち", "担当": "計画担当エージェント" * 4}, "s-cjk"),
        ("deploy.status", {"note": "🚀 deployed, 👩\u200d💻 watching " * 5}, "s-emoji"),
        ("a-very-long-key.name-that-goes.on-and-on.and-on-and.on", list(range(30)), "s-long"),
        ("hostile.text", {"note": "red \x1b[31mX \u202eevil"}, "s-evil"),
    ]
    async with open_board_writer(path, clock=lambda: next(stamps)) as board:
        for index, (key, value, author) in enumerate(keys):
            await board.set(
                WIDE_SCOPE,
                key,
                expected_revision=0,
                author_session_id=author,
                author_name=WIDE_NAMES[author],
                idempotency_key=f"wide-board-{index}",
                value=value,
            )
        await board.set(
            WIDE_SCOPE,
            keys[3][0],
            expected_revision=1,
            author_session_id="s-korean",
            author_name=WIDE_NAMES["s-korean"],
            idempotency_key="wide-board-delete",
            delete=True,
        )
