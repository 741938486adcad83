"""The read-only reader: TermAl's per-session semantics, the human view, paging, errors."""

from __future__ import annotations

import sqlite3

import pytest

from termal_tui.store import NotFoundError, SchemaError, ValidationError, open_reader
from tests.helpers import execute, send, sqlite_only, state_of

CONTROL = "delegation-review-result/v1"


async def test_control_rows_are_hidden_only_from_their_addressee(writer, db):
    await send(writer, "session-child", "session-p", body="routine hello")
    control = await send(writer, "session-child", "session-p", body="{}", topic=CONTROL)
    async with open_reader(db) as reader:
        parent = await reader.read_range(control.mailbox_id, session_id="session-p")
        child = await reader.read_range(control.mailbox_id, session_id="session-child")
        human = await reader.read_range(control.mailbox_id)
        assert [m.sequence for m in parent] == [1]
        assert [m.sequence for m in child] == [1, 2]
        assert [m.sequence for m in human] == [1]
        with pytest.raises(NotFoundError, match="mailbox message not found"):
            await reader.read_message(control.message_id, session_id="session-p")
        assert (
            await reader.read_message(control.message_id, session_id="session-child")
        ).topic == CONTROL
        # Summary latest/preview hide control rows in both directions.
        for viewer in ("session-p", "session-child", None):
            (summary,) = await reader.list_mailboxes(session_id=viewer)
            assert summary.latest_sequence == 1
            assert summary.latest_message_preview == "routine hello"


async def test_control_only_mailbox_is_not_listed(writer, db):
    await send(writer, "session-child", "session-p", topic=CONTROL)
    async with open_reader(db) as reader:
        assert await reader.list_mailboxes() == []
        assert await reader.list_mailboxes(session_id="session-p") == []


async def test_unread_counts_inbound_only_and_preview_may_be_own_outbound(writer, db):
    await send(writer, "session-a", "session-b", body="to bob")
    await send(writer, "session-b", "session-a", body="my own reply")
    async with open_reader(db) as reader:
        (bob,) = await reader.list_mailboxes(session_id="session-b")
        (human,) = await reader.list_mailboxes()
    assert bob.unread_count == 1 and bob.latest_message_preview == "my own reply"
    assert human.unread_count == 2  # each message against its own target's cursor


async def test_participants_and_summaries_are_in_byte_order_with_id_tiebreak(db):
    from datetime import UTC, datetime

    from termal_tui.store.writer import open_writer
    from tests.helpers import counter_ids

    fixed = datetime(2026, 7, 30, tzinfo=UTC)
    async with open_writer(db, clock=lambda: fixed, new_id=counter_ids()) as writer:
        await send(writer, "session-9", "session-10")
        await send(writer, "session-9", "session-11")
    async with open_reader(db) as reader:
        summaries = await reader.list_mailboxes()
    assert [p.session_id for p in summaries[0].participants] == ["session-10", "session-9"]
    assert [s.id for s in summaries] == sorted(s.id for s in summaries)


async def test_summaries_are_newest_activity_first(writer, db):
    old = await send(writer, "session-a", "session-b")
    new = await send(writer, "session-a", "session-c")
    async with open_reader(db) as reader:
        assert [s.id for s in await reader.list_mailboxes()] == [new.mailbox_id, old.mailbox_id]


async def test_read_limits_clamp_and_reject_negative(writer, db):
    for _ in range(205):
        receipt = await send(writer)
    async with open_reader(db) as reader:
        assert len(await reader.read_range(receipt.mailbox_id, 0, 0)) == 1
        assert len(await reader.read_range(receipt.mailbox_id, 0, 201)) == 200
        assert len(await reader.read_range(receipt.mailbox_id, 0, 1000)) == 200
        assert len(await reader.read_range(receipt.mailbox_id)) == 50
        assert await reader.read_range(receipt.mailbox_id, 205) == []
        assert await reader.read_range(receipt.mailbox_id, 999) == []
        with pytest.raises(ValidationError):
            await reader.read_range(receipt.mailbox_id, 0, -1)
        with pytest.raises(ValidationError):
            await reader.read_range(receipt.mailbox_id, 0, 1.5)  # type: ignore[arg-type]


async def test_read_page_is_keyset_newest_first_with_honest_has_older(writer, db):
    for _ in range(120):
        receipt = await send(writer)
    async with open_reader(db) as reader:
        first = await reader.read_page(receipt.mailbox_id)
        second = await reader.read_page(receipt.mailbox_id, first.oldest_sequence)
        third = await reader.read_page(receipt.mailbox_id, second.oldest_sequence)
    assert [m.sequence for m in first.messages] == list(range(120, 70, -1))
    assert first.has_older and second.has_older and not third.has_older
    assert [m.sequence for m in third.messages] == list(range(20, 0, -1))


async def test_has_older_settles_when_lowest_sequences_are_hidden(writer, db):
    control = await send(writer, "session-child", "session-p", topic=CONTROL)
    for _ in range(3):
        await send(writer, "session-child", "session-p")
    async with open_reader(db) as reader:
        page = await reader.read_page(control.mailbox_id, limit=3, session_id="session-p")
    assert [m.sequence for m in page.messages] == [4, 3, 2]
    assert page.has_older is False  # TermAl's "lowest > 1" rule would never settle


async def test_per_session_reads_require_an_active_participant(writer, db):
    receipt = await send(writer)
    await writer.mark_session_left("session-b")
    async with open_reader(db) as reader:
        for call in (
            reader.read_range(receipt.mailbox_id, session_id="session-b"),
            reader.read_range(receipt.mailbox_id, session_id="session-c"),
            reader.read_message(receipt.message_id, session_id="session-c"),
            reader.get_mailbox(receipt.mailbox_id, session_id="session-b"),
        ):
            with pytest.raises(NotFoundError, match="mailbox not found for this session"):
                await call
        assert await reader.list_mailboxes(session_id="session-b") == []
        assert len(await reader.list_mailboxes()) == 1  # the human view still shows it


async def test_reader_tolerates_legacy_rows(writer, db):
    receipt = await send(writer)
    execute(
        db,
        "UPDATE mailbox_messages SET created_at = '2026-07-26T00:00:00Z', body = '', "
        "notification_disposition = 'legacyUnknownState'",
    )
    async with open_reader(db) as reader:
        (message,) = await reader.read_range(receipt.mailbox_id)
        (summary,) = await reader.list_mailboxes()
    assert message.notification_state == "legacyUnknownState" and message.body == ""
    assert summary.latest_message_preview == "" and summary.latest_message_at.endswith("Z")


async def test_preview_uses_the_whole_body_when_the_prefix_is_mostly_whitespace(writer, db):
    body = " " * 3000 + "word " * 50
    await send(writer, body=body)
    async with open_reader(db) as reader:
        (summary,) = await reader.list_mailboxes()
    assert summary.latest_message_preview == ("word " * 32)[:160] + "…"


async def test_reader_never_changes_the_database(writer, db):
    receipt = await send(writer)
    await send(writer, "session-b", "session-a")
    before = state_of(db)
    async with open_reader(db) as reader:
        await reader.list_mailboxes()
        await reader.list_mailboxes(session_id="session-a")
        await reader.read_page(receipt.mailbox_id)
        await reader.read_range(receipt.mailbox_id, session_id="session-b")
        await reader.read_message(receipt.message_id)
        await reader.get_mailbox(receipt.mailbox_id, session_id="session-a")
    assert state_of(db) == before


@sqlite_only
async def test_the_readers_connection_refuses_writes(writer, db):
    await send(writer)
    before = state_of(db)
    async with open_reader(db) as reader:
        with pytest.raises(sqlite3.OperationalError):
            await reader._db.execute("UPDATE mailbox_participants SET processed_through = 99")
    assert state_of(db) == before


@sqlite_only
async def test_reader_holds_no_transaction_between_calls(writer, db):
    receipt = await send(writer)
    async with open_reader(db) as reader:
        await reader.read_page(receipt.mailbox_id)
        assert not reader._db.in_transaction
        await send(writer)  # a writer commits between two reads
        page = await reader.read_page(receipt.mailbox_id)
    assert page.messages[0].sequence == 2


async def test_reader_errors_are_actionable_sentences(tmp_path):
    missing = tmp_path / "missing.sqlite"
    with pytest.raises(SchemaError, match="does not exist"):
        async with open_reader(missing):
            pass
    assert not missing.exists()
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(SchemaError, match="not a SQLite database"):
        async with open_reader(garbage):
            pass
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.commit()
    with pytest.raises(SchemaError, match="not a TermAl coordination database"):
        async with open_reader(other):
            pass


async def test_reader_refuses_unsupported_schema_version(writer, db):
    await send(writer)
    execute(db, "UPDATE meta SET value = '2' WHERE key = 'coordination_schema_version'")
    with pytest.raises(SchemaError, match="unsupported SQLite coordination schema version `2`"):
        async with open_reader(db):
            pass


async def test_concurrent_reader_calls_each_get_their_own_snapshot(writer, db):
    import asyncio

    receipt = await send(writer)
    async with open_reader(db) as reader:
        results = await asyncio.gather(
            *[reader.list_mailboxes() for _ in range(5)],
            *[reader.read_page(receipt.mailbox_id) for _ in range(5)],
        )
    summaries, pages = results[:5], results[5:]
    assert all(len(s) == 1 and s[0].id == receipt.mailbox_id for s in summaries)
    assert all([m.sequence for m in page.messages] == [1] for page in pages)
