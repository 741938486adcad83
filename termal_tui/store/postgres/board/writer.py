"""PgBoardWriter: TermAl's coordination board store semantics on PostgreSQL, with the
public API of :class:`~termal_tui.store.board.writer.BoardWriter`.

SQLite orders every board write with ``BEGIN IMMEDIATE`` (one writer per file). Here a
write is one READ COMMITTED transaction that first takes a transaction-scoped advisory
lock on its scope (``pg_advisory_xact_lock``): writes to one scope run one at a time,
writes to different scopes in parallel. The lock is taken before anything is read, so
each later statement (a fresh snapshot in READ COMMITTED) sees every write committed
before it; and it exists for a scope that has no row yet, so a first write and the
scope's deletion cannot both pass the fence. Then, in TermAl's order: the deletion
fence, the idempotency lookup (before any compare-and-swap), CAS, limits, and one
statement for head, generation, history, receipt and retention. A lock not granted
within the busy timeout, a full pool or a lost server is the board's busy sentence,
nothing committed; a failed check rolls everything back.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, TypeVar

import psycopg

from termal_tui.store.board import formats, rules
from termal_tui.store.board.records import BoardGetResult, BoardListPage, BoardSetReceipt
from termal_tui.store.board.rules import HEAD_COLUMNS, MISSING
from termal_tui.store.errors import RetryableError, busy_message
from termal_tui.store.postgres.board import queries
from termal_tui.store.postgres.board.reader import open_database, read_board
from termal_tui.store.postgres.board.schema import ensure_board_schema
from termal_tui.store.postgres.connection import PgDatabase, count, one
from termal_tui.store.postgres.writer import claims_key
from termal_tui.store.urls import redact

T = TypeVar("T")
Conn = psycopg.AsyncConnection[Any]

# The advisory lock's first key: the board's namespace ("tmbd"); the second is the
# scope id's hash (two scopes sharing a hash merely take turns).
_LOCK_SPACE: Final = 0x746D6264
_LOCK_SCOPE: Final = b"SELECT pg_advisory_xact_lock(%s, hashtext(%s))"

_ENTRY_COLUMNS: Final = ", ".join(f"e.{name.strip()}" for name in HEAD_COLUMNS.split(","))

# After the lock: the fence, the generation, the stored receipt of this idempotency key
# and the key's head, from one snapshot.
_STATE: Final = (
    "SELECT EXISTS(SELECT 1 FROM coordination_board_deleted_scopes WHERE scope_id = %(s)s), "
    "(SELECT generation FROM coordination_board_scopes WHERE scope_id = %(s)s), "
    "i.request_hash, i.receipt_json, "
    f"{_ENTRY_COLUMNS} FROM (SELECT 1) AS one "
    "LEFT JOIN coordination_board_idempotency i ON i.scope_id = %(s)s "
    "AND i.author_session_id = %(a)s AND i.idempotency_key = %(i)s "
    "LEFT JOIN coordination_board_entries e ON e.scope_id = %(s)s AND e.key = %(k)s"
)

_COUNTS: Final = (
    "SELECT COUNT(*), COUNT(value_json) FROM coordination_board_entries WHERE scope_id = %s"
)

# The write, one statement: the scope's generation (its row made if new), the head, the
# replaced head into the history and the history trimmed to the newest 100 (or purged
# by a delete), the receipt, and the receipts trimmed to the newest 4096 by insertion.
# Every part reads the snapshot from before the statement, so the trims skip the rows
# this statement adds (the newest) and keep one fewer of the old ones.
_WRITE_HEAD: Final = """
WITH scope AS (
  INSERT INTO coordination_board_scopes(scope_id, generation) VALUES (%(s)s, %(g)s)
  ON CONFLICT (scope_id) DO UPDATE SET generation = excluded.generation
), head AS (
  INSERT INTO coordination_board_entries(scope_id, key, revision, generation, value_json,
    author_session_id, author_name, updated_at, state_stamp)
  VALUES (%(s)s, %(k)s, %(rev)s, %(g)s, %(value)s, %(a)s, %(an)s, %(now)s, %(stamp)s)
  ON CONFLICT (scope_id, key) DO UPDATE SET revision = excluded.revision,
    generation = excluded.generation, value_json = excluded.value_json,
    author_session_id = excluded.author_session_id, author_name = excluded.author_name,
    updated_at = excluded.updated_at, state_stamp = excluded.state_stamp
), receipt AS (
  INSERT INTO coordination_board_idempotency(scope_id, author_session_id, idempotency_key,
    request_hash, receipt_json, created_at)
  VALUES (%(s)s, %(a)s, %(i)s, %(hash)s, %(receipt)s, %(now)s)
), receipts_trimmed AS (
  DELETE FROM coordination_board_idempotency WHERE scope_id = %(s)s AND insertion_order IN (
    SELECT insertion_order FROM coordination_board_idempotency WHERE scope_id = %(s)s
    ORDER BY insertion_order DESC OFFSET %(keep_receipts)s)
){history}
SELECT 1
"""

_KEEP_HISTORY: Final = """, kept AS (
  INSERT INTO coordination_board_history(scope_id, key, revision, generation, value_json,
    author_session_id, author_name, updated_at, state_stamp)
  SELECT %(s)s, %(k)s, %(old_rev)s::bigint, %(old_gen)s::bigint, %(old_value)s::text,
    %(old_a)s::text, %(old_an)s::text, %(old_now)s::text, %(old_stamp)s::text
  WHERE %(keeps)s::boolean
), history_trimmed AS (
  DELETE FROM coordination_board_history WHERE scope_id = %(s)s AND key = %(k)s
  AND revision IN (
    SELECT revision FROM coordination_board_history WHERE scope_id = %(s)s AND key = %(k)s
    ORDER BY revision DESC OFFSET %(keep_history)s)
)"""

_PURGE_HISTORY: Final = """, purged AS (
  DELETE FROM coordination_board_history WHERE scope_id = %(s)s AND key = %(k)s
)"""

_WRITE_VALUE: Final = _WRITE_HEAD.format(history=_KEEP_HISTORY)
_WRITE_DELETE: Final = _WRITE_HEAD.format(history=_PURGE_HISTORY)

_DELETE_SCOPE: Final = """
WITH fence AS (
  INSERT INTO coordination_board_deleted_scopes(scope_id, deleted_at) VALUES (%s, %s)
  ON CONFLICT (scope_id) DO NOTHING
)
DELETE FROM coordination_board_scopes WHERE scope_id = %s
"""


class PgBoardWriter:
    """Writes (and reads) TermAl-compatible board rows on PostgreSQL. Construct with
    :func:`open_pg_board_writer` (or ``open_board_writer(url)``)."""

    def __init__(
        self,
        db: PgDatabase,
        url: str,
        clock: formats.Clock | None = None,
        deadline: float = formats.WRITE_DEADLINE_SECONDS,
    ) -> None:
        self._db = db
        self.url = url
        self.target = redact(url)
        self.path = claims_key(url)
        self._clock = clock or formats.now_ns
        self._deadline = deadline

    def _now(self) -> str:
        return formats.format_board_timestamp(self._clock())

    async def _write(self, work: Callable[[Conn], Awaitable[T]], begin: str, commit: str) -> T:
        """``work`` in one transaction, a busy database in the board's sentences."""
        try:
            return await self._db.run(work, begin, commit=commit)
        except RetryableError as error:
            at_commit = str(error) == busy_message(commit)
            raise RetryableError(formats.busy_message(commit if at_commit else begin)) from None

    async def ensure_schema(self) -> None:
        await self._db.run(
            lambda conn: ensure_board_schema(conn, self.url),
            "ensuring the coordination schema",
            commit="committing the coordination schema",
        )

    # ---------------------------------------------------------------- reads

    async def list(
        self,
        scope_id: str,
        after_key: str | None = None,
        limit: int | None = None,
        snapshot_generation: int | None = None,
        known_generation: int | None = None,
    ) -> BoardListPage:
        """TermAl's list on the writer's pool (see ``BoardReader.list``)."""
        size = rules.validate_list_request(
            scope_id, after_key, limit, snapshot_generation, known_generation
        )
        return await read_board(
            self._db,
            lambda conn: queries.list_page(
                conn, scope_id, after_key, size, snapshot_generation, known_generation
            ),
        )

    async def get(self, scope_id: str, key: str) -> BoardGetResult:
        """TermAl's get on the writer's pool (see ``BoardReader.get``)."""
        formats.validate_scope_id(scope_id)
        formats.validate_key(key)
        return await read_board(self._db, lambda conn: queries.get(conn, scope_id, key))

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
        """As :meth:`BoardWriter.set`: the same checks, receipts and sentences."""
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

        async def work(conn: Conn) -> BoardSetReceipt:
            # One round trip: the server runs the state query after the lock is granted,
            # so its snapshot holds every write committed before.
            async with conn.pipeline():
                await conn.execute(_LOCK_SCOPE, (_LOCK_SPACE, scope_id))
                cursor = await conn.execute(
                    _STATE.encode(),
                    {
                        "s": scope_id,
                        "a": request.author_session_id,
                        "i": request.idempotency_key,
                        "k": key,
                    },
                )
                row = await cursor.fetchone()
            assert row is not None
            if row[0]:
                raise rules.scope_deleted(scope_id)
            generation = rules.checked_generation(row[1])
            if row[2] is not None:
                return rules.replay(request, row[2], row[3], generation)
            current = None if row[4] is None else rules.head_from_row(row[4:])
            current_revision = rules.check_compare_and_swap(request, current, generation)
            introduces, creates = (
                rules.introduces_key(request, current),
                rules.creates_live(request, current),
            )
            if introduces or creates:
                distinct, live = await one(conn, _COUNTS, (scope_id,))
                if introduces:
                    rules.check_distinct_keys(scope_id, int(distinct))
                if creates:
                    rules.check_live_keys(scope_id, int(live))
            revision, generation = rules.advance(current_revision, generation)
            updated_at = self._now()
            receipt = rules.receipt_for(request, revision, current_revision, generation, updated_at)
            params: dict[str, Any] = {
                "s": scope_id,
                "k": key,
                "g": generation,
                "rev": revision,
                "value": request.canonical,
                "a": request.author_session_id,
                "an": request.author_name,
                "i": request.idempotency_key,
                "now": updated_at,
                "stamp": request.state_stamp,
                "hash": request.request_hash,
                "receipt": formats.dumps(receipt.to_wire()),
                "keep_receipts": formats.IDEMPOTENCY_RECEIPTS_PER_SCOPE - 1,
            }
            if request.canonical is None:
                await conn.execute(_WRITE_DELETE.encode(), params)
                return receipt
            keeps = current is not None and rules.keeps_history(request, current)
            params |= {
                "keeps": keeps,
                "keep_history": formats.HISTORY_REVISIONS_PER_KEY - (1 if keeps else 0),
                "old_rev": current.revision if current else None,
                "old_gen": current.updated_at_generation if current else None,
                "old_value": rules.history_value_json(current) if current else None,
                "old_a": current.author_session_id if current else None,
                "old_an": current.author_name if current else None,
                "old_now": current.updated_at if current else None,
                "old_stamp": current.state_stamp if current else None,
            }
            await conn.execute(_WRITE_VALUE.encode(), params)
            return receipt

        return await self._write(work, formats.OP_BEGIN_UPDATE, formats.OP_COMMIT_UPDATE)

    # ---------------------------------------------------------------- scope deletion

    async def delete_scope(
        self, scope_id: str, timeout: float = formats.LIFECYCLE_CLEANUP_SECONDS
    ) -> bool:
        """As :meth:`BoardWriter.delete_scope`: fence the scope for good and cascade its
        keys, history and receipts; the scope's lock not granted within ``timeout`` (100
        ms by default) is the busy sentence with nothing committed. (Waiting for a pooled
        connection is bounded by the writer's deadline, not by ``timeout``.)"""
        formats.validate_scope_id(scope_id)
        budget_ms = max(1, int(timeout * 1000))

        async def work(conn: Conn) -> bool:
            # The budget bounds the wait for the scope's lock, not the cascade itself
            # (as SQLite's busy timeout bounds only the wait for the file's lock).
            await conn.execute(f"SET LOCAL lock_timeout = {budget_ms}".encode())
            await conn.execute(_LOCK_SCOPE, (_LOCK_SPACE, scope_id))
            deleted = await count(conn, _DELETE_SCOPE, (scope_id, self._now(), scope_id))
            return deleted > 0

        return await self._write(
            work, formats.OP_BEGIN_DELETE_SCOPE, formats.OP_COMMIT_DELETE_SCOPE
        )

    async def close(self) -> None:
        await self._db.close()


@contextlib.asynccontextmanager
async def open_pg_board_writer(
    url: str,
    clock: formats.Clock | None = None,
    deadline: float = formats.WRITE_DEADLINE_SECONDS,
    busy_timeout_ms: int | None = None,
) -> AsyncIterator[PgBoardWriter]:
    """Connect to a PostgreSQL database for board writes, schema ensured (created if
    missing). ``busy_timeout_ms`` is the longest a write waits for its scope's lock."""
    lock_ms = busy_timeout_ms if busy_timeout_ms is not None else int(deadline * 1000)
    db = PgDatabase(url, read_only=False, deadline=deadline, lock_timeout_ms=lock_ms)
    await open_database(db, read=False)
    writer = PgBoardWriter(db, url, clock=clock, deadline=deadline)
    try:
        await writer.ensure_schema()
        yield writer
    finally:
        await writer.close()
