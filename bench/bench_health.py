"""Health and search benchmark (medians; the plain-sqlite3 unread scan is the baseline).

- health report over the 10,000- and 100,000-mailbox indexes and over the
  1,000,000-message mailbox, beside the bare grouped unread query it is built on, run
  through plain sqlite3;
- the index's health markers for its first page of cards (100) of 100,000 mailboxes;
- the health view (headless, 120x40) on 100,000 stuck mailboxes: time to its findings,
  RSS, and CPU over the 20 s after (slow passes are spaced out);
- search in the 1,000,000-message mailbox: time to the first hit and to a full scan.

Run: python bench/bench_health.py
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import BIG_MAILBOX, big_mailbox_db, index_db

from termal_tui.core.models import CONTROL_TOPIC
from termal_tui.store import open_reader
from termal_tui.store.health_queries import _UNREAD_BY_PARTICIPANT
from termal_tui.tui.screens.search import SCAN_STEP
from termal_tui.views.findings import health_report


async def health_ms(path: Path, repeat: int = 5) -> tuple[float, float, int]:
    plain = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    ours, floor = [], []
    async with open_reader(path) as reader:
        for _ in range(repeat):
            t0 = time.perf_counter()
            report = await health_report(reader)
            ours.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            plain.execute(
                _UNREAD_BY_PARTICIPANT.format(where=""), {"ctl": CONTROL_TOPIC}
            ).fetchall()
            floor.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ours), statistics.median(floor), len(report.findings)


async def markers_ms(path: Path, repeat: int = 5) -> float:
    """The index's markers pass: findings for its first page of cards only."""
    times = []
    async with open_reader(path) as reader:
        ids = [summary.id for summary in await reader.list_mailboxes(limit=100)]
        for _ in range(repeat):
            t0 = time.perf_counter()
            await health_report(reader, mailbox_ids=ids)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def rss_mb() -> int:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) // 1024


async def health_view(path: Path, seconds: float = 20.0) -> tuple[float, int, float]:
    """(seconds to the findings, RSS MB then, CPU % over the next ``seconds``)."""
    from termal_tui.tui.app import MailboxApp
    from termal_tui.tui.screens.health import HealthScreen

    app = MailboxApp(path, poll_interval=2.0)
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.summaries:
            await pilot.pause(0.05)
        start = time.perf_counter()
        await pilot.press("h")
        while not (isinstance(app.screen, HealthScreen) and app.screen.report is not None):
            await pilot.pause(0.05)
        took, rss = time.perf_counter() - start, rss_mb()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.sleep(seconds)
        cpu = 100 * (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    return took, rss, cpu


async def search_ms(path: Path, needle: str) -> tuple[float | None, float, int]:
    async with open_reader(path) as reader:
        start = time.perf_counter()
        first = None
        before = None
        found = 0
        while True:
            matches, before = await reader.search_chunk(BIG_MAILBOX, needle, before, SCAN_STEP)
            if matches and first is None:
                first = (time.perf_counter() - start) * 1000
            found += len(matches)
            if before is None:
                return first, (time.perf_counter() - start) * 1000, found


async def main() -> None:
    big, index, huge = big_mailbox_db(), index_db(), index_db(100_000)
    print("| measurement | termal-tui | baseline (same run) | ratio |")
    print("|---|---|---|---|")
    for label, path, repeat in (
        ("10,000 mailboxes", index, 5),
        ("100,000 mailboxes", huge, 3),
        ("1 mailbox of 1,000,000 messages", big, 5),
    ):
        ours, floor, findings = await health_ms(path, repeat)
        print(
            f"| health report, {label} ({findings:,} findings) | {ours:.0f} ms | "
            f"{floor:.0f} ms (the grouped unread scan, plain sqlite3) | {ours / floor:.2f}x |"
        )
    print(
        f"| health markers for the index's first 100 cards of 100,000 mailboxes | "
        f"{await markers_ms(huge):.0f} ms | | |"
    )
    took, rss, cpu = await health_view(huge)
    print(
        f"| health view, 100,000 mailboxes: findings on screen / RSS / CPU over the next "
        f"20 s | {took * 1000:,.0f} ms / {rss} MB / {cpu:.1f}% | | |"
    )
    for needle, where in (("step 999990", "near the newest rows"), ("step 10:", "near the oldest")):
        first, full, found = await search_ms(big, needle)
        first_text = f"{first:.0f} ms" if first is not None else "no hit"
        print(
            f"| search “{needle}” ({where}, {found} hits): first hit / full scan of 1,000,000 "
            f"| {first_text} / {full:.0f} ms | | |"
        )


if __name__ == "__main__":
    asyncio.run(main())
