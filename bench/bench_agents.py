"""Agents: tool-call latency through the stdio MCP server vs a direct store call, and
send → Claude Code channel event latency.

    python bench/bench_agents.py [--calls 200] [--wakes 40]

Two real ``termal-tui mcp`` processes (alice; bob with ``--channel``) are driven by
the official SDK's stdio client. The baseline is the same operation as a direct
in-process store call (``MailboxWriter``) on the same file, measured in the same run.
Reported: median and p99 per operation, and the ratio of medians.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pydantic import BaseModel, ConfigDict

from termal_tui.agents.registry import Registry
from termal_tui.store.writer import open_writer

EXE = shutil.which("termal-tui", path=str(Path(sys.executable).parent)) or "termal-tui"


class ChannelParams(BaseModel):
    model_config = ConfigDict(extra="allow")
    content: str
    meta: dict[str, str] = {}


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


async def timed(samples: list[float], work: Callable[[], Awaitable[Any]]) -> Any:
    started = time.perf_counter()
    result = await work()
    samples.append((time.perf_counter() - started) * 1000)
    return result


def _server_pid(db: Path, session: str) -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if str(db).encode() in argv and session.encode() in argv and b"mcp" in argv:
                return int(entry.name)
    raise SystemExit(f"no server process for {session}")


async def idle_cpu_percent(db: Path, session: str, seconds: float) -> float:
    """CPU of a connected, idle channel server (Linux /proc: user + system time)."""
    stat = Path(f"/proc/{_server_pid(db, session)}/stat")

    def ticks() -> int:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    import os

    before = ticks()
    await asyncio.sleep(seconds)
    return (ticks() - before) / os.sysconf("SC_CLK_TCK") / seconds * 100


async def run(calls: int, wakes: int, idle_seconds: float) -> None:
    directory = Path(tempfile.mkdtemp(prefix="termal-bench-agents-"))
    db = directory / "coordination.sqlite"
    registry = Registry.beside(db)
    for name in ("alice", "bob", "carol", "dave"):
        registry.add(name)
    ids = {s.name: s.id for s in registry.sessions()}
    events: list[float] = []

    async def on_channel(_params: ChannelParams) -> None:
        events.append(time.perf_counter())

    binding = NotificationBinding(
        method="notifications/claude/channel", params_type=ChannelParams, handler=on_channel
    )
    alice_params = StdioServerParameters(command=EXE, args=["mcp", "--session", "alice", str(db)])
    bob_params = StdioServerParameters(
        command=EXE, args=["mcp", "--session", "bob", "--channel", str(db)]
    )
    via: dict[str, list[float]] = {"send": [], "read": [], "ack": []}
    direct: dict[str, list[float]] = {"send": [], "read": [], "ack": []}
    wake_ms: list[float] = []
    async with (
        stdio_client(alice_params) as (ar, aw),
        stdio_client(bob_params) as (br, bw),
        ClientSession(ar, aw) as alice,
        ClientSession(br, bw, notification_bindings=[binding]) as bob,
        open_writer(db) as writer,
    ):
        await alice.initialize()
        await bob.initialize()
        await asyncio.sleep(0.5)  # bob's channel watcher is up
        idle_cpu = await idle_cpu_percent(db, "bob", seconds=idle_seconds)
        pings: list[float] = []
        for _ in range(calls):
            await timed(pings, alice.send_ping)
        # Through the server: alice → carol (no channel, so no wake wait in the send).
        mailbox = ""
        for n in range(calls):
            receipt = await timed(
                via["send"],
                lambda n=n: alice.call_tool(
                    "termal_send_to_session",
                    {"sessionId": ids["carol"], "message": f"m{n}", "idempotencyKey": f"v{n}"},
                ),
            )
            if not mailbox:
                mailbox = receipt.content[0].text.split('"mailboxId": "')[1].split('"')[0]
        carol_tools = StdioServerParameters(
            command=EXE, args=["mcp", "--session", "carol", str(db)]
        )
        async with stdio_client(carol_tools) as (cr, cw), ClientSession(cr, cw) as carol:
            await carol.initialize()
            for n in range(calls):
                await timed(
                    via["read"],
                    lambda n=n: carol.call_tool(
                        "termal_read_mailbox",
                        {"mailboxId": mailbox, "afterSequence": n, "limit": 50},
                    ),
                )
                await timed(
                    via["ack"],
                    lambda n=n: carol.call_tool(
                        "termal_acknowledge_mailbox",
                        {
                            "mailboxId": mailbox,
                            "expectedProcessedThrough": n,
                            "processedThrough": n + 1,
                        },
                    ),
                )
        # Direct store calls on the same file: alice → dave.
        direct_box = ""
        for n in range(calls):

            async def send(n: int = n) -> Any:
                receipt = await writer.append(
                    sender_session_id=ids["alice"],
                    sender_name="alice",
                    target_session_id=ids["dave"],
                    target_name="dave",
                    body=f"m{n}",
                    idempotency_key=f"d{n}",
                    finalizing=True,
                )
                await writer.record_dispatch_outcome(receipt.message_id, "durableButNotWoken")
                return receipt

            receipt = await timed(direct["send"], send)
            direct_box = receipt.mailbox_id
        for n in range(calls):
            await timed(
                direct["read"],
                lambda n=n: writer.read_range(direct_box, n, 50, session_id=ids["dave"]),
            )
            await timed(
                direct["ack"],
                lambda n=n: writer.acknowledge(ids["dave"], direct_box, n, n + 1),
            )
        # Send → channel event: alice → bob, bob reads after each wake (one pending wake).
        bob_box = ""
        for n in range(wakes):
            before = len(events)
            started = time.perf_counter()
            result = await alice.call_tool(
                "termal_send_to_session",
                {"sessionId": ids["bob"], "message": f"w{n}", "idempotencyKey": f"w{n}"},
            )
            give_up = time.monotonic() + 5
            while len(events) == before and time.monotonic() < give_up:
                await asyncio.sleep(0.001)
            if len(events) == before:
                raise SystemExit("no channel event within 5 s")
            wake_ms.append((events[-1] - started) * 1000)
            bob_box = bob_box or result.content[0].text.split('"mailboxId": "')[1].split('"')[0]
            await bob.call_tool("termal_read_mailbox", {"mailboxId": bob_box, "afterSequence": n})
    shutil.rmtree(directory)

    print(f"tool-call latency, {calls} calls each (ms)")
    print(f"{'op':<6}{'stdio median':>14}{'p99':>9}{'direct median':>15}{'p99':>9}{'ratio':>8}")
    for op in ("send", "read", "ack"):
        v_med, v_p99 = summary(via[op])
        d_med, d_p99 = summary(direct[op])
        print(
            f"{op:<6}{v_med:>14.2f}{v_p99:>9.2f}{d_med:>15.2f}{d_p99:>9.2f}{v_med / d_med:>7.1f}x"
        )
    p_med, p_p99 = summary(pings)
    print(f"{'ping':<6}{p_med:>14.2f}{p_p99:>9.2f}   (the stdio transport and SDK alone)")
    w_med, w_p99 = summary(wake_ms)
    print(f"send → channel event ({wakes} wakes): median {w_med:.1f} ms, p99 {w_p99:.1f} ms")
    print(f"idle channel server CPU over {idle_seconds:.0f} s: {idle_cpu:.2f}%")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--wakes", type=int, default=40)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of idle CPU sampling")
    args = parser.parse_args()
    asyncio.run(run(args.calls, args.wakes, args.idle))


if __name__ == "__main__":
    main()
