"""The hub's view of a channel stream (``channels.StreamTracker``), driven through plain
ASGI calls and a driven clock: open, closed, ended, and silent (missed pings)."""

from __future__ import annotations

import anyio

from termal_tui.agents.channels import StreamTracker, parse_wake_header
from tests.helpers import DrivenClock


def _scope(method: str, session: str = "s1") -> dict:
    return {"type": "http", "method": method, "headers": [(b"mcp-session-id", session.encode())]}


async def _noop_receive() -> dict:
    return {"type": "http.disconnect"}


async def test_a_stream_is_live_while_its_get_is_open_and_released_when_it_closes():
    clock = DrivenClock(100.0)
    release = anyio.Event()

    async def app(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if scope["method"] == "GET":
            await release.wait()  # the SSE stream stays open until the client goes

    async def send(_message) -> None:
        pass

    tracker = StreamTracker(app, clock)
    stream = tracker.stream("s1")
    assert not stream.live()
    async with anyio.create_task_group() as group:
        group.start_soon(tracker, _scope("GET"), _noop_receive, send)
        await anyio.wait_all_tasks_blocked()
        assert stream.open_streams == 1 and stream.live()
        release.set()
    assert stream.open_streams == 0 and not stream.live()


async def test_a_silent_stream_is_dead_after_three_missed_pings_and_a_ping_revives_it():
    clock = DrivenClock(100.0)
    release = anyio.Event()

    async def app(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if scope["method"] == "GET":
            await release.wait()

    async def send(_message) -> None:
        pass

    tracker = StreamTracker(app, clock)
    stream = tracker.stream("s1")
    stream.ping_every = 5.0
    async with anyio.create_task_group() as group:
        group.start_soon(tracker, _scope("GET"), _noop_receive, send)
        await anyio.wait_all_tasks_blocked()
        clock.advance(14.0)
        assert stream.live()
        clock.advance(2.0)  # 16 s without a word: three pings missed
        assert not stream.live()
        await tracker(_scope("POST"), _noop_receive, send)  # a ping
        assert stream.live()
        await tracker(_scope("DELETE"), _noop_receive, send)
        assert stream.ended and not stream.live()
        release.set()


async def test_streams_nobody_asked_about_are_forgotten_when_they_close():
    async def app(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def send(_message) -> None:
        pass

    tracker = StreamTracker(app, DrivenClock(100.0))
    await tracker(_scope("GET", "other"), _noop_receive, send)
    assert tracker.streams == {}


def test_the_wake_header():
    assert parse_wake_header(None) == (False, None)
    assert parse_wake_header("channel") == (True, None)
    assert parse_wake_header("Channel; ping=5") == (True, 5.0)
    assert parse_wake_header("channel; ping=nope") == (True, None)
    assert parse_wake_header("channel; ping=-1") == (True, None)
    assert parse_wake_header("poll") == (False, None)
