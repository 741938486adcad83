"""The board store's own contract beyond the recorded cases: TermAl's busy sentences at
each gate, the admission shared with the mailbox writer, the read-only reader and its
views for people, wire shapes, inputs TermAl's types cannot express, and timestamps."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import pickle
import re
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from termal_tui.store.board import (
    BoardReader,
    dumps,
    format_board_timestamp,
    normalize_author_name,
    open_board_reader,
    queries,
    request_hash,
)
from termal_tui.store.board import reader as board_reader
from termal_tui.store.board.writer import MISSING, BoardWriter, open_board_writer
from termal_tui.store.connection import WriterAdmission
from termal_tui.store.errors import (
    ConflictError,
    NotFoundError,
    RetryableError,
    StoreError,
    UnprocessableError,
    ValidationError,
)
from tests.board_cases import fixed_clock
from tests.helpers import execute, rows, sqlite_only

WRITE_CLAUSE = (
    "no coordination board write was committed by this operation, so retry the same request"
)
READ_CLAUSE = "no mutation was attempted by this read operation, so retry the same request"
BUSY = "coordination board storage is temporarily busy while {}; {}"


async def put(writer: BoardWriter, key: str, expected: int, value=MISSING, **extra):
    extra.setdefault("idempotency_key", f"{key}-{expected}-{'del' if value is MISSING else 'set'}")
    return await writer.set(
        extra.pop("scope", "project-1"),
        key,
        expected_revision=expected,
        author_session_id=extra.pop("author", "session-a"),
        author_name=extra.pop("name", "Alice"),
        value=value,
        delete=value is MISSING,
        **extra,
    )


@pytest.fixture
async def board(db):
    """The board writer on the test's engine (a SQLite file or a PostgreSQL database)."""
    async with open_board_writer(db, clock=fixed_clock(), deadline=0.3) as writer:
        yield writer


# ------------------------------------------------------------------ busy sentences


@sqlite_only
async def test_a_held_board_connection_is_the_write_and_read_sentences(board):
    await put(board, "a", 0, 1)
    async with board._connection:  # another board operation holds the private connection
        with pytest.raises(RetryableError) as write:
            await put(board, "a", 1, 2)
        with pytest.raises(RetryableError) as read:
            await board.get("project-1", "a")
    connection = "waiting for the coordination board connection"
    assert str(write.value) == BUSY.format(connection, WRITE_CLAUSE)
    assert str(read.value) == BUSY.format(connection, READ_CLAUSE)
    assert write.value.http_status == 503
    assert (await board.get("project-1", "a")).head.revision == 1


@sqlite_only
async def test_board_writes_queue_behind_mailbox_writes_in_the_shared_admission(board, db, writer):
    """The FIFO admission is per file and shared with the mailbox writer (`writer`)."""
    assert WriterAdmission.for_path(board.path) is writer._admission
    async with writer._admission.internal():  # a mailbox write holds the admission
        with pytest.raises(RetryableError) as raised:
            await put(board, "a", 0, 1)
    assert str(raised.value) == BUSY.format("beginning coordination board update", WRITE_CLAUSE)
    assert rows(db, "SELECT COUNT(*) FROM coordination_board_entries") == [(0,)]
    # The board's connection was released with the admission refusal.
    assert (await put(board, "a", 0, 1)).revision == 1


async def test_sqlite_busy_from_another_process_is_retryable_with_nothing_written(db_path):
    async with open_board_writer(db_path, busy_timeout_ms=100) as board:
        await put(board, "a", 0, 1)
        other = sqlite3.connect(db_path, timeout=0)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(RetryableError) as raised:
                await put(board, "a", 1, 2)
            with pytest.raises(RetryableError) as scope:
                await board.delete_scope("project-1", timeout=0.05)
        finally:
            other.rollback()
            other.close()
        assert str(raised.value) == BUSY.format("beginning coordination board update", WRITE_CLAUSE)
        assert str(scope.value) == BUSY.format(
            "beginning coordination board scope deletion", WRITE_CLAUSE
        )
        # The lifecycle budget was scoped: the connection's own busy timeout is back.
        assert await board._call(lambda c: c.execute("PRAGMA busy_timeout").fetchone(), None) == (
            100,
        )
        receipt = await put(board, "a", 1, 2)
        assert (receipt.revision, receipt.generation) == (2, 2)


@sqlite_only
async def test_scope_deletion_waits_at_most_its_budget_for_the_connection(board, db):
    async with board._connection:
        with pytest.raises(RetryableError) as raised:
            await board.delete_scope("project-1", timeout=0.01)
    assert str(raised.value) == BUSY.format(
        "waiting to delete the coordination board scope", WRITE_CLAUSE
    )
    async with board._admission.internal():
        with pytest.raises(RetryableError) as admitted:
            await board.delete_scope("project-1", timeout=0.01)
    assert str(admitted.value) == BUSY.format("deleting coordination board scope", WRITE_CLAUSE)
    assert rows(db, "SELECT COUNT(*) FROM coordination_board_deleted_scopes") == [(0,)]


async def test_a_locked_file_is_a_retryable_open_and_busy_reads_use_the_read_clause(db_path):
    async with open_board_writer(db_path) as board:
        await put(board, "a", 0, 1)
    locker = sqlite3.connect(db_path, timeout=0, isolation_level=None)
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    locker.execute("UPDATE coordination_board_scopes SET generation = generation")
    try:
        with pytest.raises(RetryableError) as raised:
            async with open_board_reader(db_path, busy_timeout_ms=50):
                pass
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    # Opening checks the schema first, as the mailbox reader does, with its sentence.
    assert str(raised.value) == (
        f"{db_path} is busy (locked by another process); nothing was read, try again"
    )
    # A read that meets SQLite busy once open: TermAl's read-safe sentence.
    busy = board_reader.read_failure(db_path, sqlite3.OperationalError("database is locked"))
    assert isinstance(busy, RetryableError)
    assert str(busy) == BUSY.format("waiting for the coordination board connection", READ_CLAUSE)


# ------------------------------------------------------------------ the reader


def _digest(path: Path) -> dict[str, str]:
    out = {}
    for suffix in ("", "-wal"):
        candidate = Path(f"{path}{suffix}")
        if candidate.exists():
            out[suffix] = hashlib.sha256(candidate.read_bytes()).hexdigest()
    return out


async def _sample_board(db: Path | str) -> None:
    async with open_board_writer(db, clock=fixed_clock()) as board:
        await put(board, "gate", 0, {"b": 1, "a": [1.5, None]}, state_stamp="s1")
        await put(board, "gate", 1, "two")
        await put(board, "gate", 2, "three", name="Bob\x07")
        await put(board, "gone", 0, "x")
        await put(board, "gone", 1)
        await put(board, "null", 0, None)
        await put(board, "k", 0, 1, scope="project-2")
        await put(board, "k", 0, 1, scope="project-3")
        await board.delete_scope("project-3")


async def test_the_reader_changes_nothing_on_disk(db_path):
    await _sample_board(db_path)
    before = _digest(db_path)
    async with open_board_reader(db_path) as reader:
        await reader.list("project-1")
        await reader.get("project-1", "gate")
        with pytest.raises(NotFoundError):
            await reader.get("project-1", "gone")
        await reader.scopes()
        await reader.entries("project-1", include_deleted=True)
        await reader.history("project-1", "gate")
        await reader.generations()
        await reader.deleted_scopes()
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            await reader._db.execute("DELETE FROM coordination_board_entries")
    after = _digest(db_path)
    assert after[""] == before[""]  # the database itself: byte for byte
    # SQLite's WAL index may add an empty -wal beside it (shared state, no rows).
    assert after.get("-wal") in (before.get("-wal"), hashlib.sha256(b"").hexdigest())


def test_the_reader_modules_hold_no_writing_sql_and_never_load_the_writer():
    source = inspect.getsource(board_reader) + inspect.getsource(queries)
    for verb in ("INSERT", "UPDATE", "DELETE", "ALTER", "CREATE", "REPLACE", "COMMIT"):
        assert not re.search(rf"\b{verb}\b", source.upper()), verb
    code = (
        "import sys, termal_tui.store.board; print('termal_tui.store.board.writer' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_the_views_for_people(db):
    await _sample_board(db)
    async with open_board_reader(db) as reader:
        scopes = {scope.scope_id: scope for scope in await reader.scopes()}
        assert set(scopes) == {"project-1", "project-2"}  # project-3 was deleted
        one = scopes["project-1"]
        assert (one.generation, one.live_count, one.tombstone_count) == (6, 2, 1)
        assert (await reader.generations()) == {"project-1": 6, "project-2": 1}
        assert await reader.generation("project-1") == 6
        assert await reader.generation("project-9") == 0
        assert [name for name, _ in await reader.deleted_scopes()] == ["project-3"]
        live = await reader.entries("project-1")
        assert [head.key for head in live] == ["gate", "null"]
        every = await reader.entries("project-1", include_deleted=True)
        assert [(head.key, head.deleted, head.value) for head in every] == [
            ("gate", False, "three"),
            ("gone", True, None),
            ("null", False, None),
        ]
        assert every[0].author_name == "Bob"  # the route's snapshot of the session name
        history = await reader.history("project-1", "gate")
        assert [(h.revision, h.value, h.state_stamp) for h in history] == [
            (2, "two", None),
            (1, {"a": [1.5, None], "b": 1}, "s1"),
        ]
        assert history[1].value_json == '{"a":[1.5,null],"b":1}'
        assert await reader.history("project-1", "gone") == []  # purged by the delete


async def test_a_value_that_is_not_json_fails_termals_reads_but_not_the_views(db):
    await _sample_board(db)
    execute(db, "UPDATE coordination_board_entries SET value_json = '{oops' WHERE key = 'gate'")
    async with open_board_reader(db) as reader:
        with pytest.raises(StoreError) as raised:
            await reader.list("project-1")
        assert str(raised.value).startswith(
            "coordination board operation failed: failed to read coordination board entries"
        )
        assert raised.value.http_status == 500
        (gate, null) = await reader.entries("project-1")
        assert gate.invalid and gate.value is None and gate.value_json == "{oops"
        assert not null.invalid and null.value is None


async def test_a_file_without_board_tables_reads_as_an_empty_board(db):
    async with open_board_writer(db):
        pass
    for table in ("history", "idempotency", "entries", "deleted_scopes", "scopes"):
        execute(db, f"DROP TABLE coordination_board_{table}")
    async with open_board_reader(db) as reader:
        page = await reader.list("project-1")
        assert page.to_wire() == {"generation": 0, "entries": [], "unchanged": False}
        assert (await reader.list("project-1", known_generation=0)).unchanged
        with pytest.raises(NotFoundError) as missing:
            await reader.get("project-1", "a")
        assert missing.value.detail == {"currentGeneration": 0}
        with pytest.raises(ConflictError):
            await reader.list("project-1", after_key="a", snapshot_generation=3)
        assert await reader.scopes() == []
        assert await reader.history("project-1", "a") == []
    # Our writer (as TermAl's open would) creates them again.
    async with open_board_writer(db) as board:
        assert (await put(board, "a", 0, 1)).generation == 1


async def test_the_reader_over_an_open_read_only_connection(db_path):
    await _sample_board(db_path)
    from termal_tui.store.connection import connect_read_only

    db = await connect_read_only(db_path)
    reader = BoardReader(db, db_path)
    try:
        assert (await reader.get("project-2", "k")).head.value == 1
    finally:
        await reader.close()


async def test_writer_reads_answer_as_the_reader_does(db):
    await _sample_board(db)
    async with open_board_reader(db) as reader, open_board_writer(db) as board:
        for scope in ("project-1", "project-2", "project-3", "project-9"):
            for call in (
                lambda s, scope=scope: s.list(scope, limit=1),
                lambda s, scope=scope: s.get(scope, "gate"),
            ):
                try:
                    theirs = (await call(reader)).to_wire()
                except StoreError as error:
                    theirs = (type(error), str(error), error.detail)
                try:
                    ours = (await call(board)).to_wire()
                except StoreError as error:
                    ours = (type(error), str(error), error.detail)
                assert ours == theirs


# ------------------------------------------------------------------ wire shapes


async def test_wire_json_is_termals_struct_order(board):
    receipt = await put(board, "a", 0, {"z": 1, "a": 2}, state_stamp="s")
    assert list(receipt.to_wire()) == [
        "key",
        "revision",
        "priorRevision",
        "generation",
        "value",
        "deleted",
        "authorSessionId",
        "authorName",
        "updatedAt",
        "stateStamp",
        "duplicate",
    ]
    assert list(receipt.value) == ["a", "z"]  # the canonical value, not the caller's order
    assert (
        receipt.http_status,
        (await put(board, "a", 0, {"a": 2, "z": 1}, state_stamp="s")).http_status,
    ) == (201, 200)
    found = await board.get("project-1", "a")
    assert list(found.to_wire()) == [
        "key",
        "revision",
        "updatedAtGeneration",
        "value",
        "deleted",
        "authorSessionId",
        "authorName",
        "updatedAt",
        "stateStamp",
        "scopeGeneration",
    ]
    page = await board.list("project-1", limit=1)
    assert list(page.to_wire()) == ["generation", "entries", "unchanged"]
    deleted = await put(board, "a", 1)
    assert "stateStamp" not in deleted.to_wire() and deleted.to_wire()["value"] is None
    assert dumps(deleted.to_wire()).startswith('{"key":"a","revision":2,"priorRevision":1,')


async def test_conflicts_carry_termals_detail_as_a_dict(board):
    await put(board, "a", 0, [1])
    with pytest.raises(ConflictError) as raised:
        await put(board, "a", 0, [2], idempotency_key="second")
    detail = raised.value.detail
    assert detail is not None and list(detail) == ["current", "currentGeneration"]
    assert detail["current"]["revision"] == 1 and detail["currentGeneration"] == 1
    message = str(raised.value)
    assert message.startswith(
        "coordination board revision conflict for `a`: expected 0, current revision is 1; "
        'detail: {"current":{"authorName":"Alice","authorSessionId":"session-a",'
        '"deleted":false,"key":"a","revision":1,"updatedAt":"'
    )
    copy = pickle.loads(pickle.dumps(raised.value))
    assert copy.detail == detail and str(copy) == message
    assert StoreError("plain").detail is None and ValidationError("x", detail=None).detail is None


# ------------------------------------------------------------------ inputs and formats


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), "NaN and infinite numbers are not JSON"),
        (float("inf"), "NaN and infinite numbers are not JSON"),
        ({1: "a"}, "object keys must be strings, not int"),
        ({"a": {1, 2}}, "set is not a JSON value"),
        (b"bytes", "bytes is not a JSON value"),
        ("\ud800", "a string holds a lone surrogate"),
        (10**400, "number out of range"),
    ],
)
async def test_values_json_cannot_hold_are_refused(board, db, value, message):
    with pytest.raises(ValidationError) as raised:
        await put(board, "a", 0, value)
    assert str(raised.value) == f"coordination board value is not JSON: {message}"
    assert rows(db, "SELECT COUNT(*) FROM coordination_board_entries") == [(0,)]


async def test_python_values_canonicalise_as_their_json_does(board, db):
    receipt = await put(board, "a", 0, ({"b": (1, 2)}, True, 2**64))
    assert receipt.value == [{"b": [1, 2]}, True, 18446744073709551616.0]
    ((stored,),) = rows(db, "SELECT value_json FROM coordination_board_entries")
    assert stored == '[{"b":[1,2]},true,1.8446744073709552e19]'


@pytest.mark.parametrize("expected", [-1, True, 1.0, "1", 2**64])
async def test_expected_revision_must_be_a_u64(board, expected):
    with pytest.raises(UnprocessableError) as raised:
        await put(board, "a", expected, 1)
    assert raised.value.http_status == 422
    assert str(raised.value) == (
        "`expectedRevision` must be an integer between 0 and 18446744073709551615"
    )


def test_board_timestamps_are_milliseconds_and_z():
    moment = datetime(2026, 7, 30, 12, 34, 56, 999999, tzinfo=UTC)
    assert format_board_timestamp(moment) == "2026-07-30T12:34:56.999Z"  # truncated
    assert format_board_timestamp(moment.replace(microsecond=0)) == "2026-07-30T12:34:56.000Z"
    east = moment.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert format_board_timestamp(east) == "2026-07-30T12:34:56.999Z"
    assert format_board_timestamp(1_785_412_800_123_999_999) == "2026-07-30T12:00:00.123Z"


async def test_writes_stamp_the_board_format_and_receipts_share_it(board, db):
    receipt = await put(board, "a", 0, 1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", receipt.updated_at)
    ((created, receipt_json),) = rows(
        db, "SELECT created_at, receipt_json FROM coordination_board_idempotency"
    )
    assert created == receipt.updated_at
    assert receipt_json == dumps(receipt.to_wire())


def test_author_names_are_snapshotted_as_the_route_does():
    assert normalize_author_name("  Alice \n") == "Alice"
    assert normalize_author_name("\x07 bob\x01x ") == "bob x"
    assert normalize_author_name(" \t\x01 ") == "Unnamed session"
    assert normalize_author_name("é" * 200) == "é" * 128  # 256 bytes, whole characters
    assert normalize_author_name("\u0085x\u2028") == "x"  # Rust's trim and is_control


def test_the_request_hash_is_length_prefixed_sha256():
    digest = hashlib.sha256()
    for field in (b"scope", b"key", b"0", b"<tombstone>", b""):
        digest.update(len(field).to_bytes(8, "big") + field)
    assert request_hash("scope", "key", 0, None, None) == digest.hexdigest()
    # The author is the idempotency namespace, not part of the hash; the stamp is.
    assert request_hash("s", "k", 1, "1", "a") != request_hash("s", "k", 1, "1", None)


async def test_scope_deletion_fences_for_good_and_cascades(board, db):
    await put(board, "a", 0, 1)
    await put(board, "a", 1, 2)
    assert await board.delete_scope("project-1") is True
    assert await board.delete_scope("project-1") is False
    for table in ("entries", "history", "idempotency", "scopes"):
        assert rows(db, f"SELECT COUNT(*) FROM coordination_board_{table}") == [(0,)]
    ((deleted_at,),) = rows(db, "SELECT deleted_at FROM coordination_board_deleted_scopes")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", deleted_at)
    with pytest.raises(NotFoundError) as raised:
        await put(board, "a", 0, 1)
    assert raised.value.detail == {"currentGeneration": 0}


async def test_concurrent_tasks_on_one_writer_serialise(board):
    """Many tasks CAS-incrementing one key: every success is the next revision."""

    async def bump(worker: int) -> int:
        done = 0
        for attempt in range(40):
            try:
                current = (await board.get("project-1", "counter")).head.revision
            except NotFoundError:
                current = 0
            try:
                await put(board, "counter", current, worker, idempotency_key=f"{worker}-{attempt}")
                done += 1
            except ConflictError:
                continue
            if done == 3:
                break
        return done

    board._deadline = 5.0
    counts = await asyncio.gather(*(bump(n) for n in range(6)))
    final = await board.get("project-1", "counter")
    assert final.head.revision == sum(counts) == final.scope_generation
