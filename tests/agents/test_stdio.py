"""Every stdio line gets an answer: a real ``termal-tui mcp`` process is sent each kind of
garbage, one line at a time, and answers each with one JSON-RPC error line (-32700 for
what does not parse, -32600 for JSON that is not a JSON-RPC message), as the HTTP
transport answers the same body; then it goes on serving real calls."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from termal_tui.agents.stdio import INVALID_REQUEST, MAX_LINE_BYTES, PARSE_ERROR, parse_line
from tests.agents.test_e2e import EXE

REPLY_DEADLINE = 120  # seconds: a bound on a hang on a loaded machine, never a measurement

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "garbage-test", "version": "0"},
    },
}

SEND_WITH_A_LONE_SURROGATE = (
    '{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":'
    '"termal_send_to_session","arguments":{"sessionId":"bob","message":"x\\ud800y",'
    '"idempotencyKey":"k"}}}'
)

# (line, the code it gets, the id the reply carries)
GARBAGE: list[tuple[str, int, Any]] = [
    ("garbage", PARSE_ERROR, None),
    (SEND_WITH_A_LONE_SURROGATE, PARSE_ERROR, 41),  # its id is read leniently
    ('{"jsonrpc":"2.0","id":42,"method":"tools/li', PARSE_ERROR, None),  # truncated
    ("[1, 2]", INVALID_REQUEST, None),  # not an object (and no batches)
    ("7", INVALID_REQUEST, None),
    ('"a string"', INVALID_REQUEST, None),
    ("{}", INVALID_REQUEST, None),  # an empty object
    ('{"jsonrpc":"2.0","id":43,"method":5}', INVALID_REQUEST, 43),  # method not a string
    ('{"jsonrpc":"1.0","id":44,"method":"ping"}', INVALID_REQUEST, 44),
    ('{"jsonrpc":"2.0","id":{},"method":"ping"}', INVALID_REQUEST, None),  # id an object
]


class Wire:
    """A ``termal-tui mcp`` process spoken to one line at a time. Its output is read by a
    thread, so a reply that never comes fails the test instead of hanging it."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, line: str | bytes) -> None:
        data = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=REPLY_DEADLINE)
        except queue.Empty:
            pytest.fail("no reply: the server left a line unanswered")
        assert line, "the server closed its output instead of answering"
        return json.loads(line)


@pytest.fixture
def wire(tmp_path: Path) -> Any:
    db = tmp_path / "state" / "coordination.sqlite"
    for name in ("alice", "bob"):
        subprocess.run([EXE, "session", "add", name, "--db", str(db)], check=True, timeout=60)
    process = subprocess.Popen(
        [EXE, "mcp", "--session", "alice", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    try:
        yield Wire(process)
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a server that hangs
            process.kill()
            process.wait()
            raise


def test_every_garbage_line_gets_one_json_rpc_error_and_the_server_goes_on(wire: Wire):
    wire.send(json.dumps(INITIALIZE))
    assert wire.reply()["id"] == 0
    wire.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    for line, code, request_id in GARBAGE:
        wire.send(line)
        reply = wire.reply()
        assert reply["jsonrpc"] == "2.0", line
        assert reply["error"]["code"] == code, (line, reply)
        assert reply["id"] == request_id, (line, reply)
        prefix = "Parse error: " if code == PARSE_ERROR else "Invalid Request: "
        assert reply["error"]["message"].startswith(prefix), reply
    wire.send(b"\xff\xfe not utf-8")  # bytes that are not UTF-8 are not decoded loosely
    assert wire.reply()["error"]["code"] == PARSE_ERROR
    wire.send("")  # a blank line is no message: nothing to answer, nothing waits
    # ... and the server still serves: the next real call is answered, in order.
    wire.send(json.dumps({"jsonrpc": "2.0", "id": 50, "method": "ping"}))
    assert wire.reply() == {"jsonrpc": "2.0", "id": 50, "result": {}}
    wire.send(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 51,
                "method": "tools/call",
                "params": {
                    "name": "termal_send_to_session",
                    "arguments": {"sessionId": "bob", "message": "x\ud800y", "idempotencyKey": "k"},
                },
            }
        )
    )  # json.dumps escapes the lone surrogate: the same refusal as the raw line above
    assert wire.reply()["error"]["code"] == PARSE_ERROR
    wire.send(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 52,
                "method": "tools/call",
                "params": {"name": "termal_list_sessions", "arguments": {}},
            }
        )
    )
    listed = wire.reply()
    assert listed["id"] == 52 and not listed["result"]["isError"]
    names = [s["name"] for s in listed["result"]["structuredContent"]["sessions"]]
    assert names == ["alice", "bob"]


def _call(wire: Wire, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    wire.send(
        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
    )
    reply = wire.reply()
    assert reply["id"] == request_id
    return reply


def test_an_unknown_tool_is_a_protocol_error_and_a_failure_is_structured(wire: Wire):
    wire.send(json.dumps(INITIALIZE))
    assert wire.reply()["id"] == 0
    wire.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    unknown = _call(wire, 1, "termal_watch_mailbox", {})["error"]
    assert unknown["code"] == -32602  # MCP: an unknown tool is invalid params
    assert unknown["message"].startswith("unknown tool `termal_watch_mailbox`: this server's")
    assert "store" not in unknown["message"]
    assert unknown["data"]["code"] == "unknown_tool"
    typed = _call(
        wire,
        2,
        "termal_send_to_session",
        {"sessionId": "bob", "message": 123, "idempotencyKey": "k"},
    )
    result = typed["result"]
    assert result["isError"] is True
    assert "message must be a string" in result["content"][0]["text"]
    assert result["structuredContent"]["error"]["code"] == "validation"
    self_send = _call(
        wire,
        3,
        "termal_send_to_session",
        {"sessionId": "alice", "message": "m", "idempotencyKey": "k"},
    )
    error = self_send["result"]["structuredContent"]["error"]
    assert (error["code"], error["status"], error["retrySafe"]) == ("validation", 400, False)
    assert "is this session" in error["message"]


@pytest.mark.parametrize(("line", "code", "request_id"), GARBAGE)
def test_parse_line_answers_what_does_not_parse(line: str, code: int, request_id: Any):
    reply = parse_line(line.encode("utf-8", "surrogatepass"))
    assert reply is not None and getattr(reply, "error", None) is not None
    assert (reply.error.code, reply.id) == (code, request_id)  # type: ignore[union-attr]


def test_a_line_over_the_limit_is_named_as_too_long_not_as_a_parse_error():
    """A line over 16 MiB is read to its end and dropped (``_Lines`` hands over its
    first ``MAX_LINE_BYTES + 1`` bytes): the answer says it was too long and nothing was
    done, with the code the hub gives a body over its limit, not "EOF while parsing"."""
    head = b'{"jsonrpc":"2.0","id":10,"method":"ping","params":{"x":"'
    reply = parse_line(head + b"a" * (MAX_LINE_BYTES + 1 - len(head)))
    assert reply is not None and getattr(reply, "error", None) is not None
    assert reply.error.code == INVALID_REQUEST  # type: ignore[union-attr]
    assert reply.error.message == (  # type: ignore[union-attr]
        "Invalid Request: the line is longer than the 16777216 bytes (16 MiB) a message may "
        "be (a message body is at most 256 KiB); nothing was done"
    )
    exact = head + b'a"}}'
    assert type(parse_line(exact)).__name__ == "JSONRPCRequest"


def test_parse_line_passes_messages_and_skips_blank_lines():
    assert parse_line(b"   \n") is None
    message = parse_line(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode())
    assert type(message).__name__ == "JSONRPCRequest"
    note = parse_line(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert type(note).__name__ == "JSONRPCNotification"
