"""Hubs on SQLite and on PostgreSQL, in one run: 8, 32 and 128 agents sending and
acknowledging through one hub on TermAl's SQLite file, one hub on PostgreSQL, and two
hubs on one PostgreSQL database (each agent on one of the two, every message crossing
to the other hub's agent).

    python bench/bench_hubs_pg.py [--agents 8,32,128] [--total 1000] [--rounds 1]
                                  [--workers 2]

Each agent is a lean MCP client over HTTP (``raw_agent.py``); the agents run in
``--workers`` processes. One agent's iteration: send to the next agent
(``termal_send_to_session``), list its mailboxes, acknowledge its inbox up to the latest
sequence (``termal_acknowledge_mailbox``). Each cell runs about ``--total`` iterations
in all (at least 5 per agent); the three setups of one agent count run back to back,
in an order that rotates with the rounds, so they see the same machine. Reports the
sends per second (wall clock, all agents), p50/p99 of the send and of the
acknowledgement, and the CPU spent per iteration by the hubs and by the database
server's processes (PostgreSQL's backends; SQLite runs inside the hub).

The PostgreSQL server is started by the bench (the tests' ``tests/pg_server.py``) with
``fsync`` and ``full_page_writes`` on and ``synchronous_commit`` off: durable up to the
WAL writer's last flush, as the SQLite file in WAL mode with ``synchronous=NORMAL`` is.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import queue
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))
from bench_agents import summary
from bench_hub import cpu_seconds, hub
from raw_agent import RawAgent

from termal_tui.agents.registry import Registry
from termal_tui.store.writer import open_writer
from tests.pg_server import start_server

# Every agent connects from one address (loopback): at 128 agents, more than the default
# 32 connections per address are waiting for their first answer on a loaded machine,
# and the hub's guard would set the oldest aside (and close it 30 s later).
KEEP_OPEN = (
    "--keep-alive", "3600", "--session-idle", "3600", "--max-pending-per-address", "1000",
)  # fmt: skip
BENCH_PG_SETTINGS = {"fsync": "on", "full_page_writes": "on", "synchronous_commit": "off"}


# ------------------------------------------------------------------ the agents' side


async def _agents(
    plan: list[tuple[str, str, str, str]], iterations: int, tag: str, ready: Any, go: Any, out: Any
) -> None:
    """``plan``: (hub URL, token, peer name, own name) per agent of this worker."""
    agents = [await RawAgent(url, token).open() for url, token, _peer, _me in plan]
    ready.put(len(agents))
    await asyncio.to_thread(go.wait)
    sends: list[float] = []
    acks: list[float] = []
    errors: list[str] = []

    async def one(index: int) -> None:
        agent, peer = agents[index], plan[index][2]
        for n in range(iterations):
            started = time.perf_counter()
            sent = await agent.call(
                "termal_send_to_session",
                {"sessionId": peer, "message": f"m{n}", "idempotencyKey": f"{tag}-{index}-{n}"},
            )
            sends.append((time.perf_counter() - started) * 1000)
            if "error" in sent:
                errors.append(str(sent["error"])[:200])
            listed = await agent.call("termal_list_mailboxes", {})
            for mailbox in listed.get("mailboxes", []):
                mine = next(
                    (p for p in mailbox["participants"] if p["displayName"] == plan[index][3]),
                    None,
                )
                if mine is None or mailbox["unreadCount"] == 0:
                    continue
                started = time.perf_counter()
                acked = await agent.call(
                    "termal_acknowledge_mailbox",
                    {
                        "mailboxId": mailbox["id"],
                        "expectedProcessedThrough": mine["processedThrough"],
                        "processedThrough": mailbox["latestSequence"],
                    },
                )
                acks.append((time.perf_counter() - started) * 1000)
                if "error" in acked:
                    errors.append(str(acked["error"])[:200])

    await asyncio.gather(*(one(i) for i in range(len(agents))))
    out.put({"sends": sends, "acks": acks, "errors": errors})
    for agent in agents:
        await agent.close()


def worker(
    plan: list[tuple[str, str, str, str]], iterations: int, tag: str, ready: Any, go: Any, out: Any
) -> None:
    asyncio.run(_agents(plan, iterations, tag, ready, go, out))


# ------------------------------------------------------------------ one cell


def postgres_pids(data: Path) -> set[int]:
    """The server's postmaster and every process it started (backends included)."""
    try:
        master = int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return set()
    found = {master}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[1]) == master:
                    found.add(int(entry.name))
    return found


def run_cell(
    urls: list[str],
    tokens: list[str],
    names: list[str],
    agents: int,
    iterations: int,
    workers: int,
    tag: str,
    hub_pids: set[int],
    pg_data: Path | None,
) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    ready, out, go = context.Queue(), context.Queue(), context.Event()
    plans: list[list[tuple[str, str, str, str]]] = [[] for _ in range(workers)]
    for i in range(agents):
        plans[i % workers].append(
            (urls[i % len(urls)], tokens[i], names[(i + 1) % agents], names[i])
        )
    processes = [
        context.Process(target=worker, args=(plan, iterations, tag, ready, go, out))
        for plan in plans
        if plan
    ]
    for process in processes:
        process.start()
    for _ in processes:
        ready.get(timeout=300)
    db_pids = postgres_pids(pg_data) if pg_data is not None else set()
    cpu_before = cpu_seconds(hub_pids), cpu_seconds(db_pids)
    started = time.perf_counter()
    go.set()
    results = []
    while len(results) < len(processes):
        with contextlib.suppress(queue.Empty):
            results.append(out.get(timeout=1))
            continue
        if any(p.exitcode not in (None, 0) for p in processes):
            raise RuntimeError("an agents' process failed (its traceback is above)")
    elapsed = time.perf_counter() - started
    db_pids |= postgres_pids(pg_data) if pg_data is not None else set()
    hub_cpu = cpu_seconds(hub_pids) - cpu_before[0]
    db_cpu = cpu_seconds(db_pids) - cpu_before[1]
    for process in processes:
        process.join(60)
    sends = [x for r in results for x in r["sends"]]
    acks = [x for r in results for x in r["acks"]]
    errors = [x for r in results for x in r["errors"]]
    count = agents * iterations
    return {
        "rate": count / elapsed,
        "send": summary(sends),
        "ack": summary(acks) if acks else (float("nan"), float("nan")),
        "acks": len(acks),
        "errors": errors,
        "hub_ms": hub_cpu * 1000 / count,
        "db_ms": db_cpu * 1000 / count,
    }


# ------------------------------------------------------------------ the run


@contextlib.contextmanager
def hubs_for(targets: list[Path | str], tmp: Path, label: str) -> Iterator[list[tuple[str, int]]]:
    with contextlib.ExitStack() as stack:
        yield [
            # Agents wait idle while the others connect: keep their connections open.
            stack.enter_context(hub(target, tmp / f"{label}-{n}.log", *KEEP_OPEN))  # type: ignore[arg-type]
            for n, target in enumerate(targets)
        ]


async def prepare(target: Path | str, count: int) -> tuple[list[str], list[str]]:
    registry = Registry.beside(target)
    names = [f"agent-{i}" for i in range(count)]
    tokens = [registry.issue_token(registry.add(name).name)[1] for name in names]
    registry.close()
    async with open_writer(target):
        pass  # the schema exists before anyone serves it
    return names, tokens


def main(counts: list[int], total: int, rounds: int, workers: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-hubs-pg-"))
    server = start_server(BENCH_PG_SETTINGS)
    try:
        server.execute("CREATE DATABASE bench TEMPLATE template0")
        url = server.url("bench")
        sqlite_db = tmp / "coordination.sqlite"
        most = max(counts)
        sqlite_names, sqlite_tokens = asyncio.run(prepare(sqlite_db, most))
        pg_names, pg_tokens = asyncio.run(prepare(url, most))
        data = server.directory / "data"
        results: dict[tuple[str, int], list[dict[str, Any]]] = {}
        setups = ("sqlite, 1 hub", "postgresql, 1 hub", "postgresql, 2 hubs")
        with (
            hubs_for([sqlite_db], tmp, "sqlite") as (sqlite_hub,),
            hubs_for([url, url], tmp, "pg") as (pg_a, pg_b),
        ):
            print(f"load average at the start: {os.getloadavg()[0]:.2f}", flush=True)
            for r in range(rounds):
                for agents in counts:
                    iterations = max(5, total // agents)
                    order = list(setups[r % 3 :] + setups[: r % 3])
                    for setup in order:
                        if setup.startswith("sqlite"):
                            cell = run_cell([sqlite_hub[0]], sqlite_tokens, sqlite_names,
                                            agents, iterations, workers, f"s{r}-{agents}",
                                            {sqlite_hub[1]}, None)  # fmt: skip
                        elif setup.endswith("1 hub"):
                            cell = run_cell([pg_a[0]], pg_tokens, pg_names, agents, iterations,
                                            workers, f"p1-{r}-{agents}", {pg_a[1]}, data)  # fmt: skip
                        else:
                            cell = run_cell([pg_a[0], pg_b[0]], pg_tokens, pg_names, agents,
                                            iterations, workers, f"p2-{r}-{agents}",
                                            {pg_a[1], pg_b[1]}, data)  # fmt: skip
                        results.setdefault((setup, agents), []).append(cell)
                        print(
                            f"  round {r + 1} {agents:>3} agents {setup:20} "
                            f"{cell['rate']:6.0f} sends/s  send p50/p99 "
                            f"{cell['send'][0]:6.1f}/{cell['send'][1]:6.1f} ms  ack p50/p99 "
                            f"{cell['ack'][0]:6.1f}/{cell['ack'][1]:6.1f} ms  errors "
                            f"{len(cell['errors'])}  load {os.getloadavg()[0]:.2f}",
                            flush=True,
                        )
                        for error in cell["errors"][:3]:
                            print(f"    error: {error}", flush=True)
        print(
            f"\nmedians of {rounds} round(s); iterations = send + list + ack; CPU per "
            "iteration in ms (hubs / database server)"
        )
        print("| agents | setup | sends/s | send p50 / p99 ms | ack p50 / p99 ms | "
              "CPU hubs / db ms | vs SQLite |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        for agents in counts:
            base = statistics.median(c["rate"] for c in results[(setups[0], agents)])
            for setup in setups:
                cells = results[(setup, agents)]
                rate = statistics.median(c["rate"] for c in cells)
                send = [statistics.median(c["send"][k] for c in cells) for k in (0, 1)]
                ack = [statistics.median(c["ack"][k] for c in cells) for k in (0, 1)]
                hub_ms = statistics.median(c["hub_ms"] for c in cells)
                db_ms = statistics.median(c["db_ms"] for c in cells)
                print(
                    f"| {agents} | {setup} | {rate:.0f} | {send[0]:.1f} / {send[1]:.1f} | "
                    f"{ack[0]:.1f} / {ack[1]:.1f} | {hub_ms:.1f} / {db_ms:.1f} | "
                    f"{rate / base:.2f}x |"
                )
        print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", default="8,32,128", help="agent counts, comma-separated")
    parser.add_argument("--total", type=int, default=1000, help="iterations per cell, about")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="processes running the agents")
    options = parser.parse_args()
    main(
        [int(x) for x in options.agents.split(",")],
        options.total,
        options.rounds,
        options.workers,
    )
