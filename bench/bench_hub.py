"""The hub: send, read and acknowledge over MCP streamable HTTP (``termal-tui serve``)
beside the same through a shim (``termal-tui mcp --remote``, stdio then HTTP), the
stdio server (``termal-tui mcp``) and a direct store call, in one run on one file; then
8 concurrent remote agents' send throughput against the same 8 over stdio (``--rounds``
paired rounds, the order alternating, both sides connected throughout; medians, and the
CPU each side's servers and the agents' clients spent per send); then one call on a
reused HTTP connection written the way curl or a raw socket writes it (headers, then
body) beside the same JSON-RPC line over stdio; then token agents' latency with and
without 1,000 idle or half-open connections from the same loopback address.

    python bench/bench_hub.py [--calls 200] [--agents 8] [--sends 50] [--rounds 5]
                              [--attack 1000] [--attack-seconds 8]

``--calls 0`` skips the latency tables and the reused connection, ``--rounds 0`` the
throughput, ``--attack 0`` the attack. Everything on loopback; the hub's rate limit is
raised out of the way (it is a measurement of the transport, not of the limiter). The
attacker is a child process that keeps ``--attack`` sockets open (reopening what the hub
closes) and stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import selectors
import socket
import statistics
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

TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: SSE reads wait long


async def call(client: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
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
def hub(db: Path, log: Path, *extra: str, own_session: bool = True) -> Any:
    """A hub on ``db``; yields its URL and pid. ``own_session``: started in a session of
    its own, as a hub runs (a service, or its own terminal) and as the SDK starts every
    stdio server (``start_new_session``). With Linux's autogroup scheduling each session
    is one scheduling group: a hub left in the bench's session shares one group's CPU
    with all 8 agents' HTTP clients, while each stdio server has a group of its own."""
    out = log.open("wb")
    process = subprocess.Popen(
        [EXE, "serve", "--db", str(db), "--port", "0", "--rate", "1000000", "--burst",
         "1000000", "--log-level", "warning", "--request-log-level", "debug", *extra],
        stdout=out, stderr=out, start_new_session=own_session,
    )  # fmt: skip
    try:
        while "termal-tui serve: http" not in log.read_text():
            assert process.poll() is None, log.read_text()
            time.sleep(0.02)
        line = next(x for x in log.read_text().splitlines() if x.startswith("termal-tui serve"))
        yield line.split()[2], process.pid
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


def children() -> set[int]:
    """This process's child processes (Linux; empty elsewhere)."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            with contextlib.suppress(OSError):
                found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


def cpu_seconds(pids: set[int]) -> float:
    """User + system CPU of ``pids`` so far (Linux ``/proc``; 0 elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


class Side:
    """One way of serving the agents: their clients, names, and the server processes."""

    def __init__(
        self, label: str, clients: list[ClientSession], names: list[str], pids: set[int]
    ) -> None:
        self.label = label
        self.clients = clients
        self.names = names
        self.pids = pids
        self.rates: list[float] = []
        self.server_ms: list[float] = []  # server CPU per send
        self.client_ms: list[float] = []  # this process's CPU per send (the agents' clients)

    async def round(self, sends: int, tag: str) -> float:
        count = len(self.clients) * sends
        server, client = cpu_seconds(self.pids), time.process_time()
        rate = await throughput(self.clients, self.names, sends, tag)
        self.server_ms.append((cpu_seconds(self.pids) - server) * 1000 / count)
        self.client_ms.append((time.process_time() - client) * 1000 / count)
        self.rates.append(rate)
        return rate


async def compare_throughput(http: Side, stdio: Side, sends: int, rounds: int) -> None:
    """``rounds`` paired rounds, the order alternating (HTTP first, then stdio first), on
    one file, both sides connected throughout; medians."""
    await http.round(5, "warm-http")
    await stdio.round(5, "warm-stdio")
    for side in (http, stdio):
        side.rates.clear(), side.server_ms.clear(), side.client_ms.clear()
    ratios: list[float] = []
    for r in range(rounds):
        order = (http, stdio) if r % 2 == 0 else (stdio, http)
        for side in order:
            await side.round(sends, f"tput-{side.label}-{r}")
        ratios.append(http.rates[-1] / stdio.rates[-1])
    agents = len(http.clients)
    print(f"\nthroughput, {agents} concurrent agents x {sends} sends, {rounds} rounds interleaved")
    for side, what in ((http, f"{agents} remote agents over HTTP, one hub"),
                       (stdio, f"{agents} agents over stdio, {agents} servers")):  # fmt: skip
        rates = " ".join(f"{x:4.0f}" for x in side.rates)
        print(f"  {what}: median {statistics.median(side.rates):5.0f} sends/s  ({rates})")
    print(
        f"  HTTP / stdio, median of the paired rounds: {statistics.median(ratios):.0%} "
        f"(rounds: {' '.join(f'{x:.0%}' for x in ratios)}; target: at least 60%)"
    )
    print("  CPU per send, medians (ms): server side / the agents' clients (this process)")
    for side, what in ((http, "the hub"), (stdio, f"{agents} stdio servers")):
        print(
            f"    {what:18} {statistics.median(side.server_ms):5.2f} / "
            f"{statistics.median(side.client_ms):5.2f}"
        )


# ------------------------------------------------------------------ raw calls


def request_line(number: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


INIT_PARAMS = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}
LIST_CALL = {"name": "termal_list_mailboxes", "arguments": {}}


class RawHttp:
    """One keep-alive connection that writes each request's headers, then its body, in
    two writes (as curl --next or a plain socket client does)."""

    def __init__(self, url: str, token: str) -> None:
        host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.token = token
        self.sock = socket.create_connection((host, self.port))
        self.session = ""
        self.buffer = b""

    def post(self, body: bytes) -> tuple[bytes, bytes]:
        extra = f"mcp-session-id: {self.session}\r\nmcp-protocol-version: 2025-06-18\r\n"
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Bearer {self.token}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n"
            f"{extra if self.session else ''}Content-Length: {len(body)}\r\n\r\n"
        )
        self.sock.sendall(head.encode())
        self.sock.sendall(body)
        return self._response()

    def _read(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the hub closed the connection")
        self.buffer += chunk

    def _response(self) -> tuple[bytes, bytes]:
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        fields = {
            k.strip().lower(): v.strip()
            for k, _, v in (line.partition(b":") for line in head.split(b"\r\n")[1:])
        }
        if b"content-length" in fields:
            length = int(fields[b"content-length"])
            while len(self.buffer) < length:
                self._read()
            body, self.buffer = self.buffer[:length], self.buffer[length:]
            return head, body
        body = b""  # chunked
        while True:
            while b"\r\n" not in self.buffer:
                self._read()
            size_line, _, self.buffer = self.buffer.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            while len(self.buffer) < size + 2:
                self._read()
            body += self.buffer[:size]
            self.buffer = self.buffer[size + 2 :]
            if size == 0:
                return head, body

    def open(self) -> None:
        head, _ = self.post(request_line(1, "initialize", INIT_PARAMS))
        self.session = next(
            line.split(b":", 1)[1].strip().decode()
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"mcp-session-id:")
        )
        self.post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def close(self) -> None:
        self.sock.close()


class RawStdio:
    """``termal-tui mcp`` driven by JSON-RPC lines on its stdin."""

    def __init__(self, db: Path, session: str) -> None:
        self.process = subprocess.Popen(
            [EXE, "mcp", "--session", session, str(db)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True,  # as the hub and the SDK's stdio servers (see ``hub``)
        )  # fmt: skip

    def send(self, line: bytes) -> bytes:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()
        number = json.loads(line)["id"]
        while True:  # skip anything the server says on its own
            answer = self.process.stdout.readline()
            if not answer or json.loads(answer).get("id") == number:
                return answer

    def open(self) -> None:
        self.send(request_line(1, "initialize", INIT_PARAMS))
        assert self.process.stdin is not None
        self.process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        self.process.stdin.flush()

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def reused_connection(url: str, token: str, db: Path, session: str, calls: int) -> None:
    """The same tools/call over a reused HTTP connection (headers and body in two
    writes) and over stdio, interleaved in rounds so both see the same machine."""
    http, stdio = RawHttp(url, token), RawStdio(db, session)
    http.open()
    stdio.open()
    samples: dict[str, list[float]] = {"http": [], "stdio": []}
    try:
        for n in range(calls):
            line = request_line(100 + n, "tools/call", LIST_CALL)
            for label in ("http", "stdio"):
                started = time.perf_counter()
                if label == "http":
                    http.post(line)
                else:
                    stdio.send(line)
                samples[label].append((time.perf_counter() - started) * 1000)
    finally:
        http.close()
        stdio.close()
    (h50, h99), (s50, s99) = summary(samples["http"]), summary(samples["stdio"])
    print(f"\none call (termal_list_mailboxes), {calls} times each, interleaved (ms: median / p99)")
    print(f"  HTTP, reused connection, headers then body: {h50:6.2f} / {h99:6.2f}")
    print(f"  stdio, one JSON-RPC line:                   {s50:6.2f} / {s99:6.2f}")
    print(f"  HTTP / stdio (medians): {h50 / s50:.2f}x (target: within 3x)")


# ------------------------------------------------------------------ the attack


def attacker(host: str, port: int, count: int, seconds: float, report: Any) -> None:
    """Keep ``count`` connections open to the hub for ``seconds``: half send nothing, half
    half a request header; whatever the hub closes is reopened. Stops by itself."""
    selector = selectors.DefaultSelector()
    opened = closed_by_hub = 0
    deadline = time.monotonic() + seconds

    def connect(n: int) -> None:
        nonlocal opened
        try:
            conn = socket.create_connection((host, port), timeout=2)
        except OSError:
            return
        opened += 1
        if n % 2:
            with contextlib.suppress(OSError):
                conn.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        conn.setblocking(False)
        selector.register(conn, selectors.EVENT_READ, n)

    for n in range(count):
        connect(n)
    held: list[int] = []
    while time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.05):
            conn = key.fileobj
            assert isinstance(conn, socket.socket)
            try:
                data = conn.recv(4096)
            except OSError:
                data = b""
            if not data:
                closed_by_hub += 1
                selector.unregister(conn)
                conn.close()
                connect(key.data)
        held.append(len(selector.get_map()))
    for key in list(selector.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]
    report.put(
        {"opened": opened, "closed_by_hub": closed_by_hub, "held": statistics.median(held or [0])}
    )


async def agents_latency(clients: list[ClientSession], seconds: float) -> list[float]:
    """Token agents calling termal_list_mailboxes back to back for ``seconds``."""
    samples: list[float] = []
    stop = time.monotonic() + seconds

    async def agent(client: ClientSession) -> None:
        while time.monotonic() < stop:
            await timed(samples, lambda: call(client, "termal_list_mailboxes", {}))

    await asyncio.gather(*(agent(c) for c in clients))
    return samples


async def under_attack(url: str, tokens: list[str], count: int, seconds: float) -> None:
    """The figures below, or one line when a token agent's connection was taken from it
    mid-run (the failure the closing baseline shows: the hub closed an agent's fresh
    connection as its address's oldest idle one, and the SDK's client gives up)."""
    try:
        await _under_attack(url, tokens, count, seconds)
    except* (httpx2.TransportError, OSError) as lost:
        first = lost.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        print(
            f"\n{len(tokens)} token agents calling: one lost its connection to the hub "
            f"mid-run ({type(first).__name__}); no figures for this hub"
        )


async def _under_attack(url: str, tokens: list[str], count: int, seconds: float) -> None:
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(over_http(url, t)) for t in tokens]
        quiet = await agents_latency(clients, seconds)
        context = multiprocessing.get_context("spawn")
        report = context.Queue()
        child = context.Process(
            target=attacker, args=(host, int(port), count, seconds + 3, report), daemon=True
        )
        child.start()
        await asyncio.sleep(2.0)  # the sockets are open (and being turned over)
        attacked = await agents_latency(clients, seconds)
        failures = 0
        async with httpx2.AsyncClient(timeout=5) as fresh:  # a new connection mid-attack
            for token in tokens:
                answer = await fresh.get(
                    url.removesuffix("/mcp") + "/health",
                    headers={"authorization": f"Bearer {token}"},
                )
                failures += answer.status_code != 200
        stats = await asyncio.to_thread(report.get, True, 60)
        child.join(10)
    (q50, q99), (a50, a99) = summary(quiet), summary(attacked)
    print(f"\n{len(tokens)} token agents calling, {seconds:g} s each (ms: median / p99)")
    print(
        f"  quiet:                                    {q50:6.2f} / {q99:6.2f} ({len(quiet)} calls)"
    )
    print(
        f"  with {count} idle/half-open sockets from 127.0.0.1: {a50:6.2f} / {a99:6.2f} "
        f"({len(attacked)} calls)"
    )
    print(
        f"  attacker: {stats['opened']} connections opened, {stats['closed_by_hub']} closed by "
        f"the hub, median {stats['held']:.0f} open; fresh token connections refused: {failures}"
    )


# ------------------------------------------------------------------ the run


async def latencies(
    url: str, db: Path, tokens: dict[str, str], sessions: dict[str, Any], calls: int
) -> None:
    results: dict[str, dict[str, list[float]]] = {}
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
        cells = ["{:.2f} / {:.2f}".format(*summary(samples[op])) for op in ("send", "read", "ack")]
        print(f"{label:22} " + " ".join(f"{c:>16}" for c in cells))


async def main(
    calls: int, agents: int, sends: int, rounds: int, attack: int, attack_seconds: float
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-hub-"))
    db = tmp / "coordination.sqlite"
    registry = Registry.beside(db)
    pairs = ["http", "shim", "stdio", "direct"]
    sessions = {f"{p}-{r}": registry.add(f"{p}-{r}") for p in pairs for r in ("s", "r")}
    fleet = [registry.add(f"agent-{i}") for i in range(agents)]
    local = [registry.add(f"local-{i}") for i in range(agents)]
    raw = [registry.add("raw-http"), registry.add("raw-stdio")]
    tokens = {
        name: registry.issue_token(name)[1]
        for name in [*sessions, *(s.name for s in fleet), "raw-http"]
    }
    async with open_writer(db):
        pass  # the file exists before anyone serves it
    with hub(db, tmp / "hub.log") as (url, hub_pid):
        if calls:
            await latencies(url, db, tokens, sessions, calls)
        if rounds:
            async with contextlib.AsyncExitStack() as stack:
                remote = [
                    await stack.enter_async_context(over_http(url, tokens[s.name])) for s in fleet
                ]
                before = children()
                stdio = [
                    await stack.enter_async_context(
                        over_stdio(["mcp", "--session", s.name, str(db)])
                    )
                    for s in local
                ]
                await compare_throughput(
                    Side("http", remote, [s.name for s in fleet], {hub_pid}),
                    Side("stdio", stdio, [s.name for s in local], children() - before),
                    sends,
                    rounds,
                )
    with hub(db, tmp / "hub2.log") as (url, _pid):
        if calls:
            reused_connection(url, tokens["raw-http"], db, raw[1].name, calls)
        if attack:
            agent_tokens = [tokens[s.name] for s in fleet[:4]]
            print("\nthe hub as it runs (connections past an address's limit held unread)")
            await under_attack(url, agent_tokens, attack, attack_seconds)
    if attack:
        # The baseline, in the same run: the same hub closing them at once instead.
        with hub(db, tmp / "hub3.log", "--max-held", "0") as (url, _pid):
            print("\nbaseline: the same hub closing them at once (--max-held 0)")
            await under_attack(url, agent_tokens, attack, attack_seconds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--sends", type=int, default=50)
    parser.add_argument(
        "--rounds", type=int, default=5, help="throughput rounds per side, interleaved (0: skip)"
    )
    parser.add_argument("--attack", type=int, default=1000, help="idle sockets (0: skip)")
    parser.add_argument("--attack-seconds", type=float, default=8.0)
    options = parser.parse_args()
    asyncio.run(
        main(
            options.calls,
            options.agents,
            options.sends,
            options.rounds,
            options.attack,
            options.attack_seconds,
        )
    )
