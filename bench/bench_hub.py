"""The hub: send, read and acknowledge over MCP streamable HTTP (``termal-tui serve``)
beside the same through a shim (``termal-tui mcp --remote``, stdio then HTTP), the
stdio server (``termal-tui mcp``) and a direct store call, in one run on one file; then
8 concurrent remote agents' send throughput against the same 8 over stdio.

    python bench/bench_hub.py [--calls 200] [--agents 8] [--sends 50]

Everything on loopback; the hub's rate limit is raised out of the way (it is a
measurement of the transport, not of the limiter).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).parent))
from bench_agents import EXE, summary, timed

from termal_tui.agents.registry import Registry
from termal_tui.store.writer import open_writer


async def call(client: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    import json

    result = await client.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    if result.is_error:
        raise RuntimeError(text)
    return json.loads(text)


@contextlib.asynccontextmanager
async def over_http(url: str, token: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as client,
    ):
        await client.initialize()
        yield client


@contextlib.asynccontextmanager
async def over_stdio(
    args: list[str], env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=EXE, args=args, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


@contextlib.contextmanager
def hub(db: Path, log: Path) -> Any:
    out = log.open("wb")
    process = subprocess.Popen(
        [EXE, "serve", "--db", str(db), "--port", "0", "--rate", "1000000", "--burst",
         "1000000", "--log-level", "warning", "--request-log-level", "debug"],
        stdout=out, stderr=out,
    )  # fmt: skip
    try:
        while "termal-tui serve: http" not in log.read_text():
            assert process.poll() is None, log.read_text()
            time.sleep(0.02)
        line = next(x for x in log.read_text().splitlines() if x.startswith("termal-tui serve"))
        yield line.split()[2]
    finally:
        process.terminate()
        process.wait(30)
        out.close()


async def pair_latency(
    sender: ClientSession, receiver: ClientSession, receiver_name: str, calls: int, tag: str
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"send": [], "read": [], "ack": []}
    mailbox = ""
    for n in range(calls):
        receipt = await timed(
            samples["send"],
            lambda n=n: call(
                sender,
                "termal_send_to_session",
                {"sessionId": receiver_name, "message": f"m{n}", "idempotencyKey": f"{tag}-{n}"},
            ),
        )
        mailbox = receipt["mailboxId"]
    for n in range(calls):
        await timed(
            samples["read"],
            lambda n=n: call(
                receiver,
                "termal_read_mailbox",
                {"mailboxId": mailbox, "afterSequence": n, "limit": 1},
            ),
        )
    for n in range(calls):
        await timed(
            samples["ack"],
            lambda n=n: call(
                receiver,
                "termal_acknowledge_mailbox",
                {"mailboxId": mailbox, "expectedProcessedThrough": n, "processedThrough": n + 1},
            ),
        )
    return samples


async def direct_latency(
    db: Path, sender: Any, receiver: Any, calls: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"send": [], "read": [], "ack": []}
    async with open_writer(db) as writer:
        mailbox = ""
        for n in range(calls):
            receipt = await timed(
                samples["send"],
                lambda n=n: writer.append(
                    sender_session_id=sender.id, sender_name=sender.name,
                    target_session_id=receiver.id, target_name=receiver.name,
                    body=f"m{n}", idempotency_key=f"direct-{n}",
                ),
            )  # fmt: skip
            mailbox = receipt.mailbox_id
        for n in range(calls):
            await timed(
                samples["read"],
                lambda n=n: writer.read_range(mailbox, n, 1, session_id=receiver.id),
            )
        for n in range(calls):
            await timed(
                samples["ack"], lambda n=n: writer.acknowledge(receiver.id, mailbox, n, n + 1)
            )
    return samples


async def throughput(clients: list[ClientSession], names: list[str], sends: int, tag: str) -> float:
    async def agent(i: int) -> None:
        peer = names[(i + 1) % len(names)]
        for n in range(sends):
            await call(
                clients[i],
                "termal_send_to_session",
                {"sessionId": peer, "message": f"t{n}", "idempotencyKey": f"{tag}-{i}-{n}"},
            )

    started = time.perf_counter()
    await asyncio.gather(*(agent(i) for i in range(len(clients))))
    return len(clients) * sends / (time.perf_counter() - started)


async def main(calls: int, agents: int, sends: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-hub-"))
    db = tmp / "coordination.sqlite"
    registry = Registry.beside(db)
    pairs = ["http", "shim", "stdio", "direct"]
    sessions = {f"{p}-{r}": registry.add(f"{p}-{r}") for p in pairs for r in ("s", "r")}
    fleet = [registry.add(f"agent-{i}") for i in range(agents)]
    local = [registry.add(f"local-{i}") for i in range(agents)]
    tokens = {name: registry.issue_token(name)[1] for name in [*sessions, *(s.name for s in fleet)]}
    async with open_writer(db):
        pass  # the file exists before anyone serves it
    results: dict[str, dict[str, list[float]]] = {}
    with hub(db, tmp / "hub.log") as url:
        async with over_http(url, tokens["http-s"]) as s, over_http(url, tokens["http-r"]) as r:
            results["HTTP (by URL)"] = await pair_latency(s, r, "http-r", calls, "http")
        shim_env = dict(os.environ)
        async with (
            over_stdio(
                ["mcp", "--remote", url], shim_env | {"TERMAL_TUI_TOKEN": tokens["shim-s"]}
            ) as s,
            over_stdio(
                ["mcp", "--remote", url], shim_env | {"TERMAL_TUI_TOKEN": tokens["shim-r"]}
            ) as r,
        ):
            results["shim (stdio→HTTP)"] = await pair_latency(s, r, "shim-r", calls, "shim")
        async with (
            over_stdio(["mcp", "--session", "stdio-s", str(db)]) as s,
            over_stdio(["mcp", "--session", "stdio-r", str(db)]) as r,
        ):
            results["stdio"] = await pair_latency(s, r, "stdio-r", calls, "stdio")
        results["direct store call"] = await direct_latency(
            db, sessions["direct-s"], sessions["direct-r"], calls
        )

        print(f"latency, {calls} calls each (ms: median / p99)")
        print(f"{'':22} {'send':>16} {'read':>16} {'ack':>16}")
        for label, samples in results.items():
            cells = [
                "{:.2f} / {:.2f}".format(*summary(samples[op])) for op in ("send", "read", "ack")
            ]
            print(f"{label:22} " + " ".join(f"{c:>16}" for c in cells))

        async with contextlib.AsyncExitStack() as stack:
            remote = [
                await stack.enter_async_context(over_http(url, tokens[s.name])) for s in fleet
            ]
            http_rate = await throughput(remote, [s.name for s in fleet], sends, "tput-http")
        async with contextlib.AsyncExitStack() as stack:
            stdio = [
                await stack.enter_async_context(over_stdio(["mcp", "--session", s.name, str(db)]))
                for s in local
            ]
            stdio_rate = await throughput(stdio, [s.name for s in local], sends, "tput-stdio")
    print(f"\nthroughput, {agents} concurrent agents x {sends} sends")
    print(f"  {agents} remote agents over HTTP, one hub: {http_rate:7.0f} sends/s")
    print(f"  {agents} agents over stdio, {agents} servers: {stdio_rate:7.0f} sends/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--sends", type=int, default=50)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.agents, options.sends))
