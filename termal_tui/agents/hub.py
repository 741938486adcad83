"""``termal-tui serve``: every session's tools over MCP streamable HTTP.

The coordination database is TermAl's file on one host (one hub), or a PostgreSQL
database that any number of hubs share (every one of them reads and writes the same
mailboxes and registry: a token works on each, and a message sent through one wakes an
agent listening through another, by a notification sent in its committing transaction).
Agents on other machines reach it through this server (the official SDK's streamable
HTTP transport at ``/mcp``, on the uvicorn/starlette it brings). The same six mailbox
and three board tools as ``termal-tui mcp``, with these differences:

* **Identity is the bearer token.** ``termal-tui session token NAME`` mints one per
  session (the registry keeps only its hash). Every request is verified against the
  registry (the SDK's ``BearerAuthBackend`` + ``RequireAuthMiddleware``: 401 with
  ``WWW-Authenticate``), so a revoked token or a removed session stops at the next
  request; the session the token belongs to is the caller — no argument or header names
  another, and the SDK refuses an MCP session id opened with another credential.
* **One generic target error** (the contract's rule for remote exposure): missing, self
  and ineligible targets are indistinguishable (``AgentTools.generic_target_errors``).
* **Limits before work**: a body cap checked before the body is read (a JSON 413), a
  token bucket per token (429 with ``Retry-After``), the SDK's idle and session limits
  (``hub_http``); deadlines for request headers and bodies, per-address and total
  connection limits (``hub_server``, which runs uvicorn).
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
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from termal_tui.agents.board_tools import BOARD_TOOL_NAMES, BoardTools
from termal_tui.agents.channels import StreamTracker, parse_wake_header, unset_app
from termal_tui.agents.hooks import HOOK_EVENTS
from termal_tui.agents.hub_http import (
    HOOK_PATH,
    MAX_REQUEST_BYTES,
    MCP_PATH,
    BodyLimit,
    Front,
    RateLimit,
    RegistryBusy,
    caller_of,
    is_loopback,
    json_error,
    loopback_hosts,
    loopback_origins,
)
from termal_tui.agents.mcp_server import (
    CHANNEL_METHOD,
    ChannelNotification,
    catalog_server,
    tool_result,
)
from termal_tui.agents.registry import Registry, WouldWait
from termal_tui.agents.tools import AgentTools, ReplayPolicy, as_tool_error
from termal_tui.agents.wake import ChannelWatcher, channel_meta
from termal_tui.core.errors import error_document, http_status_of
from termal_tui.core.formats import BUSY_TIMEOUT_MS, REQUEST_DEADLINE_SECONDS
from termal_tui.core.models import UnreadWakeup
from termal_tui.store.board.writer import BoardWriter, open_board_writer
from termal_tui.store.errors import RetryableError
from termal_tui.store.writer import MailboxWriter, open_writer

logger = logging.getLogger("termal_tui.hub")

__all__ = ["HOOK_PATH", "MCP_PATH", "Hub", "HubLimits", "HubOptions", "is_loopback"]

WAKE_HEADER = "termal-wake"  # a client that takes channel events: ``TermAl-Wake: channel``
LISTENER_HEADER = "termal-listener"  # the shim's ``pid@host``, shown by ``session list``


@dataclass(frozen=True)
class HubLimits:
    max_request_bytes: int = MAX_REQUEST_BYTES
    rate: float = 20.0  # requests per second per token, sustained
    burst: int = 60  # requests per token at once
    max_connections: int = 1000  # open TCP connections, all addresses (JSON 503 beyond)
    max_pending_per_address: int = 32  # connections per address without a valid token yet
    max_held: int = 4000  # idle connections past an address's pending limit, held unread
    hold_timeout: float = 30.0  # seconds such a connection is held before it is closed
    header_timeout: float = 5.0  # seconds a request header may take to arrive
    body_timeout: float = 30.0  # seconds a request body may take, after its header
    max_sessions: int = 1000  # open MCP sessions (the SDK's 503 beyond it)
    session_idle: float = 30 * 60.0  # an MCP session with no request for this long ends
    keep_alive: float = 15.0  # an idle HTTP connection is closed after this long
    drain: float = 30.0  # SIGTERM: how long in-flight calls may take to finish


@dataclass(frozen=True)
class HubOptions:
    db_path: Path | str  # TermAl's SQLite file, or a postgresql:// URL
    host: str = "127.0.0.1"
    port: int = 8765
    certfile: Path | None = None
    keyfile: Path | None = None
    log_level: str = "info"  # the threshold of every line
    request_log_level: str = "info"  # the level of the one line per request
    limits: HubLimits = field(default_factory=HubLimits)
    busy_timeout: float = BUSY_TIMEOUT_MS / 1000
    interval: float = 0.2  # the channel watchers' poll
    # Where TermAl's project list is read (the database's directory; the local state
    # directory when the database is a URL).
    state_path: Path | None = None

    @property
    def local_path(self) -> Path | str:
        return self.state_path if self.state_path is not None else self.db_path

    @property
    def on_postgres(self) -> bool:
        return isinstance(self.db_path, str)


# ------------------------------------------------------------------ identity


class RegistryTokenVerifier:
    """The SDK's ``TokenVerifier``: a token is its session's if its hash is in the registry,
    not revoked, and the session is live. ``client_id`` is the session id."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    async def verify_token(self, token: str) -> AccessToken | None:
        # Read afresh on every request (a revoked token stops at the next one) — or, on
        # PostgreSQL, from the hub's identity cache, which every revocation empties on every
        # hub through a notification (``Registry.known_token``) — at once on the loop when
        # the registry can answer without waiting, else in a worker thread.
        try:
            try:
                session = self.registry.at_once(lambda: self.registry.known_token(token))
            except WouldWait:
                session = await asyncio.to_thread(self.registry.known_token, token)
        except RetryableError as error:  # busy, or the database cannot be reached: 503
            raise RegistryBusy(str(error).rstrip(".")) from None
        except Exception:  # a failing registry lets nobody in
            logger.exception("token check failed")
            return None
        if session is None:
            return None
        return AccessToken(token=token, client_id=session.id, scopes=["mailbox"])


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
                allowed_hosts=loopback_hosts(),
                allowed_origins=loopback_origins(),
            ),
            session_idle_timeout=limits.session_idle,
            max_request_body_size=limits.max_request_bytes,  # BodyLimit answers first
            max_sessions=limits.max_sessions,
            # A call is answered with one JSON body, not an SSE stream per POST: the
            # hub sends nothing during a call (wakes go on the session's GET stream),
            # and an SSE response costs a task group, a ping task and a send timeout
            # per call on the hub's one event loop.
            json_response=True,
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
                self.board_writer, self.registry, session_id, db_path=self.options.local_path
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
            feed = self._registry_feed()
            try:
                async with self.manager.run():
                    yield
            finally:
                background.cancel_scope.cancel()
                self._background = None
                if feed is not None:
                    await feed.close()

    def _registry_feed(self) -> Any:
        """On PostgreSQL: the identity cache and the connection that keeps it honest
        (``store/registry/cache.py``); the hub's calls use it once it listens."""
        if not self.options.on_postgres:
            return None
        from termal_tui.store.postgres.notify import RegistryFeed

        feed = RegistryFeed(str(self.options.db_path), self.registry.enable_cache())
        feed.start()
        return feed

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
            # One table decides the status (busy: 503, retry-safe; a bug: 500) and the
            # machine-readable problem the hook client turns back into an exit code.
            body = {"error": str(failure), "problem": error_document(failure)}
            await JSONResponse(body, status_code=http_status_of(failure))(scope, receive, send)
            return
        if not answered[0]:
            await Response(b"", status_code=204)(scope, receive, send)

    async def health(self, request: Request) -> Response:
        """``doctor --json`` of the hub's database, the file or PostgreSQL (a token is
        needed: it names mailboxes)."""
        if caller_of(request.scope) is None:
            return json_error(
                401, "invalid_token", "Authentication required",
                {"www-authenticate": 'Bearer error="invalid_token"'},
            )  # fmt: skip
        from termal_tui.store.reader import open_reader
        from termal_tui.views.findings import Thresholds, health_report

        async with open_reader(self.options.db_path) as reader:
            report = await health_report(reader, thresholds=Thresholds())
        document = {  # the shape of ``termal-tui doctor --json``
            "healthy": report.healthy,
            "mailboxes": report.mailboxes,
            "unread": report.unread,
            "findings": [finding.to_json() for finding in report.findings],
        }
        return JSONResponse(document)

    def app(self, on_caller: Callable[[Scope], None] | None = None) -> ASGIApp:
        """The ASGI app (``hub_http.Front`` before the routes). ``on_caller(scope)`` runs as
        soon as a request's token is verified (the connection guard's cue)."""
        limits = self.options.limits
        self.streams.app = StreamableHTTPASGIApp(self.manager)
        mcp_app: ASGIApp = BodyLimit(self.streams, limits.max_request_bytes, jsonrpc=True)
        mcp_app = RateLimit(RequireAuthMiddleware(mcp_app, []), limits.rate, limits.burst)
        hook_app: ASGIApp = BodyLimit(self.hook, limits.max_request_bytes, jsonrpc=False)
        hook_app = RateLimit(RequireAuthMiddleware(hook_app, []), limits.rate, limits.burst)
        routes = Starlette(
            routes=[
                Route("/health", self.health, methods=["GET"]),
                Route(MCP_PATH, mcp_app),  # ``Front`` sends the exact path straight there
                Route(HOOK_PATH, hook_app, methods=["POST"]),
            ],
            lifespan=self.lifespan,
        )
        return Front(
            mcp=mcp_app,
            routes=routes,
            hub=self,
            backend=BearerAuthBackend(RegistryTokenVerifier(self.registry)),
            level=logging.getLevelName(self.options.request_log_level.upper()),
            on_caller=on_caller,
        )


def _request_caller(ctx: ServerRequestContext[Any]) -> str | None:
    request = ctx.request
    return caller_of(request.scope) if isinstance(request, Request) else None
