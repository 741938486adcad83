"""The hub's view of each MCP session's channel stream, from the requests themselves.

A remote shim (``termal-tui mcp --remote --channel``) takes its wakes on the MCP GET
stream of its hub session. :class:`StreamTracker` wraps the hub's MCP endpoint (plain
ASGI: no private attribute of the SDK) and records, per MCP session id, how many GET
streams are open (one opens when the response starts, and closes when the request
ends: the client went away, the connection dropped, the hub ended it), when the client
was last heard from (any request: the shim pings every few seconds), and whether the
session was ended (DELETE). The channel code in ``hub.py`` runs a session's watcher
only while its stream is :meth:`ChannelStream.live`, and releases it the moment that
stops.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SESSION_HEADER = b"mcp-session-id"
# A stream that announced pings (``TermAl-Wake: channel; ping=N``) is dead after this many
# missed: the network between shim and hub may be gone with no connection ever closing.
MISSED_PINGS = 3


@dataclass
class ChannelStream:
    """What the hub knows of one MCP session's stream (see the module's docstring)."""

    clock: Callable[[], float]
    open_streams: int = 0
    last_seen: float = 0.0
    ended: bool = False
    ping_every: float | None = None  # announced by the client; None: no staleness rule
    asked: bool = False  # the channel code watches it (else forgotten once closed)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def changed(self) -> None:
        event, self._changed = self._changed, anyio.Event()
        event.set()

    async def wait_changed(self, timeout: float) -> None:
        """Until something changes, or ``timeout`` (staleness is a matter of time)."""
        with anyio.move_on_after(timeout):
            await self._changed.wait()

    def live(self) -> bool:
        """Open, not ended, and (when the client pings) heard from lately."""
        if self.ended or self.open_streams <= 0:
            return False
        if self.ping_every is None:
            return True
        return self.clock() - self.last_seen <= self.ping_every * MISSED_PINGS


class WakeRequest(NamedTuple):
    """``TermAl-Wake: channel[; ping=N]``: the client takes wakes, and pings every N s."""

    channel: bool
    ping_every: float | None


def parse_wake_header(value: str | None) -> WakeRequest:
    parts = [part.strip().lower() for part in (value or "").split(";")]
    if parts[0] != "channel":
        return WakeRequest(False, None)
    for part in parts[1:]:
        key, _, number = part.partition("=")
        if key.strip() == "ping":
            with contextlib.suppress(ValueError):
                every = float(number)
                if 0 < every <= 3600:
                    return WakeRequest(True, every)
    return WakeRequest(True, None)


async def unset_app(_scope: Scope, _receive: Receive, _send: Send) -> None:
    raise RuntimeError("StreamTracker.app was not set")


class StreamTracker:
    """ASGI middleware around the MCP endpoint that keeps a :class:`ChannelStream` for
    each MCP session the channel code asked about (:meth:`stream`)."""

    def __init__(self, app: ASGIApp, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.clock = clock
        self.streams: dict[str, ChannelStream] = {}

    def stream(self, mcp_session: str) -> ChannelStream:
        """The stream of one MCP session, watched by the channel code until it forgets it."""
        found = self._entry(mcp_session)
        found.asked = True
        return found

    def _entry(self, mcp_session: str) -> ChannelStream:
        found = self.streams.get(mcp_session)
        if found is None:
            found = ChannelStream(self.clock, last_seen=self.clock())
            self.streams[mcp_session] = found
        return found

    def forget(self, mcp_session: str) -> None:
        self.streams.pop(mcp_session, None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k == SESSION_HEADER), None
        )
        if session is None:
            await self.app(scope, receive, send)
            return
        # A GET may open before the channel code has asked about its session (the
        # initialized notification is handled concurrently): every session with a GET is
        # tracked; one never asked about is forgotten when its stream closes.
        stream = self.streams.get(session)
        method = scope["method"]
        if stream is not None:
            stream.last_seen = self.clock()
            stream.changed()
        if method == "GET":
            await self._get(session, scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            if method == "DELETE" and stream is not None:
                stream.ended = True
                stream.changed()

    async def _get(self, session: str, scope: Scope, receive: Receive, send: Send) -> None:
        stream = self._entry(session)
        opened = [False]

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 200:
                opened[0] = True
                stream.open_streams += 1
                stream.last_seen = self.clock()
                stream.changed()
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            if opened[0]:
                stream.open_streams -= 1
                stream.changed()
            if stream.open_streams <= 0 and not stream.asked:
                self.streams.pop(session, None)
