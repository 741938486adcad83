"""Append: dense sequences, idempotency, validation limits, participants (contract §Delivery, §Idempotency)."""

from __future__ import annotations

import re

import pytest

from termal_tui.core.formats import MAX_BODY_BYTES
from termal_tui.store import ConflictError, ValidationError
from tests.helpers import cursors, rows, send


async def test_sequences_are_dense_per_mailbox_and_direction_shares_one_mailbox(writer, db):
    first = await send(writer, "session-a", "session-b")
    second = await send(writer, "session-b", "session-a")
    other = await send(writer, "session-a", "session-c")
    assert (first.sequence, second.sequence, other.sequence) == (1, 2, 1)
    assert first.mailbox_id == second.mailbox_id != other.mailbox_id
    assert rows(db, "SELECT next_sequence FROM mailboxes WHERE id = ?", (first.mailbox_id,)) == [
        (3,)
    ]


async def test_ids_and_participant_key_match_termal_formats(writer, db):
    receipt = await send(writer, "session-target", "session-sender")
    assert re.fullmatch(r"mailbox-[0-9a-f-]{36}", receipt.mailbox_id)
    assert re.fullmatch(r"mailbox-message-[0-9a-f-]{36}", receipt.message_id)
    assert len(receipt.mailbox_id) == 44 and len(receipt.message_id) == 52
    assert rows(db, "SELECT participant_key FROM mailboxes") == [
        ('["session-sender","session-target"]',)
    ]


async def test_one_append_uses_one_timestamp_everywhere(writer, db):
    await send(writer)
    (created,) = rows(db, "SELECT created_at FROM mailboxes")[0]
    joined = {row[0] for row in rows(db, "SELECT joined_at FROM mailbox_participants")}
    message = rows(db, "SELECT created_at FROM mailbox_messages")[0][0]
    assert joined == {created} and message == created
    assert created.endswith("+00:00") and "Z" not in created


async def test_new_row_is_durable_but_not_woken_with_null_outcome(writer, db):
    receipt = await send(writer)
    assert receipt.notification_disposition == "durableButNotWoken" and not receipt.duplicate
    assert rows(
        db, "SELECT notification_disposition, dispatch_outcome, class FROM mailbox_messages"
    ) == [("durableButNotWoken", None, "routine")]


async def test_exact_retry_returns_original_receipt_without_inserting(writer, db):
    original = await send(writer, key="k", topic="t", state_stamp="s")
    await writer.record_dispatch_outcome(original.message_id, "queuedBehindActiveTurn")
    await writer.mark_delivered_through("session-b", original.mailbox_id, 1)
    retry = await send(writer, key="k", topic="t", state_stamp="s", sender_name="Renamed")
    assert retry.duplicate
    assert (retry.message_id, retry.sequence) == (original.message_id, original.sequence)
    # The immutable receipt outcome, even though the mutable state advanced since.
    assert retry.notification_disposition == "queuedBehindActiveTurn"
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(1,)]
    # A duplicate refreshes nothing, not even the participant display name.
    assert ("Alice",) in rows(db, "SELECT display_name FROM mailbox_participants")


async def test_duplicate_of_never_finalized_row_resolves_to_durable_but_not_woken(writer):
    await send(writer, key="k")
    retry = await send(writer, key="k")
    assert retry.duplicate and retry.notification_disposition == "durableButNotWoken"


@pytest.mark.parametrize(
    ("original", "retry"),
    [
        ({}, {"body": "different"}),
        ({}, {"target": "session-c"}),
        ({"topic": "t"}, {"topic": "t2"}),
        ({}, {"topic": ""}),  # "" and null are different intents
        ({}, {"state_stamp": "s"}),
    ],
)
async def test_reusing_a_key_with_a_different_intent_conflicts(writer, db, original, retry):
    await send(writer, key="k", **original)
    with pytest.raises(ConflictError, match="idempotency key `k` was already used"):
        await send(writer, key="k", **(original | retry))
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(1,)]


async def test_keys_are_scoped_per_sender_and_compared_untrimmed(writer, db):
    one = await send(writer, "session-a", "session-b", key="k")
    two = await send(writer, "session-b", "session-a", key="k")
    three = await send(writer, "session-a", "session-b", key=" k")
    assert not (one.duplicate or two.duplicate or three.duplicate)
    assert [r.sequence for r in (one, two, three)] == [1, 2, 3]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"key": "   "}, "idempotency key are required"),
        ({"body": " \n\t\u3000"}, "cannot be empty"),
        ({"key": "k" * 257}, "exceeds 256 bytes"),
        ({"key": "é" * 129}, "exceeds 256 bytes"),
        ({"body": "x" * (MAX_BODY_BYTES + 1)}, "body exceeds 262144 bytes"),
        ({"topic": "t" * 4097}, "topic exceeds 4096 bytes"),
        ({"state_stamp": "s" * 4097}, "state stamp exceeds 4096 bytes"),
        ({"target": "session-a"}, "must target another session"),
        ({"message_class": "urgent"}, "only class `routine`"),
    ],
)
async def test_invalid_appends_are_rejected_not_truncated(writer, db, fields, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        await send(writer, **fields)
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(0,)]


async def test_limits_are_inclusive_and_bodies_round_trip_verbatim(writer, db):
    body = "  padded body with trailing space and é  \n"
    await send(writer, body=body, key="k" * 256, topic="t" * 4096, state_stamp="")
    await send(writer, body="x" * MAX_BODY_BYTES)
    await send(writer, body="ok", topic="")
    stored = [r[0] for r in rows(db, "SELECT body FROM mailbox_messages ORDER BY sequence")]
    assert stored[0] == body and len(stored[1]) == MAX_BODY_BYTES
    assert rows(db, "SELECT topic FROM mailbox_messages WHERE sequence = 3") == [("",)]


async def test_departed_target_conflicts_and_commits_nothing(writer, db):
    first = await send(writer)
    await writer.mark_session_left("session-b")
    before = rows(db, "SELECT next_sequence FROM mailboxes")
    with pytest.raises(ConflictError, match="departed"):
        await send(writer, "session-a", "session-b")
    assert rows(db, "SELECT next_sequence FROM mailboxes") == before
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(1,)]
    assert first.sequence == 1


async def test_departed_sender_is_accepted_keeps_left_at_and_cursor(writer, db):
    await send(writer, "session-a", "session-b")
    await writer.mark_session_left("session-a")
    receipt = await send(writer, "session-a", "session-b")
    assert receipt.sequence == 2
    (row,) = rows(
        db,
        "SELECT processed_through, left_at FROM mailbox_participants WHERE session_id='session-a'",
    )
    assert row[0] == 1 and row[1] is not None  # the cursor did not follow #2


async def test_sender_cursor_follows_only_when_caught_up(writer, db):
    await send(writer, "session-a", "session-b")  # a: 0 -> 1
    await send(writer, "session-b", "session-a")  # b was at 0, #2 needs 1: stays 0
    await send(writer, "session-a", "session-b")  # a at 1, #3 needs 2: stays (it has #2 unread)
    assert [(c[1], c[2]) for c in cursors(db)] == [("session-a", 1), ("session-b", 0)]


async def test_unread_depth_counts_inbound_unread_including_the_new_row(writer):
    depths = [(await send(writer, "session-a", "session-b")).unread_depth for _ in range(3)]
    reply = await send(writer, "session-b", "session-a")
    assert depths == [1, 2, 3] and reply.unread_depth == 1


async def test_display_names_refresh_on_append_while_rows_keep_snapshots(writer, db):
    await send(writer, sender_name="Alice")
    await send(writer, sender_name="Alice Renamed")
    assert ("Alice Renamed",) in rows(
        db, "SELECT display_name FROM mailbox_participants WHERE session_id = 'session-a'"
    )
    assert rows(db, "SELECT sender_name FROM mailbox_messages ORDER BY sequence") == [
        ("Alice",),
        ("Alice Renamed",),
    ]
