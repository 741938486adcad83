"""BoardWriter: TermAl's coordination board store semantics on coordination.sqlite.

Each write is one ``BEGIN IMMEDIATE`` transaction, in TermAl's order: validation,
the board's private connection (waits at most 5 s), the per-file FIFO writer
admission shared with the mailbox writer (at most 5 s), the deletion fence, the
idempotency lookup (before any compare-and-swap), then CAS, limits, history,
head, receipt and retention. Busy anywhere is a ``RetryableError`` whose sentence
says nothing was committed; a failed check rolls everything back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import aiosqlite

from termal_tui.store.board import formats, queries, rules
from termal_tui.store.board.reader import read_failure
from termal_tui.store.board.records import BoardGetResult, BoardHead, BoardListPage, BoardSetReceipt
from termal_tui.store.connection import (
    WriterAdmission,
    connect_read_write,
    describe_error,
    is_busy,
    read_snapshot,
    run,
)
from termal_tui.store.errors import RetryableError
from termal_tui.store.lifecycle import in_write_transaction
from termal_tui.store.schema import ensure_schema
from termal_tui.store.urls import is_postgres_url, refuse_other_url

T = TypeVar("T")


MISSING: Final[Any] = rules.MISSING
"""``set(value=MISSING)``: no value (TermAl's absent ``value`` field); use ``delete=True``."""


def _write_transaction(
    db: sqlite3.Connection, work: Callable[[sqlite3.Connection], T], begin: str, commit: str
) -> T:
    """The mailboxes' transaction function, with the board's busy wording."""
    return in_write_transaction(db, work, begin, commit, busy=formats.busy_message)


def _count(db: sqlite3.Connection, sql: str, scope_id: str) -> int:
    return int(db.execute(sql, (scope_id,)).fetchone()[0])


def _history_row(db: sqlite3.Connection, scope_id: str, current: BoardHead) -> None:
    value_json = rules.history_value_json(current)
    db.execute(
        "INSERT INTO coordination_board_history(scope_id, key, revision, generation, value_json, "
        "author_session_id, author_name, updated_at, state_stamp) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            scope_id,
            current.key,
            current.revision,
            current.updated_at_generation,
            value_json,
            current.author_session_id,
            current.author_name,
            current.updated_at,
            current.state_stamp,
        ),
    )


class BoardWriter:
    """Writes (and reads) TermAl-compatible board rows. Construct with
    :func:`open_board_writer`."""

    def __init__(
        self,
        db: aiosqlite.Connection,
        path: Path,
        clock: formats.Clock | None = None,
        deadline: float = formats.WRITE_DEADLINE_SECONDS,
        busy_timeout_ms: int = formats.BUSY_TIMEOUT_MS,
    ) -> None:
        self._db = db
        self.path = path
        self._clock = clock or formats.now_ns
        self._deadline = deadline
        self._busy_timeout_ms = busy_timeout_ms
        self._admission = WriterAdmission.for_path(path)
        # TermAl's private board connection mutex: reads hold it too.
        self._connection = asyncio.Lock()

    def _now(self) -> str:
        return formats.format_board_timestamp(self._clock())

    # ---------------------------------------------------------------- gates

    @contextlib.asynccontextmanager
    async def _hold_connection(
        self, operation: str, timeout: float, *, read: bool
    ) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(max(0.0, timeout)):
                await self._connection.acquire()
        except TimeoutError:
            raise RetryableError(formats.busy_message(operation, read=read)) from None
        try:
            yield
        finally:
            self._connection.release()

    @contextlib.asynccontextmanager
    async def _admitted(self, operation: str, timeout: float) -> AsyncIterator[None]:
        """The shared writer admission, with the board's busy sentence on a timeout."""
        entered = False
        try:
            async with self._admission.request(operation, max(0.0, timeout)):
                entered = True
                yield
        except RetryableError:
            if entered:
                raise
            raise RetryableError(formats.busy_message(operation)) from None

    async def _call(self, work: Callable[[sqlite3.Connection], T], busy: str | None) -> T:
        """One hop to the connection's thread. ``busy``: the write operation a stray
        SQLite busy is reported as (None: a read)."""
        try:
            return await run(self._db, work)
        except sqlite3.Error as error:
            if busy is None:
                raise read_failure(self.path, error) from error
            if is_busy(error):
                raise RetryableError(formats.busy_message(busy)) from error
            raise describe_error(self.path, error, writing=True) from error

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        async with self._hold_connection(formats.OP_CONNECTION, self._deadline, read=True):
            return await self._call(lambda db: read_snapshot(db, work), None)

    async def ensure_schema(self) -> None:
        async with self._admission.internal():
            await self._call(lambda db: ensure_schema(db, self.path), formats.OP_BEGIN_UPDATE)

    # ---------------------------------------------------------------- reads

    async def list(
        self,
        scope_id: str,
        after_key: str | None = None,
        limit: int | None = None,
        snapshot_generation: int | None = None,
        known_generation: int | None = None,
    ) -> BoardListPage:
        """TermAl's list on the writer's connection (see ``BoardReader.list``)."""
        size = rules.validate_list_request(
            scope_id, after_key, limit, snapshot_generation, known_generation
        )
        return await self._read(
            lambda db: queries.list_page(
                db, scope_id, after_key, size, snapshot_generation, known_generation
            )
        )

    async def get(self, scope_id: str, key: str) -> BoardGetResult:
        """TermAl's get on the writer's connection (see ``BoardReader.get``)."""
        formats.validate_scope_id(scope_id)
        formats.validate_key(key)
        return await self._read(lambda db: queries.get(db, scope_id, key))

    # ---------------------------------------------------------------- set

    async def set(
        self,
        scope_id: str,
        key: str,
        *,
        expected_revision: int,
        author_session_id: str,
        author_name: str,
        idempotency_key: str,
        value: Any = MISSING,
        delete: bool = False,
        state_stamp: str | None = None,
        raw_author_name: bool = False,
    ) -> BoardSetReceipt:
        """Create (``expected_revision=0``, never-existed key), update (the exact live
        revision), restore (the exact tombstone revision) or, with ``delete=True`` and no
        ``value``, delete one key. ``value`` is any JSON value held as Python objects;
        ``None`` is JSON null, a value. ``author_name`` is the session's display name,
        snapshotted as TermAl's route does unless ``raw_author_name``.

        Returns the receipt (``duplicate=True`` for an exact replay of an idempotency
        key still in the window). Raises ValidationError (400), ConflictError (409) and
        NotFoundError (404) with TermAl's sentences and ``detail``, RetryableError (503).
        """
        request = rules.prepare_set(
            scope_id,
            key,
            expected_revision=expected_revision,
            author_session_id=author_session_id,
            author_name=author_name,
            idempotency_key=idempotency_key,
            value=value,
            delete=delete,
            state_stamp=state_stamp,
            raw_author_name=raw_author_name,
        )
        canonical = request.canonical

        def work(db: sqlite3.Connection) -> BoardSetReceipt:
            queries.ensure_scope_active(db, scope_id)
            stored = db.execute(
                "SELECT request_hash, receipt_json FROM coordination_board_idempotency "
                "WHERE scope_id = ? AND author_session_id = ? AND idempotency_key = ?",
                (scope_id, request.author_session_id, idempotency_key),
            ).fetchone()
            if stored is not None:
                return rules.replay(request, stored[0], stored[1], queries.generation(db, scope_id))
            db.execute(
                "INSERT INTO coordination_board_scopes(scope_id, generation) VALUES(?, 0) "
                "ON CONFLICT(scope_id) DO NOTHING",
                (scope_id,),
            )
            current = queries.head(db, scope_id, key)
            generation = queries.generation(db, scope_id)
            current_revision = rules.check_compare_and_swap(request, current, generation)
            if rules.introduces_key(request, current):
                rules.check_distinct_keys(
                    scope_id,
                    _count(
                        db,
                        "SELECT COUNT(*) FROM coordination_board_entries WHERE scope_id = ?",
                        scope_id,
                    ),
                )
            if rules.creates_live(request, current):
                rules.check_live_keys(
                    scope_id,
                    _count(
                        db,
                        "SELECT COUNT(*) FROM coordination_board_entries "
                        "WHERE scope_id = ? AND value_json IS NOT NULL",
                        scope_id,
                    ),
                )
            if current is not None and rules.keeps_history(request, current):
                _history_row(db, scope_id, current)
            revision, generation = rules.advance(current_revision, generation)
            updated_at = self._now()
            db.execute(
                "UPDATE coordination_board_scopes SET generation = ? WHERE scope_id = ?",
                (generation, scope_id),
            )
            db.execute(
                "INSERT INTO coordination_board_entries(scope_id, key, revision, generation, "
                "value_json, author_session_id, author_name, updated_at, state_stamp) "
                "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(scope_id, key) DO UPDATE SET revision = excluded.revision, "
                "generation = excluded.generation, value_json = excluded.value_json, "
                "author_session_id = excluded.author_session_id, "
                "author_name = excluded.author_name, updated_at = excluded.updated_at, "
                "state_stamp = excluded.state_stamp",
                (
                    scope_id,
                    key,
                    revision,
                    generation,
                    canonical,
                    request.author_session_id,
                    request.author_name,
                    updated_at,
                    request.state_stamp,
                ),
            )
            if canonical is not None:
                db.execute(
                    "DELETE FROM coordination_board_history WHERE rowid IN ("
                    "SELECT rowid FROM coordination_board_history WHERE scope_id = ? AND key = ? "
                    "ORDER BY revision DESC LIMIT -1 OFFSET ?)",
                    (scope_id, key, formats.HISTORY_REVISIONS_PER_KEY),
                )
            else:
                db.execute(
                    "DELETE FROM coordination_board_history WHERE scope_id = ? AND key = ?",
                    (scope_id, key),
                )
            receipt = rules.receipt_for(request, revision, current_revision, generation, updated_at)
            db.execute(
                "INSERT INTO coordination_board_idempotency(scope_id, author_session_id, "
                "idempotency_key, request_hash, receipt_json, created_at) "
                "VALUES(?, ?, ?, ?, ?, ?)",
                (
                    scope_id,
                    request.author_session_id,
                    idempotency_key,
                    request.request_hash,
                    formats.dumps(receipt.to_wire()),
                    updated_at,
                ),
            )
            db.execute(
                "DELETE FROM coordination_board_idempotency WHERE rowid IN ("
                "SELECT rowid FROM coordination_board_idempotency WHERE scope_id = ? "
                "ORDER BY rowid DESC LIMIT -1 OFFSET ?)",
                (scope_id, formats.IDEMPOTENCY_RECEIPTS_PER_SCOPE),
            )
            return receipt

        # The private connection first, then the admission shared with the mailboxes.
        async with (
            self._hold_connection(formats.OP_CONNECTION, self._deadline, read=False),
            self._admitted(formats.OP_BEGIN_UPDATE, self._deadline),
        ):
            return await self._call(
                lambda db: _write_transaction(
                    db, work, formats.OP_BEGIN_UPDATE, formats.OP_COMMIT_UPDATE
                ),
                formats.OP_COMMIT_UPDATE,
            )

    # ---------------------------------------------------------------- scope deletion

    async def delete_scope(
        self, scope_id: str, timeout: float = formats.LIFECYCLE_CLEANUP_SECONDS
    ) -> bool:
        """Project-deletion cleanup (TermAl's ``delete_scope_for_project_lifecycle``; no
        agent-facing route): fence the scope for good and cascade its keys, history and
        receipts, within ``timeout`` end to end (100 ms by default; busy is retryable).
        True if the scope had rows to delete. Every later board call on it is 404."""
        formats.validate_scope_id(scope_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        def remaining() -> float:
            return max(0.0, deadline - loop.time())

        def work(db: sqlite3.Connection) -> bool:
            db.execute(
                "INSERT INTO coordination_board_deleted_scopes(scope_id, deleted_at) VALUES(?, ?) "
                "ON CONFLICT(scope_id) DO NOTHING",
                (scope_id, self._now()),
            )
            deleted = db.execute(
                "DELETE FROM coordination_board_scopes WHERE scope_id = ?", (scope_id,)
            ).rowcount
            db.execute(f"PRAGMA busy_timeout = {int(remaining() * 1000)}")
            return deleted > 0

        def scoped(db: sqlite3.Connection) -> bool:
            db.execute(f"PRAGMA busy_timeout = {int(remaining() * 1000)}")
            try:
                return _write_transaction(
                    db, work, formats.OP_BEGIN_DELETE_SCOPE, formats.OP_COMMIT_DELETE_SCOPE
                )
            finally:
                db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")

        async with (
            self._hold_connection(formats.OP_WAIT_DELETE_SCOPE, remaining(), read=False),
            self._admitted(formats.OP_ADMIT_DELETE_SCOPE, remaining()),  # what is left
        ):
            return await self._call(scoped, formats.OP_COMMIT_DELETE_SCOPE)

    async def close(self) -> None:
        await self._db.close()


@contextlib.asynccontextmanager
async def open_board_writer(
    path: str | os.PathLike[str],
    clock: formats.Clock | None = None,
    deadline: float = formats.WRITE_DEADLINE_SECONDS,
    busy_timeout_ms: int = formats.BUSY_TIMEOUT_MS,
) -> AsyncIterator[BoardWriter]:
    """Open (creating if needed) a coordination database's board for writing: TermAl's
    connection setup and schema ensure, as ``open_writer`` does for mailboxes.

    ``path`` is TermAl's SQLite file, or a ``postgresql://`` URL (the PostgreSQL engine,
    loaded only then: the SQLite path imports nothing of it)."""
    if is_postgres_url(path):
        from termal_tui.store.postgres import require_driver

        require_driver()
        from termal_tui.store.postgres.board.writer import open_pg_board_writer

        async with open_pg_board_writer(
            str(path), clock=clock, deadline=deadline, busy_timeout_ms=busy_timeout_ms
        ) as pg:
            yield pg  # type: ignore[misc]  # the same public API (PgBoardWriter)
        return
    refuse_other_url(path)
    resolved = Path(path).expanduser()
    db = await connect_read_write(resolved, busy_timeout_ms)
    writer = BoardWriter(
        db, resolved, clock=clock, deadline=deadline, busy_timeout_ms=busy_timeout_ms
    )
    try:
        await writer.ensure_schema()
        yield writer
    finally:
        await writer.close()
