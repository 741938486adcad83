"""Two peers, Alice (Claude) and bob (Codex), each with AgentTools over one writer and
one registry, with a fast replay policy: the agents' tool tests' common ground."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from termal_tui.agents.registry import Registry
from termal_tui.agents.tools import AgentTools, ReplayPolicy
from termal_tui.store.writer import MailboxWriter, open_writer


@dataclasses.dataclass
class Peers:
    registry: Registry
    alice: AgentTools
    bob: AgentTools
    writer: MailboxWriter


@pytest.fixture
async def peers(db_path: Path) -> AsyncIterator[Peers]:
    registry = Registry.beside(db_path)
    alice = registry.add("Alice", agent="Claude")
    bob = registry.add("bob", agent="Codex")
    async with open_writer(db_path, busy_timeout_ms=100, deadline=0.3) as writer:
        fast = ReplayPolicy(base_delay=0.05, min_replay_budget=0.0)
        yield Peers(
            registry,
            AgentTools(writer, registry, alice.id, replay=fast),
            AgentTools(writer, registry, bob.id, replay=fast),
            writer,
        )


async def send(tools: AgentTools, to: str, body: str, key: str, **extra: object) -> dict:
    return await tools.call(
        "termal_send_to_session", {"sessionId": to, "message": body, "idempotencyKey": key, **extra}
    )
