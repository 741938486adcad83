"""Benchmark fixtures: a 1,000,000-message mailbox and a 10,000-mailbox index.

Rows are bulk-inserted with plain sqlite3 into a schema created by the real
writer (same tables, indexes and formats), then cached under bench/.data.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from termal_tui.demo import fill_pair_mailboxes
from termal_tui.store.writer import open_writer

DATA = Path(__file__).parent / ".data"
BIG_MESSAGES = 1_000_000
INDEX_MAILBOXES = 10_000
BIG_MAILBOX = "mailbox-00000000-0000-4000-8000-000000000001"


def _create(path: Path) -> None:
    async def run() -> None:
        async with open_writer(path):
            pass

    asyncio.run(run())


def compile_package() -> None:
    """Byte-compile termal_tui as an install does (pip writes .pyc files for a wheel):
    textual, the baseline's only code, is compiled in site-packages, and an editable
    checkout run with PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module of
    termal_tui from source at each launch (~90 ms of CPU here)."""
    import compileall

    import termal_tui

    compileall.compile_dir(Path(termal_tui.__file__).parent, quiet=1)


def big_mailbox_db() -> Path:
    path = DATA / "big.sqlite"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    _create(path)
    db = sqlite3.connect(path)
    db.execute(
        'INSERT INTO mailboxes VALUES (?, \'["session-1","session-2"]\', '
        "'2026-01-01T00:00:00+00:00', ?)",
        (BIG_MAILBOX, BIG_MESSAGES + 1),
    )
    db.executemany(
        "INSERT INTO mailbox_participants VALUES (?, ?, ?, ?, '2026-01-01T00:00:00+00:00', NULL)",
        [
            (BIG_MAILBOX, "session-1", "planner", 900_000),
            (BIG_MAILBOX, "session-2", "backend", 400_000),
        ],
    )

    def rows():
        for seq in range(1, BIG_MESSAGES + 1):
            sender, target = ("session-1", "session-2") if seq % 2 else ("session-2", "session-1")
            yield (
                f"mailbox-message-{seq:036d}",
                BIG_MAILBOX,
                seq,
                sender,
                sender,
                target,
                target,
                f"2026-01-01T00:00:00.{seq:09d}+00:00",
                None,
                None,
                f"Step {seq}: a realistic instruction body with a few sentences. Done.",
                f"key-{seq}",
                1,
                "deliveredToIdleSession",
                "deliveredToIdleSession",
            )

    db.executemany(
        "INSERT INTO mailbox_messages VALUES (?,?,?,?,?,?,?,?,'routine',?,?,?,?,?,?,?)", rows()
    )
    db.commit()
    db.close()
    return path


def index_db(mailboxes: int = INDEX_MAILBOXES) -> Path:
    """``mailboxes`` two-message mailboxes (one unread row each)."""
    name = "index.sqlite" if mailboxes == INDEX_MAILBOXES else f"index-{mailboxes}.sqlite"
    path = DATA / name
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    _create(path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        fill_pair_mailboxes(
            db, mailboxes, body="Message {seq} in mailbox {n}: please review the change."
        )
    return path


def median_ms(fn: Callable[[], object], repeat: int = 30) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


async def amedian_ms(fn, repeat: int = 30) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


async def interleaved_medians(
    ours, floor, plain: Callable[[], object], repeat: int = 30
) -> tuple[float, float, float]:
    """Medians (ms) of three ways to do the same work, timed in alternation so that
    machine noise (other processes, CPU frequency) hits all three alike."""
    samples: tuple[list[float], list[float], list[float]] = ([], [], [])
    for _ in range(repeat):
        for index, fn in enumerate((ours, floor)):
            start = time.perf_counter()
            await fn()
            samples[index].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        plain()
        samples[2].append((time.perf_counter() - start) * 1000)
    return tuple(statistics.median(s) for s in samples)  # type: ignore[return-value]
