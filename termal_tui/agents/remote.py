"""``termal-tui mcp --remote URL``: a local stdio MCP server that forwards to a hub.

Claude Code takes channel events only from a stdio server, so an agent on another
machine runs this shim: every tool call goes to the hub (``termal-tui serve``) over MCP
streamable HTTP with the session's bearer token (the token decides who the agent is);
the hub's wake notifications (asked for with ``TermAl-Wake: channel``) become channel
events on this machine, at most one pending per mailbox until the agent reads or
acknowledges it through this shim.

A call that fails in transit reconnects and is sent once more: all nine tools are safe
to replay (a send replays its idempotency key, a satisfied acknowledgement is a no-op).
If that fails too, a send or an acknowledgement says its outcome is unknown, in TermAl's
words, so the agent retries with the same key or re-lists its cursor.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import BaseModel, ConfigDict

from termal_tui.agents.mcp_server import (
    CHANNEL_CAPABILITY,
    CHANNEL_METHOD,
    ChannelNotification,
    catalog_server,
    tool_result,
)
from termal_tui.agents.tools import ACK_OUTCOME_UNKNOWN, SEND_OUTCOME_UNKNOWN

WAKE_HEADER = "TermAl-Wake"  # hub.WAKE_HEADER (not imported: the shim needs no uvicorn)
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
    channel: bool = False
    timeout: float = 60.0  # one tool call, end to end


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

    def _bump(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.options.token}"}
        if self.options.channel:
            headers[WAKE_HEADER] = "channel"
        binding = NotificationBinding(
            method=CHANNEL_METHOD, params_type=ChannelEvent, handler=self.on_wake
        )
        failures = 0  # in a row: the pause between attempts doubles, up to 5 s
        while True:
            self._started += 1
            attempt = self._started
            self._broken = anyio.Event()
            try:
                # A broken connection is abandoned, not closed politely: closing would
                # wait on a hub that is gone (its DELETE, its event stream's retries).
                with anyio.CancelScope() as scope:
                    async with (
                        create_mcp_http_client(headers=headers) as http,
                        streamable_http_client(
                            self.options.url, http_client=http, terminate_on_close=False
                        ) as streams,
                        ClientSession(
                            streams[0], streams[1], notification_bindings=[binding]
                        ) as client,
                    ):
                        with anyio.fail_after(self.options.timeout):
                            await client.initialize()
                        self.client, self.failure, failures = client, None, 0
                        self._bump()
                        await self._broken.wait()
                        scope.cancel()
                failure: BaseException = ConnectionError("the connection to the hub broke")
            except Exception as error:  # unreachable, refused (401), gone: said per call
                failure = error
            self.client, self.failure, self._failed_at = None, failure, attempt
            self._bump()
            await anyio.sleep(min(5.0, 0.25 * 2**failures))
            failures += 1

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
        for _attempt in range(2):
            client: ClientSession | None = None
            try:
                client = await self.session(after)
                with anyio.fail_after(self.options.timeout):
                    return await client.call_tool(name, dict(arguments))
            except Exception as error:
                last = error
                after = self._started
                if client is not None:
                    self.broke(client)
        assert last is not None
        raise last


def _transit_failure(name: str, error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]  # the task group's wrapping says nothing
    detail = f"{type(error).__name__}: {error}".rstrip(": ")
    if name == "termal_send_to_session":
        return f"{SEND_OUTCOME_UNKNOWN}: the hub did not answer ({detail})"
    if name == "termal_acknowledge_mailbox":
        return f"{ACK_OUTCOME_UNKNOWN}: the hub did not answer ({detail})"
    return f"the termal-tui hub could not be reached; nothing was changed ({detail})"


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
            return tool_result(_transit_failure(name, error), is_error=True)
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
    async with anyio.create_task_group() as group:
        group.start_soon(link.run)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(
                read_stream,
                write_stream,
                server.create_initialization_options(experimental_capabilities=experimental),
            )
        group.cancel_scope.cancel()


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
