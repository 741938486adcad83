"""The hub (``termal-tui serve``) with real processes on loopback: shims (``termal-tui mcp
--remote``) driven over stdio by the SDK's client, each agent with its own home, and
direct streamable-HTTP clients for what a shim would hide (401, 404, 413, 429, SIGTERM)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from termal_tui.agents.hub_http import MAX_REQUEST_BYTES
from termal_tui.agents.registry import Registry
from tests.agents.test_e2e import (
    EXE,
    Agent,
    ChannelParams,
    ToolFailure,
    senders,
    wait_for,
    wake_barrier,
)

pytest.importorskip("uvicorn")

TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: SSE reads wait long


def cli(db: Path, *argv: str) -> str:
    done = subprocess.run(
        [EXE, *argv, "--db", str(db)], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


@dataclass
class Hub:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    copier: threading.Thread

    def text(self) -> str:
        """What the hub has printed so far (all of it, once the process has ended)."""
        if self.process.poll() is not None:
            self.copier.join(10)
        return self.log.read_text()


@contextlib.contextmanager
def hub(db: Path, log: Path, *extra: str) -> Iterator[Hub]:
    """``termal-tui serve`` on a free port; yields once it has said where it listens
    (read from its output as it comes, copied line by line to ``log``)."""
    process = subprocess.Popen(
        [EXE, "serve", "--db", str(db), "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    announced: queue.Queue[str | None] = queue.Queue()

    def copy() -> None:
        assert process.stdout is not None
        with log.open("wb") as out:
            for line in process.stdout:
                out.write(line)
                out.flush()
                if line.startswith(b"termal-tui serve: http"):
                    announced.put(line.decode())
        announced.put(None)  # it ended without saying

    copier = threading.Thread(target=copy, daemon=True)
    copier.start()
    try:
        found = announced.get(timeout=60)  # a loaded machine starts a hub slowly
        assert found is not None, log.read_text()
        yield Hub(found.split()[2], process, log, copier)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        copier.join(10)


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    """A hub's file with alice and bob, each with a token."""
    db = tmp_path / "hub" / "coordination.sqlite"
    registry = Registry.beside(db)  # in-process: the CLI's own test is below
    tokens = {name: registry.issue_token(registry.add(name).name)[1] for name in ("alice", "bob")}
    registry.close()
    return {"db": db, "tokens": tokens, "tmp": tmp_path}


@contextlib.asynccontextmanager
async def shim(
    url: str, token: str, home: Path, *, channel: bool = True, fallbacks: tuple[str, ...] = ()
) -> AsyncIterator[tuple[Agent, int]]:
    """``termal-tui mcp --remote URL --channel`` in its own home (``fallbacks``: more
    ``--remote`` hubs); yields the agent and pid."""
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(home), TERMAL_HOME=str(home / ".termal"))
    env["HUB_TOKEN"] = token
    hubs = [x for hub_url in (url, *fallbacks) for x in ("--remote", hub_url)]
    args = ["mcp", *hubs, "--token-env", "HUB_TOKEN"] + (["--channel"] if channel else [])
    events: list[tuple[float, ChannelParams]] = []

    async def on_channel(params: ChannelParams) -> None:
        events.append((time.monotonic(), params))

    binding = NotificationBinding(
        method="notifications/claude/channel", params_type=ChannelParams, handler=on_channel
    )
    pids_before = _children()
    async with (
        stdio_client(StdioServerParameters(command=EXE, args=args, env=env)) as (read, write),
        ClientSession(read, write, notification_bindings=[binding]) as client,
    ):
        await client.initialize()
        (pid,) = _children() - pids_before
        yield Agent(home.name, client, events), pid


def _children() -> set[int]:
    me = os.getpid()
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                    found.add(int(entry.name))
    return found


@contextlib.asynccontextmanager
async def http_client(url: str, token: str, *, close: bool = True) -> AsyncIterator[ClientSession]:
    """A plain MCP client by URL with a bearer header (what Codex or Inspector does)."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT) as http,
        streamable_http_client(url, http_client=http, terminate_on_close=close) as streams,
        ClientSession(streams[0], streams[1]) as client,
    ):
        await client.initialize()
        yield client


async def call(client: ClientSession, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    result = await client.call_tool(tool, arguments or {})
    text = result.content[0].text  # type: ignore[union-attr]
    if result.is_error:
        raise ToolFailure(text)
    return json.loads(text)


def message_rows(db: Path, key: str | None = None) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as conn:
        if key is None:
            return conn.execute("SELECT id, idempotency_key FROM mailbox_messages").fetchall()
        return conn.execute(
            "SELECT id FROM mailbox_messages WHERE idempotency_key = ?", (key,)
        ).fetchall()


def read_response(sock: socket.socket) -> bytes:
    """One HTTP response with a Content-Length, read whole from a raw socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, data
        body += chunk
    return head + b"\r\n\r\n" + body


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


# --------------------------------------------------------------------------- the tests


async def test_two_shims_on_two_homes_converse_through_one_hub(world: dict[str, Any]):
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    with hub(db, tmp / "hub.log") as running:
        async with (
            shim(running.url, tokens["alice"], tmp / "alice-home", channel=False) as (alice, _),
            shim(running.url, tokens["bob"], tmp / "bob-home") as (bob, _),
        ):
            names = [s["name"] for s in (await alice.call("termal_list_sessions"))["sessions"]]
            assert sorted(names) == ["alice", "bob"]
            await wait_for(lambda: "wake-ups for" in running.text(), timeout=5)

            # Delivered while the send waited for it: not on the 10 s rescan.
            first = await alice.call(
                "termal_send_to_session",
                {"sessionId": "bob", "message": "Review PR 12.", "idempotencyKey": "pr-12"},
            )
            await wait_for(lambda: len(bob.events) == 1, timeout=5.0)
            _arrived, event = bob.events[0]
            assert first["notificationDisposition"] == "deliveredToIdleSession"
            assert event.meta["mailbox_id"] == first["mailboxId"]
            assert event.meta["sender"] == "alice" and "Review PR 12." not in event.content

            # A second message while bob has not looked: still one pending wake.
            second = await alice.call(
                "termal_send_to_session",
                {"sessionId": "bob", "message": "And PR 13.", "idempotencyKey": "pr-13"},
            )
            assert second["notificationDisposition"] == "durableButNotWoken"
            await wake_barrier(db, "bob")  # a later wake, through the hub's own watcher
            await wait_for(lambda: "carol" in senders(bob), timeout=5.0)
            assert senders(bob) == ["alice", "carol"]  # nothing for PR 13

            listed = (await bob.call("termal_list_mailboxes"))["mailboxes"]
            (mailbox,) = [m for m in listed if m["id"] == first["mailboxId"]]
            assert mailbox["unreadCount"] == 2
            read = await bob.call("termal_read_mailbox", {"mailboxId": first["mailboxId"]})
            assert [m["body"] for m in read["messages"]] == ["Review PR 12.", "And PR 13."]
            ack = {
                "mailboxId": first["mailboxId"],
                "expectedProcessedThrough": 0,
                "processedThrough": 2,
            }
            assert (await bob.call("termal_acknowledge_mailbox", ack))["unreadCount"] == 0

            # Engaged: the next message wakes bob again, across the wire.
            await alice.call(
                "termal_send_to_session",
                {"sessionId": "bob", "message": "Thanks", "idempotencyKey": "thanks"},
            )
            await wait_for(lambda: len(bob.events) == 3, timeout=5.0)
            assert bob.events[2][1].meta["latest_sequence"] == "3"
            assert senders(bob) == ["alice", "carol", "alice"]
            assert alice.events == []  # no --channel: nothing pushed to her

            # The board's tools are served too.
            tools = [t.name for t in (await alice.client.list_tools()).tools]
            assert "termal_send_to_session" in tools and len(tools) == 9

    # Neither agent's home holds a database: the hub's file is the one file.
    for home in ("alice-home", "bob-home"):
        assert not list((tmp / home).rglob("*.sqlite"))
    assert " POST /mcp " in running.text()  # one line per request


async def test_tokens_decide_who_the_caller_is(world: dict[str, Any]):
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    with hub(db, tmp / "hub.log") as running:
        async with httpx2.AsyncClient() as http:
            for headers in ({}, {"authorization": "Bearer ttk_not-a-token"}):
                answer = await http.post(running.url, json=INITIALIZE, headers=HEADERS | headers)
                assert answer.status_code == 401
                assert answer.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
            health = await http.get(running.url.removesuffix("/mcp") + "/health")
            assert health.status_code == 401

        async with http_client(running.url, tokens["alice"]) as alice:
            receipt = await call(
                alice,
                "termal_send_to_session",
                {"sessionId": "bob", "message": "hi", "idempotencyKey": "k"},
            )
        async with http_client(running.url, tokens["bob"]) as bob:
            (mailbox,) = (await call(bob, "termal_list_mailboxes"))["mailboxes"]
            assert mailbox["id"] == receipt["mailboxId"]
            (message,) = (await call(bob, "termal_read_mailbox", {"mailboxId": mailbox["id"]}))[
                "messages"
            ]
            assert message["senderName"] == "alice"

        # Alice's token on bob's MCP session: the SDK answers as if it did not exist.
        async with httpx2.AsyncClient() as http:
            bearer = {"authorization": f"Bearer {tokens['bob']}"}
            opened = await http.post(running.url, json=INITIALIZE, headers=HEADERS | bearer)
            bob_session = opened.headers["mcp-session-id"]
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            stolen = await http.post(
                running.url,
                json=listing,
                headers=HEADERS
                | {"authorization": f"Bearer {tokens['alice']}", "mcp-session-id": bob_session},
            )
            assert stolen.status_code == 404

            # Health with a token: doctor --json of the hub's file.
            health = await http.get(running.url.removesuffix("/mcp") + "/health", headers=bearer)
            assert health.status_code == 200 and "healthy" in health.json()

        # Revoked: the very next request is refused.
        assert "revoked its token" in cli(db, "session", "token", "alice", "--revoke")
        async with httpx2.AsyncClient() as http:
            bearer = {"authorization": f"Bearer {tokens['alice']}"}
            answer = await http.post(running.url, json=INITIALIZE, headers=HEADERS | bearer)
            assert answer.status_code == 401
        listed = json.loads(cli(db, "session", "list", "--json"))
        assert {s["name"]: s["hasToken"] for s in listed} == {"alice": False, "bob": True}

        # A new token replaces the old one; only hashes are in the (0600) registry.
        renewed = cli(db, "session", "token", "bob")
        assert renewed.startswith("ttk_") and renewed != tokens["bob"]
        async with httpx2.AsyncClient() as http:
            for token, status in ((tokens["bob"], 401), (renewed, 200)):
                bearer = {"authorization": f"Bearer {token}"}
                answer = await http.post(running.url, json=INITIALIZE, headers=HEADERS | bearer)
                assert answer.status_code == status
    registry = Registry.beside(db).path
    assert registry.stat().st_mode & 0o777 == 0o600
    stored = b"".join(p.read_bytes() for p in registry.parent.glob(registry.name + "*"))
    assert not any(t.encode() in stored for t in (*tokens.values(), renewed))


async def test_missing_self_and_removed_targets_get_one_error(world: dict[str, Any]):
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    cli(db, "session", "add", "carol")
    carol_id = json.loads(cli(db, "session", "list", "--json"))[2]["sessionId"]
    cli(db, "session", "rm", "carol")
    with hub(db, tmp / "hub.log") as running:
        async with http_client(running.url, tokens["alice"]) as alice:
            alice_id = next(
                s["sessionId"]
                for s in (await call(alice, "termal_list_sessions"))["sessions"]
                if s["name"] == "alice"
            )
            answers = set()
            for target in ("nobody", "session-000000000000", "alice", alice_id, "carol", carol_id):
                with pytest.raises(ToolFailure) as failure:
                    await call(
                        alice,
                        "termal_send_to_session",
                        {"sessionId": target, "message": "x", "idempotencyKey": "x"},
                    )
                answers.add(str(failure.value))
            (answer,) = answers
            assert "404 Not Found" in answer and "carol" not in answer
    assert message_rows(db) == []


async def test_oversized_request_is_413_before_it_is_read(world: dict[str, Any]):
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    with hub(db, tmp / "hub.log") as running:
        host, port = running.url.split("//")[1].split("/")[0].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(
                (
                    f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n"
                    f"Authorization: Bearer {tokens['alice']}\r\n"
                    "Content-Type: application/json\r\n"
                    "Accept: application/json, text/event-stream\r\n"
                    f"Content-Length: {64 * 1024 * 1024}\r\n\r\n"
                    '{"jsonrpc": "2.0", '
                ).encode()
            )
            # Only the headers and a few bytes were sent; the answer comes anyway.
            answer = read_response(sock).decode()
        assert answer.startswith("HTTP/1.1 413"), answer
        assert "application/json" in answer.lower()
        refusal = json.loads(answer.split("\r\n\r\n", 1)[1])
        assert refusal["jsonrpc"] == "2.0" and refusal["error"]["code"] == -32600
        assert "nothing was done" in refusal["error"]["message"]

        # A body over the cap announced without a length is cut off while streaming.
        async with httpx2.AsyncClient() as http:

            async def chunks() -> AsyncIterator[bytes]:
                for _ in range(MAX_REQUEST_BYTES // (64 * 1024) + 2):
                    yield b" " * 64 * 1024

            answer2 = await http.post(
                running.url,
                content=chunks(),
                headers=HEADERS | {"authorization": f"Bearer {tokens['alice']}"},
            )
            assert answer2.status_code == 413
            assert answer2.json()["error"]["code"] == -32600
            # The hook endpoint refuses in its own JSON shape.
            answer3 = await http.post(
                running.url.removesuffix("/mcp") + "/hook",
                content=b"{" + b" " * (MAX_REQUEST_BYTES + 1) + b"}",
                headers={"authorization": f"Bearer {tokens['alice']}"},
            )
            assert answer3.status_code == 413
            assert answer3.json()["error"] == "request_too_large"
        # A body at the store's cap still goes through, escaped to more than its size.
        async with http_client(running.url, tokens["alice"]) as alice:
            big = await call(
                alice,
                "termal_send_to_session",
                {
                    "sessionId": "bob",
                    "message": 'x"\n' * (256 * 1024 // 3),
                    "idempotencyKey": "big",
                },
            )
            assert big["sequence"] == 1
            # The contract's worst case: 256 KiB of control characters, each escaped as
            # \u00XX (6 bytes on the wire), with a long key: stored, as over stdio.
            worst = await call(
                alice,
                "termal_send_to_session",
                {"sessionId": "bob", "message": "\x01" * 256 * 1024, "idempotencyKey": "k" * 256},
            )
            assert worst["sequence"] == 2


async def test_a_burst_past_the_limit_is_429(world: dict[str, Any]):
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    with hub(db, tmp / "hub.log", "--rate", "1", "--burst", "5") as running:
        async with httpx2.AsyncClient() as http:
            bearer = {"authorization": f"Bearer {tokens['alice']}"}
            statuses = [
                (await http.post(running.url, json=INITIALIZE, headers=HEADERS | bearer))
                for _ in range(8)
            ]
            codes = [answer.status_code for answer in statuses]
            assert codes[:5] == [200] * 5 and codes[5:] == [429] * 3
            limited = statuses[-1]
            assert int(limited.headers["retry-after"]) >= 1
            assert "retry after" in limited.json()["error_description"]
            # Per token: bob is not limited by alice's burst.
            other = {"authorization": f"Bearer {tokens['bob']}"}
            assert (
                await http.post(running.url, json=INITIALIZE, headers=HEADERS | other)
            ).status_code == 200


async def test_kill_9_a_shim_during_a_send_then_replay_the_key(world: dict[str, Any]):
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    with hub(db, tmp / "hub.log") as running:
        arguments = {"sessionId": "bob", "message": "deploy?", "idempotencyKey": "deploy-1"}
        async with shim(running.url, tokens["alice"], tmp / "alice-home") as (alice, pid):
            sending = asyncio.ensure_future(
                alice.client.call_tool("termal_send_to_session", arguments)
            )
            await wait_for(lambda: message_rows(db, "deploy-1"), timeout=5.0)
            os.kill(pid, signal.SIGKILL)  # committed; the receipt may not have reached her
            with contextlib.suppress(Exception):
                await asyncio.wait_for(sending, 1)
        # A new shim for alice (her agent restarted) replays the same intent and key.
        async with shim(running.url, tokens["alice"], tmp / "alice-home") as (again, _):
            replay = await again.call("termal_send_to_session", arguments)
        assert replay["duplicate"] is True
        assert len(message_rows(db, "deploy-1")) == 1


async def raw_session(http: httpx2.AsyncClient, url: str, token: str) -> dict[str, str]:
    """Open an MCP session with plain HTTP; returns the headers its requests carry."""
    bearer = {"authorization": f"Bearer {token}"}
    opened = await http.post(url, json=INITIALIZE, headers=HEADERS | bearer)
    assert opened.status_code == 200
    headers = HEADERS | bearer
    headers |= {"mcp-session-id": opened.headers["mcp-session-id"]}
    headers |= {"mcp-protocol-version": "2025-06-18"}
    done = await http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    assert done.status_code == 202
    return headers


async def raw_send(
    http: httpx2.AsyncClient, url: str, headers: dict[str, str], number: int, key: str
) -> dict[str, Any]:
    """One termal_send_to_session as a plain POST: its receipt, or an HTTPError/ToolFailure."""
    request = {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {
            "name": "termal_send_to_session",
            "arguments": {"sessionId": "bob", "message": key, "idempotencyKey": key},
        },
    }
    answer = await http.post(url, json=request, headers=headers)
    answer.raise_for_status()
    # the hub answers a call with one JSON body (no SSE stream per POST)
    assert answer.headers["content-type"].startswith("application/json"), answer.headers
    result = answer.json()["result"]
    if result.get("isError"):
        raise ToolFailure(result["content"][0]["text"])
    return json.loads(result["content"][0]["text"])


async def test_sigterm_during_sends_loses_nothing(world: dict[str, Any]):
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    keys = [f"burst-{n}" for n in range(40)]
    outcomes: dict[str, Any] = {}
    with hub(db, tmp / "hub.log") as running:
        async with httpx2.AsyncClient(timeout=30) as http:
            headers = await raw_session(http, running.url, tokens["alice"])

            async def send(number: int, key: str) -> None:
                try:
                    outcomes[key] = await raw_send(http, running.url, headers, number + 10, key)
                except Exception as error:  # refused while stopping, or the hub has gone
                    outcomes[key] = error

            # Half the burst in flight; the signal once the first receipt is back; the
            # other half once the hub has said it is stopping.
            half = len(keys) // 2
            tasks = [asyncio.ensure_future(send(n, k)) for n, k in enumerate(keys[:half])]
            await wait_for(lambda: any(isinstance(v, dict) for v in outcomes.values()), 20)
            running.process.send_signal(signal.SIGTERM)
            await wait_for(lambda: "stopping:" in running.text(), 20)
            tasks += [
                asyncio.ensure_future(send(n, k)) for n, k in enumerate(keys[half:], start=half)
            ]
            await asyncio.wait(tasks, timeout=20)
        assert running.process.wait(20) == 0
        assert "stopping:" in running.text()
    receipts = {k: v for k, v in outcomes.items() if isinstance(v, dict)}
    refused = [v for v in outcomes.values() if isinstance(v, httpx2.HTTPStatusError)]
    assert receipts and len(receipts) < len(keys), outcomes
    assert all(error.response.status_code == 503 for error in refused)
    stored = {key: message_id for message_id, key in message_rows(db)}
    for key, receipt in receipts.items():  # every receipt given is in the file
        assert stored[key] == receipt["messageId"]
    # After a restart, replaying every key that had no receipt stores each exactly once.
    with hub(db, tmp / "hub2.log") as running:
        async with http_client(running.url, tokens["alice"]) as alice:
            for key in keys:
                if key in receipts:
                    continue
                replay = await call(
                    alice,
                    "termal_send_to_session",
                    {"sessionId": "bob", "message": key, "idempotencyKey": key},
                )
                assert replay["duplicate"] is (key in stored)
    final = message_rows(db)
    assert sorted(key for _id, key in final) == sorted(keys)


async def test_remote_hosts_need_an_explicit_flag(world: dict[str, Any]):
    done = subprocess.run(
        [EXE, "serve", "--db", str(world["db"]), "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2 and "--allow-remote" in done.stderr


async def test_hooks_run_against_the_hub(world: dict[str, Any]):
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"  # closed again: nobody

    def hook(event: str, token: str, *hubs: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, TERMAL_TUI_TOKEN=token, HOME=str(tmp / "bob-home"))
        remote = [x for url in hubs or (running.url,) for x in ("--remote", url)]
        return subprocess.run(
            [EXE, "hook", event, *remote],
            input="{}",
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
            check=False,
        )

    with hub(db, tmp / "hub.log") as running:
        async with http_client(running.url, tokens["alice"]) as alice:
            receipt = await call(
                alice,
                "termal_send_to_session",
                {"sessionId": "bob", "message": "look", "idempotencyKey": "look"},
            )
        first = hook("prompt", tokens["bob"], down, running.url)  # past a hub that is down
        assert first.returncode == 0, first.stderr
        context = json.loads(first.stdout)["hookSpecificOutput"]["additionalContext"]
        assert receipt["mailboxId"] in context and "look" not in context  # metadata only
        again = hook("prompt", tokens["bob"])  # delivered once: nothing new to say
        assert again.returncode == 0 and again.stdout == ""
        stop = hook("stop", tokens["bob"])
        assert json.loads(stop.stdout)["decision"] == "block"  # unread mail is waiting
        refused = hook("prompt", "ttk_wrong")
        assert refused.returncode == 8 and "401" in refused.stderr
        nowhere = hook("prompt", tokens["bob"], down)
        assert nowhere.returncode == 7 and "the hub could not be reached:" in nowhere.stderr


async def test_a_shim_reconnects_when_the_hub_restarts(world: dict[str, Any]):
    db, tokens, tmp = world["db"], world["tokens"], world["tmp"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    arguments = {"sessionId": "bob", "message": "ship it", "idempotencyKey": "ship"}
    with hub(db, tmp / "hub.log", "--port", port) as running:
        async with shim(running.url, tokens["alice"], tmp / "alice-home") as (alice, _):
            assert (await alice.call("termal_list_mailboxes"))["mailboxes"] == []
            running.process.terminate()
            assert running.process.wait(20) == 0
            with pytest.raises(ToolFailure, match="the append outcome is unknown"):
                await alice.call("termal_send_to_session", arguments)
            with hub(db, tmp / "hub2.log", "--port", port):
                first = await alice.call("termal_send_to_session", arguments)
                replay = await alice.call("termal_send_to_session", arguments)
    assert first["duplicate"] is False and replay["duplicate"] is True
    assert len(message_rows(db, "ship")) == 1
