"""Wake passes and the channel watcher: lifecycle transitions, one wake per mailbox, no bodies.

The watcher is driven tick by tick on a driven clock (``ChannelWatcher.tick``): a test
counts what each tick pushed, and proves a negative by running the ticks that would have
produced it. Only the nudge test runs the watcher's own loop, and waits for the events
it reacts to, never for time to pass."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from termal_tui.agents.registry import Registry
from termal_tui.agents.tools import AgentTools, WakeTiming
from termal_tui.agents.wake import ChannelWatcher, channel_meta, wake_pass
from termal_tui.core.formats import NEVER_WOKEN_PASS_CAP
from termal_tui.core.models import UnreadWakeup
from termal_tui.store.writer import MailboxWriter, open_writer
from tests.helpers import DrivenClock, rows

STATES = "SELECT sequence, notification_disposition FROM mailbox_messages ORDER BY sequence"


@pytest.fixture
def clock() -> DrivenClock:
    return DrivenClock()


@pytest.fixture
async def setup(
    db_path: Path, clock: DrivenClock
) -> AsyncIterator[tuple[Registry, AgentTools, str, MailboxWriter]]:
    """The registry (heartbeats, wake marks) and the watchers share one driven clock.
    Alice's sends do not wait for Bob's delivery (the watcher is ticked by the test after
    the send returns); the nudge test, which is about that wait, restores it."""
    registry = Registry.beside(db_path, clock=clock)
    alice = registry.add("alice")
    bob = registry.add("bob")
    async with open_writer(db_path) as alices, open_writer(db_path) as bobs:
        tools = AgentTools(alices, registry, alice.id, wake=WakeTiming(wait=0))
        yield registry, tools, bob.id, bobs


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


async def _started(watcher: ChannelWatcher) -> ChannelWatcher:
    """Registered, then its first tick: the heartbeat, the channel taken, the boot pass."""
    await watcher.start()
    await watcher.tick()
    assert watcher.holding
    return watcher


async def _discard(_wake: UnreadWakeup, _prompt: str) -> None:
    return None


async def test_one_pending_wake_per_mailbox_however_many_sends(setup, clock):
    registry, alice, bob_id, bobs = setup
    pushes: list[UnreadWakeup] = []

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)

    watcher = await _started(ChannelWatcher(bobs, registry, bob_id, push, clock=clock))
    assert pushes == []  # the boot pass: nothing unread yet
    for n in range(5):
        await _send(alice, f"m{n}", f"k{n}")
        await watcher.tick()  # a pass: another connection committed (and the nudge)
        clock.advance(watcher.rescan)
        await watcher.tick()  # a rescan pass
    assert len(pushes) == 1
    # Bob reads the mailbox: the wake was consumed; a newer send wakes him again.
    bob = AgentTools(bobs, registry, bob_id)
    bob.on_engaged = watcher.engaged
    await bob.call("termal_read_mailbox", {"mailboxId": pushes[0].mailbox_id})
    await watcher.tick()  # engaged: a pass
    clock.advance(watcher.rescan)
    await watcher.tick()
    assert len(pushes) == 1  # everything unread was already read: no spurious wake
    await _send(alice, "m-new", "k-new")
    await watcher.tick()
    assert [w.sequence for w in pushes] == [1, 6]


async def test_the_first_scan_is_the_boot_pass(setup, clock):
    registry, alice, bob_id, bobs = setup
    await _send(alice, "m", "k")
    await wake_pass(bobs, bob_id, _discard)  # delivered earlier (e.g. by a hook), never acked
    pushes: list[UnreadWakeup] = []

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)

    watcher = await _started(ChannelWatcher(bobs, registry, bob_id, push, clock=clock))
    assert [w.sequence for w in pushes] == [1]  # a new connection is told about unread mail
    clock.advance(watcher.rescan)
    await watcher.tick()  # a later pass is not a boot pass: nothing new to say
    assert [w.sequence for w in pushes] == [1]


async def test_a_failed_push_is_retried_later_and_not_marked_delivered(setup, clock):
    registry, alice, bob_id, bobs = setup
    await _send(alice, "m", "k")
    attempts: list[int] = []

    async def flaky(wake: UnreadWakeup, _prompt: str) -> None:
        attempts.append(wake.sequence)
        if len(attempts) == 1:
            raise OSError("the MCP client has gone")

    watcher = ChannelWatcher(bobs, registry, bob_id, flaky, clock=clock)
    await watcher.start()
    await watcher.tick()
    assert attempts == [1]
    assert rows(bobs.path, STATES) == [(1, "recoveredWake")]  # not written: not delivered
    await watcher.tick()  # the next tick retries it (as a boot pass), nothing else needed
    assert attempts == [1, 1]
    assert rows(bobs.path, STATES) == [(1, "deliveredToIdleSession")]


async def test_a_sender_nudges_the_channel_server_instead_of_waiting_for_its_poll(setup, clock):
    """The watcher's own loop, with a poll interval and a rescan of an hour: only the
    sender's nudge can wake it while the send waits for its delivery (a send that was
    not delivered answers durableButNotWoken)."""
    registry, alice, bob_id, bobs = setup
    alice.wake = WakeTiming()  # the send waits for the delivery, as it does for real
    await alice.writer.append(  # unread mail from another peer: its wake says the loop is up
        sender_session_id="session-carol",
        sender_name="carol",
        target_session_id=bob_id,
        target_name="bob",
        body="m",
        idempotency_key="k0",
    )
    pushes: list[UnreadWakeup] = []
    booted = asyncio.Event()

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)
        booted.set()

    watcher = ChannelWatcher(
        bobs, registry, bob_id, push, interval=3600.0, rescan=3600.0, clock=clock
    )
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(booted.wait(), 30)  # the boot pass: it holds, it listens
        receipt = await _send(alice, "m", "k")
        assert receipt["notificationDisposition"] == "deliveredToIdleSession"
        assert [w.sender_name for w in pushes] == ["carol", "alice"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert registry.channel_holder(bob_id) is None  # cancelled: its listener released


async def test_more_mailboxes_than_one_pass_covers_are_all_woken_promptly(setup, clock):
    registry, alice, bob_id, bobs = setup
    pushes: list[UnreadWakeup] = []

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)

    watcher = await _started(ChannelWatcher(bobs, registry, bob_id, push, clock=clock))
    for n in range(20):  # twenty peers, one mailbox each, written between two polls
        await alice.writer.append(
            sender_session_id=f"session-peer{n}",
            sender_name=f"peer{n}",
            target_session_id=bob_id,
            target_name="bob",
            body="m",
            idempotency_key=f"k{n}",
        )
    await watcher.tick()
    assert len(pushes) == NEVER_WOKEN_PASS_CAP  # one pass covers sixteen...
    assert watcher._dirty.is_set()  # ...and says to look again at once (no interval waited)
    await watcher.tick()  # the same instant: no rescan due, no other commit
    assert len({w.mailbox_id for w in pushes}) == 20  # beyond the 16 of one pass


async def test_a_wake_ignored_past_the_threshold_is_offered_once_more_and_only_once(setup, clock):
    """Woken, then ignored: one new wake (recorded as a wake, never a new message, never
    a new dispatch outcome), and not again while the agent still has not looked."""
    registry, alice, bob_id, bobs = setup
    await _send(alice, "m", "k")
    outcomes = "SELECT COUNT(*), GROUP_CONCAT(dispatch_outcome) FROM mailbox_messages"
    before = rows(bobs.path, outcomes)
    pushes: list[UnreadWakeup] = []

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)

    watcher = await _started(ChannelWatcher(bobs, registry, bob_id, push, clock=clock))
    assert [w.sequence for w in pushes] == [1]
    clock.advance(watcher.reoffer_after - 1)
    await watcher.tick()  # a rescan pass, a second short of the threshold
    assert [w.sequence for w in pushes] == [1] and watcher.reoffered == []
    clock.advance(watcher.rescan)
    await watcher.tick()  # the next rescan pass, past it
    assert [w.sequence for w in pushes] == [1, 1]  # the wake, then one re-offer
    assert [w.sequence for w in watcher.reoffered] == [1]
    for _ in range(3):  # still ignored, however long: not offered again
        clock.advance(watcher.reoffer_after)
        await watcher.tick()
    assert [w.sequence for w in pushes] == [1, 1]
    assert rows(bobs.path, outcomes) == before  # no new row, the outcome untouched
    assert rows(bobs.path, STATES) == [(1, "deliveredToIdleSession")]


async def test_an_engaged_mailbox_is_not_offered_again(setup, clock):
    registry, alice, bob_id, bobs = setup
    await _send(alice, "m", "k")
    pushes: list[UnreadWakeup] = []

    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        pushes.append(wake)

    watcher = await _started(ChannelWatcher(bobs, registry, bob_id, push, clock=clock))
    assert [w.sequence for w in pushes] == [1]
    clock.advance(1)
    await watcher.engaged(pushes[0].mailbox_id, pushes[0].sequence)  # read right after
    await watcher.tick()
    for _ in range(3):  # past the re-offer threshold, more than once
        clock.advance(watcher.reoffer_after)
        await watcher.tick()
    assert [w.sequence for w in pushes] == [1] and watcher.reoffered == []
