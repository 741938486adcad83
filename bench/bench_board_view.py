"""Board view benchmark: the first paint of a project with 512 keys (TermAl's live-key
limit), headless Textual at 120x40, medians, baselines measured in the same run.

- from process start: a fresh process that opens the viewer and its board view, to the
  512 keys drawn, beside a fresh process showing an empty Textual app with one label
  (bench_viewer.py's baseline);
- in a running viewer: from ``b`` to the first screen of the 512 keys drawn (open, read
  all 512 heads, render the first rows, paint), and to all 512 rows in the list (the
  rest are added in chunks after the first paint);
- beside them, a fresh process showing the viewer's index of the same file (no board);
- an idle tick with the board shown (the generations read, nothing else), and that read.

The board is written through the real board writer once (512 keys, values of a few
hundred bytes, some with history), then cached under bench/.data.

Run: python bench/bench_board_view.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_viewer import LAUNCH_EMPTY, launch_ms
from common import DATA

from termal_tui.store.board import open_board_writer
from termal_tui.store.writer import open_writer
from termal_tui.tui.app import MailboxApp
from termal_tui.tui.screens.board import BoardScreen

KEYS = 512
SCOPE = "project-00000000-0000-4000-8000-000000000512"
RUNS = 7

LAUNCH_BOARD = f"""
import sys, time
start = time.perf_counter()
from termal_tui.tui.app import make_app
from termal_tui.tui.screens.board import BoardScreen
async def main():
    ready = time.perf_counter()
    app = make_app(sys.argv[1], poll_interval=0)
    async with app.run_test(size=(120, 40)) as pilot:
        app.action_board()
        while not (isinstance(app.screen, BoardScreen) and len(app.screen.shown) >= {KEYS}):
            await asyncio.sleep(0.001)
        app.screen._compositor.render_update(full=True)  # the first screen of keys drawn
        now = time.perf_counter()
        print((now - start) * 1000, (now - ready) * 1000)
import asyncio; asyncio.run(main())
"""


LAUNCH_INDEX = """
import sys, time
start = time.perf_counter()
from termal_tui.tui.app import make_app
async def main():
    ready = time.perf_counter()
    app = make_app(sys.argv[1], poll_interval=0)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.live.reader is None:
            await asyncio.sleep(0.001)
        await app.workers.wait_for_complete()
        app.screen._compositor.render_update(full=True)  # the index drawn
        now = time.perf_counter()
        print((now - start) * 1000, (now - ready) * 1000)
import asyncio; asyncio.run(main())
"""


def board_db() -> Path:
    path = DATA / f"board-{KEYS}.sqlite"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)

    async def fill() -> None:
        async with open_writer(partial):
            pass
        async with open_board_writer(partial) as writer:
            for index in range(KEYS):
                value = {
                    "owner": f"session-{index % 7}",
                    "status": ["todo", "doing", "review", "done"][index % 4],
                    "notes": f"step {index}: " + "check the migration and the row counts " * 3,
                    "links": [f"https://example.invalid/{index}/{n}" for n in range(3)],
                }
                for revision in range(1 + (index % 3 == 0)):  # a third have history
                    await writer.set(
                        SCOPE,
                        f"area-{index // 64}.item-{index:03d}",
                        expected_revision=revision,
                        author_session_id=f"session-{index % 7}",
                        author_name=f"agent-{index % 7}",
                        idempotency_key=f"bench-{index}-{revision}",
                        value=value | {"revision": revision},
                        state_stamp=f"build-{index}",
                    )

    asyncio.run(fill())
    partial.rename(path)
    return path


async def in_process(
    path: Path,
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per run: b → the first screen of the 512 keys drawn, b → all 512 rows in the list;
    the idle ticks with the board shown (worker, message, header), and their one read."""
    app = MailboxApp(path, poll_interval=0)
    paints: list[float] = []
    fills: list[float] = []
    ticks: list[float] = []
    reads: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for _ in range(RUNS):
            start = time.perf_counter()
            app.action_board()  # what b runs (pilot.press would wait for every chunk)
            screen = app.screen
            while not (isinstance(screen, BoardScreen) and len(screen.shown) >= KEYS):
                await asyncio.sleep(0.0005)
                screen = app.screen
            app.screen._compositor.render_update(full=True)
            paints.append((time.perf_counter() - start) * 1000)
            while not screen.filled:
                await asyncio.sleep(0.0005)
            fills.append((time.perf_counter() - start) * 1000)
            board = app.live.board  # the live source's board reader (the screen's)
            assert board is not None
            for _ in range(20):
                start = time.perf_counter()
                await board.generations()
                reads.append((time.perf_counter() - start) * 1000)
            for _ in range(20):
                start = time.perf_counter()
                screen.load()
                await app.workers.wait_for_complete()
                await pilot.pause()
                ticks.append((time.perf_counter() - start) * 1000)
            await pilot.press("escape")
            await app.workers.wait_for_complete()
            await pilot.pause()
    return paints, fills, ticks, reads


def main() -> None:
    path = board_db()
    empties, indexes, launches = [], [], []
    for _ in range(RUNS):
        empties.append(launch_ms(LAUNCH_EMPTY))
        indexes.append(launch_ms(LAUNCH_INDEX, str(path)))
        launches.append(launch_ms(LAUNCH_BOARD, str(path)))
    index = statistics.median(x[0] for x in indexes)
    empty = statistics.median(e[0] for e in empties)
    launch = statistics.median(x[0] for x in launches)
    empty_warm = statistics.median(e[1] for e in empties)
    launch_warm = statistics.median(x[1] for x in launches)
    paints, fills, ticks, reads = asyncio.run(in_process(path))
    paint = statistics.median(paints)
    python = sys.version.split()[0]
    textual = subprocess.run(
        [sys.executable, "-c", "import textual; print(textual.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    load = os.getloadavg()[0]
    print(
        f"Python {python}, textual {textual}, {KEYS} keys, medians of {RUNS} runs, "
        f"{os.cpu_count()} CPUs, load average {load:.2f} at the end"
    )
    print("| measurement | median | baseline (same run) | ratio |")
    print("|---|---|---|---|")
    print(
        f"| process start to the board view of {KEYS} keys drawn (first screen) | {launch:.0f} ms | "
        f"{empty:.0f} ms (empty app, one label) | {launch / empty:.2f}x |"
    )
    print(
        f"| the same, from after the imports | {launch_warm:.0f} ms | {empty_warm:.0f} ms | "
        f"{launch_warm / empty_warm:.2f}x |"
    )
    print(
        f"| process start to the viewer's index of the same file drawn (no board) | "
        f"{index:.0f} ms | {empty:.0f} ms | {index / empty:.2f}x |"
    )
    print(f"| b in a running viewer to the first screen of keys drawn | {paint:.0f} ms | | |")
    print(
        f"| b in a running viewer to all {KEYS} rows in the list | "
        f"{statistics.median(fills):.0f} ms | | |"
    )
    print(
        f"| idle tick, board shown (worker to header redrawn, a frame included) | "
        f"{statistics.median(ticks):.1f} ms | | |"
    )
    print(f"| its one read (the generations) | {statistics.median(reads):.2f} ms | | |")


if __name__ == "__main__":
    main()
