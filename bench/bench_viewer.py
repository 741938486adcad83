"""Viewer benchmark: launch to first rendered page of a 1,000,000-message mailbox beside an
empty Textual app in the same run; older pages at depth; RSS after 2,000 rows.

Run: python bench/bench_viewer.py
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import BIG_MAILBOX, big_mailbox_db
from textual.app import App
from textual.widgets import Footer, Header

from termal_tui.tui.app import make_app


class EmptyApp(App[None]):
    def compose(self):
        yield Header()
        yield Footer()


async def empty_app_ms() -> float:
    start = time.perf_counter()
    app = EmptyApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
    return (time.perf_counter() - start) * 1000


async def first_page_ms(path: Path) -> tuple[float, list[float], int]:
    start = time.perf_counter()
    app = make_app(path, mailbox_id=BIG_MAILBOX, poll_interval=0)
    async with app.run_test(size=(120, 40)) as pilot:
        view = None
        while view is None or len(view.messages) < 50:
            await pilot.pause(0.001)
            view = app.active_view()
        await pilot.pause()
        first = (time.perf_counter() - start) * 1000
        older = []
        while len(view.messages) < 2000:
            count = len(view.messages)
            t0 = time.perf_counter()
            view.load_older()
            while len(view.messages) == count:
                await pilot.pause(0.001)
            await pilot.pause()
            older.append((time.perf_counter() - t0) * 1000)
        rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return first, older, rss_kb


async def main() -> None:
    path = big_mailbox_db()
    empties, firsts = [], []
    for _ in range(5):
        empties.append(await empty_app_ms())
        first, older, rss_kb = await first_page_ms(path)
        firsts.append(first)
    empty, launch = statistics.median(empties), statistics.median(firsts)
    print("| measurement | median | baseline (empty Textual app) | ratio |")
    print("|---|---|---|---|")
    print(
        f"| launch to first rendered page, 1,000,000-message mailbox | {launch:.0f} ms | "
        f"{empty:.0f} ms | {launch / empty:.2f}x |"
    )
    print(
        f"| render one older page (50 rows) while paging to 2,000 rows | "
        f"{statistics.median(older):.1f} ms (max {max(older):.1f}) | | |"
    )
    print(f"| peak RSS after 2,000 rows loaded | {rss_kb / 1024:.0f} MB | | |")


if __name__ == "__main__":
    asyncio.run(main())
