"""``termal-tui mcp --remote URL``: a local stdio MCP server that forwards to a hub.

Claude Code takes channel events only from a stdio server, so an agent on another
machine runs this shim: every tool call goes to the hub (``termal-tui serve``) over MCP
streamable HTTP with the session's bearer token (the token decides who the agent is);
the hub's wake notifications (asked for with ``TermAl-Wake: channel``) become channel
events on this machine, at most one pending per mailbox until the agent reads or
acknowledges it through this shim.

At start-up the shim connects to the hub before it answers its agent: a refused token
or a hub that cannot be reached ends it with one sentence and a non-zero exit (the
agent's client shows the server failed, not connected with nine tools that cannot
work). While connected it pings the hub every ``ping_every`` seconds, which tells the hub
its channel stream is alive; on exit (stdin closed, SIGTERM) it ends its hub session with
a DELETE, so the hub releases its channel at once.

A call that fails in transit reconnects and is sent once more: all nine tools are safe
to replay (a send replays its idempotency key, a satisfied acknowledgement is a no-op).
If that fails too, a send or an acknowledgement that may have reached the hub says its
outcome is unknown, in TermAl's words, so the agent retries with the same key or
re-lists its cursor; a call that never left (connection refused) says nothing was sent.
A call the hub answered with a status that means it did nothing with it (a refused
token, busy, rate-limited, too large: :data:`HUB_STATUSES`, one table) says that, and
whether retrying the same call is safe — never "outcome unknown".
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import httpx2
import mcp_types as types
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from pydantic import BaseModel, ConfigDict

from termal_tui.agents.mcp_server import (
    CHANNEL_CAPABILITY,
    CHANNEL_METHOD,
    ChannelNotification,
    catalog_server,
    error_result,
)
from termal_tui.agents.stdio import answering_stdio
from termal_tui.agents.tools import ACK_OUTCOME_UNKNOWN, SEND_OUTCOME_UNKNOWN, ToolError
from termal_tui.core.errors import ErrorKind

WAKE_HEADER = "TermAl-Wake"  # hub.WAKE_HEADER (not imported: the shim needs no uvicorn)
LISTENER_HEADER = "TermAl-Listener"  # pid@host of this shim, shown by `session list`
SESSION_HEADER = "mcp-session-id"
TOOL_CALL_METHOD = b'"tools/call"'

# Every HTTP status a termal-tui hub answers a tool call with before doing anything with
# it, and what the agent is told: nothing was changed, and what to do. Any other status
# (a 500, a proxy's 502 or 504) or no answer at all may have come after the call was
# done: a send or an acknowledgement then says its outcome is unknown.
HUB_STATUSES: Final[dict[int, str]] = {
    400: "the termal-tui hub refused the request as malformed (400); nothing was changed",
    401: (
        "the token was refused by the termal-tui hub (401); nothing was changed: it is "
        "unknown, revoked, or its session was removed"
    ),
    404: (
        "the termal-tui hub no longer knows this connection's MCP session (404: it "
        "restarted, or the session ended); nothing was changed, so retrying the same call "
        "is safe"
    ),
    413: (
        "the termal-tui hub refused the request as too large (413); nothing was changed: "
        "make it smaller"
    ),
    429: (
        "the termal-tui hub's rate limit for this token was reached (429); nothing was "
        "changed: retry the same call after a pause"
    ),
    503: (
        "the termal-tui hub is busy or stopping (503); nothing was changed, so retrying the "
        "same call is safe"
    ),
}
PROTOCOL_HEADER = "mcp-protocol-version"
_ENGAGING = {
    "termal_read_mailbox": "mailboxId",
    "termal_acknowledge_mailbox": "mailboxId",
}


class ChannelEvent(BaseModel):
    model_config = ConfigDict(extra="allow")
    content: str
    meta: dict[str, str] = {}


@dataclass(frozen=True)
class RemoteOptions:
    url: str
    token: str
    # Other hubs of the same database (PostgreSQL), tried in turn when the current one
    # cannot be reached or its connection breaks; a call that failed in transit is sent
    # again, exactly, through the next one.
    fallbacks: tuple[str, ...] = ()
    channel: bool = False
    timeout: float = 60.0  # one tool call, end to end
    ping_every: float = 5.0  # while connected: the hub counts the stream dead after 3 missed
    startup: float = 15.0  # the first connection must be made within this


class StartupError(Exception):
    """The shim cannot work (its token was refused, the hub cannot be reached): one
    sentence, said before it answers its agent."""


class HubLink:
    """One MCP client session to the hub, owned by one task, reopened when it breaks."""

    def __init__(self, options: RemoteOptions, on_wake: Any) -> None:
        self.options = options
        self.on_wake = on_wake
        self.client: ClientSession | None = None
        self.failure: BaseException | None = None
        self._started = 0  # connection attempts begun
        self._failed_at = 0  # the attempt whose failure ``failure`` is
        self._changed = anyio.Event()
        self._broken = anyio.Event()
        self.last_status: int | None = None  # of the last HTTP response from the hub
        self.call_status: int | None = None  # of the last tool call's HTTP response
        self.mcp_session: str | None = None
        self._protocol: str | None = None
        self._http: httpx2.AsyncClient | None = None
        self.urls = (options.url, *options.fallbacks)
        self._at = 0  # the hub in use: an index into ``urls``
        self.failed_url = options.url  # the hub of the last failed attempt

    @property
    def url(self) -> str:
        """The hub this shim talks to now."""
        return self.urls[self._at]

    async def _on_request(self, request: httpx2.Request) -> None:
        protocol = request.headers.get(PROTOCOL_HEADER)
        if protocol:
            self._protocol = protocol

    async def _on_response(self, response: httpx2.Response) -> None:
        self.last_status = response.status_code
        request = response.request
        with contextlib.suppress(httpx2.RequestNotRead):
            if request.method == "POST" and TOOL_CALL_METHOD in request.content[:256]:
                self.call_status = response.status_code  # not a ping's or the stream's
        session = response.headers.get(SESSION_HEADER)
        if session:
            self.mcp_session = session

    def headers(self) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.options.token}"}
        if self.options.channel:
            headers[WAKE_HEADER] = f"channel; ping={self.options.ping_every:g}"
            headers[LISTENER_HEADER] = f"{os.getpid()}@{socket.gethostname()}"
        return headers

    async def _ping(self, client: ClientSession) -> None:
        """Tell the hub this shim is there (its channel stream is judged alive by it)."""
        while True:
            await anyio.sleep(self.options.ping_every)
            try:
                with anyio.fail_after(self.options.timeout):
                    await client.send_ping()
            except Exception:
                self.broke(client)
                return

    async def close(self) -> None:
        """End this shim's hub session (a DELETE), so the hub releases its channel now
        rather than when the stream is noticed gone. Best effort, two seconds at most."""
        http, session = self._http, self.mcp_session
        if http is None or session is None or self.client is None:
            return
        headers = {SESSION_HEADER: session}
        if self._protocol:
            headers[PROTOCOL_HEADER] = self._protocol
        with anyio.move_on_after(2.0, shield=True), contextlib.suppress(Exception):
            await http.delete(self.url, headers=headers)

    def _bump(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def run(self) -> None:
        headers = self.headers()
        binding = NotificationBinding(
            method=CHANNEL_METHOD, params_type=ChannelEvent, handler=self.on_wake
        )
        failures = 0  # in a row: after each round of the hubs the pause doubles, up to 5 s
        while True:
            self._started += 1
            attempt = self._started
            self._broken = anyio.Event()
            try:
                # A broken connection is abandoned, not closed politely: closing would
                # wait on a hub that is gone (its DELETE, its event stream's retries).
                with anyio.CancelScope() as scope:
                    self.mcp_session, self.last_status = None, None
                    async with (
                        _http_client(headers) as http,
                        streamable_http_client(
                            self.url, http_client=http, terminate_on_close=False
                        ) as streams,
                        ClientSession(
                            streams[0], streams[1], notification_bindings=[binding]
                        ) as client,
                    ):
                        http.event_hooks = {
                            "request": [self._on_request],
                            "response": [self._on_response],
                        }
                        self._http = http
                        with anyio.fail_after(self.options.timeout):
                            await client.initialize()
                        self.client, self.failure, failures = client, None, 0
                        self._bump()
                        async with anyio.create_task_group() as pinging:
                            pinging.start_soon(self._ping, client)
                            await self._broken.wait()
                            pinging.cancel_scope.cancel()
                        scope.cancel()
                failure: BaseException = ConnectionError("the connection to the hub broke")
            except Exception as error:  # unreachable, refused (401), gone: said per call
                failure = error
            self.client, self.failure, self._failed_at = None, failure, attempt
            self._http = None
            self.failed_url = self.url
            self._at = (self._at + 1) % len(self.urls)  # the next hub, if there is one
            self._bump()
            failures += 1
            if failures % len(self.urls) == 0:  # every hub tried since the last success
                await anyio.sleep(min(5.0, 0.25 * 2 ** (failures // len(self.urls) - 1)))

    async def session(self, after: int = 0) -> ClientSession:
        """The open session; or the failure of a connection attempt begun after attempt
        number ``after``."""
        with anyio.fail_after(self.options.timeout):
            while True:
                if self.client is not None:
                    return self.client
                if self.failure is not None and self._failed_at > after:
                    raise self.failure
                await self._changed.wait()

    def broke(self, client: ClientSession) -> None:
        if self.client is client:
            self.client = None  # nobody else sends on it
            self._broken.set()

    async def call(self, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """Forward one call; if it failed in transit, send it once more over a connection
        opened after the failure."""
        after = 0
        last: BaseException | None = None
        status: int | None = None
        maybe_sent = False
        for _attempt in range(2):
            client: ClientSession | None = None
            try:
                client = await self.session(after)
                self.last_status = self.call_status = None
                with anyio.fail_after(self.options.timeout):
                    return await client.call_tool(name, dict(arguments))
            except Exception as error:
                last = error
                after = self._started
                status = None if _is_connect_error(error) else self.call_status
                if client is not None:
                    maybe_sent = maybe_sent or not self.never_sent(error, status)
                    self.broke(client)
        assert last is not None
        raise CallFailed(last, maybe_sent=maybe_sent, status=status)

    @staticmethod
    def never_sent(error: BaseException, status: int | None) -> bool:
        """The hub did nothing with the request: the connection was refused, or the hub
        answered with a status of :data:`HUB_STATUSES` (it refused the call unread)."""
        return status in HUB_STATUSES or _is_connect_error(error)

    async def ready(self) -> None:
        """Wait for the first connection; raise StartupError with the reason when the shim
        cannot work (a refused token, no hub that can be reached)."""
        after = 0
        try:
            with anyio.fail_after(self.options.startup):
                while True:
                    try:
                        await self.session(after)
                        return
                    except Exception as error:
                        # A refused token is refused by every hub (they share the
                        # registry); a hub that cannot be reached may have a sibling.
                        if self.last_status == 401 or self._failed_at >= len(self.urls):
                            raise StartupError(self.startup_failure(error)) from None
                        after = self._failed_at
        except TimeoutError:
            raise StartupError(
                f"the termal-tui hub at {self._hubs()} did not answer within "
                f"{self.options.startup:g} s; this shim cannot work without it"
            ) from None

    def _hubs(self) -> str:
        return self.urls[0] if len(self.urls) == 1 else " or ".join(self.urls)

    def startup_failure(self, error: BaseException) -> str:
        url = self.failed_url
        if self.last_status == 401:
            return (
                f"the token was refused by the hub at {url} (401): it is unknown, revoked, "
                "or its session was removed; mint one with `termal-tui session token NAME` "
                "on the hub"
            )
        if _is_connect_error(error):
            where = (
                f"the hub at {url} cannot"
                if len(self.urls) == 1
                else f"none of the hubs at {', '.join(self.urls)} can"
            )
            return (
                f"nothing was sent: {where} be reached ({_detail(error)}); is "
                "`termal-tui serve` running there?"
            )
        if self.last_status is not None and self.last_status >= 400:
            return f"the hub at {url} answered {self.last_status} to the MCP handshake"
        return f"the hub at {url} could not be used ({_detail(error)})"


class CallFailed(Exception):
    """A forwarded call failed: whether it may have been done by a hub (some attempt may
    have reached one and been acted on), and the HTTP status the hub answered the last
    attempt with, if it answered."""

    def __init__(
        self,
        error: BaseException,
        *,
        maybe_sent: bool,
        refused: bool = False,
        status: int | None = None,
    ) -> None:
        super().__init__(_detail(error))
        self.error = error
        self.maybe_sent = maybe_sent
        self.status = 401 if refused and status is None else status

    @property
    def refused(self) -> bool:
        return self.status == 401


def _innermost(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]  # the task group's wrapping says nothing
    return error


def _is_connect_error(error: BaseException) -> bool:
    seen: BaseException | None = error
    while seen is not None:
        seen = _innermost(seen)
        if isinstance(seen, httpx2.ConnectError | ConnectionRefusedError):
            return True
        seen = seen.__cause__
    return False


def _detail(error: BaseException) -> str:
    error = _innermost(error)
    return f"{type(error).__name__}: {error}".rstrip(": ")


def _transit_failure(name: str, error: BaseException) -> str:
    if isinstance(error, CallFailed):
        if not error.maybe_sent and error.status in HUB_STATUSES:
            return HUB_STATUSES[error.status]
        if not error.maybe_sent:
            return (
                "nothing was sent: the termal-tui hub could not be reached, so nothing was "
                f"changed; retry the same call when it is up ({error})"
            )
        error = error.error
    detail = _detail(error)
    if name == "termal_send_to_session":
        return f"{SEND_OUTCOME_UNKNOWN}: the hub did not answer ({detail})"
    if name == "termal_acknowledge_mailbox":
        return f"{ACK_OUTCOME_UNKNOWN}: the hub did not answer ({detail})"
    return f"the termal-tui hub did not answer; this call changes nothing, so retry it ({detail})"


def transit_error(name: str, error: BaseException) -> ToolError:
    """A call that failed on its way to the hub or back, as a tool error: the sentence
    above, and its kind — the token refused, nothing sent (safe to repeat), or an outcome
    this shim cannot know (repeat the exact same call)."""
    if isinstance(error, CallFailed) and error.refused:
        kind = ErrorKind.UNAUTHORIZED
    elif isinstance(error, CallFailed) and not error.maybe_sent:
        kind = ErrorKind.UNREACHABLE
    else:
        kind = ErrorKind.UNKNOWN_OUTCOME
    return ToolError(kind, _transit_failure(name, error), bridge=True)


async def serve_remote(options: RemoteOptions) -> None:
    """Serve one agent over stdio, every call forwarded to the hub, until stdin closes."""
    local: list[ServerSession] = []
    waiting: dict[str, ChannelEvent] = {}  # wakes that arrived before the client was ready
    pending: set[str] = set()  # mailboxes with a wake pushed here and not yet engaged

    async def deliver(event: ChannelEvent) -> None:
        mailbox = event.meta.get("mailbox_id", "")
        if mailbox in pending:
            return  # one pending wake per mailbox
        if not local:
            waiting[mailbox] = event  # the newest covers the older
            return
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await local[0].send_notification(
                ChannelNotification(  # type: ignore[arg-type]
                    method=CHANNEL_METHOD, params=event.model_dump()
                )
            )
            pending.add(mailbox)

    async def on_wake(event: ChannelEvent) -> None:
        if options.channel:
            await deliver(event)

    link = HubLink(options, on_wake)

    async def call(
        _ctx: ServerRequestContext[Any], name: str, arguments: Mapping[str, Any]
    ) -> types.CallToolResult:
        try:
            result = await link.call(name, arguments)
        except Exception as error:
            return error_result(transit_error(name, error))
        if not result.is_error:
            _engaged(name, arguments, result, pending)
        return result

    async def on_initialized(
        ctx: ServerRequestContext[Any], _params: types.NotificationParams
    ) -> None:
        local.append(ctx.session)
        for event in list(waiting.values()):
            waiting.pop(event.meta.get("mailbox_id", ""), None)
            await deliver(event)

    server = catalog_server(call, on_initialized)
    experimental: dict[str, dict[str, Any]] | None = (
        {CHANNEL_CAPABILITY: {}} if options.channel else None
    )
    failure: StartupError | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(link.run)
        try:
            await link.ready()
        except StartupError as error:
            failure = error
            group.cancel_scope.cancel()
        if failure is None:
            with anyio.CancelScope() as serving:

                async def on_signal() -> None:
                    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
                        async for _signal in signals:
                            # SIGTERM is an exit like stdin's end; but stdin is read in a
                            # thread no cancellation reaches, so end the hub session here
                            # and leave at once.
                            serving.cancel()
                            await link.close()
                            with contextlib.suppress(OSError, ValueError):
                                sys.stdout.flush()
                            os._exit(0)

                group.start_soon(on_signal)
                async with answering_stdio() as (read_stream, write_stream):
                    await server.run(
                        read_stream,
                        write_stream,
                        server.create_initialization_options(
                            experimental_capabilities=experimental
                        ),
                    )
            await link.close()  # the hub releases this shim's channel now
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure


def _http_client(headers: dict[str, str]) -> httpx2.AsyncClient:
    """The shim's HTTP client, with the MCP transports' timeouts (30 s to connect, write
    and wait for a connection; 300 s to read, since the hub holds a stream open). Built
    with httpx2's public API: the SDK's own helper lives in a private module."""
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))


def _engaged(
    name: str, arguments: Mapping[str, Any], result: types.CallToolResult, pending: set[str]
) -> None:
    """A read or acknowledgement through this shim consumes the mailbox's pending wake."""
    mailbox: Any = None
    if name in _ENGAGING:
        mailbox = arguments.get(_ENGAGING[name])
    elif name == "termal_read_mailbox_message":
        with contextlib.suppress(ValueError, AttributeError, IndexError, TypeError):
            mailbox = json.loads(result.content[0].text).get("mailboxId")  # type: ignore[union-attr]
    if isinstance(mailbox, str):
        pending.discard(mailbox.strip())
