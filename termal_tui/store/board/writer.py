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

from termal_tui.store.board import formats, queries
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
from termal_tui.store.errors import RetryableError, UnprocessableError, ValidationError
from termal_tui.store.lifecycle import in_write_transaction
from termal_tui.store.schema import ensure_schema

T = TypeVar("T")
_SQLITE_MAX_INTEGER: Final = 2**63 - 1


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()
"""``set(value=MISSING)``: no value (TermAl's absent ``value`` field); use ``delete=True``."""


def _write_transaction(
    db: sqlite3.Connection, work: Callable[[sqlite3.Connection], T], begin: str, commit: str
) -> T:
    """The mailboxes' transaction function, with the board's busy wording."""
    return in_write_transaction(db, work, begin, commit, busy=formats.busy_message)


def _decode_receipt(text: str) -> BoardSetReceipt:
    """A stored ``receipt_json`` as serde would read it into the receipt struct."""
    context = "failed to decode stored coordination board receipt"
    try:
        data = formats.loads(text)
    except ValueError as error:
        raise formats.internal_error(context, error) from None
    if not isinstance(data, dict):
        raise formats.internal_error(context, "expected struct CoordinationBoardSetReceipt")
    fields = (
        ("key", str),
        ("revision", int),
        ("priorRevision", int),
        ("generation", int),
        ("value", object),
        ("deleted", bool),
        ("authorSessionId", str),
        ("authorName", str),
        ("updatedAt", str),
        ("duplicate", bool),
    )
    lines = text.split("\n")
    for name, kind in fields:
        if name not in data:  # serde_json reports a missing field where the object ends
            where = f"at line {len(lines)} column {len(lines[-1])}"
            raise formats.internal_error(context, f"missing field `{name}` {where}")
        item = data[name]
        is_int = isinstance(item, int) and not isinstance(item, bool)
        if not (is_int if kind is int else isinstance(item, kind)):
            raise formats.internal_error(context, f"invalid type for field `{name}`")
    stamp = data.get("stateStamp")
    if stamp is not None and not isinstance(stamp, str):
        raise formats.internal_error(context, "invalid type for field `stateStamp`")
    return BoardSetReceipt(
        key=data["key"],
        revision=data["revision"],
        prior_revision=data["priorRevision"],
        generation=data["generation"],
        value=data["value"],
        deleted=data["deleted"],
        author_session_id=data["authorSessionId"],
        author_name=data["authorName"],
        updated_at=data["updatedAt"],
        state_stamp=stamp,
        duplicate=True,
    )


def _count(db: sqlite3.Connection, sql: str, scope_id: str) -> int:
    return int(db.execute(sql, (scope_id,)).fetchone()[0])


def _history_row(db: sqlite3.Connection, scope_id: str, current: BoardHead) -> None:
    value_json = None if current.deleted else formats.dumps(current.value, sort_keys=True)
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
        size = queries.validate_list_request(
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
        formats.check_u64("expectedRevision", expected_revision, UnprocessableError)
        if value is not MISSING and delete:
            raise ValidationError(formats.VALUE_AND_DELETE_MESSAGE)
        if value is MISSING and not delete:
            raise ValidationError(formats.NEITHER_VALUE_NOR_DELETE_MESSAGE)
        if not raw_author_name:
            author_name = formats.normalize_author_name(author_name)
        formats.validate_scope_id(scope_id)
        formats.validate_key(key)
        formats.validate_text_field(
            "author session id", author_session_id, formats.MAX_AUTHOR_ID_BYTES
        )
        formats.validate_text_field("author name", author_name, formats.MAX_AUTHOR_NAME_BYTES)
        formats.validate_text_field(
            "idempotency key", idempotency_key, formats.MAX_IDEMPOTENCY_KEY_BYTES
        )
        if state_stamp is not None:
            formats.validate_text_field("state stamp", state_stamp, formats.MAX_STATE_STAMP_BYTES)
        canonical = None if delete else formats.canonical_value(value)
        request_hash = formats.request_hash(
            scope_id, key, expected_revision, canonical, state_stamp
        )
        receipt_value = None if canonical is None else formats.loads(canonical)

        def work(db: sqlite3.Connection) -> BoardSetReceipt:
            queries.ensure_scope_active(db, scope_id)
            stored = db.execute(
                "SELECT request_hash, receipt_json FROM coordination_board_idempotency "
                "WHERE scope_id = ? AND author_session_id = ? AND idempotency_key = ?",
                (scope_id, author_session_id, idempotency_key),
            ).fetchone()
            if stored is not None:
                if stored[0] != request_hash:
                    raise queries.conflict(
                        f"coordination board idempotency key `{idempotency_key}` was already "
                        "used for a different update",
                        None,
                        queries.generation(db, scope_id),
                    )
                return _decode_receipt(stored[1])
            db.execute(
                "INSERT INTO coordination_board_scopes(scope_id, generation) VALUES(?, 0) "
                "ON CONFLICT(scope_id) DO NOTHING",
                (scope_id,),
            )
            current = queries.head(db, scope_id, key)
            current_revision = 0 if current is None else current.revision
            if current_revision != expected_revision:
                if current is None and expected_revision > 0:
                    raise queries.key_not_found(
                        key, scope_id, None, queries.generation(db, scope_id)
                    )
                raise queries.conflict(
                    f"coordination board revision conflict for `{key}`: expected "
                    f"{expected_revision}, current revision is {current_revision}",
                    current,
                    queries.generation(db, scope_id),
                )
            if canonical is None and (current is None or current.deleted):
                raise queries.not_found(
                    f"coordination board key `{key}` is already absent from scope `{scope_id}`",
                    current,
                    queries.generation(db, scope_id),
                )
            creates_live = canonical is not None and (current is None or current.deleted)
            if canonical is not None and current is None:
                distinct = _count(
                    db,
                    "SELECT COUNT(*) FROM coordination_board_entries WHERE scope_id = ?",
                    scope_id,
                )
                if distinct >= formats.MAX_DISTINCT_KEYS_PER_SCOPE:
                    raise ValidationError(
                        f"coordination board scope `{scope_id}` has reached the "
                        f"{formats.MAX_DISTINCT_KEYS_PER_SCOPE}-distinct-key lifetime limit; "
                        "reuse a retained tombstone or delete the project before introducing "
                        "another key"
                    )
            if creates_live:
                live = _count(
                    db,
                    "SELECT COUNT(*) FROM coordination_board_entries "
                    "WHERE scope_id = ? AND value_json IS NOT NULL",
                    scope_id,
                )
                if live >= formats.MAX_LIVE_ENTRIES_PER_SCOPE:
                    raise ValidationError(
                        f"coordination board scope `{scope_id}` has reached the "
                        f"{formats.MAX_LIVE_ENTRIES_PER_SCOPE}-live-key limit; delete or reuse "
                        "a live key before creating or restoring another"
                    )
            if canonical is not None and current is not None:
                _history_row(db, scope_id, current)
            revision = current_revision + 1
            generation = queries.generation(db, scope_id) + 1
            if revision > _SQLITE_MAX_INTEGER or generation > _SQLITE_MAX_INTEGER:
                raise formats.internal_error(
                    "failed to advance the coordination board", "revision space exhausted"
                )
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
                    author_session_id,
                    author_name,
                    updated_at,
                    state_stamp,
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
            receipt = BoardSetReceipt(
                key=key,
                revision=revision,
                prior_revision=current_revision,
                generation=generation,
                value=receipt_value,
                deleted=canonical is None,
                author_session_id=author_session_id,
                author_name=author_name,
                updated_at=updated_at,
                state_stamp=state_stamp,
                duplicate=False,
            )
            db.execute(
                "INSERT INTO coordination_board_idempotency(scope_id, author_session_id, "
                "idempotency_key, request_hash, receipt_json, created_at) "
                "VALUES(?, ?, ?, ?, ?, ?)",
                (
                    scope_id,
                    author_session_id,
                    idempotency_key,
                    request_hash,
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
    connection setup and schema ensure, as ``open_writer`` does for mailboxes."""
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
