"""Live benchmark: how soon another process's commit reaches the viewer, and what an idle
viewer costs. Medians, p90 and max over repeated trials, baselines measured in the same run.

For each mode — file notifications (``watch=True``, the default), the poll alone
(``watch=False``) at the default interval (8 s), and a ``postgresql://`` database (the
server polled every 0.5 s; a server of its own, started as the tests start theirs) —
one run:

- a writer in a subprocess of its own (the real store writers) commits, in turn, a
  message, a wake-state change (the dispatch outcome of that message), an
  acknowledgement (planner's cursor through that message) and a board write, and says
  the monotonic time right after each commit (CLOCK_MONOTONIC: one clock for every
  process of the machine);
- (a) a ``LiveSource`` in this process hears ``changed`` (the time it is called);
- (b) the real viewer, in tmux (its own socket) at 120x40 with the mailbox's tab open,
  shows it: ``capture-pane`` polled every 20 ms until the message's body, or planner's
  cursor ``planner N/N`` of the acknowledgement (the tab's status line), is on the
  screen (a wake-state change and a board write have no text in the tab: (a) only);
- a random pause between trials: 0.2–0.7 s with notifications; with a poll (the file's,
  the server's), 0 to its period, so that commits fall anywhere in the poll's cycle.

Then, with nothing written, the idle CPU of each viewer process over 30 s (user+sys from
/proc of the process / wall), beside an empty Textual app showing one label in tmux.

Run: python bench/bench_live.py [--trials N] [--idle SECONDS] [--no-postgres]   (needs
tmux; the PostgreSQL mode needs Debian's postgresql package, as the tests do)
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))  # tests.pg_server

from common import DATA

from termal_tui.cli.viewer import DEFAULT_INTERVAL
from termal_tui.store.board import open_board_writer
from termal_tui.store.writer import open_writer
from termal_tui.views.live import SERVER_POLL_SECONDS, LiveEvent, LiveSource

SOCKET = "bench-live"
KINDS = ("message", "wake", "ack", "board")
ON_SCREEN = ("message", "ack")
NAMES = {"session-1": "planner", "session-2": "backend"}
SCOPE = "project-00000000-0000-4000-8000-00000000live"
TIMEOUT = 30.0  # a trial that is not seen by then is reported as such

# The writer: one process, commands on stdin, the monotonic time after each commit out.
WRITER = """
import asyncio, sys, time
from termal_tui.store.board import open_board_writer
from termal_tui.store.writer import open_writer
NAMES = {"session-1": "planner", "session-2": "backend"}
async def main(path, scope):
    async with open_writer(path) as writer, open_board_writer(path) as board:
        last = None
        revision = 0
        print("ready", flush=True)
        for line in sys.stdin:
            kind, n = line.split()
            before = time.monotonic()
            if kind == "message":
                last = await writer.append(
                    sender_session_id="session-2", sender_name="backend",
                    target_session_id="session-1", target_name="planner",
                    body=f"live-bench-{n} arrived", idempotency_key=f"live-{n}",
                    finalizing=True)
                out = last.sequence
            elif kind == "wake":
                await writer.record_dispatch_outcome(last.message_id, "deliveredToIdleSession")
                out = last.sequence
            elif kind == "ack":
                expected = await writer.processed_through("session-1", last.mailbox_id)
                await writer.acknowledge("session-1", last.mailbox_id, expected, last.sequence)
                out = last.sequence
            else:
                receipt = await board.set(
                    scope, "live-bench-" + n.split("-")[0], expected_revision=revision,
                    author_session_id="session-1", author_name="planner",
                    idempotency_key=f"board-{n}", value={"n": n})
                revision = receipt.revision
                out = revision
            print(before, time.monotonic(), out, flush=True)
asyncio.run(main(sys.argv[1], sys.argv[2]))
"""

# The viewer as the CLI starts it (default interval), notifications on or off.
VIEWER = """
import sys
from termal_tui.tui.app import make_app
make_app(sys.argv[1], mailbox_id=sys.argv[2], poll_interval=float(sys.argv[3]),
         watch=sys.argv[4] == "1").run()
"""

EMPTY = """
from textual.app import App
from textual.widgets import Label
class One(App):
    def compose(self):
        yield Label("hello")
One().run()
"""


async def make_db(path: Path | str) -> str:
    """A fresh file (or an empty database at a URL): planner ⇄ backend with 10 messages
    and one board key; the mailbox id."""
    if isinstance(path, Path):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    async with open_writer(path) as writer:
        receipt = None
        for seq in range(1, 11):
            sender, target = ("session-1", "session-2") if seq % 2 else ("session-2", "session-1")
            receipt = await writer.append(
                sender_session_id=sender,
                sender_name=NAMES[sender],
                target_session_id=target,
                target_name=NAMES[target],
                body=f"Step {seq}: a realistic instruction.",
                idempotency_key=f"seed-{seq}",
            )
        assert receipt is not None
    async with open_board_writer(path) as board:
        await board.set(
            SCOPE,
            "plan",
            expected_revision=0,
            author_session_id="session-1",
            author_name="planner",
            idempotency_key="seed-board",
            value={"steps": 10},
        )
    return receipt.mailbox_id


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=True
    ).stdout


def start_in_tmux(name: str, code: str, *args: str) -> int:
    """A python process in a tmux window of its own at 120x40; its pid."""
    command = " ".join(["exec", sys.executable, "-c", _quote(code), *map(_quote, args)])
    tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", command)
    return int(tmux("display-message", "-p", "-t", name, "#{pane_pid}").strip())


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


async def capture(name: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        "tmux", "-L", SOCKET, "capture-pane", "-p", "-t", name, stdout=subprocess.PIPE
    )
    out, _ = await proc.communicate()
    return out.decode("utf-8", "replace")


async def wait_screen(name: str, text: str, deadline: float) -> float | None:
    while time.monotonic() < deadline:
        if text in await capture(name):
            return time.monotonic()
        await asyncio.sleep(0.02)
    return None


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def idle_cpu(pids: dict[str, int], seconds: float) -> dict[str, float]:
    """Percent of one core, for each process over the same window (nothing written)."""
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    start = time.monotonic()
    await asyncio.sleep(seconds)
    wall = time.monotonic() - start
    return {name: 100 * (cpu_seconds(pid) - before[name]) / wall for name, pid in pids.items()}


async def trials(path: Path | str, mailbox: str, mode: str, count: int) -> dict[str, list[float]]:
    """Delays (s) per measurement: 'event <kind>' and 'screen <kind>'. ``mode``:
    notifications, poll (the file's poll alone) or postgresql."""
    watch = mode == "notifications"
    name = f"viewer-{mode}"
    pid = start_in_tmux(name, VIEWER, str(path), mailbox, str(DEFAULT_INTERVAL), str(int(watch)))
    # The tab's status line (the newest rows differ: the first mode's trials wrote more).
    if await wait_screen(name, "of latest #", time.monotonic() + 30) is None:
        raise SystemExit(f"the viewer did not show its tab:\n{await capture(name)}")
    events: list[float] = []

    def heard(event: LiveEvent) -> None:
        if event.kind == "changed":
            events.append(time.monotonic())

    source = LiveSource(path, interval=DEFAULT_INTERVAL, watch=watch)
    source.subscribe(heard)
    await source.start()
    writer = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WRITER,
        str(path),
        SCOPE,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert writer.stdin is not None and writer.stdout is not None
    assert (await writer.stdout.readline()).strip() == b"ready"
    await asyncio.sleep(1.0)  # the source open, the watchers set up, the viewer settled
    out: dict[str, list[float]] = {}
    for trial in range(count):
        kind = KINDS[trial % len(KINDS)]
        tag = f"{mode[:2]}-{trial}"
        writer.stdin.write(f"{kind} {tag}\n".encode())
        await writer.stdin.drain()
        before, after, value = (await writer.stdout.readline()).split()
        committed, started = float(after), float(before)
        deadline = committed + TIMEOUT
        screen_at: float | None = None
        if kind in ON_SCREEN:
            text = (
                f"live-bench-{tag} arrived"
                if kind == "message"
                else f"planner {int(value)}/{int(value)}"
            )
            screen_at = await wait_screen(name, text, deadline)
            out.setdefault(f"screen {kind}", []).append(
                TIMEOUT if screen_at is None else max(0.0, screen_at - committed)
            )
        while not any(t >= started for t in events) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        heard_at = next((t for t in events if t >= started), None)
        out.setdefault(f"event {kind}", []).append(
            TIMEOUT if heard_at is None else max(0.0, heard_at - committed)
        )
        events.clear()
        # The next commit anywhere in the poll's cycle (not just after the last check).
        await asyncio.sleep(
            random.uniform(0.2, 0.7) if watch else random.uniform(0, source.poll_seconds)
        )
    writer.stdin.close()
    await writer.wait()
    await source.close()
    out["pid"] = [float(pid)]
    return out


def row(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[max(0, round(0.9 * len(ordered)) - 1)]
    return (
        f"| {label} | {len(samples)} | {statistics.median(samples) * 1000:.0f} ms | "
        f"{p90 * 1000:.0f} ms | {max(samples) * 1000:.0f} ms |"
    )


def describe(mode: str) -> str:
    if mode == "notifications":
        return "notifications"
    if mode == "poll":
        return f"poll alone, every {DEFAULT_INTERVAL:g} s"
    return f"PostgreSQL, server polled every {SERVER_POLL_SECONDS:g} s"


async def main() -> None:
    if shutil.which("tmux") is None:
        raise SystemExit("bench_live needs tmux")
    count = int(sys.argv[sys.argv.index("--trials") + 1]) if "--trials" in sys.argv else 24
    idle = float(sys.argv[sys.argv.index("--idle") + 1]) if "--idle" in sys.argv else 30.0
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / "live.sqlite"
    mailbox = await make_db(path)
    targets: dict[str, tuple[Path | str, str]] = {
        "notifications": (path, mailbox),
        "poll": (path, mailbox),
    }
    server = None
    if "--no-postgres" not in sys.argv:
        from tests.pg_server import start_server

        server = start_server()
        url = server.fresh_database()
        targets["postgresql"] = (url, await make_db(url))
    subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
    results: dict[str, dict[str, list[float]]] = {}
    try:
        for mode, (target, box) in targets.items():
            results[mode] = await trials(target, box, mode, count)
        pids = {"empty": start_in_tmux("empty", EMPTY)}
        for mode in targets:
            pids[f"viewer-{mode}"] = int(results[mode].pop("pid")[0])
        await asyncio.sleep(2.0)  # the empty app started
        cpu = await idle_cpu(pids, idle)
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
        if server is not None:
            server.stop()
    every: dict[str, list[float]] = {mode: [] for mode in targets}
    print("| commit by another process → | trials | median | p90 | max |")
    print("|---|---|---|---|---|")
    for mode in targets:
        how = describe(mode)
        for kind in KINDS:
            samples = results[mode][f"event {kind}"]
            every[mode].extend(samples)
            print(row(f"{how}: live source `changed`, {kind}", samples))
        for kind in ON_SCREEN:
            samples = results[mode][f"screen {kind}"]
            every[mode].extend(samples)
            print(row(f"{how}: on the viewer's screen (tmux), {kind}", samples))
        print(row(f"{how}: all of the above", every[mode]))
    print()
    print("| idle, nothing written (every viewer and the empty app at once) | CPU (% of a core) |")
    print("|---|---|")
    for mode in targets:
        print(
            f"| viewer, tab open, {describe(mode)}, interval {DEFAULT_INTERVAL:g} s | "
            f"{cpu[f'viewer-{mode}']:.2f}% |"
        )
    print(f"| baseline: empty Textual app showing one label | {cpu['empty']:.2f}% |")
    print(f"({idle:g} s window; user+sys of each process from /proc / wall)")


if __name__ == "__main__":
    asyncio.run(main())
