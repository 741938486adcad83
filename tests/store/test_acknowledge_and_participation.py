"""Acknowledgement CAS (contract §Reading and acknowledgement) and participation repair."""

from __future__ import annotations

import pytest

from termal_tui.store import ConflictError, NotFoundError, ValidationError
from tests.helpers import cursors, rows, send

CONTROL = "delegation-review-result/v1"


async def test_ack_advances_cursor_and_returns_summary_from_the_same_transaction(writer):
    first = await send(writer)
    await send(writer)
    summary = await writer.acknowledge("session-b", first.mailbox_id, 0, 1)
    assert summary.participant("session-b").processed_through == 1
    assert summary.unread_count == 1 and summary.latest_sequence == 2


async def test_stale_expected_conflicts_and_keeps_the_other_readers_progress(writer, db):
    first = await send(writer)
    await send(writer)
    await writer.acknowledge("session-b", first.mailbox_id, 0, 1)
    with pytest.raises(ConflictError, match="no longer equals 0"):
        await writer.acknowledge("session-b", first.mailbox_id, 0, 2)
    assert ("session-b", 1) in [(c[1], c[2]) for c in cursors(db)]


async def test_replaying_a_satisfied_ack_succeeds_idempotently(writer, db):
    first = await send(writer)
    await send(writer)
    await writer.acknowledge("session-b", first.mailbox_id, 0, 2)
    summary = await writer.acknowledge("session-b", first.mailbox_id, 0, 1)  # lost response replay
    assert summary.participant("session-b").processed_through == 2


async def test_ack_cannot_move_backwards_even_for_an_unknown_mailbox(writer):
    with pytest.raises(ValidationError, match="cannot move backwards"):
        await writer.acknowledge("session-b", "mailbox-unknown", 1, 0)


async def test_ack_past_latest_is_a_validation_error_not_a_conflict(writer):
    first = await send(writer)
    await send(writer)
    with pytest.raises(ValidationError, match="acknowledgement 3 exceeds latest sequence 2"):
        await writer.acknowledge("session-b", first.mailbox_id, 3, 3)


async def test_departed_caller_gets_not_found(writer):
    first = await send(writer)
    await writer.mark_session_left("session-b")
    with pytest.raises(NotFoundError, match="mailbox not found for this session"):
        await writer.acknowledge("session-b", first.mailbox_id, 0, 1)


async def test_acknowledging_a_control_only_mailbox_fails_and_rolls_back(writer, db):
    receipt = await send(writer, "session-child", "session-b", topic=CONTROL)
    before = cursors(db)
    for expected, through in ((0, 0), (0, 1)):
        with pytest.raises(NotFoundError, match="mailbox not found while acknowledging"):
            await writer.acknowledge("session-b", receipt.mailbox_id, expected, through)
    assert cursors(db) == before


async def test_parent_can_acknowledge_past_the_visible_latest(writer):
    await send(writer, "session-a", "session-b", body="visible")
    await send(writer, "session-a", "session-b", body="visible 2")
    control = await send(writer, "session-a", "session-b", topic=CONTROL)
    summary = await writer.acknowledge("session-b", control.mailbox_id, 0, 3)
    assert (summary.participant("session-b").processed_through, summary.latest_sequence) == (3, 2)


async def test_deleting_a_session_twice_keeps_the_first_left_at(writer, db):
    await send(writer)
    await writer.mark_session_left("session-b")
    first = rows(db, "SELECT left_at FROM mailbox_participants WHERE session_id='session-b'")
    await writer.mark_session_left("session-b")
    assert rows(db, "SELECT left_at FROM mailbox_participants WHERE session_id='session-b'") == (
        first
    )
    assert first[0][0] is not None


async def test_reactivation_clears_exactly_the_stale_markers_and_restore_puts_them_back(writer, db):
    await send(writer, "session-a", "session-b")
    await send(writer, "session-c", "session-b")
    await writer.acknowledge(
        "session-b", (await send(writer, "session-a", "session-b")).mailbox_id, 0, 1
    )
    await writer.mark_session_left("session-b")
    before = cursors(db)
    cleared = await writer.reactivate_session("session-b")
    assert len(cleared) == 2
    after = cursors(db)
    assert all(c[3] is None for c in after if c[1] == "session-b")
    # The repair preserves the processed cursor.
    assert [c[2] for c in after] == [c[2] for c in before]
    assert await writer.reactivate_session("session-b") == []
    await writer.restore_session_markers("session-b", cleared)
    assert cursors(db) == before
