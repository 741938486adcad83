"""``db copy``: a coordination file of N messages into PostgreSQL and back, beside a floor
timed in the same run, in alternation (medians of the rounds).

    python bench/bench_copy.py [--messages 100000] [--rounds 3]

The floor is the same data movement with nothing else: the same batched reads and the
same ``COPY`` / ``executemany`` into tables the real writers made, without the type and
NUL checks, the digests, or the two read-backs (inside the transaction and after the
commit) that ``db copy`` verifies with. Memory: the peak RSS of the real command
(``termal-tui db copy``, a subprocess) at N/10 and at N messages: batching keeps it flat.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from termal_tui.store.copy import TABLES, copy  # noqa: E402
from termal_tui.store.writer import open_writer  # noqa: E402
from tests.pg_server import PgServer, start_server  # noqa: E402

MAILBOXES = 100


def build(path: Path, messages: int) -> None:
    """``messages`` messages over 100 mailboxes, 500 board receipts, like TermAl's rows."""

    async def create() -> None:
        async with open_writer(path):
            pass

    asyncio.run(create())
    db = sqlite3.connect(path)
    t = "2026-01-01T00:00:00.123456789+00:00"
    for m in range(MAILBOXES):
        mailbox = f"mailbox-00000000-0000-4000-8000-{m:012d}"
        a, b = f"session-{2 * m}", f"session-{2 * m + 1}"
        db.execute(
            "INSERT INTO mailboxes VALUES (?, ?, ?, ?)",
            (mailbox, f'["{a}","{b}"]', t, messages // MAILBOXES + 1),
        )
        db.executemany(
            "INSERT INTO mailbox_participants VALUES (?, ?, ?, 3, ?, NULL)",
            [(mailbox, a, "planner", t), (mailbox, b, "backend", t)],
        )

    def rows():
        for n in range(messages):
            m, seq = n % MAILBOXES, n // MAILBOXES + 1
            a, b = f"session-{2 * m}", f"session-{2 * m + 1}"
            yield (
                f"mailbox-message-00000000-0000-4000-8000-{n:012d}",
                f"mailbox-00000000-0000-4000-8000-{m:012d}",
                seq,
                a if seq % 2 else b,
                "planner" if seq % 2 else "backend",
                b if seq % 2 else a,
                "backend" if seq % 2 else "planner",
                f"2026-01-01T00:{n // 60000 % 60:02}:{n // 1000 % 60:02}.{n:09d}+00:00",
                "tests" if n % 7 == 0 else None,
                None,
                f"Step {n}: run the suite, then report what failed — ünïcödé and all. " * 2,
                f"key-{n}",
                seq % 5,
                "deliveredToIdleSession",
                "deliveredToIdleSession",
            )

    db.executemany(
        "INSERT INTO mailbox_messages VALUES (?,?,?,?,?,?,?,?,'routine',?,?,?,?,?,?,?)", rows()
    )
    db.execute("INSERT INTO coordination_board_scopes VALUES ('project-1', 500)")
    db.executemany(
        "INSERT INTO coordination_board_idempotency VALUES ('project-1', 'session-0', ?, ?, ?, ?)",
        [(f"b{n}", f"{n:064x}", '{"key":"k","revision":1}', t) for n in range(500)],
    )
    db.commit()
    db.close()


async def floor_into(source: Path, url: str) -> None:
    """The same reads and COPYs, into tables the real writers made; no checks."""
    import psycopg

    from termal_tui.store.board.writer import open_board_writer

    async with open_board_writer(url):
        pass
    db = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    async with await psycopg.AsyncConnection.connect(url) as conn:
        for table in TABLES:
            if table.group != "coordination" or table.name == "meta":
                continue
            cursor = db.execute(f"SELECT {table.column_list} FROM {table.name} ORDER BY rowid")
            while batch := cursor.fetchmany(1000):
                async with (
                    conn.cursor() as cur,
                    cur.copy(f"COPY {table.name} ({table.column_list}) FROM STDIN".encode()) as out,
                ):
                    for row in batch:
                        await out.write_row(row)
        await conn.commit()
    db.close()


async def floor_out(url: str, target: Path) -> None:
    """The same server-side reads and executemany into a file the real writer made."""
    import psycopg

    async with open_writer(target):
        pass
    db = sqlite3.connect(target, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    async with await psycopg.AsyncConnection.connect(url) as conn:
        for table in TABLES:
            if table.group != "coordination" or table.name == "meta":
                continue
            marks = ", ".join("?" for _ in table.columns)
            async with conn.cursor(name=f"floor_{table.name}") as cur:
                await cur.execute(
                    f"SELECT {table.column_list} FROM {table.name} ORDER BY {table.order}"
                )
                while batch := await cur.fetchmany(1000):
                    db.executemany(
                        f"INSERT INTO {table.name}({table.column_list}) VALUES({marks})", batch
                    )
    db.execute("COMMIT")
    db.close()


def timed(work) -> float:
    started = time.perf_counter()
    asyncio.run(work)
    return time.perf_counter() - started


def peak_rss_kib(source: Path, url: str) -> int:
    """The real command in a subprocess: its peak resident set (KiB)."""
    code = (
        "import resource, sys\n"
        "from termal_tui.cli import main\n"
        "code = main(['db', 'copy', sys.argv[1], sys.argv[2]])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(source), url],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return int(done.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server: PgServer = start_server()
    scratch = Path(tempfile.mkdtemp(prefix="bench-copy-", dir="/tmp"))
    try:
        source = scratch / "src" / "coordination.sqlite"
        build(source, args.messages)
        small = scratch / "small" / "coordination.sqlite"
        build(small, args.messages // 10)
        rows = args.messages + 2 * MAILBOXES + MAILBOXES + 501 + 3
        results: dict[str, list[float]] = {k: [] for k in ("in", "in floor", "out", "out floor")}
        for round_ in range(args.rounds):
            url, floor_url = server.fresh_database(), server.fresh_database()
            back = scratch / f"back{round_}" / "coordination.sqlite"
            floor_back = scratch / f"floor{round_}" / "coordination.sqlite"
            pairs = [
                ("in", partial(copy, source, url)),
                ("in floor", partial(floor_into, source, floor_url)),
                ("out", partial(copy, url, back)),
                ("out floor", partial(floor_out, floor_url, floor_back)),
            ]
            if round_ % 2:  # alternate which goes first
                pairs = [pairs[1], pairs[0], pairs[3], pairs[2]]
            for name, work in pairs:
                results[name].append(timed(work()))
            for made in (back, floor_back):
                shutil.rmtree(made.parent)
        print(f"db copy, {args.messages:,} messages ({rows:,} rows), medians of {args.rounds}:")
        print("| direction | db copy s | floor s | ratio | rows/s (db copy) |")
        print("|---|---|---|---|---|")
        for label, key in (("file → PostgreSQL", "in"), ("PostgreSQL → file", "out")):
            ours = statistics.median(results[key])
            floor = statistics.median(results[f"{key} floor"])
            print(
                f"| {label} | {ours:.2f} | {floor:.2f} | {ours / floor:.2f}x | {rows / ours:,.0f} |"
            )
        rss_small = peak_rss_kib(small, server.fresh_database())
        rss_big = peak_rss_kib(source, server.fresh_database())
        print(
            f"peak RSS of `termal-tui db copy` into PostgreSQL: {rss_small / 1024:.0f} MiB at "
            f"{args.messages // 10:,} messages, {rss_big / 1024:.0f} MiB at {args.messages:,}"
        )
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(scratch)
        server.stop()


if __name__ == "__main__":
    main()
