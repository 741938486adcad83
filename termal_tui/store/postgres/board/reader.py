"""PgBoardReader: the board's read-only half on PostgreSQL, with the methods of
:class:`~termal_tui.store.board.reader.BoardReader`.

Every call is one ``READ ONLY`` transaction on a connection with
``default_transaction_read_only`` (a role with only SELECT can read); it never creates
anything. A database without the board's tables (one only the mailboxes have used)
reads as an empty board, as a file without them does.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, TypeVar

import psycopg

from termal_tui.core.formats import REQUEST_DEADLINE_SECONDS
from termal_tui.store.board import formats, rules
from termal_tui.store.board.records import BoardGetResult, BoardHead, BoardListPage, BoardScope
from termal_tui.store.errors import RetryableError, StorageError, busy_message
from termal_tui.store.postgres.board import queries
from termal_tui.store.postgres.board.schema import board_tables
from termal_tui.store.postgres.connection import PgDatabase
from termal_tui.store.postgres.schema import verify_readable
from termal_tui.store.schema import BOARD_TABLES
from termal_tui.store.urls import redact

T = TypeVar("T")
Conn = psycopg.AsyncConnection[Any]

READER_POOL_SIZE: Final = 2
_READ: Final = "reading the coordination board"


async def read_board(db: PgDatabase, work: Callable[[Conn], Awaitable[T]]) -> T:
    """``work`` in one transaction; busy is TermAl's read-safe retry sentence."""
    try:
        return await db.run(work, _READ)
    except RetryableError:
        raise RetryableError(formats.busy_message(formats.OP_CONNECTION, read=True)) from None


async def open_database(db: PgDatabase, *, read: bool) -> None:
    """Connect once; a server that cannot be reached is the board's busy sentence (with
    the driver's reason, no password), not the mailboxes'."""
    try:
        await db.open()
    except RetryableError as error:
        operation = f"connecting to PostgreSQL at {db.shown}"
        reason = str(error).removeprefix(busy_message(operation))
        raise RetryableError(formats.busy_message(operation, read=read) + reason) from None


class PgBoardReader:
    """Read-only board queries over one PostgreSQL coordination database."""

    # A database has no file to follow, and is never an immutable snapshot.
    snapshot: str | None = None

    def __init__(self, db: PgDatabase, url: str) -> None:
        self._db = db
        self.url = url
        self.target = redact(url)
        self.closed = False
        self._tables: frozenset[str] = frozenset()

    def file_state(self) -> str | None:
        return None

    def file_problem(self) -> str | None:
        return (
            "this connection was closed (the viewer reopened the database)" if self.closed else None
        )

    async def _read(self, work: Callable[[Conn], Awaitable[T]], empty: Callable[[], T]) -> T:
        """``work``, or ``empty()`` while the database has no board tables (looked up
        again on each call until they appear)."""
        problem = self.file_problem()
        if problem is not None:
            raise StorageError(problem)

        async def guarded(conn: Conn) -> T:
            if not self._tables >= set(BOARD_TABLES):
                self._tables = await board_tables(conn)
                if not self._tables >= set(BOARD_TABLES):
                    return empty()
            return await work(conn)

        return await read_board(self._db, guarded)

    async def list(
        self,
        scope_id: str,
        after_key: str | None = None,
        limit: int | None = None,
        snapshot_generation: int | None = None,
        known_generation: int | None = None,
    ) -> BoardListPage:
        """As :meth:`BoardReader.list`."""
        size = rules.validate_list_request(
            scope_id, after_key, limit, snapshot_generation, known_generation
        )
        return await self._read(
            lambda conn: queries.list_page(
                conn, scope_id, after_key, size, snapshot_generation, known_generation
            ),
            lambda: rules.empty_board_page(after_key, snapshot_generation, known_generation),
        )

    async def get(self, scope_id: str, key: str) -> BoardGetResult:
        """As :meth:`BoardReader.get`."""
        formats.validate_scope_id(scope_id)
        formats.validate_key(key)

        def empty() -> BoardGetResult:
            raise rules.key_not_found(key, scope_id, None, 0)

        return await self._read(lambda conn: queries.get(conn, scope_id, key), empty)

    async def generation(self, scope_id: str) -> int:
        return await self._read(lambda conn: queries.generation(conn, scope_id), lambda: 0)

    async def generations(self) -> dict[str, int]:
        return await self._read(queries.generations, dict)

    async def scopes(self) -> builtins.list[BoardScope]:
        return await self._read(queries.scopes, list)

    async def deleted_scopes(self) -> builtins.list[tuple[str, str]]:
        return await self._read(queries.deleted_scopes, list)

    async def entries(
        self, scope_id: str, include_deleted: bool = False
    ) -> builtins.list[BoardHead]:
        return await self._read(lambda conn: queries.entries(conn, scope_id, include_deleted), list)

    async def history(self, scope_id: str, key: str) -> builtins.list[BoardHead]:
        return await self._read(lambda conn: queries.history(conn, scope_id, key), list)

    async def close(self) -> None:
        self.closed = True
        await self._db.close()


@contextlib.asynccontextmanager
async def open_pg_board_reader(
    url: str, *, deadline: float = REQUEST_DEADLINE_SECONDS
) -> AsyncIterator[PgBoardReader]:
    """Open a PostgreSQL coordination database's board read-only (verified, never made)."""
    db = PgDatabase(url, read_only=True, deadline=deadline, max_size=READER_POOL_SIZE)
    await open_database(db, read=True)
    try:
        await db.run(lambda conn: verify_readable(conn, url), "checking the schema")
    except BaseException:
        await db.close()
        raise
    reader = PgBoardReader(db, url)
    try:
        yield reader
    finally:
        await reader.close()
