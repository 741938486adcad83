"""What only the board's PostgreSQL engine has to prove: writers on several connections
(each its own pool) keep revisions, generations and receipts consistent; one scope's
lock never stalls another scope; a held lock past the deadline is the board's busy
sentence with nothing committed; a deletion racing first writes leaves no row in a
fenced scope; the reader cannot write (and a role that can only SELECT reads); and
the SQLite board never loads the driver. The contract itself runs on both engines in
the other tests of this directory."""

from __future__ import annotations

import asyncio
import inspect
import re
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from termal_tui.store.board import open_board_reader
from termal_tui.store.board.writer import MISSING, open_board_writer
from termal_tui.store.errors import (
    ConflictError,
    NotFoundError,
    RetryableError,
    StorageError,
    ValidationError,
)
from termal_tui.store.postgres.board import queries as pg_queries
from termal_tui.store.postgres.board import reader as pg_reader
from termal_tui.store.writer import open_writer
from tests.helpers import rows, send

WRITE_CLAUSE = (
    "no coordination board write was committed by this operation, so retry the same request"
)
BUSY = "coordination board storage is temporarily busy while {}; " + WRITE_CLAUSE
LOCK_SPACE = 0x746D6264  # the board writer's advisory lock namespace


@pytest.fixture
def engine() -> str:
    return "postgres"


async def _set(board, key, expected, value=MISSING, *, scope="project-1", **extra):
    extra.setdefault("idempotency_key", f"{key}-{expected}")
    return await board.set(
        scope,
        key,
        expected_revision=expected,
        author_session_id=extra.pop("author", "session-a"),
        author_name="Alice",
        value=value,
        delete=value is MISSING,
        **extra,
    )


async def test_cas_increments_from_many_connections_are_dense_and_counted(db):
    """Six writers, each on its own pool, CAS-incrementing one key: every success is the
    next revision, the generation counts them, and each has its own receipt."""
    async with (
        open_board_writer(db) as a,
        open_board_writer(db) as b,
        open_board_writer(db) as c,
    ):
        writers = [a, b, c, a, b, c]

        async def bump(worker: int) -> list[int]:
            board = writers[worker]
            won: list[int] = []
            for attempt in range(60):
                try:
                    current = (await board.get("project-1", "counter")).head.revision
                except NotFoundError:
                    current = 0
                try:
                    receipt = await _set(
                        board, "counter", current, worker, idempotency_key=f"{worker}-{attempt}"
                    )
                except ConflictError:
                    continue
                won.append(receipt.revision)
                if len(won) == 3:
                    break
            return won

        results = await asyncio.gather(*(bump(n) for n in range(6)))
        revisions = sorted(r for won in results for r in won)
        final = await a.get("project-1", "counter")
    assert revisions == list(range(1, len(revisions) + 1))
    assert final.head.revision == final.scope_generation == len(revisions)
    assert rows(db, "SELECT COUNT(*) FROM coordination_board_idempotency") == [(len(revisions),)]
    assert rows(db, "SELECT COUNT(*) FROM coordination_board_history") == [(len(revisions) - 1,)]


async def test_concurrent_retries_of_one_key_store_one_write_with_one_receipt(db):
    async with open_board_writer(db) as a, open_board_writer(db) as b:
        receipts = await asyncio.gather(
            *(
                _set((a, b)[n % 2], "gate", 0, {"open": True}, idempotency_key="once")
                for n in range(8)
            )
        )
    originals = [r for r in receipts if not r.duplicate]
    assert len(originals) == 1
    assert all(r._replace(duplicate=False) == originals[0] for r in receipts)
    assert rows(db, "SELECT revision, generation FROM coordination_board_entries") == [(1, 1)]
    assert rows(db, "SELECT COUNT(*) FROM coordination_board_idempotency") == [(1,)]


async def test_a_locked_scope_is_busy_past_the_deadline_and_other_scopes_proceed(db):
    async with open_board_writer(db) as board:
        await _set(board, "a", 0, 1)
    async with (
        await psycopg.AsyncConnection.connect(db) as holder,
        open_board_writer(db, deadline=1.0, busy_timeout_ms=200) as impatient,
    ):
        async with holder.transaction():  # another writer holds project-1's lock
            await holder.execute(
                b"SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_SPACE, "project-1")
            )
            with pytest.raises(RetryableError) as busy:
                await _set(impatient, "a", 1, 2)
            with pytest.raises(RetryableError) as deleting:
                await impatient.delete_scope("project-1", timeout=0.05)
            other = await _set(impatient, "a", 0, 1, scope="project-2")  # not stalled
            assert (await impatient.get("project-1", "a")).head.revision == 1  # reads too
        assert str(busy.value) == BUSY.format("beginning coordination board update")
        assert str(deleting.value) == BUSY.format("beginning coordination board scope deletion")
        assert other.generation == 1
        assert rows(
            db, "SELECT revision FROM coordination_board_entries WHERE scope_id = 'project-1'"
        ) == [(1,)]
        assert rows(db, "SELECT COUNT(*) FROM coordination_board_deleted_scopes") == [(0,)]
        retried = await _set(impatient, "a", 1, 2)  # the same request goes through now
        assert (retried.revision, retried.generation) == (2, 2)


async def test_a_deletion_racing_first_writes_never_leaves_rows_in_a_fenced_scope(db):
    async with open_board_writer(db) as a, open_board_writer(db) as b:
        for round_ in range(8):
            scope = f"race-{round_}"
            writes = [_set(a, f"k{n}", 0, n, scope=scope) for n in range(4)]
            outcomes = await asyncio.gather(
                *writes[:2], b.delete_scope(scope, timeout=5), *writes[2:], return_exceptions=True
            )
            for outcome in outcomes:
                assert not isinstance(outcome, BaseException) or isinstance(
                    outcome, NotFoundError
                ), outcome
            with pytest.raises(NotFoundError):
                await _set(a, "later", 0, 1, scope=scope)
    for table in ("scopes", "entries", "history", "idempotency"):
        assert rows(db, f"SELECT COUNT(*) FROM coordination_board_{table}") == [(0,)], table
    assert rows(db, "SELECT COUNT(*) FROM coordination_board_deleted_scopes") == [(8,)]


async def test_an_unreachable_server_is_the_boards_busy_sentence_without_the_password():
    url = "postgresql://alice:s3cr%40t-pw@127.0.0.1:1/db"
    with pytest.raises(RetryableError) as writing:
        async with open_board_writer(url):
            pass
    with pytest.raises(RetryableError) as reading:
        async with open_board_reader(url):
            pass
    shown = "postgresql://alice:***@127.0.0.1:1/db"
    assert str(writing.value).startswith(
        f"coordination board storage is temporarily busy while connecting to PostgreSQL at "
        f"{shown}; {WRITE_CLAUSE} ("
    )
    assert str(reading.value).startswith(
        f"coordination board storage is temporarily busy while connecting to PostgreSQL at "
        f"{shown}; no mutation was attempted by this read operation, so retry the same request"
    )
    assert "s3cr" not in str(writing.value) + str(reading.value)


def _schema_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["options"][0].split("=", 1)[1]


async def test_the_reader_cannot_write_and_a_select_only_role_reads(db, pg_server):
    async with open_board_writer(db) as board:
        await _set(board, "gate", 0, {"open": True})
    async with open_board_reader(db) as reader:
        with pytest.raises(StorageError, match="read-only"):
            await reader._db.run(
                lambda conn: conn.execute(b"DELETE FROM coordination_board_entries"), "trying"
            )
        assert (await reader.get("project-1", "gate")).head.value == {"open": True}
    schema = _schema_of(db)
    role = f"board_reader_{schema}"
    for statement in (
        f"CREATE ROLE {role} LOGIN",
        f"GRANT USAGE ON SCHEMA {schema} TO {role}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
    ):
        pg_server.execute(statement, "tests")
    url = pg_server.url("tests", user=role) + f"?options=-csearch_path%3D{schema}"
    async with open_board_reader(url) as reader:
        page = await reader.list("project-1")
        assert [entry.key for entry in page.entries] == ["gate"]
        assert [scope.scope_id for scope in await reader.scopes()] == ["project-1"]
    # Refused when the writer ensures the schema or, where a complete schema is only
    # read, at the first write: nothing is changed either way.
    with pytest.raises(StorageError, match="lacks a privilege"):
        async with open_board_writer(url) as refused:
            await _set(refused, "never", 0, 1)
    assert rows(db, "SELECT key FROM coordination_board_entries") == [("gate",)]


async def test_a_database_the_mailboxes_made_reads_as_an_empty_board(db):
    async with open_writer(db) as writer:
        await send(writer)
    async with open_board_reader(db) as reader:
        assert (await reader.list("project-1")).to_wire() == {
            "generation": 0,
            "entries": [],
            "unchanged": False,
        }
        with pytest.raises(NotFoundError):
            await reader.get("project-1", "a")
        assert await reader.scopes() == []
    async with open_board_writer(db) as board:  # the board writer adds its tables
        assert (await _set(board, "a", 0, 1)).generation == 1


async def test_nul_characters_need_nothing_of_postgresql_text(db):
    """PostgreSQL's text cannot hold U+0000, but the board never stores one: TermAl's
    checks refuse control characters in every text field, and JSON escapes it in values."""
    async with open_board_writer(db) as board:
        with pytest.raises(ValidationError) as refused:
            await _set(board, "a", 0, 1, state_stamp="s\x00")
        assert (
            str(refused.value)
            == "coordination board state stamp must not contain control characters"
        )
        receipt = await _set(board, "a", 0, "nul \x00 inside")  # JSON escapes it
        assert receipt.value == "nul \x00 inside"
        assert (await board.get("project-1", "a")).head.value == "nul \x00 inside"


def test_the_reader_modules_hold_no_writing_sql():
    source = inspect.getsource(pg_reader) + inspect.getsource(pg_queries)
    for verb in ("INSERT", "UPDATE", "DELETE", "ALTER", "CREATE", "REPLACE", "COMMIT"):
        assert not re.search(rf"\b{verb}\b", source.upper()), verb


LEAN = """
import asyncio, sys, tempfile, pathlib
from termal_tui.store.board import open_board_reader, open_board_writer

async def main(path):
    async with open_board_writer(path) as board:
        await board.set("p", "k", expected_revision=0, author_session_id="a",
            author_name="A", idempotency_key="i", value=1)
    async with open_board_reader(path) as reader:
        await reader.list("p")

asyncio.run(main(pathlib.Path(tempfile.mkdtemp()) / "coordination.sqlite"))
print(sorted(m for m in sys.modules if m.startswith(("psycopg", "termal_tui.store.postgres"))))
"""


def test_the_sqlite_board_imports_nothing_of_postgresql():
    done = subprocess.run(
        [sys.executable, "-c", LEAN], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
