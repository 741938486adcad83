"""``termal-tui serve``: every session's tools over MCP streamable HTTP — one hub, one file.

The coordination database stays TermAl's file on one host; agents on other machines
reach it through this server (the official SDK's streamable HTTP transport at ``/mcp``,
on the uvicorn/starlette it brings). The same six mailbox and three board tools as
``termal-tui mcp``, with these differences:

* **Identity is the bearer token.** ``termal-tui session token NAME`` mints one per
  session (the registry keeps only its hash). Every request is verified against the
  registry (the SDK's ``BearerAuthBackend`` + ``RequireAuthMiddleware``: 401 with
  ``WWW-Authenticate``), so a revoked token or a removed session stops at the next
  request; the session the token belongs to is the caller — no argument or header names
  another, and the SDK refuses an MCP session id opened with another credential.
* **One generic target error** (the contract's rule for remote exposure): missing, self
  and ineligible targets are indistinguishable (``AgentTools.generic_target_errors``).
* **Limits before work**: a body cap checked before the body is read (413, the SDK's
  ``RequestBodyLimitMiddleware``), a token bucket per token (429 with ``Retry-After``),
  uvicorn's concurrency limit and keep-alive timeout, the SDK's idle and session limits.
* **Graceful stop**: the first SIGTERM or SIGINT stops taking tool calls (503, nothing
  done) and waits for those in flight to answer; a send is committed or not, and its
  idempotency key replays either way. A second signal stops at once.
* **Wake-ups**: a client that sends ``TermAl-Wake: channel`` (``termal-tui mcp
  --remote``) gets Claude Code channel events pushed on its MCP GET stream by one
  :class:`ChannelWatcher` per session, in this process; a wake counts as delivered only
  when that stream is open to take it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import math
import socket
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from termal_tui.agents.board_tools import BOARD_TOOL_NAMES, BoardTools
from termal_tui.agents.channels import StreamTracker, parse_wake_header, unset_app
from termal_tui.agents.hooks import HOOK_EVENTS
from termal_tui.agents.mcp_server import (
    CHANNEL_METHOD,
    ChannelNotification,
    catalog_server,
    tool_result,
)
from termal_tui.agents.registry import Registry
from termal_tui.agents.tools import AgentTools, ReplayPolicy, as_tool_error
from termal_tui.agents.wake import ChannelWatcher, channel_meta
from termal_tui.formats import BUSY_TIMEOUT_MS, MAX_BODY_BYTES, REQUEST_DEADLINE_SECONDS
from termal_tui.models import UnreadWakeup
from termal_tui.store.board.writer import BoardWriter, open_board_writer
from termal_tui.store.writer import MailboxWriter, open_writer

logger = logging.getLogger("termal_tui.hub")

MCP_PATH = "/mcp"
HOOK_PATH = "/hook"
WAKE_HEADER = "termal-wake"  # a client that takes channel events: ``TermAl-Wake: channel``
LISTENER_HEADER = "termal-listener"  # the shim's ``pid@host``, shown by ``session list``
# A send's body is at most 256 KiB; its JSON-RPC request carries it escaped (a newline or
# a quote is two bytes), inside an envelope. Anything larger is refused before it is read.
ENVELOPE_BYTES = 64 * 1024
MAX_REQUEST_BYTES = 2 * MAX_BODY_BYTES + ENVELOPE_BYTES


@dataclass(frozen=True)
class HubLimits:
    max_request_bytes: int = MAX_REQUEST_BYTES
    rate: float = 20.0  # requests per second per token, sustained
    burst: int = 60  # requests per token at once
    max_connections: int = 200  # uvicorn's limit_concurrency (503 beyond it)
    max_sessions: int = 1000  # open MCP sessions (the SDK's 503 beyond it)
    session_idle: float = 30 * 60.0  # an MCP session with no request for this long ends
    keep_alive: float = 15.0  # an idle HTTP connection is closed after this long
    drain: float = 30.0  # SIGTERM: how long in-flight calls may take to finish


@dataclass(frozen=True)
class HubOptions:
    db_path: Path
    host: str = "127.0.0.1"
    port: int = 8765
    certfile: Path | None = None
    keyfile: Path | None = None
    log_level: str = "info"  # the threshold of every line
    request_log_level: str = "info"  # the level of the one line per request
    limits: HubLimits = field(default_factory=HubLimits)
    busy_timeout: float = BUSY_TIMEOUT_MS / 1000
    interval: float = 0.2  # the channel watchers' poll


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# ------------------------------------------------------------------ identity


class RegistryTokenVerifier:
    """The SDK's ``TokenVerifier``: a token is its session's if its hash is in the registry,
    not revoked, and the session is live. ``client_id`` is the session id."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            session = await asyncio.to_thread(self.registry.session_for_token, token)
        except Exception:  # a busy or failing registry lets nobody in
            logger.exception("token check failed")
            return None
        if session is None:
            return None
        return AccessToken(token=token, client_id=session.id, scopes=["mailbox"])


def caller_of(scope: Scope) -> str | None:
    user = scope.get("user")
    return user.access_token.client_id if isinstance(user, AuthenticatedUser) else None


# ------------------------------------------------------------------ ASGI middleware


def _json_error(status: int, error: str, description: str, headers: dict[str, str]) -> Response:
    return JSONResponse(
        {"error": error, "error_description": description}, status_code=status, headers=headers
    )


class RateLimit:
    """A token bucket per token (after authentication): ``rate`` a second, ``burst`` at once."""

    def __init__(self, app: ASGIApp, rate: float, burst: int) -> None:
        self.app = app
        self.rate = rate
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}

    def _take(self, key: str) -> float:
        """0 if a request may go now, else seconds until one may."""
        now = time.monotonic()
        level, at = self._buckets.get(key, (self.burst, now))
        level = min(self.burst, level + (now - at) * self.rate)
        if level >= 1.0:
            self._buckets[key] = (level - 1.0, now)
            return 0.0
        self._buckets[key] = (level, now)
        return (1.0 - level) / self.rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = caller_of(scope) if scope["type"] == "http" else None
        if caller is not None:
            wait = self._take(caller)
            if wait > 0:
                seconds = max(1, math.ceil(wait))
                response = _json_error(
                    429,
                    "rate_limited",
                    f"more than {self.burst:g} requests at once or {self.rate:g} a second "
                    f"for this token; retry after {seconds} s (nothing was done)",
                    {"retry-after": str(seconds)},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Gate:
    """Counts the requests that may change something (POST, DELETE) while they run, and
    refuses new ones once the hub is stopping (503: nothing was done, retry later)."""

    def __init__(self, app: ASGIApp, hub: Hub) -> None:
        self.app = app
        self.hub = hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "DELETE"):
            await self.app(scope, receive, send)
            return
        if self.hub.draining:
            response = _json_error(
                503,
                "stopping",
                "the hub is stopping; nothing was done: retry the same request",
                {"retry-after": "5", "connection": "close"},
            )
            await response(scope, receive, send)
            return
        self.hub.inflight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.hub.inflight -= 1


class RequestLog:
    """One line per request: method, path, status, milliseconds, caller (when known)."""

    def __init__(self, app: ASGIApp, level: int) -> None:
        self.app = app
        self.level = level

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = [0]

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            client = scope.get("client")
            logger.log(
                self.level,
                "%s %s %s %s %d %.1fms %s",
                f"{client[0]}:{client[1]}" if client else "-",
                scope["method"],
                scope["path"],
                _header(scope, MCP_SESSION_ID_HEADER) or "-",
                status[0],
                (time.monotonic() - started) * 1000,
                caller_of(scope) or "-",
            )


def _header(scope: Scope, name: str) -> str | None:
    key = name.lower().encode("latin-1")
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == key), None)


# ------------------------------------------------------------------ the hub


class Hub:
    """The MCP server, its session manager and the ASGI app around them."""

    def __init__(self, options: HubOptions) -> None:
        self.options = options
        self.registry = Registry.beside(options.db_path, busy_timeout=options.busy_timeout)
        self.writer: MailboxWriter | None = None
        self.board_writer: BoardWriter | None = None
        self.inflight = 0
        self.draining = False
        self._tools: dict[str, AgentTools] = {}
        self._boards: dict[str, BoardTools] = {}
        self._background: anyio.abc.TaskGroup | None = None
        self.server = self._build_server()
        self.streams = StreamTracker(unset_app)  # the MCP endpoint, set in ``app()``
        limits = options.limits
        loopback = is_loopback(options.host)
        self.manager = StreamableHTTPSessionManager(
            self.server,
            security_settings=TransportSecuritySettings(
                # DNS rebinding: on loopback only our own host names; elsewhere a reverse
                # proxy decides the Host header, and the token is what guards the door.
                enable_dns_rebinding_protection=loopback,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            ),
            session_idle_timeout=limits.session_idle,
            max_request_body_size=limits.max_request_bytes,
            max_sessions=limits.max_sessions,
        )

    # ------------------------------------------------------------ per session

    def tools_for(self, session_id: str) -> AgentTools:
        tools = self._tools.get(session_id)
        if tools is None:
            assert self.writer is not None
            tools = AgentTools(
                self.writer, self.registry, session_id, replay=ReplayPolicy(),
                generic_target_errors=True,
            )  # fmt: skip
            self._tools[session_id] = tools
        return tools

    def board_for(self, session_id: str) -> BoardTools:
        board = self._boards.get(session_id)
        if board is None:
            assert self.board_writer is not None
            board = BoardTools(
                self.board_writer, self.registry, session_id, db_path=self.options.db_path
            )
            self._boards[session_id] = board
        return board

    def _build_server(self) -> Server:
        async def call(
            ctx: ServerRequestContext[Any], name: str, arguments: Mapping[str, Any]
        ) -> types.CallToolResult:
            caller = _request_caller(ctx)
            if caller is None:  # not reachable through RequireAuthMiddleware
                return tool_result("this request carries no verified token", is_error=True)
            if name in BOARD_TOOL_NAMES:
                return tool_result(await self.board_for(caller).call(name, arguments))
            return tool_result(await self.tools_for(caller).call(name, arguments))

        async def on_initialized(
            ctx: ServerRequestContext[Any], _params: types.NotificationParams
        ) -> None:
            request = ctx.request
            caller = _request_caller(ctx)
            if not isinstance(request, Request) or caller is None:
                return
            wake = parse_wake_header(request.headers.get(WAKE_HEADER))
            if not wake.channel:
                return
            mcp_session = request.headers.get(MCP_SESSION_ID_HEADER)
            if mcp_session and self._background is not None:
                stream = self.streams.stream(mcp_session)
                stream.ping_every = wake.ping_every
                client = request.client
                host = client.host if client is not None else "unknown"
                peer = (request.headers.get(LISTENER_HEADER) or "").strip()[:200] or None
                self._background.start_soon(
                    self._watch, caller, mcp_session, ctx.session, host, peer
                )

        return catalog_server(call, on_initialized)

    def _wake_stream_open(self, mcp_session: str) -> bool:
        # The SDK drops a server-initiated notification when no GET stream is open (it keeps
        # no event store here): a wake counts as written only if that stream is there and
        # alive (``channels.StreamTracker`` sees it open and close, from the requests).
        stream = self.streams.streams.get(mcp_session)
        return stream is not None and stream.live()

    async def _watch(
        self,
        session_id: str,
        mcp_session: str,
        session: ServerSession,
        host: str = "unknown",
        peer: str | None = None,
    ) -> None:
        """The channel of one MCP session: a watcher (a remote listener of the session) runs
        while its wake stream is live, and is released the moment it is not — the stream
        closed, the shim stopped pinging, the session ended. A stream that comes back
        registers a new listener. Of a session's listeners the newest live one holds the
        channel (``ChannelWatcher``), local or remote."""
        assert self.writer is not None
        stream = self.streams.stream(mcp_session)

        async def push(wake: UnreadWakeup, prompt: str) -> None:
            if not self._wake_stream_open(mcp_session):
                raise OSError("the remote agent's wake stream is not open")
            try:
                await session.send_notification(
                    ChannelNotification(  # type: ignore[arg-type]
                        method=CHANNEL_METHOD,
                        params={"content": prompt, "meta": channel_meta(wake)},
                    )
                )
            except (anyio.ClosedResourceError, anyio.BrokenResourceError) as error:
                raise OSError("the remote agent has gone") from error

        tools = self.tools_for(session_id)
        logger.info("wake-ups for %s on MCP session %s (%s)", session_id, mcp_session, host)
        try:
            while not stream.ended:
                if not stream.live():
                    if stream.clock() - stream.last_seen > self.options.limits.session_idle:
                        break  # the SDK has reaped the session by now: nothing will reopen
                    await stream.wait_changed(timeout=1.0)
                    continue
                watcher = ChannelWatcher(
                    self.writer, self.registry, session_id, push,
                    interval=self.options.interval, kind="remote", host=host, peer=peer,
                )  # fmt: skip
                tools.on_engaged = watcher.engaged
                async with anyio.create_task_group() as group:
                    group.start_soon(watcher.run)
                    while stream.live():
                        await stream.wait_changed(timeout=1.0)
                    group.cancel_scope.cancel()  # releases its listener
                if tools.on_engaged == watcher.engaged:
                    tools.on_engaged = None
                logger.info("wake stream of %s on MCP session %s closed", session_id, mcp_session)
        finally:
            self.streams.forget(mcp_session)

    # ------------------------------------------------------------ the app

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        options = self.options
        deadline = min(REQUEST_DEADLINE_SECONDS, options.busy_timeout)
        busy_ms = int(options.busy_timeout * 1000)
        async with (
            open_writer(options.db_path, deadline=deadline, busy_timeout_ms=busy_ms) as writer,
            open_board_writer(
                options.db_path, deadline=deadline, busy_timeout_ms=busy_ms
            ) as board_writer,
            anyio.create_task_group() as background,
        ):
            self.writer, self.board_writer = writer, board_writer
            self._background = background
            try:
                async with self.manager.run():
                    yield
            finally:
                background.cancel_scope.cancel()
                self._background = None

    async def hook(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``termal-tui hook EVENT --remote URL``: one hook run for the token's session
        (``hooks.run_hook``, in a worker thread). Its one JSON document is the response
        body, and the wakes it carries are marked delivered only after that response was
        handed to the connection — as a local hook marks them after writing stdout; a
        response that could not be sent leaves them recoverable."""
        caller = caller_of(scope)
        request = Request(scope, receive)
        try:
            document = json.loads(await request.body() or b"{}")
            event = document.get("event")
            payload = document.get("payload") or {}
            if event not in HOOK_EVENTS or not isinstance(payload, dict):
                raise ValueError(f"event must be one of {', '.join(HOOK_EVENTS)}")
        except (ValueError, AttributeError) as error:
            await JSONResponse({"error": str(error)}, status_code=400)(scope, receive, send)
            return
        assert caller is not None  # behind RequireAuthMiddleware
        loop = asyncio.get_running_loop()
        answered = [False]

        async def respond(text: str) -> None:
            await Response(text, media_type="application/json")(scope, receive, send)

        def write(text: str) -> None:  # in the worker thread; raises if not sent
            asyncio.run_coroutine_threadsafe(respond(text), loop).result(timeout=30)
            answered[0] = True

        from termal_tui.agents.hooks import run_hook

        try:
            await asyncio.to_thread(
                run_hook, self.options.db_path, self.registry, event, caller, payload, write
            )
        except Exception as error:
            if answered[0]:
                return
            failure = as_tool_error(error)
            await JSONResponse({"error": str(failure)}, status_code=500)(scope, receive, send)
            return
        if not answered[0]:
            await Response(b"", status_code=204)(scope, receive, send)

    async def health(self, request: Request) -> Response:
        """``doctor --json`` of the hub's file (a token is needed: it names mailboxes)."""
        if caller_of(request.scope) is None:
            return _json_error(
                401, "invalid_token", "Authentication required",
                {"www-authenticate": 'Bearer error="invalid_token"'},
            )  # fmt: skip
        from termal_tui.health import Thresholds, health_report
        from termal_tui.store.reader import open_reader

        async with open_reader(self.options.db_path) as reader:
            report = await health_report(reader, thresholds=Thresholds())
        document = {  # the shape of ``termal-tui doctor --json``
            "healthy": report.healthy,
            "mailboxes": report.mailboxes,
            "unread": report.unread,
            "findings": [finding.to_json() for finding in report.findings],
        }
        return JSONResponse(document)

    def app(self) -> ASGIApp:
        limits = self.options.limits
        self.streams.app = StreamableHTTPASGIApp(self.manager)
        mcp_app: ASGIApp = RequireAuthMiddleware(self.streams, [])
        mcp_app = RateLimit(mcp_app, limits.rate, limits.burst)
        hook_app: ASGIApp = RequireAuthMiddleware(
            RequestBodyLimitMiddleware(self.hook, limits.max_request_bytes), []
        )
        hook_app = RateLimit(hook_app, limits.rate, limits.burst)
        starlette = Starlette(
            routes=[
                Route("/health", self.health, methods=["GET"]),
                Route(MCP_PATH, mcp_app),
                Route(HOOK_PATH, hook_app, methods=["POST"]),
            ],
            middleware=[
                Middleware(
                    AuthenticationMiddleware,
                    backend=BearerAuthBackend(RegistryTokenVerifier(self.registry)),
                ),
                Middleware(AuthContextMiddleware),
            ],
            lifespan=self.lifespan,
        )
        level = logging.getLevelName(self.options.request_log_level.upper())
        return RequestLog(Gate(starlette, self), level)


def _request_caller(ctx: ServerRequestContext[Any]) -> str | None:
    request = ctx.request
    return caller_of(request.scope) if isinstance(request, Request) else None


# ------------------------------------------------------------------ running it


class _HubServer(uvicorn.Server):
    """uvicorn with a drain: the first signal stops new calls and waits for in-flight ones."""

    def __init__(self, config: uvicorn.Config, hub: Hub) -> None:
        super().__init__(config)
        self.hub = hub
        self._drain_until = 0.0

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.hub.draining:
            self.hub.draining = True
            self._drain_until = time.monotonic() + self.hub.options.limits.drain
            logger.info("stopping: %d call(s) in flight may finish", self.hub.inflight)
            return
        super().handle_exit(sig, frame)  # a second signal: stop now
        self.force_exit = True

    async def on_tick(self, counter: int) -> bool:
        hub = self.hub
        done = hub.inflight == 0 or time.monotonic() > self._drain_until
        if hub.draining and not self.should_exit and done:
            if hub.inflight:
                logger.warning("stopping with %d call(s) still in flight", hub.inflight)
            self.should_exit = True
        return await super().on_tick(counter)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.set_inheritable(True)
    return sock


def run_hub(options: HubOptions, sock: socket.socket, on_ready: Any = None) -> None:
    """Serve until stopped (blocking). ``on_ready(url)`` runs once the hub answers."""
    logging.basicConfig(
        level=options.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    hub = Hub(options)
    limits = options.limits
    config = uvicorn.Config(
        hub.app(),
        log_config=None,
        log_level=options.log_level,
        access_log=False,
        lifespan="on",
        limit_concurrency=limits.max_connections,
        timeout_keep_alive=int(max(1, limits.keep_alive)),
        timeout_graceful_shutdown=2,
        ssl_certfile=str(options.certfile) if options.certfile else None,
        ssl_keyfile=str(options.keyfile) if options.keyfile else None,
        server_header=False,
    )
    server = _HubServer(config, hub)

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
    names = [s.name for s in registry.sessions() if s.id in holders]
    shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    return [
        f"termal-tui serve: listening on {options.host}:{options.port}, beyond this machine.",
        f"  It exposes the mailbox and board tools of {options.db_path} to anyone who can "
        "reach that address and holds a session token.",
        f"  Sessions with a token: {shown or 'none yet (termal-tui session token NAME)'}.",
        "  Tokens are sent in clear text unless you use --certfile/--keyfile or a TLS "
        "reverse proxy."
        if options.certfile is None
        else "  TLS: on (--certfile/--keyfile).",
    ]
