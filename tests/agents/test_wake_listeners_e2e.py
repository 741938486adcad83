"""Wake-ups follow the live listener, with real processes on loopback: a local
``termal-tui mcp --session bob --channel``, a hub, and a remote shim for bob that dies
every way a shim can die — its stdin closed, SIGTERM, kill -9, and the network between it
and the hub gone (a proxy that stops forwarding and closes nothing). Each time the shim
held bob's channel while it lived (the newest listener), and the local listener gets the
next wake once it is gone."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from termal_tui.agents.registry import Registry
from tests.agents.test_e2e import EXE, Agent, ChannelParams, agent, wait_for
from tests.agents.test_hub import _children, hub

pytest.importorskip("uvicorn")


class BlackHole:
    """A loopback TCP proxy whose :meth:`drop` makes the network vanish: bytes are read
    and thrown away both ways, and no connection is closed (no FIN, no RST)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.dropped = False
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await source.read(65536):
                    if not self.dropped:
                        sink.write(data)
                        await sink.drain()
                while True:  # the peer closed; a dead network would not say so
                    await asyncio.sleep(3600)

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


@contextlib.asynccontextmanager
async def remote_bob(url: str, token: str, home: Path) -> AsyncIterator[tuple[Agent, int]]:
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(home), TERMAL_HOME=str(home / ".termal"), HUB_TOKEN=token)
    args = ["mcp", "--remote", url, "--token-env", "HUB_TOKEN", "--channel", "--ping-every", "0.3"]
    events: list[tuple[float, ChannelParams]] = []

    async def on_channel(params: ChannelParams) -> None:
        events.append((time.monotonic(), params))

    binding = NotificationBinding(
        method="notifications/claude/channel", params_type=ChannelParams, handler=on_channel
    )
    before = _children()
    async with (
        stdio_client(StdioServerParameters(command=EXE, args=args, env=env)) as (read, write),
        ClientSession(read, write, notification_bindings=[binding]) as client,
    ):
        await client.initialize()
        (pid,) = _children() - before
        yield Agent("bob-remote", client, events), pid


def holder_kind(registry: Registry, session_id: str) -> str | None:
    found = registry.channel_holder(session_id)
    return None if found is None else found.kind


async def _send(alice: Agent, n: int) -> dict[str, Any]:
    return await alice.call(  # type: ignore[no-any-return]
        "termal_send_to_session",
        {"sessionId": "bob", "message": f"m{n}", "idempotencyKey": f"k{n}"},
    )


async def test_the_local_listener_gets_the_next_wake_however_the_shim_dies(tmp_path: Path):
    db = tmp_path / "hub" / "coordination.sqlite"
    registry = Registry.beside(db)
    bob_id = registry.add("bob").id
    token = registry.issue_token("bob")[1]
    with hub(db, tmp_path / "hub.log") as running:
        port = int(running.url.rsplit(":", 1)[1].split("/")[0])
        async with (
            agent(db, "alice", channel=False) as alice,
            agent(db, "bob", channel=True) as local,
        ):
            await wait_for(lambda: holder_kind(registry, bob_id) == "local", timeout=10)
            sent = 0
            for way in ("stdin EOF", "SIGTERM", "kill -9", "network gone"):
                proxy = BlackHole(port)
                url = running.url
                if way == "network gone":
                    url = f"http://127.0.0.1:{await proxy.start()}/mcp"
                shim = remote_bob(url, token, tmp_path / "bob-home")
                remote, pid = await shim.__aenter__()
                try:
                    # The newest live listener holds bob's channel: the shim gets the wake.
                    await wait_for(lambda: holder_kind(registry, bob_id) == "remote", timeout=10)
                    sent += 1
                    receipt = await _send(alice, sent)
                    assert receipt["notificationDisposition"] == "deliveredToIdleSession", way
                    await wait_for(lambda r=remote: len(r.events) >= 1, timeout=5)
                    assert remote.events[-1][1].meta["latest_sequence"] == str(sent)
                    mailbox = remote.events[-1][1].meta["mailbox_id"]
                    await remote.call(
                        "termal_acknowledge_mailbox",
                        {
                            "mailboxId": mailbox,
                            "expectedProcessedThrough": sent - 1,
                            "processedThrough": sent,
                        },
                    )
                    local_before = len(local.events)
                    if way == "stdin EOF":
                        await shim.__aexit__(None, None, None)
                    elif way == "SIGTERM":
                        os.kill(pid, signal.SIGTERM)
                    elif way == "kill -9":
                        os.kill(pid, signal.SIGKILL)
                    else:
                        proxy.dropped = True
                    # The hub releases the shim's channel; the local listener takes it back.
                    await wait_for(lambda: holder_kind(registry, bob_id) == "local", timeout=10)
                    sent += 1
                    receipt = await _send(alice, sent)
                    assert receipt["notificationDisposition"] == "deliveredToIdleSession", way
                    await wait_for(lambda n=local_before: len(local.events) > n, timeout=5)
                    assert len(local.events) == local_before + 1, way
                    assert local.events[-1][1].meta["latest_sequence"] == str(sent), way
                    await local.call(
                        "termal_acknowledge_mailbox",
                        {
                            "mailboxId": mailbox,
                            "expectedProcessedThrough": sent - 1,
                            "processedThrough": sent,
                        },
                    )
                finally:
                    if way != "stdin EOF":
                        with contextlib.suppress(BaseException):
                            if way == "network gone":
                                os.kill(pid, signal.SIGKILL)
                            await shim.__aexit__(None, None, None)
                    proxy.close()
    registry.close()
