"""Launch through the real command, in a real terminal: ``termal-tui BIG --mailbox ID``
(the CLI's checks, the config, the app) in tmux at 120x40, from the spawn to the newest
message of the 1,000,000-message mailbox on the screen (``capture-pane`` polled every
10 ms), beside an empty Textual app showing one label started the same way, rounds
interleaved; termal_tui is byte-compiled first, as an install is (``common.compile_package``).
``--before DIR``: also a copy of older code (``PYTHONPATH=DIR``), in the same
rounds, for before/after figures.

Run: python bench/bench_launch_tmux.py [--rounds N] [--before DIR]   (needs tmux)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import BIG_MAILBOX, BIG_MESSAGES, big_mailbox_db, compile_package

SOCKET = "bench-launch"
EMPTY = (
    "from textual.app import App\n"
    "from textual.widgets import Label\n"
    "class One(App):\n"
    "    def compose(self):\n"
    "        yield Label('hello')\n"
    "One().run()\n"
)


def tmux(*args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=True, env=env
    ).stdout


def launch(command: list[str], text: str, pythonpath: str | None = None) -> float:
    """Seconds from the spawn to ``text`` on the screen."""
    subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    quoted = " ".join("'" + part.replace("'", "'\"'\"'") + "'" for part in command)
    start = time.monotonic()
    tmux(
        "new-session",
        "-d",
        "-s",
        "x",
        "-x",
        "120",
        "-y",
        "40",
        "-c",
        "/tmp",
        f"exec {quoted}",
        env=env,
    )
    while time.monotonic() - start < 60:
        if text in tmux("capture-pane", "-p", "-t", "x"):
            seen = time.monotonic() - start
            subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
            return seen
        time.sleep(0.01)
    raise SystemExit(f"{text!r} never appeared: {command}")


def main() -> None:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 9
    before = sys.argv[sys.argv.index("--before") + 1] if "--before" in sys.argv else None
    big = str(big_mailbox_db())
    compile_package()  # as an install is: the baseline's textual is compiled too
    newest = f"Step {BIG_MESSAGES}:"
    viewer = [sys.executable, "-m", "termal_tui", big, "--mailbox", BIG_MAILBOX]
    here = str(Path(__file__).resolve().parent.parent)
    runs: dict[str, list[float]] = {"empty": [], "viewer": []}
    if before:
        runs["before"] = []
    for _ in range(rounds):
        runs["empty"].append(launch([sys.executable, "-c", EMPTY], "hello"))
        if before:
            runs["before"].append(launch(viewer, newest, before))
        runs["viewer"].append(launch(viewer, newest, here))
    empty = statistics.median(runs["empty"])
    print("| spawn in tmux → on the screen | median | baseline (same run) | ratio |")
    print("|---|---|---|---|")
    print(f"| empty Textual app, one label | {empty * 1000:.0f} ms | | |")
    names = {
        "before": "`termal-tui BIG --mailbox ID` (before)",
        "viewer": "`termal-tui BIG --mailbox ID`",
    }
    for name in ("before", "viewer"):
        if name in runs:
            value = statistics.median(runs[name])
            print(
                f"| {names[name]}: the newest of 1,000,000 messages | {value * 1000:.0f} ms | "
                f"{empty * 1000:.0f} ms | {value / empty:.2f}x |"
            )


if __name__ == "__main__":
    main()
