"""The hub's network side: the listening socket, uvicorn, and a guard on every connection.

uvicorn alone (``limit_concurrency``, ``timeout_keep_alive``) let 200 silent sockets lock
every agent out: its limit counted request tasks as well as connections and answered 503
to everyone beyond it, and its keep-alive timer only starts after a response — a socket
that never finishes a request header is kept for ever. Here uvicorn's h11 protocol is
subclassed (:class:`HubProtocol`) so that each connection reports to one
:class:`ConnectionTracker`:

* **Deadlines.** A connection has ``header_timeout`` seconds to deliver a complete request
  header (from its opening, or from the first byte after a response) and
  ``body_timeout`` seconds for the body after that header; past either it is closed.
  While the app works on a request, or between requests (uvicorn's keep-alive timeout),
  there is no deadline here.
* **Per address.** A connection is *pending* until one of its requests presented a valid
  token (:class:`~termal_tui.agents.hub_http.Front` says so). An address may
  hold ``max_pending_per_address`` pending connections; a new one beyond that sets aside
  the address's oldest *idle* pending connection: no request in progress and no bytes
  waiting unread in the kernel (``FIONREAD``). When there is none — a burst of agents on
  one host, each request sent before the hub read any — the newcomer itself is held, and
  read as soon as a pending place of its address frees up (a token shown, a connection
  gone); it is refused only when nothing can be held. Only that address's connections
  are touched. (Before, the oldest of such a burst were taken for idle, held unread and
  reset 30 s later: 158 of 190 agents on one host.)
* **Held, not closed.** A connection set aside is *held*: its reading is paused (the
  event loop no longer watches it, whatever it sends stays in the kernel) and it is closed
  only ``hold_timeout`` seconds later, or when more than ``max_held`` are held (oldest
  first), unless something it sent is waiting when a pending place of its address is
  free: then it is read again (an idle attacker's socket never is). Closing it at once invited churn: an attacker that reopens whatever is closed
  kept the hub accepting and closing ~10,000 sockets a second, and agents with tokens
  waited behind that (437 ms a call instead of 9). Held, 1,000 sockets cost a file
  descriptor each and no CPU.
* **Real connections.** ``max_connections`` counts open TCP connections being served
  (held ones apart). When it is reached, the oldest idle pending connection of the address
  holding the most pending ones is set aside to make room; only when none is left is the
  new connection refused (a JSON 503). Connections that presented a token are never set
  aside.
* **No per-call floor.** ``TCP_NODELAY`` on every accepted socket (asyncio sets it only
  when the listening socket was made with ``IPPROTO_TCP``) and ``TCP_QUICKACK`` after each
  read and each response, so neither Nagle nor a delayed ACK holds a reply or a request's
  second write for 40 ms.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import fcntl
import json
import logging
import resource
import socket
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from termal_tui.agents.hub import Hub, HubOptions
from termal_tui.agents.hub_http import MCP_PATH
from termal_tui.agents.registry import Registry

logger = logging.getLogger("termal_tui.hub")

REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: application/json\r\n"
    b"connection: close\r\n"
    b"retry-after: 1\r\n"
    b"content-length: %d\r\n\r\n%s"
)
REFUSED_BODY = (
    b'{"error":"too_many_connections","error_description":'
    b'"the hub holds as many connections as it may; nothing was done: retry shortly"}'
)


# ------------------------------------------------------------------ the tracker


@dataclass(eq=False)
class Tracked:
    """One open connection as the tracker sees it."""

    close: Callable[[], None]
    address: str
    peer: tuple[str, int] | None
    opened: float
    phase: str = "headers"  # headers | body | app | idle | held
    deadline: float | None = None
    busy: bool = False  # a request of its own is in progress (not set aside for room)
    trusted: bool = False  # one of its requests presented a valid token
    hold: Callable[[], None] | None = None  # stops reading it (None: it is closed instead)
    resume: Callable[[], None] | None = None  # reads it again (a held one whose turn came)
    waiting: Callable[[], bool] | None = None  # bytes it sent are waiting unread (not idle)

    def has_waiting(self) -> bool:
        return self.waiting is not None and self.waiting()


class ConnectionTracker:
    """Counts real connections, per address and in all, and closes the ones past their
    deadline. Pure bookkeeping with an injected ``clock``: the protocol reports, the
    server's tick calls :meth:`sweep`."""

    def __init__(
        self,
        *,
        max_connections: int,
        max_pending_per_address: int,
        header_timeout: float,
        body_timeout: float,
        max_held: int = 0,
        hold_timeout: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_connections = max_connections
        self.max_pending_per_address = max_pending_per_address
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.max_held = max_held
        self.hold_timeout = hold_timeout
        self.clock = clock
        self._all: dict[Tracked, None] = {}  # served: every open connection but the held
        self._pending: dict[str, dict[Tracked, None]] = {}  # per address, oldest first
        self._by_peer: dict[tuple[str, int], Tracked] = {}
        self._held: dict[Tracked, None] = {}  # oldest first
        self._held_at: dict[str, dict[Tracked, None]] = {}  # the same, per address
        self.refused = 0
        self.evicted = 0  # set aside for room: held, or closed when nothing can be held
        self.timed_out = 0  # closed at a deadline (a held one's included)

    def __len__(self) -> int:
        """Open connections being served (the held ones are not)."""
        return len(self._all)

    @property
    def held(self) -> int:
        return len(self._held)

    def pending(self, address: str) -> int:
        return len(self._pending.get(address, ()))

    # ------------------------------------------------------------ life

    def admit(
        self,
        close: Callable[[], None],
        address: str,
        peer: tuple[str, int] | None = None,
        hold: Callable[[], None] | None = None,
        resume: Callable[[], None] | None = None,
        waiting: Callable[[], bool] | None = None,
    ) -> Tracked | None:
        """A new connection: tracked (its header deadline running), or None if refused
        (the caller closes it). May set other pending connections aside to make room:
        held through ``hold`` (reading stopped) while fewer than ``max_held`` are, else
        closed. A connection whose request is already waiting unread is not idle and is
        not set aside; when the address has nothing idle to give up, the newcomer itself
        is held, and read once a pending place of its address is free (its request
        waiting), rather than refused."""
        now = self.clock()
        tracked = Tracked(
            close,
            address,
            peer,
            now,
            deadline=now + self.header_timeout,
            hold=hold,
            resume=resume,
            waiting=waiting,
        )
        mine = self._pending.get(address, {})
        if len(mine) >= self.max_pending_per_address and not self._evict(mine):
            return self._hold_or_refuse(tracked)
        if len(self._all) >= self.max_connections:
            crowded = sorted(self._pending.values(), key=len, reverse=True)
            if not any(self._evict(group) for group in crowded):
                self.refused += 1
                return None
        self._serve(tracked)
        if peer is not None:
            self._by_peer[peer] = tracked
        return tracked

    def _serve(self, tracked: Tracked) -> None:
        self._all[tracked] = None
        self._pending.setdefault(tracked.address, {})[tracked] = None

    def _hold_or_refuse(self, tracked: Tracked) -> Tracked | None:
        if tracked.hold is None or tracked.resume is None or self.max_held <= 0:
            self.refused += 1
            return None
        if tracked.peer is not None:
            self._by_peer[tracked.peer] = tracked
        self._hold(tracked)
        return tracked

    def _hold(self, tracked: Tracked) -> None:
        assert tracked.hold is not None
        tracked.phase, tracked.deadline = "held", self.clock() + self.hold_timeout
        self._held[tracked] = None
        self._held_at.setdefault(tracked.address, {})[tracked] = None
        tracked.hold()
        while len(self._held) > self.max_held:
            victim = self._held_victim()
            self._drop(victim)
            victim.close()

    def _held_victim(self, scan: int = 64) -> Tracked:
        """The held connection to close for room: the oldest with nothing waiting (an
        idle socket is never read again anyway), else the oldest. Another address's
        idle sockets never push out a burst's held requests (they wait for a place)."""
        oldest = None
        for count, held in enumerate(self._held):
            if oldest is None:
                oldest = held
            if count >= scan:
                break
            if not held.has_waiting():
                return held
        assert oldest is not None
        return oldest

    def _resume_waiting(self, address: str, scan: int = 64) -> None:
        """Read again the address's oldest held connections whose requests are waiting,
        while it has pending places free (idle ones, an attacker's, stay held)."""
        held = self._held_at.get(address)
        if not held:
            return
        for tracked in list(held)[:scan]:
            if self.pending(address) >= self.max_pending_per_address:
                return
            if len(self._all) >= self.max_connections:
                return
            if tracked.resume is None or not tracked.has_waiting():
                continue
            self._unhold(tracked)
            tracked.phase, tracked.deadline = "headers", self.clock() + self.header_timeout
            self._serve(tracked)
            tracked.resume()

    def release(self, tracked: Tracked) -> None:
        """The connection is gone (whoever closed it): its pending place, if it had one,
        goes to a held connection of its address with a request waiting."""
        self._drop(tracked)
        self._resume_waiting(tracked.address)

    def _drop(self, tracked: Tracked) -> None:
        self._all.pop(tracked, None)
        self._unhold(tracked)
        group = self._pending.get(tracked.address)
        if group is not None:
            group.pop(tracked, None)
            if not group:
                del self._pending[tracked.address]
        if tracked.peer is not None and self._by_peer.get(tracked.peer) is tracked:
            del self._by_peer[tracked.peer]

    def _unhold(self, tracked: Tracked) -> None:
        self._held.pop(tracked, None)
        held = self._held_at.get(tracked.address)
        if held is not None:
            held.pop(tracked, None)
            if not held:
                del self._held_at[tracked.address]

    def _evict(self, group: dict[Tracked, None]) -> bool:
        victim = next((t for t in group if not t.busy and not t.has_waiting()), None)
        if victim is None:
            return False
        self.evicted += 1
        self._drop(victim)
        if victim.peer is not None:
            self._by_peer[victim.peer] = victim  # still open: its token may come yet
        if victim.hold is None or self.max_held <= 0:
            victim.close()
            return True
        self._hold(victim)
        return True

    # ------------------------------------------------------------ progress

    def headers(self, tracked: Tracked) -> None:
        """Waiting for (the rest of) a request header: its deadline runs from the first
        time this is said, and is not moved on by more bytes."""
        if tracked.phase != "headers" or tracked.deadline is None:
            tracked.phase = "headers"
            tracked.deadline = self.clock() + self.header_timeout

    def body(self, tracked: Tracked) -> None:
        """A request header is in; its body is arriving."""
        tracked.busy = True
        if tracked.phase != "body":
            tracked.phase = "body"
            tracked.deadline = self.clock() + self.body_timeout

    def received(self, tracked: Tracked) -> None:
        """The whole request is in; the app is working on it (no deadline here)."""
        tracked.busy = True
        tracked.phase = "app"
        tracked.deadline = None

    def answered(self, tracked: Tracked, *, body_unread: bool) -> None:
        """A response was sent. Its request's body may still be arriving (a refusal
        answers before reading it): its deadline keeps running."""
        tracked.busy = False
        if not body_unread:
            tracked.phase = "idle"
            tracked.deadline = None

    def trust(self, peer: tuple[str, int] | None) -> None:
        """The connection from ``peer`` presented a valid token: it is no longer pending."""
        tracked = self._by_peer.get(peer) if peer is not None else None
        if tracked is None or tracked.trusted:
            return
        tracked.trusted = True
        group = self._pending.get(tracked.address)
        if group is not None:
            group.pop(tracked, None)
            if not group:
                del self._pending[tracked.address]
        self._resume_waiting(tracked.address)

    def sweep(self) -> int:
        """Close every connection past its deadline; how many were closed."""
        now = self.clock()
        late = [t for t in self._all if t.deadline is not None and t.deadline <= now]
        for held in self._held:  # oldest first: the first not yet due ends the walk
            if held.deadline is None or held.deadline > now:
                break
            late.append(held)
        for tracked in late:
            self.timed_out += 1
            self._drop(tracked)
            tracked.close()
        # A held request whose bytes arrived after its address's last free place went.
        for address in [a for a in self._held_at if self.pending(a) < self.max_pending_per_address]:
            self._resume_waiting(address, scan=8)
        return len(late)


# ------------------------------------------------------------------ the protocol


def _set_option(sock: Any, level: int, name: str) -> None:
    option = getattr(socket, name, None)
    if sock is None or option is None:
        return
    with contextlib.suppress(OSError):
        sock.setsockopt(level, option, 1)


def _unread_bytes(sock: Any) -> bool:
    """Whether bytes the peer sent wait in the kernel, not yet read (FIONREAD)."""
    if sock is None:
        return False
    count = array.array("i", [0])
    try:
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, count, True)
    except (OSError, ValueError):
        return False
    return count[0] > 0


def _waiting(transport: asyncio.BaseTransport, sock: Any) -> Callable[[], bool]:
    """Whether a connection's request may be waiting unread. On plain TCP the kernel
    knows (``FIONREAD``). Under TLS it cannot tell: the TLS layer reads the records into
    its own buffer, paused or not, and the kernel's count stays 0 — so a TLS connection
    is never taken for idle (the header deadline still closes one that says nothing), and
    a held one is read again as soon as its address has a pending place free."""
    if transport.get_extra_info("ssl_object") is not None:
        return lambda: True
    return lambda: _unread_bytes(sock)


def protocol_for(tracker: ConnectionTracker) -> type[H11Protocol]:
    """uvicorn's h11 protocol, reporting every connection's progress to ``tracker``."""

    class HubProtocol(H11Protocol):
        tracked: Tracked | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.sock = transport.get_extra_info("socket")
            _set_option(self.sock, socket.IPPROTO_TCP, "TCP_NODELAY")
            _set_option(self.sock, socket.IPPROTO_TCP, "TCP_QUICKACK")
            address = self.client[0] if self.client else "-"
            self.tracked = tracker.admit(
                transport.close,
                address,
                self.client,
                hold=transport.pause_reading,
                resume=transport.resume_reading,
                waiting=_waiting(transport, self.sock),
            )
            if self.tracked is None:
                transport.write(REFUSED % (len(REFUSED_BODY), REFUSED_BODY))
                transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            if self.tracked is not None:
                tracker.release(self.tracked)
                self.tracked = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self.tracked is None or self.tracked.phase == "held":
                return  # refused, closed or held: nothing it says is read
            super().data_received(data)
            _set_option(self.sock, socket.IPPROTO_TCP, "TCP_QUICKACK")
            if self.tracked is None:
                return
            state = self.conn.their_state
            if state is h11.IDLE:
                tracker.headers(self.tracked)
            elif state is h11.SEND_BODY:
                tracker.body(self.tracked)
            else:
                tracker.received(self.tracked)

        def send_400_response(self, msg: str) -> None:
            """uvicorn's answer to a request h11 cannot parse (a header over 16 KiB among
            them), in JSON like every other refusal."""
            body = json.dumps(
                {"error": "invalid_request", "error_description": f"{msg} Nothing was done."}
            ).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ]
            with contextlib.suppress(h11.LocalProtocolError):
                self.transport.write(
                    self.conn.send(
                        h11.Response(status_code=400, headers=headers, reason=b"Bad Request")
                    )
                    + (self.conn.send(h11.Data(data=body)) or b"")
                    + (self.conn.send(h11.EndOfMessage()) or b"")
                )
            self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            _set_option(self.sock, socket.IPPROTO_TCP, "TCP_QUICKACK")
            if self.tracked is not None:
                unread = self.conn.their_state is h11.SEND_BODY
                tracker.answered(self.tracked, body_unread=unread)

    return HubProtocol


# ------------------------------------------------------------------ running it


class HubServer(uvicorn.Server):
    """uvicorn with a drain (the first signal stops new calls and waits for in-flight
    ones) and the connection tracker's sweep on every tick (0.1 s)."""

    def __init__(self, config: uvicorn.Config, hub: Hub, tracker: ConnectionTracker) -> None:
        super().__init__(config)
        self.hub = hub
        self.tracker = tracker
        self._drain_until = 0.0

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.hub.draining:
            self.hub.draining = True
            self._drain_until = time.monotonic() + self.hub.options.limits.drain
            logger.info("stopping: %d call(s) in flight may finish", self.hub.inflight)
            return
        super().handle_exit(sig, frame)  # a second signal: stop now
        self.force_exit = True

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start, with a TLS handshake bounded by the header deadline: asyncio
        tells the protocol of a TLS connection only once its handshake is done, so until
        then the tracker cannot count it, and asyncio's own limit is 60 s (a socket that
        never finishes its handshake kept a file descriptor that long)."""
        loop = asyncio.get_running_loop()
        create = loop.create_server
        handshake = self.hub.options.limits.header_timeout

        async def create_server(*args: Any, **kwargs: Any) -> asyncio.Server:
            if kwargs.get("ssl") is not None:
                kwargs.setdefault("ssl_handshake_timeout", handshake)
            return await create(*args, **kwargs)

        loop.create_server = create_server  # type: ignore[method-assign]
        try:
            await super().startup(sockets=sockets)
        finally:
            del loop.create_server  # the loop's own method again

    async def on_tick(self, counter: int) -> bool:
        self.tracker.sweep()
        hub = self.hub
        done = hub.inflight == 0 or time.monotonic() > self._drain_until
        if hub.draining and not self.should_exit and done:
            if hub.inflight:
                logger.warning("stopping with %d call(s) still in flight", hub.inflight)
            self.should_exit = True
        return await super().on_tick(counter)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted sockets only for that.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.set_inheritable(True)
    return sock


def tracker_for(options: HubOptions) -> ConnectionTracker:
    limits = options.limits
    return ConnectionTracker(
        max_connections=limits.max_connections,
        max_pending_per_address=limits.max_pending_per_address,
        header_timeout=limits.header_timeout,
        body_timeout=limits.body_timeout,
        max_held=limits.max_held,
        hold_timeout=limits.hold_timeout,
    )


FILES_BESIDE = 256  # descriptors kept for the database, logs and the listening socket


def _room_for(connections: int) -> int:
    """Raise the soft open-files limit so ``connections`` sockets fit beside the files;
    how many sockets fit (fewer when the hard limit is lower)."""
    wanted = connections + FILES_BESIDE
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            ceiling = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY:
            return max(0, soft - FILES_BESIDE)
    return connections


def fit_to_files(
    tracker: ConnectionTracker, max_connections: int, max_held: int, room: int
) -> None:
    """The limits the process's open files allow (``room`` sockets): live connections
    first, then held ones. Never more sockets than the process may open, or accept()
    fails with EMFILE and nobody gets in."""
    tracker.max_connections = min(max_connections, max(1, room))
    tracker.max_held = min(max_held, max(0, room - tracker.max_connections))


def run_hub(options: HubOptions, sock: socket.socket, on_ready: Any = None) -> None:
    """Serve until stopped (blocking). ``on_ready(url)`` runs once the hub answers.
    A certificate or key that cannot be loaded raises ``ssl.SSLError`` or ``OSError``
    before anything is served."""
    logging.basicConfig(
        level=options.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    hub = Hub(options)
    tracker = tracker_for(options)
    limits = options.limits
    fit_to_files(
        tracker,
        limits.max_connections,
        limits.max_held,
        _room_for(limits.max_connections + limits.max_held),
    )
    config = uvicorn.Config(
        hub.app(on_caller=lambda scope: tracker.trust(scope.get("client"))),
        http=protocol_for(tracker),
        log_config=None,
        log_level=options.log_level,
        access_log=False,
        lifespan="on",
        limit_concurrency=None,  # the tracker counts connections; uvicorn counted tasks too
        timeout_keep_alive=int(max(1, limits.keep_alive)),
        timeout_graceful_shutdown=2,
        ssl_certfile=str(options.certfile) if options.certfile else None,
        ssl_keyfile=str(options.keyfile) if options.keyfile else None,
        server_header=False,
    )
    config.load()  # the TLS files are read here: a bad one fails before serving
    server = HubServer(config, hub, tracker)

    async def main() -> None:
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.02)
        if server.started and on_ready is not None:
            on_ready(hub_url(options, sock))
        await serving
        server._captured_signals.clear()  # drained: exit 0, not by the signal

    asyncio.run(main())


def hub_url(options: HubOptions, sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    scheme = "https" if options.certfile else "http"
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}{MCP_PATH}"


def exposure_lines(options: HubOptions, registry: Registry) -> list[str]:
    """What a non-loopback hub exposes, said before it starts."""
    holders = registry.token_holders()
    database = registry.shown if options.on_postgres else options.db_path  # no password
    names = [s.name for s in registry.sessions() if s.id in holders]
    shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    return [
        f"termal-tui serve: listening on {options.host}:{options.port}, beyond this machine.",
        f"  It exposes the mailbox and board tools of {database} to anyone who can "
        "reach that address and holds a session token.",
        f"  Sessions with a token: {shown or 'none yet (termal-tui session token NAME)'}.",
        "  Tokens are sent in clear text unless you use --certfile/--keyfile or a TLS "
        "reverse proxy."
        if options.certfile is None
        else "  TLS: on (--certfile/--keyfile).",
    ]
