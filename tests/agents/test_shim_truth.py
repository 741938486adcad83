"""The remote shim tells the truth: it checks its token and the hub before it answers
its agent, and says which failure a call met — the token refused, nothing sent, or an
outcome it cannot know."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from termal_tui.agents.registry import Registry
from termal_tui.agents.remote import CallFailed, _transit_failure, transit_error
from termal_tui.agents.tools import SEND_OUTCOME_UNKNOWN
from tests.agents.test_e2e import EXE, ToolFailure
from tests.agents.test_hub import hub, message_rows, shim

pytest.importorskip("uvicorn")

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}\n'
)


def _start_shim(url: str, token: str, home: Path, *more: str) -> subprocess.CompletedProcess[str]:
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(home), TERMAL_HOME=str(home / ".termal"), HUB_TOKEN=token)
    hubs = [x for hub_url in (url, *more) for x in ("--remote", hub_url)]
    return subprocess.run(
        [EXE, "mcp", *hubs, "--token-env", "HUB_TOKEN", "--channel"],
        input=INITIALIZE.decode(),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: nothing listens there


def test_a_wrong_token_fails_before_the_handshake(tmp_path: Path):
    db = tmp_path / "hub" / "coordination.sqlite"
    registry = Registry.beside(db)
    registry.add("bob")
    registry.close()
    with hub(db, tmp_path / "hub.log") as running:
        done = _start_shim(running.url, "ttk_not-a-token", tmp_path / "home")
    assert done.returncode == 7
    assert done.stdout == ""  # no answer to initialize: the client sees a failed server
    assert "the token was refused by the hub" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_hub_that_is_down_fails_before_the_handshake_saying_nothing_was_sent(tmp_path: Path):
    done = _start_shim(f"http://127.0.0.1:{_closed_port()}/mcp", "ttk_x", tmp_path / "home")
    assert done.returncode == 7 and done.stdout == ""
    assert "nothing was sent: the hub at" in done.stderr and "cannot be reached" in done.stderr
    assert "Traceback" not in done.stderr


async def test_calls_say_token_refused_or_nothing_sent(tmp_path: Path):
    db = tmp_path / "hub" / "coordination.sqlite"
    registry = Registry.beside(db)
    registry.add("alice")
    token = registry.issue_token("alice")[1]
    registry.add("bob")
    with hub(db, tmp_path / "hub.log") as running:
        async with shim(running.url, token, tmp_path / "alice-home", channel=False) as (alice, _):
            await alice.call("termal_list_sessions")
            registry.revoke_token("alice")
            with pytest.raises(
                ToolFailure, match="the token was refused by the termal-tui hub"
            ) as denied:
                await alice.call(
                    "termal_send_to_session",
                    {"sessionId": "bob", "message": "m", "idempotencyKey": "k1"},
                )
            registry.issue_token("alice")  # another token: this shim's stays refused
            os.kill(running.process.pid, signal.SIGKILL)
            running.process.wait(10)
            with pytest.raises(
                ToolFailure, match=r"^nothing was sent: the termal-tui hub"
            ) as unsent:
                await alice.call(
                    "termal_send_to_session",
                    {"sessionId": "bob", "message": "m", "idempotencyKey": "k2"},
                )
    registry.close()
    # Beside the sentence, what an agent reads without parsing it: the code and whether
    # the same call may be repeated.
    assert denied.value.structured is not None and unsent.value.structured is not None
    refused = denied.value.structured["error"]
    assert (refused["code"], refused["status"], refused["retrySafe"]) == (
        "unauthorized",
        401,
        False,
    )
    assert refused["message"] == str(denied.value)
    unreachable = unsent.value.structured["error"]
    assert (unreachable["code"], unreachable["retrySafe"]) == ("unreachable", True)


def test_only_a_call_that_may_have_arrived_is_outcome_unknown():
    lost = CallFailed(TimeoutError("read timed out"), maybe_sent=True, refused=False)
    assert _transit_failure("termal_send_to_session", lost).startswith(SEND_OUTCOME_UNKNOWN)
    refused = CallFailed(ConnectionRefusedError(), maybe_sent=False, refused=False)
    assert _transit_failure("termal_send_to_session", refused).startswith("nothing was sent")
    denied = CallFailed(RuntimeError("401"), maybe_sent=False, refused=True)
    assert "token was refused" in _transit_failure("termal_acknowledge_mailbox", denied)
    expected = {lost: ("unknown_outcome", True), refused: ("unreachable", True)}
    expected[denied] = ("unauthorized", False)
    for name in ("termal_send_to_session", "termal_acknowledge_mailbox", "termal_read_mailbox"):
        for failure, (code, retry_safe) in expected.items():
            error = transit_error(name, failure).to_wire()["error"]
            assert (error["code"], error["retrySafe"]) == (code, retry_safe)
            assert error["message"] == _transit_failure(name, failure)


# ------------------------------------------------------------------ several hubs


def test_with_every_hub_down_the_shim_names_them_all(tmp_path: Path):
    first, second = (f"http://127.0.0.1:{_closed_port()}/mcp" for _ in range(2))
    done = _start_shim(first, "ttk_x", tmp_path / "home", second)
    assert done.returncode == 7 and done.stdout == ""
    assert f"nothing was sent: none of the hubs at {first}, {second} can be reached" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


async def test_the_shim_moves_to_the_next_hub_and_sends_again_exactly(tmp_path: Path):
    """Two hubs on one database (one file here; PostgreSQL across hosts): the shim starts
    past a hub that is down, and when its hub is killed mid-session the next calls go
    through the other; a retried send is answered with its original receipt."""
    db = tmp_path / "hub" / "coordination.sqlite"
    registry = Registry.beside(db)
    registry.add("alice")
    token = registry.issue_token("alice")[1]
    registry.add("bob")
    registry.close()
    down = f"http://127.0.0.1:{_closed_port()}/mcp"
    one = {"sessionId": "bob", "message": "one", "idempotencyKey": "k1"}
    two = {"sessionId": "bob", "message": "two", "idempotencyKey": "k2"}
    with hub(db, tmp_path / "a.log") as a, hub(db, tmp_path / "b.log") as b:
        home = tmp_path / "alice-home"
        async with shim(down, token, home, channel=False, fallbacks=(a.url, b.url)) as (alice, _):
            first = await alice.call("termal_send_to_session", one)
            assert " POST /mcp " in a.text() and " POST /mcp " not in b.text()
            os.kill(a.process.pid, signal.SIGKILL)  # the hub in use (the first one up)
            a.process.wait(10)
            second = await alice.call("termal_send_to_session", two)
            replay = await alice.call("termal_send_to_session", one)
    assert [first["duplicate"], second["duplicate"], replay["duplicate"]] == [False, False, True]
    assert replay["sequence"] == first["sequence"] == 1 and second["sequence"] == 2
    assert replay["messageId"] == first["messageId"]
    assert sorted(key for _, key in message_rows(db)) == ["k1", "k2"]


def test_every_hub_status_that_means_nothing_was_done_says_so():
    """One table: a status the hub answers before doing anything is never "unknown"."""
    from termal_tui.agents.remote import HUB_STATUSES

    for name in ("termal_send_to_session", "termal_acknowledge_mailbox", "termal_list_sessions"):
        for status, sentence in HUB_STATUSES.items():
            told = _transit_failure(
                name, CallFailed(RuntimeError("x"), maybe_sent=False, status=status)
            )
            assert told == sentence and "nothing was changed" in told
            assert "unknown" not in told.replace("it is unknown, revoked", "")
        # A status after which the call may have been done is not in the table.
        for status in (500, 502, 504, None):
            told = _transit_failure(
                name, CallFailed(TimeoutError("t"), maybe_sent=True, status=status)
            )
            if name != "termal_list_sessions":
                assert "outcome is unknown" in told
    assert "busy" in HUB_STATUSES[503] and "retrying the same call is safe" in HUB_STATUSES[503]
    # One attempt that may have been done, then a 503: still unknown (the first may have
    # committed).
    mixed = CallFailed(TimeoutError("t"), maybe_sent=True, status=503)
    assert _transit_failure("termal_send_to_session", mixed).startswith(SEND_OUTCOME_UNKNOWN)


async def test_a_hub_that_answers_busy_is_said_to_have_changed_nothing(
    pg_server: Any, pg_url: str, tmp_path: Path
):
    """A hub on PostgreSQL that cannot check a token (the server unreachable) answers 503:
    the shim says the hub is busy and nothing was changed, never "outcome unknown"; the
    same call succeeds once the server is back, as the first attempt."""
    from termal_tui.agents.remote import HUB_STATUSES
    from tests.pg_gate import PgGate

    gate = PgGate(pg_server.port)
    gated = gate.url(pg_url, await gate.start())
    registry = Registry.beside(pg_url)
    registry.add("alice")
    token = registry.issue_token("alice")[1]
    registry.add("bob")
    send = {"sessionId": "bob", "message": "m", "idempotencyKey": "k1"}

    # The gate relays on this event loop: the hub is started (and stopped) from a thread.
    stack = contextlib.ExitStack()
    try:
        running = await asyncio.to_thread(stack.enter_context, hub(gated, tmp_path / "hub.log"))  # type: ignore[arg-type]
        async with shim(running.url, token, tmp_path / "home", channel=False) as (alice, _):
            await alice.call("termal_list_sessions")
            gate.shut()
            told: list[str] = []
            for _ in range(100):  # until the hub's identity cache stops trusting itself
                try:
                    await alice.call("termal_list_sessions")
                except ToolFailure as failure:
                    told.append(str(failure))
                    if HUB_STATUSES[503] in told[-1]:
                        break
            assert told and HUB_STATUSES[503] in told[-1], told
            assert not any("unknown" in t.replace("it is unknown, revoked", "") for t in told)
            with pytest.raises(ToolFailure) as busy:
                await alice.call("termal_send_to_session", send)
            assert str(busy.value) == HUB_STATUSES[503]
            gate.reopen()
            for _ in range(100):
                try:
                    await alice.call("termal_list_sessions")
                    break
                except ToolFailure:
                    continue
            sent = await alice.call("termal_send_to_session", send)
            assert sent["sequence"] == 1 and sent.get("duplicate") is not True
    finally:
        await asyncio.to_thread(stack.close)
        await gate.close()
        registry.close()
