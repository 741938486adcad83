"""The hub's HTTP layer: the ASGI middleware around :class:`~termal_tui.agents.hub.Hub`'s app.

Outermost first, as ``Hub.app`` stacks them: :class:`Front` (one line per request; refuses
new calls while the hub drains; the bearer token checked, and the connection guard told
when it is valid; the MCP endpoint routed straight to its app), then per route
:class:`RateLimit` (a token bucket per token), the SDK's ``RequireAuthMiddleware`` (401)
and :class:`BodyLimit` (a JSON 413 before anything larger than the contract admits is
read).
Every refusal here is JSON: a JSON-RPC error on ``/mcp``, ``{"error", "error_description"}``
elsewhere. No private attribute of the MCP SDK is used.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp_types import JSONRPCError
from starlette.authentication import AuthCredentials, AuthenticationBackend, UnauthenticatedUser
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from termal_tui.agents.stdio import parse_line
from termal_tui.core.errors import JSONRPC_PARSE_ERROR
from termal_tui.core.formats import MAX_BODY_BYTES

if TYPE_CHECKING:
    from termal_tui.agents.hub import Hub

logger = logging.getLogger("termal_tui.hub")

MCP_PATH = "/mcp"
HOOK_PATH = "/hook"
MCP_SESSION_ID_HEADER = "mcp-session-id"

# The largest request the contract admits: a 256 KiB body whose every byte is a control
# character JSON-escaped as ``\u00XX`` (6 bytes each), an idempotency or board key of up
# to 4 KiB escaped the same way, and the JSON-RPC envelope around them. Anything larger
# is refused before it is read.
MAX_KEY_BYTES = 4 * 1024
ESCAPED = 6  # ``\u00XX``: the most bytes one byte of a JSON string can take on the wire
ENVELOPE_BYTES = 64 * 1024
MAX_REQUEST_BYTES = ESCAPED * (MAX_BODY_BYTES + MAX_KEY_BYTES) + ENVELOPE_BYTES

# JSON-RPC's "invalid request": what an MCP client is told about a body it may not send.
INVALID_REQUEST = -32600


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def loopback_hosts() -> list[str]:
    """The Host headers a loopback hub answers (DNS rebinding protection); a default
    port (80, 443) is sent without one."""
    return [*LOOPBACK_HOSTS, *(f"{host}:*" for host in LOOPBACK_HOSTS)]


def loopback_origins() -> list[str]:
    """The browser origins a loopback hub admits: its own host names, over HTTP or TLS,
    with or without a port."""
    return [
        f"{scheme}://{host}{port}"
        for scheme in ("http", "https")
        for host in LOOPBACK_HOSTS
        for port in ("", ":*")
    ]


def caller_of(scope: Scope) -> str | None:
    user = scope.get("user")
    return user.access_token.client_id if isinstance(user, AuthenticatedUser) else None


def header(scope: Scope, name: str) -> str | None:
    key = name.lower().encode("latin-1")
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == key), None)


class RegistryBusy(Exception):
    """A token could not be checked: the session registry is busy or cannot be reached
    (the token verifier raises it; :class:`Front` answers 503, retry-safe)."""


def json_error(status: int, error: str, description: str, headers: dict[str, str]) -> Response:
    return JSONResponse(
        {"error": error, "error_description": description}, status_code=status, headers=headers
    )


def jsonrpc_error(status: int, code: int, message: str, headers: dict[str, str]) -> Response:
    """An HTTP refusal in JSON-RPC's error shape (the request's id is not known: null)."""
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}},
        status_code=status,
        headers=headers,
    )


class BodyLimit:
    """Refuses a body over ``limit`` bytes with a JSON 413 — on the declared length
    before any of it is read, or as soon as a streamed body passes it. The rest of that
    body is read and dropped by the server (closing at once would reset the connection
    under a client still writing, and it would never see the answer); the connection
    guard's body deadline bounds how long that may take. ``jsonrpc``: answer in
    JSON-RPC's error shape (the MCP endpoint)."""

    def __init__(self, app: ASGIApp, limit: int, *, jsonrpc: bool) -> None:
        self.app = app
        self.limit = limit
        self.jsonrpc = jsonrpc

    def refusal(self) -> Response:
        text = (
            f"the request body is larger than the {self.limit} bytes this hub accepts "
            "(a message body is at most 256 KiB); nothing was done"
        )
        headers: dict[str, str] = {}
        if self.jsonrpc:
            return jsonrpc_error(413, INVALID_REQUEST, text, headers)
        return json_error(413, "request_too_large", text, headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > self.limit:
            await self.refusal()(scope, receive, send)
            return
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        trailing: Message | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                trailing = message
                break
            body = message.get("body", b"")
            size += len(body)
            if size > self.limit:
                await self.refusal()(scope, receive, send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        queued: list[Message] = [{"type": "http.request", "body": b"".join(chunks)}]
        if trailing is not None:
            queued.append(trailing)

        async def replay() -> Message:
            return queued.pop(0) if queued else await receive()

        if self.jsonrpc and scope["method"] == "POST":
            send = _answered_as_stdio(queued[0]["body"], send)
        await self.app(scope, replay, send)


def _answered_as_stdio(body: bytes, send: Send) -> Send:
    """``send`` for the MCP endpoint, answering a body that is not a JSON-RPC 2.0 message
    as the same line is answered over stdio (``agents/stdio.py``): ``-32600 Invalid
    Request`` with the request's id where it can be read — not the SDK's ``-32602
    Validation error``, nor a 202 for an ``id`` that is an object (the SDK takes it for a
    notification, and the client waits for ever). Only a 400 or a 202 is looked at, so a
    call that was answered costs nothing more."""
    start: Message | None = None
    parts: list[bytes] = []

    async def answer(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start" and message["status"] in (400, 202):
            start = message
            return
        if start is None or message["type"] != "http.response.body":
            await send(message)
            return
        parts.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        refused = parse_line(body) if body.strip() else None
        if not isinstance(refused, JSONRPCError) or refused.error.code == JSONRPC_PARSE_ERROR:
            # A message after all, or a parse error (the SDK's answer says the same).
            await send(start)
            await send({"type": "http.response.body", "body": b"".join(parts)})
            return
        payload = refused.model_dump_json(by_alias=True, exclude_unset=True).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
        ]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    return answer


class RateLimit:
    """A token bucket per token (after authentication): ``rate`` a second, ``burst`` at once."""

    def __init__(
        self, app: ASGIApp, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.app = app
        self.rate = rate
        self.burst = float(burst)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def _take(self, key: str) -> float:
        """0 if a request may go now, else seconds until one may."""
        now = self.clock()
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
                response = json_error(
                    429,
                    "rate_limited",
                    f"more than {self.burst:g} requests at once or {self.rate:g} a second "
                    f"for this token; retry after {seconds} s (nothing was done)",
                    {"retry-after": str(seconds)},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Front:
    """The hub's one ASGI layer before the routes, for every request, in this order:

    1. **Log**: one line per request (method, path, MCP session, status, milliseconds,
       caller) at ``level``; the response is watched only when that line is written.
    2. **Gate**: counts the requests that may change something (POST, DELETE) while they
       run (``hub.inflight``), and refuses new ones once the hub is stopping (503:
       nothing was done, retry later).
    3. **Identity**: the bearer token checked by ``backend`` (the SDK's
       ``BearerAuthBackend``), the result in ``scope["user"]``/``scope["auth"]`` and the
       SDK's auth context, as starlette's authentication and the SDK's
       ``AuthContextMiddleware`` would set them; ``on_caller(scope)`` (the connection
       guard's cue) as soon as the token is known to be valid, before the body is read.
    4. **Route**: the MCP endpoint straight to ``mcp`` (the rate limit, the SDK's 401,
       the body cap, then the SDK); everything else to ``routes`` (starlette: the hook,
       health, 404/405, the lifespan).

    One layer instead of starlette's middleware stack and router on every MCP call: each
    layer cost a coroutine, a wrapped ``send`` and scope copies, on the hub's one event
    loop that serves every agent."""

    def __init__(
        self,
        *,
        mcp: ASGIApp,
        routes: ASGIApp,
        hub: Hub,
        backend: AuthenticationBackend,
        level: int,
        on_caller: Callable[[Scope], None] | None = None,
    ) -> None:
        self.mcp = mcp
        self.routes = routes
        self.hub = hub
        self.backend = backend
        self.level = level
        self.on_caller = on_caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.routes(scope, receive, send)  # the lifespan
            return
        if not logger.isEnabledFor(self.level):
            await self._gated(scope, receive, send)
            return
        started = time.monotonic()
        status = [0]

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self._gated(scope, receive, watched)
        finally:
            client = scope.get("client")
            logger.log(
                self.level,
                "%s %s %s %s %d %.1fms %s",
                f"{client[0]}:{client[1]}" if client else "-",
                scope["method"],
                scope["path"],
                header(scope, MCP_SESSION_ID_HEADER) or "-",
                status[0],
                (time.monotonic() - started) * 1000,
                caller_of(scope) or "-",
            )

    async def _gated(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("POST", "DELETE"):
            await self._authenticated(scope, receive, send)
            return
        hub = self.hub
        if hub.draining:
            response = json_error(
                503,
                "stopping",
                "the hub is stopping; nothing was done: retry the same request",
                {"retry-after": "5", "connection": "close"},
            )
            await response(scope, receive, send)
            return
        hub.inflight += 1
        try:
            await self._authenticated(scope, receive, send)
        finally:
            hub.inflight -= 1

    async def _authenticated(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            found = await self.backend.authenticate(HTTPConnection(scope))
        except RegistryBusy as busy:
            # The token could not be checked (the registry's database is busy or cannot
            # be reached): not a refusal of the token, a retryable moment.
            response = json_error(
                503, "busy", f"{busy}; nothing was done: retry the same request",
                {"retry-after": "1"},
            )  # fmt: skip
            await response(scope, receive, send)
            return
        if found is None:
            scope["auth"], scope["user"] = AuthCredentials(), UnauthenticatedUser()
            await self._route(scope, receive, send)
            return
        scope["auth"], scope["user"] = found
        user = found[1]
        if not isinstance(user, AuthenticatedUser):
            await self._route(scope, receive, send)
            return
        if self.on_caller is not None:
            self.on_caller(scope)
        token = auth_context_var.set(user)
        try:
            await self._route(scope, receive, send)
        finally:
            auth_context_var.reset(token)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == MCP_PATH and not scope.get("root_path"):
            await self.mcp(scope, receive, send)
        else:
            await self.routes(scope, receive, send)
