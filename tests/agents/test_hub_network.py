"""The hub's network side (``agents/hub_server.py``): the connection tracker driven by an
injected clock, the socket options of an accepted connection, a real hub under many idle
loopback sockets, TLS on loopback and the TLS files' errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from termal_tui.agents.registry import Registry
from termal_tui.core.errors import JSONRPC_INVALID_REQUEST as INVALID_REQUEST
from tests.agents.test_e2e import EXE
from tests.agents.test_hub import HEADERS, INITIALIZE, hub, raw_session
from tests.agents.test_stdio import GARBAGE

uvicorn = pytest.importorskip("uvicorn")

from termal_tui.agents.hub_server import (  # noqa: E402
    ConnectionTracker,
    Tracked,
    bind,
    fit_to_files,
    protocol_for,
)
from tests.helpers import DrivenClock  # noqa: E402


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    """A hub's file with alice and bob, each with a token."""
    db = tmp_path / "hub" / "coordination.sqlite"
    registry = Registry.beside(db)
    tokens = {name: registry.issue_token(registry.add(name).name)[1] for name in ("alice", "bob")}
    registry.close()
    return {"db": db, "tokens": tokens, "tmp": tmp_path}


class Fleet:
    """Connections as the tracker sees them: each records whether it was closed."""

    def __init__(self, tracker: ConnectionTracker) -> None:
        self.tracker = tracker
        self.closed: list[str] = []
        self.held: list[str] = []  # whose reading was stopped
        self.resumed: list[str] = []  # whose reading started again
        self.sent: set[str] = set()  # whose request waits unread in the kernel
        self.port = 1000

    def open(
        self, address: str, name: str, *, holdable: bool = False, sent: bool = False
    ) -> Tracked | None:
        self.port += 1
        hold = (lambda: self.held.append(name)) if holdable else None
        resume = (
            (lambda: (self.resumed.append(name), self.sent.discard(name))) if holdable else None
        )
        close = lambda: self.closed.append(name)  # noqa: E731
        if sent:
            self.sent.add(name)
        return self.tracker.admit(
            close,
            address,
            (address, self.port),
            hold=hold,
            resume=resume,
            waiting=lambda: name in self.sent,
        )


def tracker(clock: DrivenClock, **limits: Any) -> ConnectionTracker:
    settings = {
        "max_connections": 100,
        "max_pending_per_address": 4,
        "header_timeout": 5.0,
        "body_timeout": 30.0,
    }
    return ConnectionTracker(**(settings | limits), clock=clock)


# ------------------------------------------------------------------ deadlines


def test_a_connection_that_sends_no_header_is_closed_at_its_deadline():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock))
    silent = fleet.open("10.0.0.1", "silent")
    assert silent is not None
    clock.advance(4.9)
    assert fleet.tracker.sweep() == 0 and fleet.closed == []
    clock.advance(0.2)
    assert fleet.tracker.sweep() == 1 and fleet.closed == ["silent"]
    assert len(fleet.tracker) == 0 and fleet.tracker.timed_out == 1


def test_half_a_header_does_not_move_the_deadline_on():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock))
    slow = fleet.open("10.0.0.1", "slow")
    assert slow is not None
    for _ in range(4):  # a byte a second: each read says "still in the header"
        clock.advance(1.0)
        fleet.tracker.headers(slow)
        assert fleet.tracker.sweep() == 0
    clock.advance(1.1)
    assert fleet.tracker.sweep() == 1 and fleet.closed == ["slow"]


def test_a_body_has_its_own_deadline_and_a_finished_request_none():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock))
    upload = fleet.open("10.0.0.1", "upload")
    assert upload is not None
    clock.advance(4.0)
    fleet.tracker.body(upload)  # the header is in: 30 s for the body from here
    clock.advance(29.0)
    fleet.tracker.body(upload)  # more body bytes do not extend it
    assert fleet.tracker.sweep() == 0
    fleet.tracker.received(upload)  # the whole request: the app works, no deadline
    clock.advance(3600)
    assert fleet.tracker.sweep() == 0
    fleet.tracker.answered(upload, body_unread=False)  # keep-alive is uvicorn's
    clock.advance(3600)
    assert fleet.tracker.sweep() == 0 and fleet.closed == []


def test_a_body_left_unread_after_a_refusal_keeps_its_deadline():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock))
    trickle = fleet.open("10.0.0.1", "trickle")
    assert trickle is not None
    fleet.tracker.body(trickle)
    fleet.tracker.answered(trickle, body_unread=True)  # a 401 or 413 before the body
    clock.advance(30.1)
    assert fleet.tracker.sweep() == 1 and fleet.closed == ["trickle"]


def test_after_a_response_the_first_byte_of_the_next_header_starts_a_deadline():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock))
    conn = fleet.open("10.0.0.1", "conn")
    assert conn is not None
    fleet.tracker.received(conn)
    fleet.tracker.answered(conn, body_unread=False)
    clock.advance(100)
    fleet.tracker.headers(conn)  # a partial next request
    clock.advance(4.9)
    assert fleet.tracker.sweep() == 0
    clock.advance(0.2)
    assert fleet.tracker.sweep() == 1


# ------------------------------------------------------------------ limits


def test_past_its_pending_limit_an_address_loses_its_own_oldest_idle_connection():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock))
    other = fleet.open("10.0.0.2", "other")
    first = [fleet.open("10.0.0.1", f"idle-{n}") for n in range(4)]
    assert all(first) and other is not None
    assert fleet.tracker.pending("10.0.0.1") == 4
    newest = fleet.open("10.0.0.1", "newest")
    assert newest is not None  # admitted: the address's oldest idle one made room
    assert fleet.closed == ["idle-0"]
    assert fleet.tracker.pending("10.0.0.1") == 4 and fleet.tracker.pending("10.0.0.2") == 1
    assert fleet.tracker.evicted == 1


def test_past_its_pending_limit_the_oldest_idle_connection_is_held_unread_not_closed():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock, max_held=3, hold_timeout=30.0))
    for n in range(4):
        fleet.open("10.0.0.1", f"idle-{n}", holdable=True)
    newest = fleet.open("10.0.0.1", "newest", holdable=True)
    assert newest is not None
    # Set aside without a close: an attacker that reopens what is closed has nothing to do.
    assert fleet.held == ["idle-0"] and fleet.closed == []
    assert fleet.tracker.held == 1 and fleet.tracker.pending("10.0.0.1") == 4
    assert len(fleet.tracker) == 4  # served: the held one is not counted
    # Held past the header deadline of the pending ones: its own deadline is the hold's.
    clock.advance(5.1)
    assert fleet.tracker.sweep() == 4 and "idle-0" not in fleet.closed
    clock.advance(25.0)
    assert fleet.tracker.sweep() == 1 and fleet.closed[-1] == "idle-0"
    assert fleet.tracker.held == 0


def test_a_burst_with_requests_waiting_is_queued_not_set_aside_as_idle():
    """Ten agents of one host connect at once, each request already sent but not yet
    read: none of the first four is taken for idle; the six newcomers are held and read,
    oldest first, as places free up (a token shown, a connection gone)."""
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock, max_held=100))
    agents = [fleet.open("127.0.0.1", f"agent-{n}", holdable=True, sent=True) for n in range(10)]
    assert all(agents) and fleet.closed == [] and fleet.tracker.refused == 0
    assert fleet.held == [f"agent-{n}" for n in range(4, 10)] and fleet.tracker.held == 6
    first = agents[0]
    assert first is not None
    fleet.tracker.trust(first.peer)  # its request was read: it showed a token
    assert fleet.resumed == ["agent-4"] and fleet.tracker.pending("127.0.0.1") == 4
    second = agents[1]
    assert second is not None
    fleet.tracker.release(second)  # gone without a token
    assert fleet.resumed == ["agent-4", "agent-5"]
    for tracked in agents[2:4] + agents[4:6]:
        assert tracked is not None
        fleet.tracker.trust(tracked.peer)
    assert fleet.resumed == [f"agent-{n}" for n in range(4, 10)] and fleet.tracker.held == 0
    assert fleet.closed == []


def test_held_idle_sockets_stay_held_when_places_free_up():
    """An attacker's idle sockets (nothing sent) are set aside and not read again when
    places free up; a held socket that sends something is (its request is waiting)."""
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock, max_held=100))
    for n in range(10):
        fleet.open("127.0.0.1", f"idle-{n}", holdable=True)
    assert fleet.held == [f"idle-{n}" for n in range(6)]
    clock.advance(5.1)
    assert fleet.tracker.sweep() == 4  # the four pending ones at their header deadline
    assert fleet.resumed == [] and fleet.tracker.held == 6
    fleet.sent.add("idle-3")  # it finally says something
    fleet.tracker.sweep()
    assert fleet.resumed == ["idle-3"] and fleet.tracker.pending("127.0.0.1") == 1


@pytest.mark.parametrize(
    ("room", "connections", "held"), [(10_000, 200, 4000), (1_000, 200, 800), (150, 150, 0)]
)
def test_the_limits_fit_the_open_files_the_process_may_have(room, connections, held):
    guard = tracker(DrivenClock(100.0), max_connections=200, max_held=4000)
    fit_to_files(guard, 200, 4000, room)
    assert (guard.max_connections, guard.max_held) == (connections, held)


def test_more_than_max_held_closes_the_oldest_held():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock, max_held=2))
    for n in range(7):
        fleet.open("10.0.0.1", f"c-{n}", holdable=True)
    assert fleet.held == ["c-0", "c-1", "c-2"] and fleet.closed == ["c-0"]
    assert fleet.tracker.held == 2


def test_another_address_s_idle_sockets_never_push_out_a_burst_s_held_requests():
    """A burst of agents on one host is held, its requests waiting, when another host
    opens idle sockets past ``max_held``: the idle ones are closed, never the burst's
    (each would be reset, its call lost, as if the hub were down)."""
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock, max_pending_per_address=2, max_held=4))
    for n in range(4):  # two served, two held with their requests waiting
        fleet.open("10.0.0.2", f"agent-{n}", holdable=True, sent=True)
    assert fleet.held == ["agent-2", "agent-3"]
    for n in range(10):  # two pending, eight set aside: more than max_held in all
        fleet.open("10.0.0.66", f"idle-{n}", holdable=True)
    assert not any(name.startswith("agent-") for name in fleet.closed)
    assert fleet.tracker.held == 4 and fleet.closed == [f"idle-{n}" for n in range(6)]


def test_a_thousand_idle_sockets_from_one_address_cause_no_close_and_leave_room():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock, max_connections=100, max_pending_per_address=32, max_held=4000))
    agent = fleet.open("127.0.0.1", "agent")
    assert agent is not None
    fleet.tracker.trust(agent.peer)
    for n in range(1000):
        assert fleet.open("127.0.0.1", f"attacker-{n}", holdable=True) is not None
    assert fleet.closed == []  # nothing for the attacker to reopen
    assert fleet.tracker.held == 968 and fleet.tracker.pending("127.0.0.1") == 32
    # A new client on the same address is admitted, and the agent never set aside.
    fresh = fleet.open("127.0.0.1", "fresh", holdable=True)
    assert fresh is not None and "agent" not in fleet.held + fleet.closed
    assert len(fleet.tracker) == 1 + 32


def test_connections_with_a_request_in_progress_are_not_closed_for_room():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock))
    busy = [fleet.open("10.0.0.1", f"busy-{n}") for n in range(4)]
    for tracked in busy:
        assert tracked is not None
        fleet.tracker.received(tracked)
    assert fleet.open("10.0.0.1", "refused") is None  # nothing of its own to give up
    assert fleet.closed == [] and fleet.tracker.refused == 1
    assert fleet.open("10.0.0.2", "elsewhere") is not None  # not everyone's


def test_a_connection_with_a_valid_token_is_no_longer_pending():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock))
    agent = fleet.open("127.0.0.1", "agent")
    assert agent is not None
    fleet.tracker.trust(agent.peer)
    fleet.tracker.received(agent)
    fleet.tracker.answered(agent, body_unread=False)  # idle between calls
    for n in range(50):  # an attacker on the same address
        fleet.open("127.0.0.1", f"attacker-{n}")
    assert "agent" not in fleet.closed
    assert fleet.tracker.pending("127.0.0.1") == 4
    assert len(fleet.closed) == 46


def test_the_total_counts_connections_and_makes_room_from_the_most_crowded_address():
    clock = DrivenClock(100.0)
    fleet = Fleet(tracker(clock, max_connections=6, max_pending_per_address=4))
    agents = [fleet.open("10.0.0.9", f"agent-{n}") for n in range(3)]
    for tracked in agents:
        assert tracked is not None
        fleet.tracker.trust(tracked.peer)
    crowd = [fleet.open("10.0.0.1", f"crowd-{n}") for n in range(2)]
    lone = fleet.open("10.0.0.2", "lone")
    assert all(crowd) and lone is not None and len(fleet.tracker) == 6
    newcomer = fleet.open("10.0.0.3", "newcomer")
    assert newcomer is not None and fleet.closed == ["crowd-0"]
    # Released connections free their place: the count is of open connections only.
    for tracked in (crowd[1], lone, newcomer):
        assert tracked is not None
        fleet.tracker.release(tracked)
    assert len(fleet.tracker) == 3
    for n in range(3):
        assert fleet.open("10.0.0.4", f"later-{n}") is not None
    # Full of agents with tokens and busy requests: a new connection is refused.
    for tracked in list(fleet.tracker._all):
        fleet.tracker.received(tracked)
    assert fleet.open("10.0.0.5", "refused") is None and fleet.tracker.refused == 1


# ------------------------------------------------------------------ the socket


async def echo(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    reply = b"seen " + body
    length = [(b"content-length", str(len(reply)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": length})
    await send({"type": "http.response.body", "body": reply})


@contextlib.asynccontextmanager
async def served(protocol: type[Any]) -> AsyncIterator[socket.socket]:
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(echo, http=protocol, lifespan="off", log_config=None)
    server = uvicorn.Server(config)
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not serving.done()
            await asyncio.sleep(0.01)
        yield sock
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 10)


async def test_an_accepted_socket_sends_small_writes_at_once():
    clock = DrivenClock(100.0)
    guard = tracker(clock)
    accepted: list[socket.socket] = []

    class Watched(protocol_for(guard)):  # type: ignore[misc]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            accepted.append(transport.get_extra_info("socket"))

    async with served(Watched) as sock:
        host, port = sock.getsockname()[:2]
        reader, writer = await asyncio.open_connection(host, port)
        for n in range(3):  # headers and body in two writes, on one reused connection
            body = f"call {n}".encode()
            writer.write(
                f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            )
            await writer.drain()
            writer.write(body)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            assert await reader.readexactly(length) == b"seen " + body
        (conn,) = accepted
        assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert len(guard) == 1  # one connection, three requests
        writer.close()


# ------------------------------------------------------------------ a real hub


async def test_many_idle_sockets_neither_lock_agents_out_nor_stay_open(world: dict[str, Any]):
    """300 sockets from another address (127.0.0.2, still loopback), half of them sending
    half a header: the agents keep being answered, and every idle socket is closed. (The
    limits are per address: an agent that shares the attacker's own address competes
    with its half-sent headers for the same pending places.)"""
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    limits = ["--header-timeout", "1", "--hold-timeout", "1", "--max-pending-per-address", "16"]
    with hub(db, tmp / "hub.log", *limits) as running:
        host, port = running.url.split("//")[1].split("/")[0].rsplit(":", 1)
        idle: list[socket.socket] = []
        try:
            for n in range(300):  # beyond the old 200 limit; half send half a header
                conn = socket.create_connection(
                    (host, int(port)), timeout=5, source_address=("127.0.0.2", 0)
                )
                if n % 2:
                    conn.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
                idle.append(conn)
            async with httpx2.AsyncClient(timeout=10) as http:
                bearer = {"authorization": f"Bearer {tokens['alice']}"}
                for _ in range(5):
                    answer = await http.post(running.url, json=INITIALIZE, headers=HEADERS | bearer)
                    assert answer.status_code == 200, answer.text
            # Every idle socket is closed by the hub, at its deadline: the header's, or the
            # hold's for those set aside past the address's pending limit.
            for conn in idle:
                conn.settimeout(10)
                with contextlib.suppress(ConnectionResetError):
                    assert conn.recv(1) == b""
        finally:
            for conn in idle:
                conn.close()


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
async def test_a_burst_of_agents_from_one_address_is_served_not_reset(
    world: dict[str, Any], tls: bool
):
    """40 agents on one host (one address) connect at once, each writing its request
    as soon as it is connected: more new connections than the address's pending limit
    before the hub has read any of them. None is set aside as idle with its request
    waiting, and every one is answered (before: the oldest were held unread and reset at
    the hold deadline; with TLS the kernel's count of unread bytes is always 0 — the TLS
    layer reads the records — so a held TLS agent was never read again)."""
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    limits = ["--max-pending-per-address", "4", "--hold-timeout", "20", "--rate", "1000"]
    limits += ["--burst", "1000"]
    context = None
    if tls:
        cert, key = _certificate(tmp)
        limits += ["--certfile", str(cert), "--keyfile", str(key)]
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    body = json.dumps(INITIALIZE).encode()
    with hub(db, tmp / "hub.log", *limits) as running:
        host, port = running.url.split("//")[1].split("/")[0].rsplit(":", 1)
        request = (
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {tokens['alice']}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode() + body

        async def agent() -> bytes:
            reader, writer = await asyncio.open_connection(host, int(port), ssl=context)
            writer.write(request)
            await writer.drain()
            try:
                return await asyncio.wait_for(reader.readline(), 40)
            finally:
                writer.close()

        statuses = await asyncio.gather(*(agent() for _ in range(40)), return_exceptions=True)
    assert [line for line in statuses if line != b"HTTP/1.1 200 OK\r\n"] == []


def _certificate(tmp: Path) -> tuple[Path, Path]:
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def _serve(db: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, "serve", "--db", str(db), "--port", "0", *extra],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_a_missing_or_bad_tls_file_is_one_sentence_naming_it(world: dict[str, Any]):
    db, tmp = world["db"], world["tmp"]
    garbage = tmp / "garbage.pem"
    garbage.write_text("not a certificate\n")
    missing = _serve(db, "--certfile", str(tmp / "nope.pem"), "--keyfile", str(garbage))
    assert missing.returncode == 3, missing.stderr
    assert "--certfile" in missing.stderr and "nope.pem: no such file" in missing.stderr
    assert "Traceback" not in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    bad = _serve(db, "--certfile", str(garbage), "--keyfile", str(garbage))
    assert bad.returncode == 8, bad.stderr
    assert "garbage.pem" in bad.stderr and "not a PEM certificate" in bad.stderr
    assert "Traceback" not in bad.stderr and "unexpected" not in bad.stderr


def test_a_tls_handshake_never_begun_is_closed_at_the_header_deadline(world: dict[str, Any]):
    """A socket that connects to a TLS hub and says nothing is closed at the header
    deadline (here 1 s), not after asyncio's own 60 s: until its handshake is done the
    tracker cannot count it, so only this bounds what such sockets hold."""
    db, tmp = world["db"], world["tmp"]
    cert, key = _certificate(tmp)
    limits = ["--certfile", str(cert), "--keyfile", str(key), "--header-timeout", "1"]
    with hub(db, tmp / "hub.log", *limits) as running:
        host, port = running.url.split("//")[1].split("/")[0].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=20) as silent:
            assert silent.recv(1) == b""  # closed by the hub (a timeout here: never)


@pytest.mark.skipif(not Path("/usr/bin/openssl").exists(), reason="needs openssl")
async def test_tls_on_loopback_accepts_its_own_https_origin(world: dict[str, Any]):
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    cert, key = _certificate(tmp)
    with hub(db, tmp / "hub.log", "--certfile", str(cert), "--keyfile", str(key)) as running:
        assert running.url.startswith("https://")
        port = running.url.rsplit(":", 1)[1].split("/")[0]
        bearer = {"authorization": f"Bearer {tokens['alice']}"}
        async with httpx2.AsyncClient(verify=False, timeout=10) as http:
            for origin, status in (
                ("https://localhost", 200),
                (f"https://localhost:{port}", 200),
                (f"https://127.0.0.1:{port}", 200),
                ("https://evil.example", 403),
            ):
                answer = await http.post(
                    running.url, json=INITIALIZE, headers=HEADERS | bearer | {"origin": origin}
                )
                assert answer.status_code == status, (origin, answer.text)


async def test_a_request_header_too_large_to_parse_is_refused_in_json():
    async with served(protocol_for(tracker(DrivenClock(100.0)))) as sock:
        host, port = sock.getsockname()[:2]
        reader, writer = await asyncio.open_connection(host, port)
        # A header that is still not over after 32 KiB (h11 gives up at 16 KiB).
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 32 * 1024)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)  # the hub closes after it
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"application/json" in head
    assert json.loads(body)["error"] == "invalid_request"


def test_every_limit_flag_reaches_the_hub(monkeypatch: pytest.MonkeyPatch, world: dict[str, Any]):
    """Each of the hub's limits has a flag, and the value given is the one the hub runs
    with (a limit added to HubLimits but not passed on ran with its default)."""
    import dataclasses

    from termal_tui.agents import hub_server
    from termal_tui.agents.hub import HubLimits
    from termal_tui.cli import main
    from termal_tui.cli.serve import LIMIT_FLAGS

    flags = {flag: kind for flag, kind, _ in LIMIT_FLAGS}
    fields = {f.name for f in dataclasses.fields(HubLimits)} - {"max_request_bytes"}
    assert {flag.removeprefix("--").replace("-", "_") for flag in flags} == fields
    seen: list[Any] = []
    monkeypatch.setattr(
        hub_server, "run_hub", lambda options, sock, on_ready=None: seen.append(options)
    )
    given = {flag: kind(7) for flag, kind in flags.items()}  # not any default
    argv = [x for flag, value in given.items() for x in (flag, str(value))]
    assert main(["serve", "--db", str(world["db"]), "--port", "0", *argv]) == 0
    (options,) = seen
    for flag, value in given.items():
        assert getattr(options.limits, flag.removeprefix("--").replace("-", "_")) == value, flag


# ------------------------------------------------------------------ the same answers as stdio


async def test_every_garbage_body_gets_the_json_rpc_error_a_stdio_line_gets(
    world: dict[str, Any],
):
    """Each kind of garbage POSTed to /mcp is answered with the code the same line gets
    over stdio (``tests/agents/test_stdio.py``'s list): -32700 for what does not parse,
    -32600 for JSON that is not a JSON-RPC 2.0 message — an object ``id`` included, which
    the SDK would take for a notification and answer 202 with nothing — and the request's
    id where the line is parseable."""
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    with hub(db, tmp / "hub.log") as running:
        async with httpx2.AsyncClient(timeout=10) as http:
            headers = await raw_session(http, running.url, tokens["alice"])
            for line, code, request_id in GARBAGE:
                answer = await http.post(
                    running.url, content=line.encode("utf-8", "surrogatepass"), headers=headers
                )
                assert answer.status_code == 400, (line, answer.status_code, answer.text)
                error = answer.json()
                assert error["error"]["code"] == code, (line, error)
                if code == INVALID_REQUEST:
                    assert error["id"] == request_id, (line, error)
                    assert error["error"]["message"].startswith("Invalid Request: "), error
            ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
            answer = await http.post(running.url, json=ping, headers=headers)
            assert answer.json() == {"jsonrpc": "2.0", "id": 9, "result": {}}
            done = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 1},
            }
            assert (await http.post(running.url, json=done, headers=headers)).status_code == 202
