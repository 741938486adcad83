"""The activity stream and the sessions view, headless: real files written through the
store's writers, read with the store's activity queries, fed to the models."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from termal_tui.store import activity as q
from termal_tui.store.board.writer import open_board_writer
from termal_tui.store.writer import MailboxWriter
from termal_tui.views.activity import ActivityModel, Jump
from termal_tui.views.sessions import SessionsModel, hourly, sparkline
from tests.helpers import send

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def clock(start: datetime = NOW) -> Callable[[], datetime]:
    times = iter(start + timedelta(seconds=n) for n in range(10_000))
    return lambda: next(times)


def load(model: ActivityModel, path: Path) -> None:
    with ro(path) as db:
        model.load(
            q.messages_before(db, None, model.page),
            q.board_revisions(db) if q.has_board(db) else [],
            q.participants(db),
        )


def refresh(model: ActivityModel, path: Path) -> int:
    with ro(path) as db:
        window = model.wake_window()
        return model.update(
            q.messages_after(db, model.message_top, 1000),
            q.board_revisions(db) if q.has_board(db) else [],
            q.participants(db),
            q.wake_states(db, *window) if window else None,
        )


async def test_messages_stream_newest_first_and_new_ones_are_marked(
    writer: MailboxWriter, db_path: Path
) -> None:
    for n in range(3):
        await send(writer, body=f"message {n}")
    model = ActivityModel(clock())
    load(model, db_path)
    messages = [e for e in model.events() if e.kind == "message"]
    assert [e.detail for e in messages] == ["message 2", "message 1", "message 0"]
    assert [e.sequence for e in messages] == [3, 2, 1]
    assert messages[0].actor_name == "Alice" and messages[0].other_name == "Bob"
    assert messages[0].jump == Jump("message", messages[0].mailbox_id, 3)
    assert model.new_count == 0  # what was there on opening is not new

    await send(writer, body="message 3")
    added = refresh(model, db_path)
    assert added == 1
    newest = model.events()[0]
    assert newest.detail == "message 3" and model.is_new(newest)
    assert model.new_count == 1
    model.mark_seen()
    assert model.new_count == 0 and not model.is_new(newest)
    assert refresh(model, db_path) == 0  # nothing changed: nothing added twice


async def test_a_cursor_move_is_an_observed_event(writer: MailboxWriter, db_path: Path) -> None:
    receipt = await send(writer)
    await send(writer)
    model = ActivityModel(clock())
    load(model, db_path)
    mailbox = receipt.mailbox_id
    await writer.acknowledge("session-b", mailbox, 0, 2)
    refresh(model, db_path)
    moved = [e for e in model.events() if e.kind == "cursor"]
    assert len(moved) == 1
    assert moved[0].observed and moved[0].actor_name == "Bob" and moved[0].sequence == 2
    assert moved[0].detail == "was #0"
    assert moved[0].jump == Jump("message", mailbox, 2)


async def test_a_senders_own_cursor_move_is_part_of_its_send(
    writer: MailboxWriter, db_path: Path
) -> None:
    first = await send(writer, "session-a", "session-b")
    model = ActivityModel(clock())
    load(model, db_path)
    await send(writer, "session-b", "session-a", body="reply")  # moves b's cursor to #2
    refresh(model, db_path)
    assert [e.kind for e in model.events() if model.is_new(e)] == ["message"]
    await writer.acknowledge("session-a", first.mailbox_id, 1, 2)  # a real acknowledgement
    refresh(model, db_path)
    assert next((e.kind, e.actor_id) for e in model.events() if model.is_new(e)) == (
        "cursor",
        "session-a",
    )


async def test_a_wake_state_change_is_observed(writer: MailboxWriter, db_path: Path) -> None:
    receipt = await send(writer)
    model = ActivityModel(clock())
    load(model, db_path)
    with ro(db_path) as db:
        assert set(q.wake_states(db, 1, 10).values()) == {"durableButNotWoken"}
    await writer.record_dispatch_outcome(receipt.message_id, "deliveredToIdleSession")
    refresh(model, db_path)
    wakes = [e for e in model.events() if e.kind == "wake"]
    assert len(wakes) == 1
    assert wakes[0].observed and wakes[0].detail == "deliveredToIdleSession"
    assert wakes[0].actor_name == "Bob"  # the one woken
    assert refresh(model, db_path) == 0


async def test_joins_and_board_writes_are_in_the_stream(
    writer: MailboxWriter, db_path: Path
) -> None:
    await send(writer)
    async with open_board_writer(db_path) as board:
        await board.set(
            "project-1",
            "plan",
            expected_revision=0,
            author_session_id="session-a",
            author_name="Alice",
            idempotency_key="k1",
            value={"step": 1},
        )
    model = ActivityModel(clock())
    load(model, db_path)
    kinds = {e.kind for e in model.events()}
    assert {"message", "board", "joined"} <= kinds
    written = next(e for e in model.events() if e.kind == "board")
    assert (written.key, written.revision, written.actor_name) == ("plan", 1, "Alice")
    assert written.jump == Jump("key", scope_id="project-1", key="plan")

    async with open_board_writer(db_path) as board:
        await board.set(
            "project-1",
            "plan",
            expected_revision=1,
            author_session_id="session-b",
            author_name="Bob",
            idempotency_key="k2",
            delete=True,
        )
    refresh(model, db_path)
    deleted = model.events()[0]
    assert (deleted.kind, deleted.detail, deleted.revision) == ("board", "deleted", 2)
    assert model.is_new(deleted)


async def test_filters_by_session_mailbox_and_kind(writer: MailboxWriter, db_path: Path) -> None:
    ab = await send(writer, "session-a", "session-b", body="a to b")
    await send(writer, "session-a", "session-c", body="a to c")
    model = ActivityModel(clock())
    load(model, db_path)
    model.only_kind("message")
    assert [e.detail for e in model.events()] == ["a to c", "a to b"]
    model.filter_session("session-b")
    assert [e.detail for e in model.events()] == ["a to b"]
    model.filter_session(None)
    model.filter_mailbox(ab.mailbox_id)
    assert [e.detail for e in model.events()] == ["a to b"]
    assert "messages" in model.describe_filters() and "mailbox" in model.describe_filters()
    model.only_kind(None)
    model.filter_mailbox(None)
    assert model.describe_filters() == ""


async def test_pages_merge_without_a_gap(writer: MailboxWriter, db_path: Path) -> None:
    for n in range(7):
        await send(writer, body=f"m{n}")
    model = ActivityModel(clock(), page=3)
    load(model, db_path)
    assert model.has_older
    shown = [e.detail for e in model.events() if e.kind == "message"]
    assert shown == ["m6", "m5", "m4"]
    while model.has_older:
        with ro(db_path) as db:
            model.older(q.messages_before(db, model.message_floor, model.page))
    shown = [e.detail for e in model.events() if e.kind == "message"]
    assert shown == [f"m{n}" for n in reversed(range(7))]


async def test_activity_reads_by_keyset_on_a_big_file(tmp_path: Path) -> None:
    from termal_tui.demo import fill_pair_mailboxes
    from termal_tui.store.writer import open_writer

    path = tmp_path / "big.sqlite"
    async with open_writer(path):
        pass
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        fill_pair_mailboxes(db, 2_000)
    with ro(path) as db:
        plan = " ".join(
            str(row[-1])
            for row in db.execute(
                "EXPLAIN QUERY PLAN SELECT rowid FROM mailbox_messages WHERE rowid < 10 "
                "ORDER BY rowid DESC LIMIT 5"
            )
        )
        newest = q.messages_before(db, None, 5)
    assert "SCAN" not in plan or "USING INTEGER PRIMARY KEY" in plan
    assert [m.sequence for m in newest] == [2, 1, 2, 1, 2]
    assert newest[0].mailbox_id.startswith("mailbox-00001999")


async def test_sessions_view_one_row_per_agent_most_stuck_first(
    writer: MailboxWriter, db_path: Path
) -> None:
    first = await send(writer, "session-a", "session-b", body="to bob")
    await send(writer, "session-a", "session-b", body="to bob again")
    await send(writer, "session-b", "session-c", body="to carol")
    now = NOW
    model = SessionsModel(lambda: now)

    def read() -> None:
        with ro(db_path) as db:
            model.load(
                q.participants(db),
                q.session_loads(db),
                q.last_board_writes(db) if q.has_board(db) else {},
                q.recent_senders(db),
                {"session-c": "channel · pid 42"},
            )

    read()
    names = [row.name for row in model.rows]
    rows = {row.session_id: row for row in model.rows}
    assert rows["session-b"].unread == 2 and rows["session-c"].unread == 1
    assert rows["session-a"].unread == 0 and not rows["session-a"].behind
    assert rows["session-b"].mailboxes == 2 and rows["session-a"].mailboxes == 1
    assert rows["session-c"].notifier == "channel · pid 42" and rows["session-a"].notifier is None
    assert names[-1] == "Alice"  # caught up: last
    assert model.behind_count == 2
    assert rows["session-b"].last_ack is None
    await writer.acknowledge("session-b", first.mailbox_id, 0, 2)
    now = NOW + timedelta(minutes=5)
    read()
    rows = {row.session_id: row for row in model.rows}
    assert rows["session-b"].unread == 0
    assert rows["session-b"].last_ack == now


def test_sparkline_and_hourly_buckets() -> None:
    stamps = [
        (NOW - timedelta(minutes=10)).isoformat(),
        (NOW - timedelta(minutes=20)).isoformat(),
        (NOW - timedelta(hours=3, minutes=1)).isoformat(),
        (NOW - timedelta(hours=30)).isoformat(),  # outside the window
        "not a time",
    ]
    counts = hourly(stamps, NOW, hours=4)
    assert counts == (1, 0, 0, 2)
    assert sparkline(counts) == "▅▁▁█"
    assert sparkline((0, 0)) == "▁▁"
