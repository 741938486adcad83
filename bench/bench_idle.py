"""Idle CPU at the default settings, in a real terminal: ``termal-tui BIG`` in tmux at
120x40 (the file watcher on, the fallback poll every 8 s), the index shown, then a tab
of the 1,000,000-message mailbox open. After a settling pause, the process's own CPU
time (utime + stime from ``/proc/PID/stat``) is read over a window, so the figure is
what the viewer spends, whatever else the machine is doing.

Run: python bench/bench_idle.py [--seconds 60]   (needs tmux and /proc)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_live import cpu_seconds
from common import DATA, big_mailbox_db

SOCKET = "bench-idle"


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=True
    ).stdout


def viewer_pid() -> int:
    """The pane runs the command with exec: the pane's pid is the viewer's."""
    return int(tmux("display-message", "-p", "#{pane_pid}").strip())


def window(pid: int, seconds: float) -> float:
    start_cpu, start = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - start_cpu) / (time.monotonic() - start)


def wait_for(text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while text not in tmux("capture-pane", "-p"):
        if time.monotonic() > deadline:
            raise SystemExit(f"the viewer did not show {text!r} within {timeout:g} s")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    work = DATA / "idle-copy.sqlite"
    shutil.copy(big_mailbox_db(), work)
    command = shutil.which("termal-tui") or "termal-tui"
    subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
    try:
        tmux("new-session", "-d", "-x", "120", "-y", "40", f"exec {command} {work}")
        wait_for("● Live")
        time.sleep(5)  # the index's first pages and its health pass
        pid = viewer_pid()
        index = window(pid, args.seconds)
        tmux("send-keys", "Enter")  # the first card: the 1,000,000-message mailbox
        wait_for("loaded")
        time.sleep(5)
        tab = window(pid, args.seconds)
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{work}{suffix}").unlink(missing_ok=True)
    print("| idle, default settings (watcher + 8 s poll), 1,000,000-message file | CPU |")
    print("|---|---|")
    print(f"| the index shown, {args.seconds:g} s window | {index:.2f}% |")
    print(
        f"| a tab of the 1,000,000-message mailbox open, {args.seconds:g} s window | {tab:.2f}% |"
    )


if __name__ == "__main__":
    main()
