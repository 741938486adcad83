"""Command start-up: whole processes of the agents' commands beside the floor, same run.

    python bench/bench_cli.py [--runs 21] [--quick]

The floor is the same interpreter starting, importing sqlite3 and json, opening the
database read-only (a ``file:...?mode=ro`` URI) and reading one row. Every command is a
fresh process (``subprocess.run``), run both as ``python -m termal_tui`` and through the
console script ``.venv/bin/termal-tui`` (what a hook configuration runs, so the targets
are checked against it). Rounds are interleaved (floor, then each command once per
launcher) so that machine noise hits all of them alike; medians and p90 per command,
and the ratio of the median to the floor's median.

The database is built in a temporary directory: a registry of two sessions, alice and
bob (``termal-tui session add``), a 1,000-message alice-bob mailbox and five more
mailboxes of bob's, written by the store's writer. In each round, per launcher:

- ``send (new)``: alice sends bob a new text (a new message, a new key);
- ``send (dup)``: the same text every time (the duplicate path: the original receipt);
- ``hook prompt (new)``: bob's prompt hook with that one new message to wake on;
- ``hook stop``: nothing new to wake on, unread mail waiting (it blocks the stop);
- ``ls``, ``read`` (a page of 50 from the start), ``ack`` (bob's cursor to the latest);
- ``wake``: a pull pass with nothing new; ``hook prompt (idle)``: nothing unread at all,
  the common case of a hook; ``--help``: the root help (stdout is a pipe: no colour).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import termal_tui
from termal_tui.agents.registry import Registry
from termal_tui.store.writer import open_writer

PYTHON = sys.executable
CONSOLE = shutil.which("termal-tui", path=str(Path(PYTHON).parent)) or "termal-tui"
LAUNCHERS = {"python -m termal_tui": [PYTHON, "-m", "termal_tui"], "termal-tui": [CONSOLE]}
TARGET_LAUNCHER = "termal-tui"
ENV = dict(os.environ)  # the children's environment (TERMAL_HOME is the temporary directory)
CWD = ""  # the temporary directory: no current directory shadows the installed package

FLOOR = (
    "import sqlite3, json, sys\n"
    "db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)\n"
    "row = db.execute('SELECT id, next_sequence FROM mailboxes LIMIT 1').fetchone()\n"
    "json.dumps(row)\n"
)

HISTORY = 1_000
OTHER_MAILBOXES = 5
OTHER_MESSAGES = 40
HOOK_TARGET = 3.0
COMMAND_TARGET = 4.0


def p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def build(directory: Path) -> Path:
    """The registry through the real command; the mail through the store's writer."""
    db = directory / "coordination.sqlite"
    for name in ("alice", "bob"):
        subprocess.run(
            [CONSOLE, "session", "add", name, "--agent", "Claude", "--db", str(db)],
            check=True,
            capture_output=True,
            env=ENV,
            cwd=directory,
        )
    ids = {s.name: s.id for s in Registry.beside(db).sessions()}

    async def mail() -> None:
        async with open_writer(db) as writer:
            for n in range(HISTORY):
                sender, target = ("alice", "bob") if n % 3 else ("bob", "alice")
                receipt = await writer.append(
                    sender_session_id=ids[sender],
                    sender_name=sender,
                    target_session_id=ids[target],
                    target_name=target,
                    body=f"Step {n}: a realistic instruction with a few sentences. "
                    "Please review the change, run the tests and report back. Done.",
                    idempotency_key=f"history-{n}",
                    finalizing=True,
                )
                await writer.record_dispatch_outcome(receipt.message_id, "durableButNotWoken")
            for peer in range(OTHER_MAILBOXES):
                peer_id = f"session-0000000000{peer:02d}"
                for n in range(OTHER_MESSAGES):
                    receipt = await writer.append(
                        sender_session_id=peer_id if n % 2 else ids["bob"],
                        sender_name=f"peer-{peer}" if n % 2 else "bob",
                        target_session_id=ids["bob"] if n % 2 else peer_id,
                        target_name="bob" if n % 2 else f"peer-{peer}",
                        body=f"Note {n} from peer {peer}: the build is green.",
                        idempotency_key=f"peer-{peer}-{n}",
                        finalizing=True,
                    )
                    await writer.record_dispatch_outcome(receipt.message_id, "durableButNotWoken")
            # bob has processed everything but the alice-bob mailbox's last few.
            for summary in await writer.list_mailboxes(session_id=ids["bob"]):
                mine = summary.participant(ids["bob"])
                latest = summary.latest_sequence
                done = latest - 5 if summary.participant(ids["alice"]) else latest
                await writer.acknowledge(
                    ids["bob"], summary.id, mine.processed_through if mine else 0, done
                )

    asyncio.run(mail())
    return db


def latest_sequence(db: Path) -> int:
    """The alice-bob mailbox's latest sequence (read untimed, before each ack): it is the
    mailbox with the most messages."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (value,) = conn.execute("SELECT MAX(next_sequence) - 1 FROM mailboxes").fetchone()
    finally:
        conn.close()
    return int(value)


def run_once(argv: list[str], stdin: str | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=ENV, cwd=CWD or None
    )
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[:500]}")
    return elapsed


def plan(db: Path, tag: str) -> list[tuple[str, list[str], str | None]]:
    """One round's commands, in order (each depends on the state the previous left)."""
    d = ["--db", str(db)]
    return [
        ("send (new)", ["send", "--as", "alice", "bob", f"bench {tag}: please re-run.", *d], None),
        ("send (dup)", ["send", "--as", "alice", "bob", "bench: the same text", *d], None),
        ("hook prompt (new)", ["hook", "prompt", "--session", "bob", *d], "{}"),
        ("hook stop", ["hook", "stop", "--session", "bob", *d], "{}"),
        ("ls", ["ls", "--as", "bob", *d], None),
        ("read", ["read", "--as", "bob", "alice", "--after", "0", *d], None),
        ("ack", ["ack", "--as", "bob", "alice", "LATEST", *d], None),
        ("wake", ["wake", "--session", "bob", *d], None),
        ("hook prompt (idle)", ["hook", "prompt", "--session", "bob", *d], "{}"),
        ("--help", ["--help"], None),
    ]


def target_for(name: str) -> float:
    return HOOK_TARGET if name.startswith("hook") else COMMAND_TARGET


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="rounds (default 21)")
    parser.add_argument("--quick", action="store_true", help="9 rounds")
    args = parser.parse_args()
    runs = 9 if args.quick else max(9, args.runs)

    load = os.getloadavg()
    directory = Path(tempfile.mkdtemp(prefix="termal-bench-cli-"))
    ENV["TERMAL_HOME"] = str(directory)  # never the user's ~/.termal
    ENV.pop("NO_COLOR", None)
    # A user's installed package has its bytecode cached: let the warm-up round write it.
    ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    global CWD
    CWD = str(directory)
    try:
        db = build(directory)
        floor_argv = [PYTHON, "-c", FLOOR, str(db)]
        floor: list[float] = []
        samples: dict[tuple[str, str], list[float]] = {}
        names = [name for name, _a, _s in plan(db, "")]

        def round_(tag: str, record: bool) -> None:
            for launcher, prefix in LAUNCHERS.items():
                ms = run_once(floor_argv)
                if record:
                    floor.append(ms)
                for name, argv, stdin in plan(db, f"{tag}-{launcher}"):
                    argv = [str(latest_sequence(db)) if a == "LATEST" else a for a in argv]
                    ms = run_once(prefix + argv, stdin)
                    if record:
                        samples.setdefault((launcher, name), []).append(ms)

        round_("warm-up", record=False)  # page cache, bytecode, the first duplicate
        for n in range(runs):
            round_(str(n), record=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    floor_med = statistics.median(floor)
    print(
        f"termal_tui from {Path(termal_tui.__file__).parent}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after"
    )
    print(
        f"command start-up, whole processes, {runs} rounds (ms; ratio = median / floor "
        f"median; targets checked on `{TARGET_LAUNCHER}`, the console script)"
    )
    print(
        f"floor (python -c: import sqlite3, json; open ?mode=ro; one row), "
        f"{len(floor)} runs: median {floor_med:.1f}, p90 {p90(floor):.1f}"
    )
    print()
    heads = " | ".join(f"{lab} median | p90 | ratio" for lab in LAUNCHERS)
    print(f"| command | {heads} | target | met |")
    print("|---|" + "---:|---:|---:|" * len(LAUNCHERS) + "---:|:---:|")
    for name in names:
        cells = []
        for launcher in LAUNCHERS:
            s = samples[(launcher, name)]
            med = statistics.median(s)
            cells.append(f"{med:.1f} | {p90(s):.1f} | {med / floor_med:.2f}x")
        ours = statistics.median(samples[(TARGET_LAUNCHER, name)]) / floor_med
        target = target_for(name)
        met = "yes" if ours <= target else "no"
        print(f"| {name} | {' | '.join(cells)} | {target:.0f}x | {met} |")


if __name__ == "__main__":
    main()
