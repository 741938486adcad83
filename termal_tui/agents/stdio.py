"""MCP over stdio where every line gets an answer.

The SDK's ``stdio_server`` hands a line that does not parse to the server as an
exception, which the server logs and drops: the client's call then waits forever. Here
each line is parsed before the server sees it, and a line that is not a JSON-RPC message
is answered on the spot, as the streamable-HTTP transport answers the same body:

- not JSON (garbage, truncated, not UTF-8, a lone surrogate such as ``"x\\ud800y"``):
  ``-32700`` ``Parse error: …``;
- JSON that is not a JSON-RPC 2.0 message (a number, an array, ``{}``, a method that is
  not a string, an ``id`` that is an object): ``-32600`` ``Invalid Request: …``;
- a line over 16 MiB (read to its end and dropped): ``-32600``, saying so, as the hub
  answers a body over its limit.

The reply carries the request's ``id`` when one can be read from the line (even from a
line the strict parser refuses), so the client's pending call ends; otherwise ``null``,
as JSON-RPC 2.0 says. Blank lines are skipped (they are no message). The server goes on
serving after every such reply.

While serving, fd 0 reads the null device and fd 1 writes to stderr, so a child process
cannot read the agent's requests and stray output cannot corrupt the wire (as the SDK's
transport does); both are restored on exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

import anyio
import mcp_types as types
import pydantic
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from termal_tui.core.errors import JSONRPC_INVALID_REQUEST, JSONRPC_PARSE_ERROR

PARSE_ERROR = JSONRPC_PARSE_ERROR
INVALID_REQUEST = JSONRPC_INVALID_REQUEST
MAX_LINE_BYTES = 16 * 1024 * 1024  # far above any request the hub would take


def _recover_id(text: str) -> str | int | None:
    """The ``id`` of a line the strict parser refused or the schema rejected, when a
    lenient parse (Python's, which takes lone surrogates) can read a valid one."""
    try:
        document = json.loads(text)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    value = document.get("id")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return value


def _error(code: int, message: str, request_id: str | int | None) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


def _short(error: Exception, limit: int = 300) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_line(raw: bytes) -> types.JSONRPCMessage | types.JSONRPCError | None:
    """One stdin line as the message it holds, or the error reply it gets, or None (a
    blank line)."""
    if not raw.strip():
        return None
    if len(raw.rstrip(b"\r\n")) > MAX_LINE_BYTES:
        return _error(
            INVALID_REQUEST,
            f"Invalid Request: the line is longer than the {MAX_LINE_BYTES} bytes (16 MiB) a "
            "message may be (a message body is at most 256 KiB); nothing was done",
            None,
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        lenient = raw.decode("utf-8", errors="replace")
        return _error(
            PARSE_ERROR, f"Parse error: the line is not UTF-8 ({error})", _recover_id(lenient)
        )
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except pydantic.ValidationError as invalid:
        try:
            document = pydantic_core.from_json(text)
        except ValueError as error:
            return _error(PARSE_ERROR, f"Parse error: {_short(error)}", _recover_id(text))
        del document
        return _error(
            INVALID_REQUEST,
            "Invalid Request: not a JSON-RPC 2.0 request, notification or response "
            f"({_short(invalid)})",
            _recover_id(text),
        )
    if isinstance(message, types.JSONRPCNotification) and '"id"' in text:
        # The schema ignores an ``id`` that is not a string or a number (it reads the
        # line as a notification, which gets no reply): a request the client waits on.
        with contextlib.suppress(ValueError):
            document = json.loads(text)
            if isinstance(document, dict) and "id" in document:
                return _error(
                    INVALID_REQUEST,
                    "Invalid Request: id must be a string or a number",
                    None,
                )
    return message


class _Lines:
    """Blocking line reads from a binary file, each at most ``MAX_LINE_BYTES``."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream

    def next(self) -> bytes | None:
        """The next line (a longer one is read to its end and returned as its first
        ``MAX_LINE_BYTES + 1`` bytes), or None at end of input."""
        line = self.stream.readline(MAX_LINE_BYTES + 1)
        if not line:
            return None
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # drop the rest of the overlong line
                rest = self.stream.readline(1024 * 1024)
                if not rest or rest.endswith(b"\n"):
                    break
        return line


def _claim_stdio() -> tuple[IO[bytes], IO[bytes], Callable[[], None]]:
    """The wire as private descriptors; fd 0 reads /dev/null and fd 1 goes to stderr."""
    try:
        import fcntl

        wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    except (ImportError, OSError):  # pragma: no cover - no fcntl, or a closed std stream
        return sys.stdin.buffer, sys.stdout.buffer, lambda: None
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)

    def restore() -> None:
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)

    # Never closed: a worker thread may still block reading it after the server ends.
    return os.fdopen(wire_in, "rb", closefd=False), os.fdopen(wire_out, "wb"), restore


@contextlib.asynccontextmanager
async def answering_stdio(
    stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[Any]]
]:
    """``(read_stream, write_stream)`` for ``Server.run`` over stdin/stdout (or the given
    binary files), answering every line that is not a message (see the module)."""
    restore: Callable[[], None] = lambda: None  # noqa: E731
    if stdin is None or stdout is None:
        claimed_in, claimed_out, restore = _claim_stdio()
        stdin = stdin or claimed_in
        stdout = stdout or claimed_out
    lines = _Lines(stdin)
    out = stdout
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    replies = write_send.clone()

    async def reader() -> None:
        async with read_send, replies:
            while True:
                raw = await anyio.to_thread.run_sync(lines.next, abandon_on_cancel=True)
                if raw is None:
                    return
                parsed = parse_line(raw)
                if parsed is None:
                    continue
                if isinstance(parsed, types.JSONRPCError):
                    await replies.send(SessionMessage(parsed))
                else:
                    await read_send.send(SessionMessage(parsed))

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    async def writer() -> None:
        broken = False
        async with write_receive:
            async for session_message in write_receive:
                if broken:
                    continue  # the client has gone: nothing can reach it; keep draining
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await anyio.to_thread.run_sync(write, (data + "\n").encode())
                except OSError:
                    broken = True

    try:
        async with anyio.create_task_group() as group:
            reading = anyio.CancelScope()

            async def read_until_done() -> None:
                with reading:
                    await reader()

            group.start_soon(read_until_done)
            group.start_soon(writer)
            try:
                yield read_receive, write_send
            finally:
                reading.cancel()  # the server is done: stop reading, drain the replies
                write_send.close()
    finally:
        restore()
