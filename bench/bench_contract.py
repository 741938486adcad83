"""The mailbox contract under stress, through real ``termal-tui mcp`` processes driven by
the official SDK's stdio client, with the invariants checked directly in the SQLite file.

    python bench/bench_contract.py [--quick]

Scenarios (each on a fresh database):

1. load: 8 servers (8 sessions), each sending to the others while reading and
   acknowledging its own mailboxes (list → read after the cursor → ack with
   expectedProcessedThrough = the cursor it saw; a 409 means re-list). Then the
   servers exit one by one while the first keeps sending (each receipt must be visible
   in the file at once), and a session that left comes back and sends again.
2. kill -9: start a server, start a send, SIGKILL the server after 0–50 ms, start a new
   server and retry the exact same intent and key.
3. write lock: another sqlite3 connection holds ``BEGIN IMMEDIATE`` for 8 s and for
   40 s while sends run; then the same keys are retried.
4. full disk: the database on a 2 MiB tmpfs (or loop-mounted ext4), filled by sends
   until a send fails; space is freed and the same key is retried.

After each: nothing lost (every receipt is its row), nothing doubled (one row per
(sender, idempotencyKey)), sequences dense per mailbox (1..N; ``next_sequence`` = N + 1),
no ``processed_through`` ever moved back (sampled every 20 ms by a separate connection,
and as seen by each reader), retried keys answer with the original receipt
(``duplicate: true``, same messageId and sequence), and ``PRAGMA integrity_check``.
Exit status 1 if any invariant or expectation did not hold.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from termal_tui.agents.registry import Registry

EXE = shutil.which("termal-tui", path=str(Path(sys.executable).parent)) or "termal-tui"
UNKNOWN = "outcome is unknown"
BUSY = "no mailbox write was committed"
FULL = "is full; nothing was written"

FIGURES: list[tuple[str, str, str]] = []
FAILURES: list[str] = []


def figure(scenario: str, name: str, value: str) -> None:
    FIGURES.append((scenario, name, value))


def fail(scenario: str, what: str) -> None:
    FAILURES.append(f"[{scenario}] {what}")
    print(f"  NOT HELD [{scenario}] {what}", flush=True)


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


# --------------------------------------------------------------------- the client side


@dataclass
class Answer:
    ok: bool
    text: str
    seconds: float

    @property
    def value(self) -> dict[str, Any]:
        return json.loads(self.text)


@dataclass
class Agent:
    name: str
    client: ClientSession

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> Answer:
        started = time.perf_counter()
        result = await self.client.call_tool(tool, arguments or {})
        text = result.content[0].text  # type: ignore[union-attr]
        return Answer(not result.is_error, text, time.perf_counter() - started)


@contextlib.asynccontextmanager
async def agent(db: Path, name: str) -> AsyncIterator[Agent]:
    params = StdioServerParameters(command=EXE, args=["mcp", "--session", name, "--db", str(db)])
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield Agent(name, client)


def server_pid(db: Path, session: str) -> int:
    """The one live ``termal-tui mcp --session SESSION --db DB`` process (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"mcp" in argv and str(db).encode() in argv and session.encode() in argv:
            found.append(int(entry.name))
    if len(found) != 1:
        raise SystemExit(f"expected one server process for {session}, found {found}")
    return found[0]


def register(db: Path, names: list[str]) -> dict[str, str]:
    db.parent.mkdir(parents=True, exist_ok=True)
    registry = Registry.beside(db)
    try:
        for name in names:
            registry.add(name)
        return {s.name: s.id for s in registry.sessions()}
    finally:
        registry.close()  # its connection would otherwise keep the small disk busy


def send_args(target: str, message: str, key: str) -> dict[str, Any]:
    return {"sessionId": target, "message": message, "idempotencyKey": key}


# --------------------------------------------------------------------- the file side


def connect(db: Path) -> sqlite3.Connection:
    """Read-only (``mode=ro``): the checker never creates the file, and a read-only
    connection cannot checkpoint or unlink the servers' -wal/-shm when it closes."""
    connection = sqlite3.connect(
        db.resolve().as_uri() + "?mode=ro", uri=True, timeout=30, isolation_level=None
    )
    connection.execute("PRAGMA query_only = 1")
    return connection


def row_for(db: Path, sender_id: str, key: str) -> tuple[str, str, int, str | None] | None:
    """(id, mailbox_id, sequence, dispatch_outcome) of the row for (sender, key), if any."""
    with contextlib.closing(connect(db)) as connection:
        return connection.execute(
            "SELECT id, mailbox_id, sequence, dispatch_outcome FROM mailbox_messages "
            "WHERE sender_session_id = ? AND idempotency_key = ?",
            (sender_id, key),
        ).fetchone()


def message_count(db: Path) -> int:
    with contextlib.closing(connect(db)) as connection:
        return connection.execute("SELECT count(*) FROM mailbox_messages").fetchone()[0]


class CursorSampler:
    """Every 20 ms, every participant's ``processed_through`` from its own connection;
    any value lower than one seen before is a cursor that moved back."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.seen: dict[tuple[str, str], int] = {}
        self.regressions: list[str] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CursorSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()  # one last look

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self._sample()

    def _sample(self) -> None:
        try:
            with contextlib.closing(connect(self.db)) as connection:
                rows = connection.execute(
                    "SELECT mailbox_id, session_id, processed_through FROM mailbox_participants"
                ).fetchall()
        except sqlite3.Error:
            return  # the file is busy or not there yet: skip this sample
        self.samples += 1
        for mailbox, session, cursor in rows:
            before = self.seen.get((mailbox, session), 0)
            if cursor < before:
                self.regressions.append(f"{session} in {mailbox}: {before} → {cursor}")
            self.seen[(mailbox, session)] = max(before, cursor)


def check_file(
    scenario: str,
    db: Path,
    receipts: dict[tuple[str, str], dict[str, Any]],
    sampler: CursorSampler | None = None,
) -> None:
    """The contract's invariants, read straight from the SQLite file."""
    with contextlib.closing(connect(db)) as connection:
        rows = {
            (sender, key): (mid, mailbox, seq)
            for mid, mailbox, seq, sender, key in connection.execute(
                "SELECT id, mailbox_id, sequence, sender_session_id, idempotency_key "
                "FROM mailbox_messages"
            )
        }
        doubled = connection.execute(
            "SELECT sender_session_id, idempotency_key, count(*) FROM mailbox_messages "
            "GROUP BY 1, 2 HAVING count(*) > 1"
        ).fetchall()
        boxes = connection.execute(
            "SELECT b.id, b.next_sequence, count(m.id), coalesce(min(m.sequence), 0), "
            "coalesce(max(m.sequence), 0), count(DISTINCT m.sequence) "
            "FROM mailboxes b LEFT JOIN mailbox_messages m ON m.mailbox_id = b.id GROUP BY b.id"
        ).fetchall()
        integrity = connection.execute("PRAGMA integrity_check").fetchone()[0]
    lost = [
        key
        for key, receipt in receipts.items()
        if rows.get(key) != (receipt["messageId"], receipt["mailboxId"], receipt["sequence"])
    ]
    if lost:
        fail(scenario, f"{len(lost)} receipts have no matching row, e.g. {lost[:3]}")
    slots: dict[tuple[str, int], tuple[str, str]] = {}
    for key, receipt in receipts.items():
        slot = (receipt["mailboxId"], receipt["sequence"])
        if slot in slots:
            fail(scenario, f"two receipts for one sequence {slot}: {slots[slot]} and {key}")
        slots[slot] = key
    if doubled:
        fail(scenario, f"{len(doubled)} (sender, key) pairs have more than one row: {doubled[:3]}")
    gaps = [
        b for b in boxes if b[2] and not (b[3] == 1 and b[4] == b[2] == b[5] and b[1] == b[2] + 1)
    ]
    if gaps:
        fail(scenario, f"sequences not dense 1..N (or next_sequence ≠ N+1): {gaps[:3]}")
    if integrity != "ok":
        fail(scenario, f"integrity_check: {integrity}")
    if sampler is not None and sampler.regressions:
        fail(scenario, f"processed_through moved back: {sampler.regressions[:3]}")
    figure(
        scenario,
        "invariants",
        f"{len(rows)} rows, {len(receipts)} receipts, {len(boxes)} mailboxes, "
        f"lost {len(lost)}, doubled {len(doubled)}, gaps {len(gaps)}, "
        f"cursor regressions {len(sampler.regressions) if sampler else 'n/a'}"
        + (f" ({sampler.samples} samples)" if sampler else ""),
    )


async def check_duplicates(
    scenario: str,
    sender: Agent,
    sent: list[tuple[str, str, str, dict[str, Any]]],
) -> int:
    """Retry (target, body, key) → must be ``duplicate: true`` with the original receipt."""
    bad = 0
    for target, body, key, original in sent:
        answer = await sender.call("termal_send_to_session", send_args(target, body, key))
        if not answer.ok:
            fail(scenario, f"retry of {key} failed: {answer.text}")
            bad += 1
            continue
        again = answer.value
        same = all(again[f] == original[f] for f in ("messageId", "mailboxId", "sequence"))
        if not (again["duplicate"] and same):
            fail(scenario, f"retry of {key} is not the original receipt: {again} vs {original}")
            bad += 1
    return bad


# --------------------------------------------------------------------- 1. load


async def load(directory: Path, servers: int, per_server: int) -> None:
    scenario = "load"
    print(f"\n[1] load: {servers} servers × {per_server} sends, reading and acknowledging")
    db = directory / "load" / "coordination.sqlite"
    names = [f"agent{n}" for n in range(servers)]
    ids = register(db, names)
    rng = random.Random(1)
    plans = {
        name: [rng.choice([o for o in names if o != name]) for _ in range(per_server)]
        for name in names
    }
    receipts: dict[tuple[str, str], dict[str, Any]] = {}
    sent: dict[str, list[tuple[str, str, str, dict[str, Any]]]] = {n: [] for n in names}
    latencies: list[float] = []
    stats = {"lists": 0, "reads": 0, "acks": 0, "conflicts": 0, "send_errors": 0}
    received: dict[str, set[str]] = {n: set() for n in names}
    senders_done = asyncio.Event()

    async def sender(me: Agent) -> None:
        for n, target in enumerate(plans[me.name]):
            key, body = f"load-{me.name}-{n}", f"{me.name} → {target}: message {n}"
            for _attempt in range(5):
                answer = await me.call("termal_send_to_session", send_args(target, body, key))
                if answer.ok:
                    break
                stats["send_errors"] += 1
                fail(scenario, f"send {key} failed (retrying the same key): {answer.text}")
            else:
                continue
            latencies.append(answer.seconds * 1000)
            receipts[(ids[me.name], key)] = answer.value
            sent[me.name].append((target, body, key, answer.value))

    async def reader(me: Agent) -> None:
        mine = ids[me.name]
        observed: dict[str, int] = {}

        def observe(mailbox: str, cursor: int) -> None:
            if cursor < observed.get(mailbox, 0):
                fail(scenario, f"{me.name} saw its cursor in {mailbox} move back to {cursor}")
            observed[mailbox] = max(observed.get(mailbox, 0), cursor)

        while True:
            finishing = senders_done.is_set()
            listed = await me.call("termal_list_mailboxes")
            stats["lists"] += 1
            if not listed.ok:
                fail(scenario, f"{me.name} list failed: {listed.text}")
                await asyncio.sleep(0.05)
                continue
            behind = 0
            for box in listed.value["mailboxes"]:
                cursor = next(p for p in box["participants"] if p["sessionId"] == mine)[
                    "processedThrough"
                ]
                observe(box["id"], cursor)
                if cursor >= box["latestSequence"]:
                    continue
                behind += 1
                read = await me.call(
                    "termal_read_mailbox",
                    {"mailboxId": box["id"], "afterSequence": cursor, "limit": 200},
                )
                stats["reads"] += 1
                if not read.ok:
                    fail(scenario, f"{me.name} read failed: {read.text}")
                    continue
                messages = read.value["messages"]
                if not messages:
                    continue
                sequences = [m["sequence"] for m in messages]
                if sequences != list(range(cursor + 1, cursor + 1 + len(sequences))):
                    fail(scenario, f"{me.name} read a non-dense range after {cursor}: {sequences}")
                received[me.name].update(m["id"] for m in messages if m["targetSessionId"] == mine)
                ack = await me.call(
                    "termal_acknowledge_mailbox",
                    {
                        "mailboxId": box["id"],
                        "expectedProcessedThrough": cursor,
                        "processedThrough": sequences[-1],
                    },
                )
                stats["acks"] += 1
                if ack.ok:
                    observe(
                        box["id"],
                        next(p for p in ack.value["participants"] if p["sessionId"] == mine)[
                            "processedThrough"
                        ],
                    )
                elif " 409 " in ack.text:
                    stats["conflicts"] += 1  # the cursor moved (our own sends): re-list
                else:
                    fail(scenario, f"{me.name} ack failed: {ack.text}")
            if finishing and behind == 0:
                return
            if behind == 0:
                await asyncio.sleep(0.01)

    stacks: list[contextlib.AsyncExitStack] = []
    agents: list[Agent] = []
    try:
        for name in names:
            stacks.append(contextlib.AsyncExitStack())
            agents.append(await stacks[-1].enter_async_context(agent(db, name)))
        with CursorSampler(db) as sampler:
            started = time.perf_counter()
            readers = [asyncio.create_task(reader(a)) for a in agents]
            await asyncio.gather(*(sender(a) for a in agents))
            wall = time.perf_counter() - started
            senders_done.set()
            await asyncio.gather(*readers)
            drained = time.perf_counter() - started
            # Every reader read every inbound row, and every cursor reached the end.
            with contextlib.closing(connect(db)) as connection:
                for name in names:
                    inbound = {
                        r[0]
                        for r in connection.execute(
                            "SELECT id FROM mailbox_messages WHERE target_session_id = ?",
                            (ids[name],),
                        )
                    }
                    if inbound != received[name]:
                        fail(
                            scenario,
                            f"{name} never read {len(inbound - received[name])} inbound rows",
                        )
                    behind = connection.execute(
                        "SELECT count(*) FROM mailbox_participants p JOIN mailboxes b "
                        "ON b.id = p.mailbox_id WHERE p.processed_through <> b.next_sequence - 1"
                    ).fetchone()[0]
                if behind:
                    fail(scenario, f"{behind} cursors not at the latest sequence after draining")
        # Retried keys: a sample from every sender must answer with the original receipt.
        retried = 0
        for a in agents:
            sample = rng.sample(sent[a.name], min(10, len(sent[a.name])))
            await check_duplicates(scenario, a, sample)
            retried += len(sample)
        left = await leave(scenario, db, ids, agents, stacks, receipts)
    finally:
        while stacks:
            await stacks.pop().aclose()
    check_file(scenario, db, receipts, sampler)
    total = len(latencies)
    p50, p99 = summary(latencies)
    figure(scenario, "sends", f"{total} ({servers} servers × {per_server})")
    figure(scenario, "wall time (sends)", f"{wall:.2f} s (all acked after {drained:.2f} s)")
    figure(scenario, "sends/s", f"{total / wall:.0f}")
    figure(scenario, "send latency", f"p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    figure(
        scenario,
        "readers",
        f"{stats['lists']} lists, {stats['reads']} reads, {stats['acks']} acks, "
        f"{stats['conflicts']} ack 409s (re-listed), {stats['send_errors']} send errors",
    )
    figure(scenario, "retried keys", f"{retried} retried, all duplicates of the original")
    figure(scenario, "servers leaving", left)


async def leave(
    scenario: str,
    db: Path,
    ids: dict[str, str],
    agents: list[Agent],
    stacks: list[contextlib.AsyncExitStack],
    receipts: dict[tuple[str, str], dict[str, Any]],
) -> str:
    """Servers exit one by one (last started first); after each exit the first server
    sends, and its row must be visible in the file at once. Then a new server for a
    session that left sends into the same mailbox: its sequence must be the next one."""
    first, peer = agents[0], agents[1]
    invisible = 0
    sends = 0
    while len(stacks) > 2:
        await stacks.pop().aclose()
        gone = agents.pop()
        key = f"leave-after-{gone.name}"
        answer = await first.call("termal_send_to_session", send_args(peer.name, key, key))
        if not answer.ok:
            fail(scenario, f"{first.name}'s send after {gone.name} left failed: {answer.text}")
            continue
        sends += 1
        receipt = answer.value
        receipts[(ids[first.name], key)] = receipt
        row = row_for(db, ids[first.name], key)
        if row is None or row[0] != receipt["messageId"]:
            invisible += 1
            fail(
                scenario,
                f"after {gone.name}'s server exited, {first.name}'s receipted send {key} "
                f"(sequence {receipt['sequence']}) is not in the file",
            )
    # a session whose server left comes back and writes to the same mailbox
    async with agent(db, peer.name) as again:
        answer = await again.call(
            "termal_send_to_session", send_args(first.name, "back again", "leave-rejoin")
        )
    if not answer.ok:
        fail(scenario, f"rejoined {peer.name}'s send failed: {answer.text}")
        return f"{sends} sends after exits, {invisible} not visible; rejoin send failed"
    receipts[(ids[peer.name], "leave-rejoin")] = answer.value
    clash = [
        key
        for key, r in receipts.items()
        if r["mailboxId"] == answer.value["mailboxId"]
        and r["sequence"] == answer.value["sequence"]
        and key != (ids[peer.name], "leave-rejoin")
    ]
    if clash:
        fail(
            scenario,
            f"rejoined {peer.name}'s send got sequence {answer.value['sequence']}, already "
            f"receipted to {clash}",
        )
    return (
        f"{sends} sends after {sends} server exits, {invisible} not visible in the file; "
        f"rejoin send sequence {answer.value['sequence']}" + (" CLASHES" if clash else " (next)")
    )


# --------------------------------------------------------------------- 2. kill -9


async def kill9(directory: Path, rounds: int) -> None:
    scenario = "kill -9"
    print(f"\n[2] kill -9: {rounds} servers killed mid-send, the same key retried")
    db = directory / "kill" / "coordination.sqlite"
    ids = register(db, ["victim", "peer"])
    rng = random.Random(9)
    receipts: dict[tuple[str, str], dict[str, Any]] = {}
    tally = {"answered": 0, "committed": 0, "not committed": 0, "pending outcome": 0}
    retry_ms: list[float] = []
    with CursorSampler(db) as sampler:
        for n in range(rounds):
            key, body = f"kill-{n}", f"message {n} that may or may not have committed"
            args = send_args("peer", body, key)
            first: Answer | None = None
            delay = rng.uniform(0, 0.05)
            with contextlib.suppress(Exception):
                async with agent(db, "victim") as victim:
                    pid = server_pid(db, "victim")
                    task = asyncio.create_task(victim.call("termal_send_to_session", args))
                    await asyncio.sleep(delay)
                    os.kill(pid, signal.SIGKILL)
                    with anyio.fail_after(10):
                        with contextlib.suppress(Exception):
                            first = await task
            if first is not None and first.ok:
                tally["answered"] += 1
            row = row_for(db, ids["victim"], key)
            if row is None:
                tally["not committed"] += 1
            else:
                tally["committed"] += 1
                if row[3] is None:
                    tally["pending outcome"] += 1
            async with agent(db, "victim") as victim:
                answer = await victim.call("termal_send_to_session", args)
                retry_ms.append(answer.seconds * 1000)
                if not answer.ok:
                    fail(scenario, f"round {n}: retry of {key} failed: {answer.text}")
                    continue
                receipt = answer.value
                receipts[(ids["victim"], key)] = receipt
                if receipt["duplicate"] != (row is not None):
                    fail(
                        scenario,
                        f"round {n} (killed after {delay * 1000:.0f} ms): first attempt "
                        f"{'committed' if row else 'did not commit'} but the retry says "
                        f"duplicate={receipt['duplicate']}",
                    )
                if (
                    row is not None
                    and row[3] is None
                    and (receipt["notificationDisposition"] != "durableButNotWoken")
                ):
                    fail(
                        scenario,
                        f"round {n}: a pending outcome with no live finalizer resolved to "
                        f"{receipt['notificationDisposition']}, not durableButNotWoken",
                    )
                if row is not None and receipt["messageId"] != row[0]:
                    fail(
                        scenario, f"round {n}: retry answered {receipt['messageId']}, row {row[0]}"
                    )
                if first is not None and first.ok:
                    original = first.value
                    if any(receipt[f] != original[f] for f in ("messageId", "sequence")):
                        fail(scenario, f"round {n}: retry receipt differs from the first one")
                # and once more: the retry's own receipt, duplicated
                await check_duplicates(scenario, victim, [("peer", body, key, receipt)])
    check_file(scenario, db, receipts, sampler)
    figure(
        scenario,
        "rounds",
        f"{rounds}: killed 0–50 ms into the send; first attempt answered before the kill "
        f"{tally['answered']}, committed {tally['committed']} (of which pending outcome "
        f"{tally['pending outcome']}), not committed {tally['not committed']}",
    )
    p50, p99 = summary(retry_ms)
    figure(
        scenario,
        "retry on a new server",
        f"p50 {p50:.1f} ms, p99 {p99:.1f} ms; duplicate exactly when the first committed",
    )


# --------------------------------------------------------------------- 3. write lock


def hold_lock(
    connection: sqlite3.Connection, seconds: float, held: threading.Event, released: threading.Event
) -> None:
    connection.execute("BEGIN IMMEDIATE")
    held.set()
    time.sleep(seconds)
    connection.execute("ROLLBACK")
    released.set()


async def write_lock(directory: Path, holds: list[float], sends: int) -> None:
    scenario = "write lock"
    print(
        f"\n[3] write lock: BEGIN IMMEDIATE held {' s, '.join(f'{h:.0f}' for h in holds)} s "
        f"while {sends} sends run"
    )
    db = directory / "lock" / "coordination.sqlite"
    ids = register(db, ["alice", "bob"])
    receipts: dict[tuple[str, str], dict[str, Any]] = {}
    # The locking connection stays open until the servers have exited: closing it while
    # they run could make it the file's "last" connection (see the report on -wal unlink).
    lock_connection = sqlite3.connect(db, timeout=30, isolation_level=None, check_same_thread=False)
    with CursorSampler(db) as sampler, contextlib.closing(lock_connection):
        async with agent(db, "alice") as alice, agent(db, "bob") as bob:
            warm = await alice.call("termal_send_to_session", send_args("bob", "warm-up", "warm"))
            receipts[(ids["alice"], "warm")] = warm.value
            for hold in holds:
                label = f"{hold:.0f} s lock"
                held, released = threading.Event(), threading.Event()
                before = message_count(db)
                locker = threading.Thread(
                    target=hold_lock, args=(lock_connection, hold, held, released)
                )
                locker.start()
                await asyncio.to_thread(held.wait)
                offsets = [n * 0.5 for n in range(sends)]

                async def one(
                    n: int,
                    offset: float,
                    hold: float = hold,
                    label: str = label,
                    released: threading.Event = released,
                ) -> tuple[str, str, str, Answer, float, bool]:
                    me, target = (alice, "bob") if n % 2 == 0 else (bob, "alice")
                    key, body = f"lock{hold:.0f}-{n}", f"sent under a {label}: {n}"
                    await asyncio.sleep(offset)
                    answer = await me.call("termal_send_to_session", send_args(target, body, key))
                    after_release = released.is_set()
                    return me.name, target, key, answer, offset, after_release

                results = await asyncio.gather(*(one(n, o) for n, o in enumerate(offsets)))
                await asyncio.to_thread(locker.join)
                outcomes = []
                for name, target, key, answer, _offset, after_release in results:
                    body = f"sent under a {label}: {key.rsplit('-', 1)[1]}"
                    me = alice if name == "alice" else bob
                    if answer.ok:
                        outcomes.append(f"ok after {answer.seconds:.1f} s")
                        receipts[(ids[name], key)] = answer.value
                        if not after_release:
                            fail(scenario, f"{label}: {key} succeeded while the lock was held")
                        await check_duplicates(scenario, me, [(target, body, key, answer.value)])
                        continue
                    outcomes.append(f"503 after {answer.seconds:.1f} s")
                    if " 503 " not in answer.text or BUSY not in answer.text:
                        fail(scenario, f"{label}: {key} ended {answer.text!r}, not a busy 503")
                    if UNKNOWN in answer.text:
                        fail(scenario, f"{label}: {key} says the outcome is unknown")
                    if answer.seconds > 31.0:
                        fail(
                            scenario, f"{label}: {key} took {answer.seconds:.1f} s (> 30 s budget)"
                        )
                    if row_for(db, ids[name], key) is not None:
                        fail(scenario, f"{label}: {key} answered 503 but its row exists")
                    # after the release, the same key succeeds exactly once
                    retry = await me.call("termal_send_to_session", send_args(target, body, key))
                    if not retry.ok or retry.value["duplicate"]:
                        fail(scenario, f"{label}: retry of {key} after release: {retry.text}")
                        continue
                    receipts[(ids[name], key)] = retry.value
                    await check_duplicates(scenario, me, [(target, body, key, retry.value)])
                if hold >= 30:
                    committed = sum(1 for r in results if r[3].ok)
                    if committed:
                        fail(scenario, f"{label}: {committed} sends succeeded; all must 503")
                durations = ", ".join(outcomes)
                figure(
                    scenario,
                    label,
                    f"{durations} (started {offsets[0]:.1f}–{offsets[-1]:.1f} "
                    f"s into the lock; rows before {before})",
                )
    check_file(scenario, db, receipts, sampler)


# --------------------------------------------------------------------- 4. full disk


@contextlib.contextmanager
def small_filesystem(base: Path) -> Any:
    """A 2 MiB file system: tmpfs, else a loop-mounted ext4 image; None if neither."""
    mount = base / "small"
    mount.mkdir()
    how = None
    tried = []
    for kind, commands in (
        ("tmpfs (2 MiB)", [["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)]]),
        (
            "ext4 on a loop device (2 MiB)",
            [
                ["truncate", "-s", "2M", str(base / "small.img")],
                ["mkfs.ext4", "-q", "-F", str(base / "small.img")],
                ["mount", "-o", "loop", str(base / "small.img"), str(mount)],
            ],
        ),
    ):
        try:
            for command in commands:
                subprocess.run(command, check=True, capture_output=True, text=True, timeout=30)
            how = kind
            break
        except (OSError, subprocess.SubprocessError) as error:
            tried.append(f"{kind}: {getattr(error, 'stderr', '') or error}".strip())
    if how is None:
        yield None, tried
        return
    try:
        yield (mount, how), tried
    finally:
        started = time.monotonic()
        while True:  # a server process may still be going away
            done = subprocess.run(["umount", str(mount)], check=False, capture_output=True)
            waited = time.monotonic() - started
            if done.returncode == 0:
                if waited > 1:
                    print(f"  unmounted after {waited:.1f} s (a server was still exiting)")
                break
            if waited > 60:
                print(f"  could not unmount {mount}: {done.stderr.decode().strip()}")
                break
            time.sleep(0.2)


async def full_disk(directory: Path, body_kib: int) -> None:
    scenario = "full disk"
    print("\n[4] full disk: the database on a 2 MiB file system, filled by sends")
    base = directory / "disk"
    base.mkdir()
    with small_filesystem(base) as (mounted, tried):
        if mounted is None:
            print("  SKIPPED: cannot mount a small file system here:\n    " + "\n    ".join(tried))
            figure(
                scenario, "skipped", "no small file system could be mounted: " + "; ".join(tried)
            )
            return
        mount, how = mounted
        db = mount / "coordination.sqlite"
        ids = register(db, ["writer", "reader"])
        ballast = mount / "ballast"
        ballast.write_bytes(os.urandom(256 * 1024))  # freed later to make room again
        receipts: dict[tuple[str, str], dict[str, Any]] = {}
        failed: tuple[str, str, Answer] | None = None
        rng = random.Random(4)
        with CursorSampler(db) as sampler:
            async with agent(db, "writer") as writer:
                for n in range(400):
                    key = f"fill-{n}"
                    # incompressible text, so every send really takes its space
                    body = f"{n}:" + "".join(rng.choices("abcdefghijklmnop", k=body_kib * 1024))
                    answer = await writer.call(
                        "termal_send_to_session", send_args("reader", body, key)
                    )
                    if not answer.ok:
                        failed = (key, body, answer)
                        break
                    receipts[(ids["writer"], key)] = answer.value
                if failed is None:
                    fail(scenario, "the disk never filled")
                    return
                key, body, answer = failed
                filled = len(receipts)
                if FULL not in answer.text:
                    fail(scenario, f"failing send does not say {FULL!r}: {answer.text!r}")
                if UNKNOWN in answer.text:
                    fail(
                        scenario,
                        f"failing send says the outcome is unknown (SQLite refused before the "
                        f"commit; it wrote nothing): {answer.text!r}",
                    )
                if row_for(db, ids["writer"], key) is not None:
                    fail(scenario, f"{key} failed but its row exists")
                rows_when_full = message_count(db)
                if rows_when_full != len(receipts):
                    fail(scenario, f"{rows_when_full} rows but {len(receipts)} receipts: partial?")
                check_file(scenario + " (while full)", db, receipts)
                # a second, different send on the full disk must fail just as cleanly
                second = await writer.call(
                    "termal_send_to_session", send_args("reader", "small one", "fill-small")
                )
                second_text = "ok" if second.ok else second.text
                if second.ok:
                    receipts[(ids["writer"], "fill-small")] = second.value
                elif UNKNOWN in second.text or row_for(db, ids["writer"], "fill-small"):
                    fail(scenario, f"second send on the full disk: {second.text!r}")
                ballast.unlink()
                retry = await writer.call("termal_send_to_session", send_args("reader", body, key))
                if not retry.ok or retry.value["duplicate"]:
                    fail(scenario, f"after freeing space, {key}: {retry.text[:300]}")
                else:
                    receipts[(ids["writer"], key)] = retry.value
                    await check_duplicates(scenario, writer, [("reader", body, key, retry.value)])
        used = shutil.disk_usage(mount)
        check_file(scenario, db, receipts, sampler)
        figure(
            scenario, "file system", f"{how}; {used.used // 1024} KiB used of {used.total // 1024}"
        )
        figure(
            scenario,
            "filled",
            f"{filled} sends of {body_kib} KiB, then {key} failed: "
            + answer.text.replace(str(mount), "<mount>"),
        )
        figure(scenario, "second send while full", second_text.replace(str(mount), "<mount>"))
        figure(
            scenario,
            "after freeing 256 KiB",
            "same key succeeded once (duplicate: false), then duplicate: true"
            if retry.ok and not retry.value["duplicate"]
            else retry.text,
        )


# --------------------------------------------------------------------- main


async def run(quick: bool, only: set[str]) -> None:
    directory = Path(tempfile.mkdtemp(prefix="termal-bench-contract-"))
    started = time.perf_counter()
    try:
        if "load" in only:
            await load(directory, servers=8, per_server=40 if quick else 200)
        if "kill" in only:
            await kill9(directory, rounds=8 if quick else 25)
        if "lock" in only:
            await write_lock(directory, holds=[8.0, 40.0], sends=2 if quick else 4)
        if "disk" in only:
            await full_disk(directory, body_kib=32)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(
        f"\nfigures ({'--quick' if quick else 'full'} run, {time.perf_counter() - started:.0f} s)"
    )
    width = max(len(s) for s, _, _ in FIGURES)
    name_width = max(len(n) for _, n, _ in FIGURES)
    for scenario, name, value in FIGURES:
        print(f"{scenario:<{width}}  {name:<{name_width}}  {value}")
    if FAILURES:
        print(f"\n{len(FAILURES)} NOT HELD:")
        for line in FAILURES:
            print(f"  {line}")
        raise SystemExit(1)
    print("\nevery invariant held")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer sends and kills")
    parser.add_argument(
        "--only", default="load,kill,lock,disk", help="comma-separated: load,kill,lock,disk"
    )
    args = parser.parse_args()
    asyncio.run(run(args.quick, set(args.only.split(","))))


if __name__ == "__main__":
    main()
