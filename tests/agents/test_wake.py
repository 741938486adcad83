"""Wake passes and the channel watcher: lifecycle transitions, one wake per mailbox, no bodies."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from termal_tui.agents.registry import Registry
from termal_tui.agents.tools import AgentTools
from termal_tui.agents.wake import ChannelWatcher, channel_meta, wake_pass
from termal_tui.models import UnreadWakeup
from termal_tui.store.writer import MailboxWriter, open_writer
from tests.helpers import rows

STATES = "SELECT sequence, notification_disposition FROM mailbox_messages ORDER BY sequence"


@pytest.fixture
async def setup(db_path: Path) -> AsyncIterator[tuple[Registry, AgentTools, str, MailboxWriter]]:
    registry = Registry.beside(db_path)
    alice = registry.add("alice")
    bob = registry.add("bob")
    async with open_writer(db_path) as alices, open_writer(db_path) as bobs:
        yield registry, AgentTools(alices, registry, alice.id), bob.id, bobs


async def _send(tools: AgentTools, body: str, key: str) -> dict:
    return await tools.call(
        "termal_send_to_session", {"sessionId": "bob", "message": body, "idempotencyKey": key}
    )


async def test_a_pass_marks_recovered_then_delivered_after_writing(setup):
    _registry, alice, bob_id, bobs = setup
    await _send(alice, "SECRET BODY one", "k1")
    await _send(alice, "SECRET BODY two", "k2")
    seen: list[tuple[str, list]] = []

    async def emit(wake: UnreadWakeup, prompt: str) -> None:
        seen.append((prompt, rows(bobs.path, STATES)))  # the state while it is being written

    delivered = await wake_pass(bobs, bob_id, emit)
    assert [w.sequence for w in delivered] == [2]
    prompt, during = seen[0]
    assert during == [(1, "recoveredWake"), (2, "recoveredWake")]
    assert rows(bobs.path, STATES) == [(1, "deliveredToIdleSession"), (2, "deliveredToIdleSession")]
    assert "2 unread message(s)" in prompt and "#2 from alice" in prompt
    assert "SECRET" not in prompt
    assert await wake_pass(bobs, bob_id, emit) == []  # nothing new: nothing to say


async def test_a_wake_that_was_not_written_stays_recoverable(setup):
    _registry, alice, bob_id, bobs = setup
    await _send(alice, "m", "k1")

    async def broken(_wake: UnreadWakeup, _prompt: str) -> None:
        raise OSError("stdout is closed")

    assert await wake_pass(bobs, bob_id, broken) == []
    assert rows(bobs.path, STATES) == [(1, "recoveredWake")]
    # The boot pass (every unread inbound mailbox) recovers it.
    collected: list[str] = []

    async def ok(_wake: UnreadWakeup, prompt: str) -> None:
        collected.append(prompt)

    assert len(await wake_pass(bobs, bob_id, ok, boot=True)) == 1
    assert rows(bobs.path, STATES) == [(1, "deliveredToIdleSession")]


def test_channel_meta_uses_identifier_keys_and_string_values():
    wake = UnreadWakeup(
        mailbox_id="mailbox-1",
        message_id="mailbox-message-1",
        sequence=3,
        unread_count=2,
        sender_session_id="session-a",
        sender_name="alice",
    )
    meta = channel_meta(wake)
    assert all(key.isidentifier() for key in meta)
    assert all(isinstance(value, str) for value in meta.values())
    assert meta["mailbox_id"] == "mailbox-1" and meta["latest_sequence"] == "3"


async def _watch(watcher: ChannelWatcher, seconds: float) -> None:
    task = asyncio.create_task(watcher.run())
    await asyncio.sleep(seconds)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_one_pending_wake_per_mailbox_however_many_sends(setup):
    registry, alice, bob_id, bobs = setup
    pushes: list[UnreadWakeup] = []

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)

    watcher = ChannelWatcher(bobs, registry, bob_id, push, interval=0.02)
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.sleep(0.05)
        for n in range(5):
            await _send(alice, f"m{n}", f"k{n}")
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        assert len(pushes) == 1
        # Bob reads the mailbox: the wake was consumed; a newer send wakes him again.
        bob = AgentTools(bobs, registry, bob_id)
        bob.on_engaged = watcher.engaged
        await bob.call("termal_read_mailbox", {"mailboxId": pushes[0].mailbox_id})
        await asyncio.sleep(0.2)
        assert len(pushes) == 1  # everything unread was already read: no spurious wake
        await _send(alice, "m-new", "k-new")
        await asyncio.sleep(0.3)
        assert [w.sequence for w in pushes] == [1, 6]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_the_first_scan_is_the_boot_pass(setup):
    registry, alice, bob_id, bobs = setup
    await _send(alice, "m", "k")
    await wake_pass(bobs, bob_id, _discard)  # delivered earlier (e.g. by a hook), never acked
    pushes: list[UnreadWakeup] = []

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)

    await _watch(ChannelWatcher(bobs, registry, bob_id, push, interval=0.02), 0.2)
    assert [w.sequence for w in pushes] == [1]  # a new connection is told about unread mail


async def test_a_failed_push_is_retried_later_and_not_marked_delivered(setup):
    registry, alice, bob_id, bobs = setup
    await _send(alice, "m", "k")
    attempts: list[int] = []

    async def flaky(wake: UnreadWakeup, _prompt: str) -> None:
        attempts.append(wake.sequence)
        if len(attempts) == 1:
            raise OSError("the MCP client has gone")

    watcher = ChannelWatcher(bobs, registry, bob_id, flaky, interval=0.02, rescan=0.05)
    await _watch(watcher, 0.3)
    assert attempts[:2] == [1, 1]
    assert rows(bobs.path, STATES) == [(1, "deliveredToIdleSession")]


async def _discard(_wake: UnreadWakeup, _prompt: str) -> None:
    return None


async def test_a_sender_nudges_the_channel_server_instead_of_waiting_for_its_poll(setup):
    registry, alice, bob_id, bobs = setup
    pushes: list[float] = []

    async def push(_wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(asyncio.get_running_loop().time())

    # A poll interval of a minute: only the nudge can make this fast.
    watcher = ChannelWatcher(bobs, registry, bob_id, push, interval=60.0, rescan=60.0)
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.sleep(0.1)  # the boot pass ran (nothing to say)
        started = asyncio.get_running_loop().time()
        receipt = await _send(alice, "m", "k")
        assert receipt["notificationDisposition"] == "deliveredToIdleSession"
        assert len(pushes) == 1 and pushes[0] - started < 1.0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_more_mailboxes_than_one_pass_covers_are_all_woken_promptly(setup):
    registry, alice, bob_id, bobs = setup
    pushes: list[UnreadWakeup] = []

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)

    watcher = ChannelWatcher(bobs, registry, bob_id, push, interval=0.05, rescan=60.0)
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.sleep(0.1)  # boot pass done: nothing yet
        for n in range(20):  # twenty peers, one mailbox each, written between two polls
            await alice.writer.append(
                sender_session_id=f"session-peer{n}",
                sender_name=f"peer{n}",
                target_session_id=bob_id,
                target_name="bob",
                body="m",
                idempotency_key=f"k{n}",
            )
        await asyncio.sleep(0.5)
        assert len({w.mailbox_id for w in pushes}) == 20  # beyond the 16 of one pass
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_wake_ignored_past_the_threshold_is_offered_once_more_and_only_once(setup):
    """Woken, then ignored: one new wake (recorded as a wake, never a new message, never
    a new dispatch outcome), and not again while the agent still has not looked."""
    registry, alice, bob_id, bobs = setup
    await _send(alice, "m", "k")
    outcomes = "SELECT COUNT(*), GROUP_CONCAT(dispatch_outcome) FROM mailbox_messages"
    before = rows(bobs.path, outcomes)
    pushes: list[UnreadWakeup] = []

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)

    watcher = ChannelWatcher(
        bobs, registry, bob_id, push, interval=0.02, rescan=0.05, reoffer_after=0.15
    )
    await _watch(watcher, 0.8)
    assert [w.sequence for w in pushes] == [1, 1]  # the wake, then one re-offer
    assert [w.sequence for w in watcher.reoffered] == [1]
    assert rows(bobs.path, outcomes) == before  # no new row, the outcome untouched
    assert rows(bobs.path, STATES) == [(1, "deliveredToIdleSession")]


async def test_an_engaged_mailbox_is_not_offered_again(setup):
    registry, alice, bob_id, bobs = setup
    await _send(alice, "m", "k")
    pushes: list[UnreadWakeup] = []

    engaging: list[asyncio.Task[None]] = []

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)

        async def reads_it() -> None:  # the agent reads the mailbox right after the wake
            await asyncio.sleep(0.02)
            await watcher.engaged(wake.mailbox_id, wake.sequence)

        engaging.append(asyncio.create_task(reads_it()))

    watcher = ChannelWatcher(
        bobs, registry, bob_id, push, interval=0.02, rescan=0.05, reoffer_after=0.1
    )
    await _watch(watcher, 0.6)
    assert [w.sequence for w in pushes] == [1] and watcher.reoffered == []
