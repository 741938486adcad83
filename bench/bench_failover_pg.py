"""Several hubs on one PostgreSQL database, under failures: nothing lost, nothing doubled.

    python bench/bench_failover_pg.py [--agents 8] [--sends 40] [--down 3]

Two real ``termal-tui serve`` processes on one database (the server started by the
bench, ``tests/pg_server.py``, with fsync on), agents split between them, each a lean
MCP client over HTTP (``raw_agent.py``) with a fixed list of intents: a send to the next
agent under its own idempotency key, then a list and an acknowledgement of its inbox up
to the latest sequence. Every agent retries its exact request until it is answered:
through the other hub when its hub cannot be reached, on the same hub after a
``retrySafe`` error.

1. kill -9: once a third of the sends are answered, hub A is killed with SIGKILL; its
   agents carry on through hub B with the request that was in flight.
2. PostgreSQL restarted under load: once a third of the sends are answered, the server
   is stopped (``pg_ctl stop -m fast``: every connection ends), kept down ``--down``
   seconds, and started again; the hubs are left alone.

Checked after each, in the database (a separate connection): every intent is exactly
one row (0 lost, 0 doubled) and its row is the receipt first answered; sequences are
dense per mailbox (1..N, ``next_sequence`` = N + 1); no ``processed_through`` ever moved
back (sampled every 50 ms); every intent sent once more at the end answers its first
receipt unchanged (``duplicate``, same message, sequence and outcome). For the restart:
what the agents were answered while the server was down (``busy``, ``unknown_outcome``,
anything else), and that both hubs answered again by themselves, without a restart.
Exit status 1 if anything did not hold.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))
from bench_hub import hub
from raw_agent import HubGone, RawAgent

from termal_tui.agents.registry import Registry
from termal_tui.store.writer import open_writer
from tests.pg_server import PgServer, start_server

SETTINGS = {"fsync": "on", "full_page_writes": "on", "synchronous_commit": "off"}
FAILURES: list[str] = []


def check(scenario: str, held: bool, what: str) -> None:
    print(f"  {'held    ' if held else 'NOT HELD'} {what}", flush=True)
    if not held:
        FAILURES.append(f"[{scenario}] {what}")


class Agent:
    def __init__(self, name: str, token: str, peer: str, hubs: list[str], home: int) -> None:
        self.name, self.token, self.peer = name, token, peer
        self.hubs = hubs
        self.home = home  # index of the hub it starts on
        self.client: RawAgent | None = None
        self.receipts: dict[str, dict[str, Any]] = {}  # key -> first receipt answered
        self.answers: Counter[str] = Counter()  # what it was answered, by kind
        self.moved = 0

    async def connect(self) -> None:
        self.client = await RawAgent(self.hubs[self.home], self.token, timeout=30).open()

    async def ask(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The exact request until it is answered (other hub if this one is gone)."""
        assert self.client is not None
        lost = False
        while True:
            try:
                answer = await self.client.call(tool, arguments)
            except HubGone:
                self.answers["hub gone"] += 1
                lost = True
                await self._move()
                continue
            if lost and tool == "termal_send_to_session" and answer.get("duplicate"):
                # Committed through the hub that died, its answer lost: the retry through
                # the other hub answered the original receipt.
                self.answers["send replayed: the original receipt"] += 1
            error = answer.get("error")
            if isinstance(error, dict):
                self.answers[str(error.get("code"))] += 1
                if error.get("retrySafe"):
                    await asyncio.sleep(0.2)
                    continue
                return answer
            self.answers["ok"] += 1
            return answer

    async def _move(self) -> None:
        """Reconnect, trying the hubs in turn from the next one."""
        assert self.client is not None
        for _attempt in range(600):
            self.home = (self.home + 1) % len(self.hubs)
            try:
                await self.client.move(self.hubs[self.home])
                self.moved += 1
                return
            except (HubGone, KeyError):
                await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.name}: no hub answers")

    async def run(self, sends: int, progress: list[int]) -> None:
        for n in range(sends):
            key = f"{self.name}-{n}"
            request = {"sessionId": self.peer, "message": f"intent {key}", "idempotencyKey": key}
            answer = await self.ask("termal_send_to_session", request)
            if "error" in answer:
                self.answers[f"failed send: {answer['error']}"] += 1
            else:
                self.receipts.setdefault(key, answer)
            progress[0] += 1
            listed = await self.ask("termal_list_mailboxes", {})
            for mailbox in listed.get("mailboxes", []):
                mine = next(
                    (p for p in mailbox["participants"] if p["displayName"] == self.name), None
                )
                if mine is None or mine["processedThrough"] >= mailbox["latestSequence"]:
                    continue
                acked = await self.ask(
                    "termal_acknowledge_mailbox",
                    {
                        "mailboxId": mailbox["id"],
                        "expectedProcessedThrough": mine["processedThrough"],
                        "processedThrough": mailbox["latestSequence"],
                    },
                )
                error = acked.get("error")
                if isinstance(error, dict) and error.get("code") != "conflict":
                    self.answers[f"failed ack: {error}"] += 1


async def sample_cursors(url: str, stop: asyncio.Event, backwards: list[str]) -> int:
    """Every participant's processed_through every 50 ms; any step back is noted."""
    seen: dict[tuple[str, str], int] = {}
    samples = 0
    while not stop.is_set():
        try:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                while not stop.is_set():
                    cursor = await conn.execute(
                        "SELECT mailbox_id, session_id, processed_through FROM mailbox_participants"
                    )
                    for mailbox, session, through in await cursor.fetchall():
                        before = seen.get((mailbox, session), 0)
                        if through < before:
                            backwards.append(f"{session} in {mailbox}: {before} -> {through}")
                        seen[(mailbox, session)] = max(before, through)
                    samples += 1
                    await asyncio.sleep(0.05)
        except psycopg.OperationalError:
            await asyncio.sleep(0.2)  # the server is down: sample again when it is back
    return samples


def verify(scenario: str, url: str, agents: list[Agent], sends: int, backwards: list[str]) -> None:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT m.idempotency_key, m.id, m.mailbox_id, m.sequence, s.name "
            "FROM mailbox_messages m JOIN sessions s ON s.id = m.sender_session_id"
        ).fetchall()
        mailboxes = conn.execute(
            "SELECT id, next_sequence, (SELECT array_agg(sequence ORDER BY sequence) "
            "FROM mailbox_messages WHERE mailbox_id = mailboxes.id) FROM mailboxes"
        ).fetchall()
    planned = {f"{a.name}-{n}" for a in agents for n in range(sends)}
    by_key = Counter(row[0] for row in rows)
    lost = planned - set(by_key)
    doubled = [key for key, count in by_key.items() if count > 1]
    check(scenario, not lost, f"0 lost: {len(planned)} intents, {len(lost)} without a row")
    check(scenario, not doubled, f"0 doubled: {len(rows)} rows, {len(doubled)} keys twice")
    receipts = {k: r for a in agents for k, r in a.receipts.items()}
    mismatched = [
        key for key, message_id, _mailbox, sequence, _sender in rows
        if key in receipts and (receipts[key]["messageId"], receipts[key]["sequence"])
        != (message_id, sequence)
    ]  # fmt: skip
    check(
        scenario,
        len(receipts) == len(planned) and not mismatched,
        f"every intent answered ({len(receipts)}/{len(planned)}), each receipt is its row "
        f"({len(mismatched)} differ)",
    )
    gaps = [
        mailbox for mailbox, next_sequence, sequences in mailboxes
        if list(sequences or []) != list(range(1, next_sequence))
    ]  # fmt: skip
    check(scenario, not gaps, f"sequences dense in all {len(mailboxes)} mailboxes")
    check(scenario, not backwards, f"no processed_through moved back ({len(backwards)} did)")


async def replay_all(scenario: str, agents: list[Agent], sends: int) -> None:
    """Every intent once more: its first receipt, unchanged."""
    changed = 0
    for agent in agents:
        for n in range(sends):
            key = f"{agent.name}-{n}"
            again = await agent.ask(
                "termal_send_to_session",
                {"sessionId": agent.peer, "message": f"intent {key}", "idempotencyKey": key},
            )
            first = agent.receipts.get(key, {})
            fields = ("messageId", "mailboxId", "sequence", "notificationDisposition")
            if not again.get("duplicate") or any(again.get(f) != first.get(f) for f in fields):
                changed += 1
    check(scenario, changed == 0, f"receipts immutable: every intent replayed, {changed} differ")


async def prepare(url: str, count: int) -> list[tuple[str, str]]:
    registry = Registry.beside(url)
    pairs = [(f"agent-{i}", registry.issue_token(registry.add(f"agent-{i}").name)[1])
             for i in range(count)]  # fmt: skip
    registry.close()
    async with open_writer(url):
        pass
    return pairs


async def scenario(
    name: str, server: PgServer, tmp: Path, count: int, sends: int, down: float
) -> None:
    print(f"\n{name}", flush=True)
    database = f"bench_{name.split()[0].replace('-', '_').lower()}"
    server.execute(f"CREATE DATABASE {database} TEMPLATE template0")
    url = server.url(database)
    pairs = await prepare(url, count)
    with contextlib.ExitStack() as stack:
        hub_a = stack.enter_context(hub(url, tmp / f"{database}-a.log"))  # type: ignore[arg-type]
        hub_b = stack.enter_context(hub(url, tmp / f"{database}-b.log"))  # type: ignore[arg-type]
        urls = [hub_a[0], hub_b[0]]
        agents = [
            Agent(n, t, pairs[(i + 1) % count][0], urls, i % 2) for i, (n, t) in enumerate(pairs)
        ]
        for agent in agents:
            await agent.connect()
        progress = [0]
        stop = asyncio.Event()
        backwards: list[str] = []
        sampler = asyncio.create_task(sample_cursors(url, stop, backwards))
        running = asyncio.gather(*(a.run(sends, progress) for a in agents))
        while progress[0] < count * sends // 3:
            await asyncio.sleep(0.01)
        events: dict[str, float] = {}
        if name.startswith("kill"):
            os.kill(hub_a[1], signal.SIGKILL)
            events["killed"] = time.monotonic()
            print(f"  hub A killed (SIGKILL) after {progress[0]} answered sends", flush=True)
        else:
            answered_before = sum(a.answers["ok"] for a in agents)
            await asyncio.to_thread(server.halt)
            events["down"] = time.monotonic()
            print(f"  PostgreSQL stopped after {progress[0]} answered sends", flush=True)
            await asyncio.sleep(down)
            during = Counter[str]()
            for agent in agents:
                during.update(agent.answers)
            await asyncio.to_thread(server.start)
            events["up"] = time.monotonic()
            print(f"  PostgreSQL started again after {down:g} s", flush=True)
            ok_at_up = sum(a.answers["ok"] for a in agents)
            while sum(a.answers["ok"] for a in agents) == ok_at_up:
                await asyncio.sleep(0.01)
            recovered = time.monotonic() - events["up"]
        await running
        stop.set()
        samples = await sampler
        await replay_all(name, agents, sends)
        answers: Counter[str] = Counter()
        for agent in agents:
            answers.update(agent.answers)
        print(f"  answers the agents got: {dict(answers)}", flush=True)
        print(f"  agents that moved to the other hub: {sum(a.moved > 0 for a in agents)}")
        print(f"  cursor samples: {samples}", flush=True)
        unexpected = {
            k: v for k, v in answers.items() if k not in ("ok", "busy", "unknown_outcome",
                                                          "hub gone", "http-503-busy",
                                                          "send replayed: the original receipt")
        }  # fmt: skip
        check(name, not unexpected, f"no answer other than ok/busy/unknown outcome/hub gone: "
              f"{unexpected or 'none'}")  # fmt: skip
        if name.startswith("kill"):
            check(name, all(a.moved > 0 for a in agents[::2]),
                  "every agent of hub A carried on through hub B")  # fmt: skip
        else:
            busy = during["busy"] + during["http-503-busy"] + during["unknown_outcome"]
            check(name, busy > 0, f"while down, calls were answered busy or unknown outcome "
                  f"({during['busy']} busy tool results, {during['http-503-busy']} HTTP 503 "
                  f"busy (the token could not be checked), {during['unknown_outcome']} unknown "
                  f"outcome, {during['hub gone']} hub gone)")  # fmt: skip
            check(name, sum(a.moved for a in agents) == 0,
                  "no agent had to leave its hub (both kept answering)")  # fmt: skip
            alive = [process for process in (hub_a[1], hub_b[1]) if _alive(process)]
            check(name, len(alive) == 2, "both hubs still running, never restarted")
            print(f"  first answered send after the server was back: {recovered * 1000:.0f} ms "
                  f"(answered before the stop: {answered_before})")  # fmt: skip
        verify(name, url, agents, sends, backwards)
        for agent in agents:
            if agent.client is not None:
                await agent.client.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


async def main(count: int, sends: int, down: float) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-failover-pg-"))
    server = start_server(SETTINGS)
    try:
        print(f"{count} agents, {sends} sends each, two hubs on one PostgreSQL database")
        await scenario("kill -9 of a hub", server, tmp, count, sends, down)
        await scenario("restart of PostgreSQL", server, tmp, count, sends, down)
    finally:
        server.stop()
    print("\nall held" if not FAILURES else f"\n{len(FAILURES)} NOT HELD: " + "; ".join(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--sends", type=int, default=40)
    parser.add_argument("--down", type=float, default=3.0, help="seconds the server stays down")
    options = parser.parse_args()
    sys.exit(asyncio.run(main(options.agents, options.sends, options.down)))
