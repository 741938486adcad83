"""The hub's one ASGI layer before its routes (``hub_http.Front``), in process: who the
caller is, the drain gate, the log line, and where each path goes."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials
from starlette.requests import HTTPConnection
from starlette.types import Message, Receive, Scope, Send

from termal_tui.agents.hub_http import MCP_PATH, Front, RegistryBusy, caller_of


class Backend:
    """``Bearer good`` is session-x; ``Bearer busy`` cannot be checked (the registry is
    busy); anything else is nobody."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, Any] | None:
        if conn.headers.get("authorization") == "Bearer busy":
            raise RegistryBusy("the session registry is busy")
        if conn.headers.get("authorization") != "Bearer good":
            return None
        token = AccessToken(token="good", client_id="session-x", scopes=["mailbox"])
        return AuthCredentials(["mailbox"]), AuthenticatedUser(token)


class App:
    """An endpoint that notes what it saw and answers ``status``."""

    def __init__(self, hub: Any, status: int) -> None:
        self.hub = hub
        self.status = status
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = get_access_token()
        self.seen.append(
            {
                "path": scope["path"],
                "caller": caller_of(scope),
                "context": token.client_id if token else None,
                "inflight": self.hub.inflight,
            }
        )
        await send({"type": "http.response.start", "status": self.status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


def front(hub: Any, marked: list[Scope]) -> tuple[Front, App, App]:
    mcp, routes = App(hub, 200), App(hub, 404)
    app = Front(
        mcp=mcp,
        routes=routes,
        hub=hub,
        backend=Backend(),
        level=logging.INFO,
        on_caller=marked.append,
    )
    return app, mcp, routes


async def request(
    app: Front, method: str, path: str, token: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    headers = [(b"host", b"127.0.0.1")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": b"", "headers": headers, "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
    }  # fmt: skip
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    fields = {k.decode().lower(): v.decode() for k, v in start.get("headers", [])}
    return start["status"], fields, body


async def test_the_token_decides_the_caller_and_the_mcp_path_goes_straight_to_its_app(
    caplog: pytest.LogCaptureFixture,
):
    hub = SimpleNamespace(draining=False, inflight=0)
    marked: list[Scope] = []
    app, mcp, routes = front(hub, marked)
    with caplog.at_level(logging.INFO, logger="termal_tui.hub"):
        assert (await request(app, "POST", MCP_PATH, "good"))[0] == 200
    assert mcp.seen == [
        {"path": MCP_PATH, "caller": "session-x", "context": "session-x", "inflight": 1}
    ]
    assert [caller_of(scope) for scope in marked] == ["session-x"]  # the guard's cue
    assert hub.inflight == 0
    (line,) = [r.getMessage() for r in caplog.records]
    assert " POST /mcp - 200 " in line and line.endswith(" session-x")

    # No token or a wrong one: no caller (the MCP route's own guard answers 401), no cue.
    for token in (None, "bad"):
        await request(app, "POST", MCP_PATH, token)
    assert [seen["caller"] for seen in mcp.seen[1:]] == [None, None]
    assert [seen["context"] for seen in mcp.seen[1:]] == [None, None]
    assert len(marked) == 1

    # Every other path, and the MCP path under a prefix, goes to the routes (404, 405,
    # the hook, health), authenticated the same way.
    for path in ("/health", "/hook", "/mcp/", "/elsewhere"):
        assert (await request(app, "GET", path, "good"))[0] == 404
    assert [seen["path"] for seen in routes.seen] == ["/health", "/hook", "/mcp/", "/elsewhere"]
    assert {seen["caller"] for seen in routes.seen} == {"session-x"}
    assert [seen["inflight"] for seen in routes.seen] == [0, 0, 0, 0]  # GET is not counted


async def test_a_draining_hub_refuses_new_changes_and_still_answers_reads():
    hub = SimpleNamespace(draining=True, inflight=0)
    app, mcp, _routes = front(hub, [])
    for method in ("POST", "DELETE"):
        status, fields, body = await request(app, method, MCP_PATH, "good")
        assert status == 503 and fields["retry-after"] == "5"
        assert json.loads(body)["error"] == "stopping"
    assert mcp.seen == []
    assert (await request(app, "GET", MCP_PATH, "good"))[0] == 200  # a wake stream
    assert hub.inflight == 0


async def test_a_token_that_cannot_be_checked_is_a_retryable_503_not_a_401():
    hub = SimpleNamespace(draining=False, inflight=0)
    app, mcp, routes = front(hub, [])
    for method, path in (("POST", MCP_PATH), ("GET", MCP_PATH), ("POST", "/hook")):
        status, fields, body = await request(app, method, path, "busy")
        assert status == 503 and fields["retry-after"] == "1"
        document = json.loads(body)
        assert document["error"] == "busy"
        assert document["error_description"].endswith("nothing was done: retry the same request")
    assert mcp.seen == [] and routes.seen == [] and hub.inflight == 0
