"""BoardReader: the read-only half of the coordination board store.

Opened like the mailbox reader: ``file:...?mode=ro`` with ``PRAGMA query_only``, no
schema setup, each call one short read snapshot on the connection's own thread. It
has no method that changes the file. ``list`` and ``get`` answer exactly as TermAl's
routes do (same validation, messages and ``detail``); ``scopes``, ``entries``,
``history`` and ``generations`` are views for people (the viewer) beyond TermAl's API.

A file without board tables (one made before they existed) reads as an empty board.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

import aiosqlite

from termal_tui.store.board import formats, queries, rules
from termal_tui.store.board.records import BoardGetResult, BoardHead, BoardListPage, BoardScope
from termal_tui.store.connection import (
    FollowsPath,
    connect_read_only,
    describe_error,
    directory_writable,
    file_identity,
    inspect_database_file,
    is_busy,
    read_snapshot,
    run,
)
from termal_tui.store.errors import RetryableError, StorageError, StoreError
from termal_tui.store.schema import verify_readable
from termal_tui.store.sqlite import open_read_only
from termal_tui.store.urls import is_postgres_url, refuse_other_url

T = TypeVar("T")
_CORE_TABLES = frozenset({"coordination_board_scopes", "coordination_board_entries"})


def read_failure(path: Path, error: sqlite3.Error) -> Exception:
    """A SQLite failure during a board read: busy is TermAl's read-safe retry sentence."""
    if is_busy(error):
        return RetryableError(formats.busy_message(formats.OP_CONNECTION, read=True))
    return describe_error(path, error)


class BoardReader(FollowsPath):
    """Read-only board queries over one coordination database. Has no method that writes.

    Construct with :func:`open_board_reader`, or over an already open read-only
    connection (for instance a mailbox reader's) with ``BoardReader(db, path)``.
    """

    def __init__(
        self,
        db: aiosqlite.Connection,
        path: Path,
        snapshot: str | None = None,
        identity: tuple[int, int] | None = None,
    ) -> None:
        self._db = db
        # The file this connection reads (a moved or replaced one fails): pass the
        # identity taken before the connection was opened when it is someone else's.
        self.follow(path, identity)
        # Why this is an immutable snapshot (no live changes can be seen), or None.
        self.snapshot = snapshot
        self._lock = asyncio.Lock()
        self._tables: frozenset[str] = frozenset()

    async def _snapshot(
        self, work: Callable[[sqlite3.Connection], T], empty: Callable[[], T], single: bool = False
    ) -> T:
        """``work`` as one snapshot in one thread hop; ``empty()`` when the file has no
        board tables yet (looked up again on each call until they appear)."""

        def guarded(db: sqlite3.Connection) -> T:
            if not self._tables >= _CORE_TABLES:
                self._tables = queries.board_tables(db)
                if not self._tables >= _CORE_TABLES:
                    return empty()
            return work(db)

        problem = self.file_problem()
        if problem is not None:
            raise StorageError(problem)
        try:
            async with self._lock:
                return await run(self._db, lambda conn: read_snapshot(conn, guarded, single))
        except sqlite3.Error as error:
            raise read_failure(self.path, error) from error

    async def list(
        self,
        scope_id: str,
        after_key: str | None = None,
        limit: int | None = None,
        snapshot_generation: int | None = None,
        known_generation: int | None = None,
    ) -> BoardListPage:
        """TermAl's list: live heads by key, default 100 per page (1..=200), bound to the
        scope generation (``snapshot_generation`` on continuations; 409 if it moved),
        ``known_generation`` on a first page → ``unchanged`` with no entries."""
        size = rules.validate_list_request(
            scope_id, after_key, limit, snapshot_generation, known_generation
        )

        def work(db: sqlite3.Connection) -> BoardListPage:
            return queries.list_page(
                db, scope_id, after_key, size, snapshot_generation, known_generation
            )

        def empty() -> BoardListPage:
            return rules.empty_board_page(after_key, snapshot_generation, known_generation)

        return await self._snapshot(work, empty)

    async def get(self, scope_id: str, key: str) -> BoardGetResult:
        """TermAl's get: the live head and the scope generation; 404 (with the tombstone
        head in ``detail`` for a deleted key) otherwise."""
        formats.validate_scope_id(scope_id)
        formats.validate_key(key)

        def empty() -> BoardGetResult:
            raise rules.key_not_found(key, scope_id, None, 0)

        return await self._snapshot(lambda db: queries.get(db, scope_id, key), empty)

    async def generation(self, scope_id: str) -> int:
        """The scope's generation (0 when it has none): the cheap "did anything move" probe."""
        return await self._snapshot(lambda db: queries.generation(db, scope_id), lambda: 0, True)

    async def generations(self) -> dict[str, int]:
        return await self._snapshot(queries.generations, dict, single=True)

    async def scopes(self) -> builtins.list[BoardScope]:
        """Every scope with its generation, live and tombstoned key counts, by scope id."""
        return await self._snapshot(queries.scopes, list, single=True)

    async def deleted_scopes(self) -> builtins.list[tuple[str, str]]:
        """Fenced scopes (deleted with their project) and when: ``(scope_id, deleted_at)``."""
        return await self._snapshot(queries.deleted_scopes, list, single=True)

    async def entries(
        self, scope_id: str, include_deleted: bool = False
    ) -> builtins.list[BoardHead]:
        """Every head of a scope by key, tombstones too with ``include_deleted``; a stored
        value that is not JSON comes back ``invalid`` instead of failing the read."""
        return await self._snapshot(
            lambda db: queries.entries(db, scope_id, include_deleted), list, single=True
        )

    async def history(self, scope_id: str, key: str) -> builtins.list[BoardHead]:
        """The key's retained earlier revisions, newest first (at most 100; a key's
        deletion purges them)."""

        def work(db: sqlite3.Connection) -> builtins.list[BoardHead]:
            if "coordination_board_history" not in self._tables:
                return []
            return queries.history(db, scope_id, key)

        return await self._snapshot(work, list, single=True)

    async def close(self) -> None:
        self.closed = True
        await self._db.close()


# ------------------------------------------------------------------- project names

TERMAL_STATE_FILENAME = "termal.sqlite"  # TermAl's own state, beside the coordination file


def _names_from(path: Path, read: Callable[[sqlite3.Connection], dict[str, str]]) -> dict[str, str]:
    """``read`` over ``path`` through the store's one read-only opener (an immutable open
    when the file is not in use, so no sidecar is created); empty when there is no such
    file or it cannot be read."""
    if not path.is_file() or path.is_symlink():
        return {}
    try:
        db = open_read_only(path)
    except StoreError:
        return {}
    try:
        return read(db)
    except sqlite3.Error:
        return {}
    finally:
        db.close()


def project_names(db_path: Path, registry_path: Path) -> dict[str, str]:
    """Scope id → project name for the board of ``db_path``: TermAl's projects (its
    ``termal.sqlite`` beside the file) win over the ones termal-tui's registry at
    ``registry_path`` minted. Read-only and synchronous (run it off the event loop)."""
    minted = _names_from(registry_path, queries.registry_project_names)
    termal = _names_from(db_path.with_name(TERMAL_STATE_FILENAME), queries.termal_project_names)
    return minted | termal  # TermAl's names win


def url_project_names(url: str) -> dict[str, str]:
    """As :func:`project_names` for a ``postgresql://`` database: the projects minted in
    its registry (in the database), and TermAl's from its state folder on this host."""
    from termal_tui.store.postgres.registry_reads import minted_project_names
    from termal_tui.store.registry.projects import termal_state_for

    termal = _names_from(termal_state_for(url), queries.termal_project_names)
    return minted_project_names(url) | termal


async def _open_verified(path: Path, *, immutable: bool, busy_timeout_ms: int):
    db = await connect_read_only(path, immutable=immutable, busy_timeout_ms=busy_timeout_ms)
    try:
        await run(db, lambda conn: read_snapshot(conn, lambda c: verify_readable(c, path)))
    except BaseException as error:
        await db.close()
        if isinstance(error, sqlite3.Error):
            raise describe_error(path, error) from error
        raise
    return db


@contextlib.asynccontextmanager
async def open_board_reader(
    path: str | os.PathLike[str], *, busy_timeout_ms: int = formats.BUSY_TIMEOUT_MS
) -> AsyncIterator[BoardReader]:
    """Open a coordination database's board read-only (as ``open_reader`` opens its
    mailboxes: a rejected file leaves no sidecars; a WAL file in a directory that
    cannot be written is read as an immutable snapshot). Raises a StoreError.

    ``path`` is TermAl's SQLite file or a ``postgresql://`` URL (read-only transactions
    on the PostgreSQL engine, loaded only then)."""
    if is_postgres_url(path):
        from termal_tui.store.postgres import require_driver

        require_driver()
        from termal_tui.store.postgres.board.reader import open_pg_board_reader

        async with open_pg_board_reader(str(path), deadline=busy_timeout_ms / 1000) as pg:
            yield pg  # type: ignore[misc]  # the same reads (PgBoardReader)
        return
    refuse_other_url(path)
    resolved = Path(path).expanduser()
    is_wal = inspect_database_file(resolved)
    identity = file_identity(resolved)  # before connecting: the file the connection reads
    snapshot: str | None = None
    wal, shm = Path(f"{resolved}-wal"), Path(f"{resolved}-shm")
    sidecars_missing = is_wal and not (wal.exists() and shm.exists())
    if sidecars_missing and not wal.exists():
        probe = await _open_verified(resolved, immutable=True, busy_timeout_ms=busy_timeout_ms)
        await probe.close()
    if sidecars_missing and not directory_writable(resolved):
        snapshot = (
            "read-only directory: SQLite cannot add the WAL index, so this is a snapshot "
            "of the main file and live refresh is off"
        )
        if wal.exists():
            snapshot += "; writes still in the -wal are not shown"
    try:
        db = await _open_verified(
            resolved, immutable=snapshot is not None, busy_timeout_ms=busy_timeout_ms
        )
    except StorageError:
        if snapshot is not None or not is_wal:
            raise
        snapshot = "cannot set up the WAL index: this is a snapshot and live refresh is off"
        db = await _open_verified(resolved, immutable=True, busy_timeout_ms=busy_timeout_ms)
    reader = BoardReader(db, resolved, snapshot, identity)
    try:
        yield reader
    finally:
        reader.closed = True
        await db.close()
