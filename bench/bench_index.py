"""Index benchmark, headless Textual at 120x40, medians of fresh processes.

- time to first cards: a fresh process from start (and from after the imports) until
  the index's first cards are on screen, at 1,000 / 10,000 / 100,000 mailboxes;
- RSS of that process once the first cards are drawn, and after the totals (every
  mailbox counted) have arrived;
- how many cards were built (the index pages its summaries: the rest follow as the
  reader scrolls).

Run: python bench/bench_index.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys

from common import index_db

SIZES = (1_000, 10_000, 100_000)
RUNS = 5

LAUNCH_INDEX = """
import sys, time
start = time.perf_counter()
from termal_tui.tui.app import make_app
from textual.widgets import OptionList
def rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0
async def main():
    ready = time.perf_counter()
    app = make_app(sys.argv[1], poll_interval=0)
    async with app.run_test(size=(120, 40)) as pilot:
        cards = app.query_one("#cards", OptionList)
        while cards.option_count == 0:
            await asyncio.sleep(0.001)
        app.screen._compositor.render_update(full=True)  # the first cards drawn
        now = time.perf_counter()
        first_rss = rss_mb()
        index = app.query_one("#mailbox-index")
        deadline = time.perf_counter() + 30
        while index.more and index.totals is None and time.perf_counter() < deadline:
            await asyncio.sleep(0.01)
        await app.workers.wait_for_complete()
        print((now - start) * 1000, (now - ready) * 1000, first_rss, rss_mb(),
              cards.option_count)
import asyncio; asyncio.run(main())
"""


def launch(path: str) -> tuple[float, float, float, float, int]:
    out = subprocess.run(
        [sys.executable, "-c", LAUNCH_INDEX, path], capture_output=True, text=True, check=True
    )
    total, warm, first_rss, rss, cards = out.stdout.strip().splitlines()[-1].split()
    return float(total), float(warm), float(first_rss), float(rss), int(cards)


def main() -> None:
    print(
        "| mailboxes | first cards on screen, from process start | from after the imports "
        "| RSS at first cards / with totals | cards built |"
    )
    print("|---|---|---|---|---|")
    for size in SIZES:
        path = str(index_db(size))
        runs = [launch(path) for _ in range(RUNS)]
        total = statistics.median(r[0] for r in runs)
        warm = statistics.median(r[1] for r in runs)
        first_rss = statistics.median(r[2] for r in runs)
        rss = statistics.median(r[3] for r in runs)
        cards = runs[-1][4]
        print(
            f"| {size:,} | {total:.0f} ms | {warm:.0f} ms | {first_rss:.0f} MB / {rss:.0f} MB "
            f"| {cards:,} |"
        )


if __name__ == "__main__":
    main()
