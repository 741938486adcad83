"""Where a command's start-up goes: ``-X importtime`` over several runs, medians.

    python bench/importtime_top.py [--runs 9] [--top 30] [--stdin '{}'] -- ARGS...

runs ``python -X importtime -m termal_tui ARGS...`` (from a temporary directory, so the
installed package is what is imported) and prints the modules with the largest median
cumulative import time, each with the chain that first imported it. ``-X importtime``
inflates every figure (roughly 1.5-2x on this machine); use it to rank, and
``bench/bench_cli.py`` for whole-process times. Example:

    python bench/importtime_top.py -- hook prompt --session bob --db /tmp/x/c.sqlite
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile

LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def profile(args: list[str], stdin: str, cwd: str) -> list[tuple[int, int, int, str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "termal_tui", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    if done.returncode != 0:
        raise SystemExit(f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    rows = []
    for line in done.stderr.splitlines():
        match = LINE.match(line)
        if match:
            rows.append((int(match[1]), int(match[2]), len(match[3]) // 2, match[4]))
    return rows


def parents(rows: list[tuple[int, int, int, str]]) -> list[int | None]:
    """importtime prints a module after its children: its parent is the next shallower row."""
    found: list[int | None] = [None] * len(rows)
    stack: list[int] = []
    for index in range(len(rows) - 1, -1, -1):
        while stack and rows[stack[-1]][2] >= rows[index][2]:
            stack.pop()
        found[index] = stack[-1] if stack else None
        stack.append(index)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--stdin", default="{}", help="standard input (default: {})")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then the command's arguments")
    options = parser.parse_args()
    args = options.args[1:] if options.args[:1] == ["--"] else options.args
    cumulative: dict[str, list[float]] = {}
    chains: dict[str, list[str]] = {}
    totals = []
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(options.runs):
            rows = profile(args, options.stdin, cwd)
            parents_of = parents(rows)
            totals.append(sum(row[0] for row in rows) / 1000)
            for index, (_self, cum, _depth, name) in enumerate(rows):
                cumulative.setdefault(name, []).append(cum / 1000)
                if name not in chains:
                    chain, parent = [], parents_of[index]
                    while parent is not None:
                        chain.append(rows[parent][3])
                        parent = parents_of[parent]
                    chains[name] = chain
    print(
        f"termal-tui {' '.join(args)}: {len(cumulative)} modules, sum of self times "
        f"median {statistics.median(totals):.1f} ms over {options.runs} runs (-X importtime)"
    )
    print(f"{'cumulative ms':>13}  module  (first imported via)")
    ranked = sorted(cumulative, key=lambda name: -statistics.median(cumulative[name]))
    for name in ranked[: options.top]:
        chain = chains[name]
        via = " <- ".join(chain[:3]) + (" <- ..." if len(chain) > 3 else "")
        print(f"{statistics.median(cumulative[name]):>13.1f}  {name}  ({via or 'top level'})")


if __name__ == "__main__":
    main()
