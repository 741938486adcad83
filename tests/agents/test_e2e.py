"""End to end with real processes: two ``termal-tui mcp`` servers driven over stdio by the
official SDK's client, Claude Code channel events, and the viewer showing what they did."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pydantic import BaseModel, ConfigDict

from termal_tui.agents.mcp_server import tool_catalog
from tests.helpers import rows

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXE = shutil.which("termal-tui", path=str(Path(sys.executable).parent)) or "termal-tui"


class ChannelParams(BaseModel):
    model_config = ConfigDict(extra="allow")
    content: str
    meta: dict[str, str] = {}


@dataclass
class Agent:
    name: str
    client: ClientSession
    events: list[tuple[float, ChannelParams]] = field(default_factory=list)

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        result = await self.client.call_tool(tool, arguments or {})
        text = result.content[0].text  # type: ignore[union-attr]
        if result.is_error:
            raise ToolFailure(text, result.structured_content)
        return json.loads(text)


class ToolFailure(Exception):
    """A tool result with isError: the text, and the machine-readable ``error`` beside it."""

    def __init__(self, text: str, structured: dict[str, Any] | None = None) -> None:
        super().__init__(text)
        self.structured = structured


@contextlib.asynccontextmanager
async def agent(
    db: Path, name: str, *, channel: bool, env: dict[str, str] | None = None
) -> AsyncIterator[Agent]:
    args = ["mcp", "--session", name, str(db), "--register"] + (["--channel"] if channel else [])
    params = StdioServerParameters(command=EXE, args=args, env=env)
    events: list[tuple[float, ChannelParams]] = []

    async def on_channel(params: ChannelParams) -> None:
        events.append((time.monotonic(), params))

    binding = NotificationBinding(
        method="notifications/claude/channel", params_type=ChannelParams, handler=on_channel
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, notification_bindings=[binding]) as client,
    ):
        info = await client.initialize()
        assert info.server_info.name == "termal-tui"
        yield Agent(name, client, events)


def cli(db: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *argv, "--db", str(db)], capture_output=True, text=True, timeout=60, check=False
    )


async def wait_for(predicate: Any, timeout: float = 3.0) -> None:
    give_up = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > give_up:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)


async def wake_barrier(db: Path | str, to: str, sender: str = "carol") -> dict[str, Any]:
    """A message to ``to`` from a third session, sent from this process (registered here
    if it is not yet), whose wake comes after everything committed before it: a channel
    server runs its passes one at a time and writes its events in order, so once this
    wake has arrived, any wake an earlier commit would have caused has arrived too.
    Proves a negative ("no second wake") without waiting for time to pass."""
    from termal_tui.agents.registry import Registry
    from termal_tui.agents.tools import AgentTools
    from termal_tui.store.writer import open_writer

    registry = Registry.beside(db)
    found = registry.find_live_by_name(sender)
    me = found[0] if found else registry.add(sender)
    async with open_writer(db) as writer:
        tools = AgentTools(writer, registry, me.id)
        receipt = await tools.call(
            "termal_send_to_session",
            {"sessionId": to, "message": "barrier", "idempotencyKey": f"barrier-{sender}"},
        )
    registry.close()
    return receipt


def senders(agent: Agent) -> list[str]:
    """Who each channel event so far woke the agent for."""
    return [event.meta["sender"] for _at, event in agent.events]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "state" / "coordination.sqlite"


async def test_two_agents_converse_through_two_servers(db: Path):
    async with agent(db, "alice", channel=False) as alice, agent(db, "bob", channel=True) as bob:
        tools = await alice.client.list_tools()
        served = [t.model_dump(by_alias=True, exclude_none=True) for t in tools.tools]
        # TermAl's tools with termal-tui's structure beside TermAl's words (the TermAl
        # parts are checked against the fixtures in tests/agents/test_tools_catalog.py)
        assert served == tool_catalog()

        sessions = (await alice.call("termal_list_sessions"))["sessions"]
        assert sorted(s["name"] for s in sessions) == ["alice", "bob"]
        bob_id = next(s["sessionId"] for s in sessions if s["name"] == "bob")
        await wait_for(lambda: len(bob.events) == 0 and _channel_live(db, "bob"))

        # By name: bob's channel delivers the wake before the receipt is finalized (the
        # send waits a short while for that), so not on the 10 s rescan.
        first = await alice.call(
            "termal_send_to_session",
            {"sessionId": "Bob", "message": "Please review PR 12.", "idempotencyKey": "review-12"},
        )
        assert first["notificationDisposition"] == "deliveredToIdleSession"
        assert first["resolvedFrom"] == "Bob" and first["sessionId"] == bob_id
        await wait_for(lambda: len(bob.events) == 1, timeout=5.0)
        _arrived, event = bob.events[0]
        assert event.meta["mailbox_id"] == first["mailboxId"] and event.meta["sender"] == "alice"
        assert event.meta["latest_sequence"] == "1"
        assert (
            "Please review" not in event.content
            and "[TermAl mailbox notification]" in event.content
        )

        # By id, twice more while bob has not looked: still one pending wake for the mailbox.
        for n in (2, 3):
            receipt = await alice.call(
                "termal_send_to_session",
                {"sessionId": bob_id, "message": f"Also item {n}.", "idempotencyKey": f"item-{n}"},
            )
            assert (
                receipt["sequence"] == n
                and receipt["notificationDisposition"] == "durableButNotWoken"
            )
        barrier = await wake_barrier(db, "bob")
        assert barrier["notificationDisposition"] == "deliveredToIdleSession"
        await wait_for(lambda: "carol" in senders(bob), timeout=5.0)
        assert senders(bob) == ["alice", "carol"]  # nothing for items 2 and 3

        duplicate = await alice.call(
            "termal_send_to_session",
            {"sessionId": "bob", "message": "Please review PR 12.", "idempotencyKey": "review-12"},
        )
        assert duplicate["duplicate"] is True and duplicate["messageId"] == first["messageId"]
        assert duplicate["notificationDisposition"] == "deliveredToIdleSession"
        with pytest.raises(ToolFailure, match="409 Conflict: idempotency key `review-12`"):
            await alice.call(
                "termal_send_to_session",
                {"sessionId": "bob", "message": "Another text", "idempotencyKey": "review-12"},
            )

        # Bob reads, exact-reads, acknowledges (forward, replay, stale).
        listed = (await bob.call("termal_list_mailboxes"))["mailboxes"]
        (mailbox,) = [m for m in listed if m["id"] == first["mailboxId"]]
        mine = next(p for p in mailbox["participants"] if p["sessionId"] == bob_id)
        assert (mailbox["unreadCount"], mine["processedThrough"]) == (3, 0)
        read = await bob.call("termal_read_mailbox", {"mailboxId": first["mailboxId"]})
        assert [m["body"] for m in read["messages"]] == [
            "Please review PR 12.",
            "Also item 2.",
            "Also item 3.",
        ]
        exact = await bob.call("termal_read_mailbox_message", {"messageId": first["messageId"]})
        assert exact["sequence"] == 1
        ack = {
            "mailboxId": first["mailboxId"],
            "expectedProcessedThrough": 0,
            "processedThrough": 2,
        }
        assert (await bob.call("termal_acknowledge_mailbox", ack))["unreadCount"] == 1
        assert (await bob.call("termal_acknowledge_mailbox", ack))["unreadCount"] == 1  # replay
        with pytest.raises(ToolFailure, match="409 Conflict"):
            await bob.call(
                "termal_acknowledge_mailbox",
                {
                    "mailboxId": first["mailboxId"],
                    "expectedProcessedThrough": 0,
                    "processedThrough": 3,
                },
            )

        # Bob replies; alice has no channel, so her receipt is honest about it.
        reply = await bob.call(
            "termal_send_to_session",
            {"sessionId": "alice", "message": "Reviewed: two nits.", "idempotencyKey": "re-12"},
        )
        assert reply["notificationDisposition"] == "durableButNotWoken" and reply["sequence"] == 4
        assert alice.events == []  # no channel declared, nothing pushed

        # After bob engaged with the mailbox, a new message wakes him again.
        await alice.call(
            "termal_send_to_session",
            {"sessionId": "bob", "message": "Thanks!", "idempotencyKey": "thanks"},
        )
        await wait_for(lambda: len(bob.events) == 3, timeout=5.0)
        assert bob.events[2][1].meta["latest_sequence"] == "5"
        assert senders(bob) == ["alice", "carol", "alice"]

    # The servers are gone: the registry no longer shows a connected channel.
    assert not _channel_live(db, "bob")
    states = rows(
        db,
        "SELECT sequence, notification_disposition, dispatch_outcome FROM mailbox_messages "
        "WHERE mailbox_id = ? ORDER BY sequence",
        (first["mailboxId"],),
    )
    assert states[0] == (1, "deliveredToIdleSession", "deliveredToIdleSession")
    assert states[4] == (5, "deliveredToIdleSession", "deliveredToIdleSession")


def _channel_live(db: Path, name: str) -> bool:
    from termal_tui.agents.registry import Registry

    found = Registry.beside(db).find_live_by_name(name)
    return bool(found) and found[0].channel_connected()


async def test_a_retryable_failure_under_a_held_write_lock_is_replayed_to_success(db: Path):
    env = {"TERMAL_TUI_BUSY_TIMEOUT": "0.3"}
    async with (
        agent(db, "alice", channel=False, env=env) as alice,
        agent(db, "bob", channel=False) as _bob,
    ):
        await alice.call(
            "termal_send_to_session", {"sessionId": "bob", "message": "m1", "idempotencyKey": "k1"}
        )
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        happened: list[str] = []

        async def release() -> None:
            # Another process holds the lock for longer than one busy timeout (0.3 s):
            # the server's first attempt is refused busy and replayed.
            await asyncio.sleep(0.6)
            holder.execute("ROLLBACK")
            happened.append("released")

        releasing = asyncio.create_task(release())
        receipt = await alice.call(
            "termal_send_to_session", {"sessionId": "bob", "message": "m2", "idempotencyKey": "k2"}
        )
        happened.append("answered")
        await releasing
        holder.close()
        assert receipt["sequence"] == 2 and receipt["duplicate"] is False
        assert happened == ["released", "answered"]  # it really waited for the lock


async def test_a_removed_session(db: Path):
    async with agent(db, "alice", channel=False) as alice, agent(db, "bob", channel=False) as bob:
        await alice.call(
            "termal_send_to_session", {"sessionId": "bob", "message": "m1", "idempotencyKey": "k1"}
        )
        removed = cli(db, "session", "rm", "bob")
        assert removed.returncode == 0, removed.stderr
        with pytest.raises(ToolFailure, match="404 Not Found: session `bob` was removed"):
            await alice.call(
                "termal_send_to_session",
                {"sessionId": "bob", "message": "m2", "idempotencyKey": "k2"},
            )
        with pytest.raises(ToolFailure, match="404 Not Found: session not found"):
            await bob.call("termal_list_mailboxes")
        # Alice's history stays readable; bob is marked departed there.
        (mailbox,) = (await alice.call("termal_list_mailboxes"))["mailboxes"]
        assert sorted(p["displayName"] for p in mailbox["participants"]) == ["alice", "bob"]
    assert rows(
        db, "SELECT left_at IS NOT NULL FROM mailbox_participants WHERE display_name = 'bob'"
    ) == [(1,)]


async def test_the_viewer_shows_the_conversation_they_produced(db: Path):
    async with agent(db, "alice", channel=False) as alice, agent(db, "bob", channel=False) as bob:
        for n in (1, 2, 3):
            await alice.call(
                "termal_send_to_session",
                {"sessionId": "bob", "message": f"Step {n} done.", "idempotencyKey": f"s{n}"},
            )
        (mailbox,) = (await bob.call("termal_list_mailboxes"))["mailboxes"]
        await bob.call(
            "termal_acknowledge_mailbox",
            {"mailboxId": mailbox["id"], "expectedProcessedThrough": 0, "processedThrough": 2},
        )
    from tests.tui.test_app import _row_texts, open_view
    from tests.viewer_support import app_for, settle

    before = rows(db, "SELECT * FROM mailbox_participants")
    app = app_for(db)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "alice", "bob")
        texts = {m.sequence: t for m, t in zip(view.messages, _row_texts(view), strict=True)}
        assert "Step 3 done." in texts[3] and "Unread" in texts[3]
        assert "Processed" in texts[2] and "Processed" in texts[1]
    assert rows(db, "SELECT * FROM mailbox_participants") == before  # the viewer moved nothing


def _server_pid(db: Path, session: str) -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if str(db).encode() in argv and session.encode() in argv and b"mcp" in argv:
                return int(entry.name)
    raise AssertionError(f"no server process for {session}")


async def test_a_crashed_channel_server_is_not_claimed_as_a_wake(db: Path):
    import os
    import signal

    async with agent(db, "alice", channel=False) as alice:
        bob_server = agent(db, "bob", channel=True)
        await bob_server.__aenter__()
        try:
            await wait_for(lambda: _channel_live(db, "bob"))
            os.kill(_server_pid(db, "bob"), signal.SIGKILL)  # no goodbye heartbeat
            await wait_for(lambda: not _channel_live(db, "bob"))  # its pid is gone
            receipt = await alice.call(
                "termal_send_to_session",
                {"sessionId": "bob", "message": "anyone?", "idempotencyKey": "k1"},
            )
        finally:
            with contextlib.suppress(Exception):  # its client sees the pipe break
                await bob_server.__aexit__(None, None, None)
        assert receipt["notificationDisposition"] == "durableButNotWoken"
        # (That the sender does not wait for a wake a dead pid cannot take is asserted
        # without a clock in tests/agents/test_wake_holder.py: a gone process never holds.)
        assert not _channel_live(db, "bob")
    assert rows(db, "SELECT notification_disposition FROM mailbox_messages") == [
        ("durableButNotWoken",)
    ]
