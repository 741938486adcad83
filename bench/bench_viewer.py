"""Viewer benchmark, headless Textual at 120x40, medians, baselines measured in the same run.

- launch: a fresh process from start to the newest page of the 1,000,000-message
  mailbox on screen, beside a fresh process showing an empty Textual app with one label;
  and the same launch with a config file that sets every key (read, validated, applied);
- older pages: time per page at 0 and at 20,000 rows loaded, RSS at 2,000 and 20,000;
- jump to #N at several depths of the 1,000,000-message mailbox;
- polls with 20,000 rows loaded: nothing changed, one cursor moved; RSS across polls;
- idle CPU with a tab open at --interval 1.

termal_tui is byte-compiled first (as an install is; see ``compile_package``).

Run: python bench/bench_viewer.py            (everything)
     python bench/bench_viewer.py --launch   (the launch rows only, 9 rounds)
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import BIG_MAILBOX, DATA, big_mailbox_db, compile_package

from termal_tui.tui.app import MailboxApp

LAUNCH_EMPTY = """
import sys, time
start = time.perf_counter()
from textual.app import App
from textual.widgets import Label
class One(App):
    def compose(self):
        yield Label("hello")
async def main():
    ready = time.perf_counter()
    app = One()
    async with app.run_test(size=(120, 40)) as pilot:
        app.screen._compositor.render_update(full=True)
        now = time.perf_counter()
        print((now - start) * 1000, (now - ready) * 1000)
import asyncio; asyncio.run(main())
"""

LAUNCH_VIEWER = """
import sys, time
start = time.perf_counter()
from termal_tui.tui.app import make_app
async def main():
    ready = time.perf_counter()
    app = make_app(sys.argv[1], mailbox_id=sys.argv[2], poll_interval=0)
    async with app.run_test(size=(120, 40)) as pilot:
        while True:
            view = app.active_view()
            if view is not None and view.model.loaded >= 50:
                break
            await asyncio.sleep(0.001)
        app.screen._compositor.render_update(full=True)  # the page drawn
        now = time.perf_counter()
        print((now - start) * 1000, (now - ready) * 1000)
import asyncio; asyncio.run(main())
"""


# The CLI's path: the config file read and validated before the app starts.
LAUNCH_CONFIGURED = LAUNCH_VIEWER.replace(
    "from termal_tui.tui.app import make_app\n",
    "from termal_tui.tui.app import make_app\n"
    "from termal_tui.views.config import load_config\n"
    "config = load_config()\n"
    "assert not config.problems, config.problems\n",
).replace("poll_interval=0)", "poll_interval=0, config=config)")

CONFIG_FILE = """\
theme = "nord"
interval = 3
export_dir = "~/exports"

[health]
never_woken_after = 60
unprocessed_after = 600
lagging_after = 1800
no_notifier_after = 90

[keys]
search = "ctrl+f"

[attention]
bell = true
watch = ["mailbox-1"]
every = 30
"""


def config_env() -> dict[str, str]:
    """A config file that sets every key, and a state directory of the bench's own."""
    root = DATA / "xdg"
    (root / "config" / "termal-tui").mkdir(parents=True, exist_ok=True)
    (root / "config" / "termal-tui" / "config.toml").write_text(CONFIG_FILE, encoding="utf-8")
    return {
        **os.environ,
        "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_STATE_HOME": str(root / "state"),
    }


def launch_ms(code: str, *args: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(from process start, from after the imports) to the first page drawn."""
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env=env
    )
    total, after_imports = out.stdout.strip().splitlines()[-1].split()
    return float(total), float(after_imports)


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def paging_and_polls(path: Path) -> dict[str, object]:
    app = MailboxApp(path, mailbox_id=BIG_MAILBOX, poll_interval=0)
    out: dict[str, object] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        view = None
        while view is None or len(view.messages) < 50:
            await pilot.pause(0.001)
            view = app.active_view()
        await pilot.pause()
        pages: list[float] = []
        rss: dict[int, float] = {}
        while view.model.loaded < 20_000:
            count = view.model.loaded
            t0 = time.perf_counter()
            view.load_older()  # the worker reads, the handler applies the rows
            while view.model.loaded < count + 50:
                await asyncio.sleep(0.0002)
            app.screen._compositor.render_update(full=True)  # and the screen is drawn
            pages.append((time.perf_counter() - t0) * 1000)
            if view.model.loaded in (2_000, 20_000):
                rss[view.model.loaded] = rss_mb()
        out["older_first"] = statistics.median(pages[:20])
        out["older_last"] = statistics.median(pages[-20:])
        out["older_all"] = statistics.median(pages)
        out["rss"] = rss
        # Polls with 20,000 rows loaded: nothing changed.
        idle = []
        for _ in range(20):
            t0 = time.perf_counter()
            view.refresh_thread()
            await app.workers.wait_for_complete()
            await pilot.pause()
            idle.append((time.perf_counter() - t0) * 1000)
        out["poll_idle"] = statistics.median(idle)
        # One cursor moved (another process acknowledges one more row each time).
        moved = []
        writer = sqlite3.connect(path)
        for _ in range(10):
            writer.execute(
                "UPDATE mailbox_participants SET processed_through = processed_through + 1 "
                "WHERE mailbox_id = ? AND session_id = 'session-2'",
                (BIG_MAILBOX,),
            )
            writer.commit()
            t0 = time.perf_counter()
            view.refresh_thread()
            await app.workers.wait_for_complete()
            await pilot.pause()
            moved.append((time.perf_counter() - t0) * 1000)
        writer.close()
        out["poll_moved"] = statistics.median(moved)
        before = rss_mb()
        for _ in range(100):
            view.refresh_thread(force=True)
            await app.workers.wait_for_complete()
        out["rss_polls"] = (before, rss_mb())
        # Jumps at several depths (from the newest page's tab).
        jumps = {}
        for depth in (900_000, 500_000, 100_000, 10):
            t0 = time.perf_counter()
            view.jump_to(depth)  # the view owns its jumps
            while (
                view.highlighted_message() is None or view.highlighted_message().sequence != depth
            ):
                await pilot.pause(0.0005)
            jumps[depth] = (time.perf_counter() - t0) * 1000
        out["jumps"] = jumps
    return out


async def idle_cpu(path: Path, seconds: float = 10.0) -> float:
    app = MailboxApp(path, mailbox_id=BIG_MAILBOX, poll_interval=1.0)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.active_view() is None or len(app.active_view().messages) < 50:
            await pilot.pause(0.01)
        # Steady state: the index (read after the tab's first page) and its one health
        # pass are done, so the window measures idling, not start-up work.
        index = app.query_one("#mailbox-index")
        while not index.summaries or index.marking or index.refreshing:
            await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        await pilot.pause(1.0)
        start_cpu = time.process_time()
        start = time.perf_counter()
        await asyncio.sleep(seconds)
        return 100 * (time.process_time() - start_cpu) / (time.perf_counter() - start)


def launch_rows(big: Path, rounds: int) -> None:
    """The launch rows: an empty app, the viewer, the viewer with a config file, in turn."""
    compile_package()
    empties, launches, configured = [], [], []
    env = config_env()
    for _ in range(rounds):
        empties.append(launch_ms(LAUNCH_EMPTY))
        launches.append(launch_ms(LAUNCH_VIEWER, str(big), BIG_MAILBOX))
        configured.append(launch_ms(LAUNCH_CONFIGURED, str(big), BIG_MAILBOX, env=env))
    empty = statistics.median(e[0] for e in empties)
    launch = statistics.median(x[0] for x in launches)
    with_config = statistics.median(x[0] for x in configured)
    empty_warm = statistics.median(e[1] for e in empties)
    launch_warm = statistics.median(x[1] for x in launches)
    print("| measurement | median | baseline (same run) | ratio |")
    print("|---|---|---|---|")
    print(
        f"| launch to the newest page of a 1,000,000-message mailbox drawn, from process start | "
        f"{launch:.0f} ms | {empty:.0f} ms (empty app, one label) | {launch / empty:.2f}x |"
    )
    print(
        f"| the same, from after the imports (app start to page drawn) | "
        f"{launch_warm:.0f} ms | {empty_warm:.0f} ms | {launch_warm / empty_warm:.2f}x |"
    )
    print(
        f"| the same launch with a config file setting every key | {with_config:.0f} ms | "
        f"{empty:.0f} ms | {with_config / empty:.2f}x |"
    )


def main() -> None:
    big = big_mailbox_db()
    if "--launch" in sys.argv[1:]:
        launch_rows(big, rounds=9)
        return
    work = DATA / "viewer-copy.sqlite"  # polls move a cursor: never in the shared fixture
    shutil.copy(big, work)
    launch_rows(big, rounds=5)
    results = asyncio.run(paging_and_polls(work))
    cpu = asyncio.run(idle_cpu(work))
    work.unlink()
    rss = results["rss"]
    print(
        f"| older page (50 rows): first 20 pages / last 20 pages (to 20,000 rows) | "
        f"{results['older_first']:.1f} ms / {results['older_last']:.1f} ms | | |"
    )
    for depth, ms in results["jumps"].items():
        print(f"| jump to #{depth:,} (1,000,000-message mailbox) | {ms:.0f} ms | | |")
    print(f"| poll, 20,000 rows loaded, nothing changed | {results['poll_idle']:.1f} ms | | |")
    print(f"| poll, 20,000 rows loaded, one cursor moved | {results['poll_moved']:.1f} ms | | |")
    print(f"| idle CPU, tab open, --interval 1 | {cpu:.1f}% | | |")
    print(f"| RSS at 2,000 / 20,000 rows loaded | {rss[2000]:.0f} MB / {rss[20000]:.0f} MB | | |")
    before, after = results["rss_polls"]
    print(f"| RSS before / after 100 forced polls | {before:.0f} MB / {after:.0f} MB | | |")


if __name__ == "__main__":
    main()
