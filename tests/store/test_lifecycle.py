"""Wake lifecycle: immutable dispatch outcome vs mutable state, recovery passes, delivery."""

from __future__ import annotations

import pytest

from termal_tui.store import NotFoundError, ValidationError, open_writer
from tests.helpers import StepClock, execute, rows, send


def _states(db):
    return rows(
        db,
        "SELECT sequence, notification_disposition, dispatch_outcome FROM mailbox_messages "
        "ORDER BY mailbox_id, sequence",
    )


async def test_outcome_is_recorded_once_and_advances_only_never_woken_state(writer, db):
    receipt = await send(writer)
    assert await writer.record_dispatch_outcome(receipt.message_id, "queuedBehindActiveTurn") == (
        "queuedBehindActiveTurn"
    )
    # A second finalization cannot replace the immutable outcome.
    assert await writer.record_dispatch_outcome(receipt.message_id, "deliveredToIdleSession") == (
        "queuedBehindActiveTurn"
    )
    assert _states(db) == [(1, "queuedBehindActiveTurn", "queuedBehindActiveTurn")]


async def test_initial_outcome_never_regresses_a_recovered_or_delivered_state(writer, db):
    receipt = await send(writer)
    await writer.mark_recovered_through("session-b", receipt.mailbox_id, 1)
    await writer.record_dispatch_outcome(receipt.message_id, "queuedBehindActiveTurn")
    assert _states(db) == [(1, "recoveredWake", "queuedBehindActiveTurn")]


async def test_outcome_validation_and_missing_message(writer):
    receipt = await send(writer)
    with pytest.raises(ValidationError):
        await writer.record_dispatch_outcome(receipt.message_id, "recoveredWake")
    with pytest.raises(NotFoundError):
        await writer.record_dispatch_outcome("mailbox-message-missing", "durableButNotWoken")


async def test_never_woken_recovery_marks_only_durable_rows(writer, db):
    first = await send(writer)
    second = await send(writer)
    await writer.record_dispatch_outcome(second.message_id, "deliveredToIdleSession")
    changed = await writer.mark_recovered_through("session-b", first.mailbox_id, 2)
    assert changed == 1
    assert [row[1] for row in _states(db)] == ["recoveredWake", "deliveredToIdleSession"]


async def test_boot_recovery_marks_every_unread_row_including_unknown_states(writer, db):
    first = await send(writer)
    second = await send(writer)
    await writer.record_dispatch_outcome(second.message_id, "deliveredToIdleSession")
    execute(
        db,
        "UPDATE mailbox_messages SET notification_disposition='legacyUnknownState' "
        "WHERE sequence = 1",
    )
    changed = await writer.mark_recovered_through("session-b", first.mailbox_id, 2, boot=True)
    assert changed == 2
    assert [row[1] for row in _states(db)] == ["recoveredWake", "recoveredWake"]
    # The immutable receipt outcome stays as it was.
    assert _states(db)[1][2] == "deliveredToIdleSession"


async def test_boot_recovery_skips_processed_rows(writer, db):
    first = await send(writer)
    await send(writer)
    await writer.acknowledge("session-b", first.mailbox_id, 0, 1)
    assert await writer.mark_recovered_through("session-b", first.mailbox_id, 2, boot=True) == 1
    assert [row[1] for row in _states(db)] == ["durableButNotWoken", "recoveredWake"]


async def test_delivery_marks_every_covered_row(writer, db):
    first = await send(writer)
    await send(writer)
    await send(writer)
    await writer.mark_recovered_through("session-b", first.mailbox_id, 3)
    assert await writer.mark_delivered_through("session-b", first.mailbox_id, 2) == 2
    assert [row[1] for row in _states(db)] == [
        "deliveredToIdleSession",
        "deliveredToIdleSession",
        "recoveredWake",
    ]


async def test_ordinary_pass_is_capped_at_16_newest_and_boot_pass_is_not(db):
    from termal_tui.store.writer import open_writer
    from tests.helpers import counter_ids

    async with open_writer(db, clock=StepClock(), new_id=counter_ids()) as writer:
        receipts = [await send(writer, f"session-p{i:02d}", "session-s") for i in range(17)]
        ordinary = await writer.wakeups_for_session("session-s")
        boot = await writer.wakeups_for_session("session-s", boot=True)
    assert len(ordinary) == 16 and len(boot) == 17
    # Newest by created_at first; the oldest mailbox is the one left out.
    assert [w.mailbox_id for w in ordinary] == [r.mailbox_id for r in reversed(receipts[1:])]


async def test_ordinary_pass_ties_break_by_mailbox_id(db):
    from datetime import UTC, datetime

    from termal_tui.store.writer import open_writer
    from tests.helpers import counter_ids

    fixed = datetime(2026, 7, 30, tzinfo=UTC)
    async with open_writer(db, clock=lambda: fixed, new_id=counter_ids()) as writer:
        for i in range(3):
            await send(writer, f"session-p{i}", "session-s")
        ordinary = await writer.wakeups_for_session("session-s")
    ids = [w.mailbox_id for w in ordinary]
    assert ids == sorted(ids)


async def test_never_woken_candidate_is_not_always_the_newest_unread(writer):
    one = await send(writer, body="one")
    await writer.record_dispatch_outcome(one.message_id, "deliveredToIdleSession")
    await send(writer, body="two")  # stays durableButNotWoken
    three = await send(writer, body="three", sender_name="Alice 2")
    await writer.record_dispatch_outcome(three.message_id, "deliveredToIdleSession")
    (wake,) = await writer.wakeups_for_session("session-b")
    assert (wake.sequence, wake.sender_name) == (2, "Alice")
    assert wake.unread_count == 3


async def test_unknown_state_is_ignored_by_the_ordinary_pass(writer, db):
    await send(writer)
    execute(db, "UPDATE mailbox_messages SET notification_disposition = 'legacyUnknownState'")
    assert await writer.wakeups_for_session("session-b") == []
    assert len(await writer.wakeups_for_session("session-b", boot=True)) == 1


async def test_wakeups_exclude_control_topic(writer):
    await send(writer, topic="delegation-review-result/v1")
    assert await writer.wakeups_for_session("session-b", boot=True) == []


async def test_wakeup_prompt_text_matches_termal():
    from termal_tui.agents.prompts import wake_prompt
    from termal_tui.core.models import UnreadWakeup

    wake = UnreadWakeup(
        mailbox_id="mailbox-1",
        message_id="m",
        sequence=3,
        unread_count=2,
        sender_session_id="s",
        sender_name="Alice",
    )
    assert wake_prompt(wake).splitlines()[:2] == [
        "[TermAl mailbox notification]",
        "Mailbox `mailbox-1` has 2 unread message(s). Latest inbound: #3 from Alice.",
    ]


async def test_the_hooks_synchronous_lifecycle_writer_is_the_writers_lifecycle(tmp_path):
    """The same statements through both writers: the same wakes, the same rows moved."""
    import shutil

    from termal_tui.store.lifecycle import open_lifecycle_writer

    states = "SELECT id, notification_disposition FROM mailbox_messages ORDER BY id"
    first, second = tmp_path / "a" / "c.sqlite", tmp_path / "b" / "c.sqlite"
    first.parent.mkdir()
    second.parent.mkdir()
    async with open_writer(first) as writer:
        for n in range(3):
            await writer.append(
                sender_session_id="session-a",
                sender_name="a",
                target_session_id=f"session-{'b' if n < 2 else 'c'}",
                target_name="b" if n < 2 else "c",
                body=f"hi {n}",
                idempotency_key=f"k{n}",
            )
    shutil.copy(first, second)
    for boot in (False, True):
        async with open_writer(first) as writer:
            expected = await writer.wakeups_for_session("session-b", boot=boot, queued=True)
            for wake in expected:
                await writer.mark_recovered_through("session-b", wake.mailbox_id, wake.sequence)
                await writer.mark_delivered_through("session-b", wake.mailbox_id, wake.sequence)
        with open_lifecycle_writer(second) as sync:
            got = sync.wakeups_for_session("session-b", boot=boot, queued=True)
            for wake in got:
                sync.mark_recovered_through("session-b", wake.mailbox_id, wake.sequence)
                sync.mark_delivered_through("session-b", wake.mailbox_id, wake.sequence)
        assert got == expected
    assert rows(first, states) == rows(second, states)
    assert {state for _id, state in rows(second, states)} == {
        "deliveredToIdleSession",
        "durableButNotWoken",
    }
