"""MailboxReader: the read-only half of the store.

Opens ``file:...?mode=ro`` with ``PRAGMA query_only``, never runs schema setup,
and runs each call as one short read transaction on the connection's own thread
(one thread hop), closed before the call returns, so a long-lived viewer never
pins a WAL snapshot.

What it touches on disk: the database and its ``-wal`` are only read. A WAL
reader maps the ``-shm`` index, which SQLite creates (with an empty ``-wal``) if
they are missing and the directory is writable; that is shared coordination state
every reader and writer uses. A file that is rejected leaves no sidecars behind
(it is checked through an immutable, lock-free open first), and a WAL database in
a directory we cannot write is opened as an immutable snapshot (``snapshot`` is
set, and live refresh has nothing to follow).

A reader stays bound to the file it opened: :meth:`MailboxReader.file_state` compares
the path's device and inode with the ones seen at open (a stat, nothing more), and
every call refuses to answer from an old file once the path names another one or
nothing at all (the caller says so and opens the new file).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import AsyncIterator, Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import aiosqlite

from termal_tui.core.formats import (
    BUSY_TIMEOUT_MS,
    READ_LIMIT_DEFAULT,
    check_count,
    check_position,
    clamp_read_limit,
)
from termal_tui.core.models import ChangeToken, MailboxMessage, MailboxSummary, MessagePage, trusted
from termal_tui.store import health_queries, queries
from termal_tui.store.activity import ActivityReads
from termal_tui.store.connection import (  # the file states re-exported for the viewer
    FILE_GONE as FILE_GONE,
)
from termal_tui.store.connection import (
    FILE_SWAPPED as FILE_SWAPPED,
)
from termal_tui.store.connection import (
    FollowsPath,
    connect_read_only_then,
    describe_error,
    directory_writable,
    file_identity,
    inspect_database_file,
    read_snapshot,
    run,
)
from termal_tui.store.errors import NotFoundError, StorageError
from termal_tui.store.health_queries import HealthRows
from termal_tui.store.schema import SchemaInfo, verify_readable
from termal_tui.store.urls import is_postgres_url, refuse_other_url

if TYPE_CHECKING:
    from termal_tui.store.board.reader import BoardReader

T = TypeVar("T")


class MailboxReader(FollowsPath, ActivityReads):
    """Read-only queries over one coordination database. Has no method that writes."""

    def __init__(
        self,
        db: aiosqlite.Connection,
        path: Path,
        info: SchemaInfo,
        snapshot: str | None = None,
        identity: tuple[int, int] | None = None,
    ) -> None:
        self._db = db
        self.path = path
        self.schema = info
        # Why this is an immutable snapshot (no live changes can be seen), or None.
        self.snapshot = snapshot
        # Calls from concurrent tasks share one connection: one snapshot at a time.
        self._lock = asyncio.Lock()
        self._board: BoardReader | None = None
        # PRAGMA data_version when the file was opened (read with the checks, in the
        # same thread hop); None when unknown.
        self.opened_version: int | None = None
        self.follow(path, identity)  # the file this connection reads

    @property
    def location(self) -> Path:
        """The file it reads (a PostgreSQL reader's is its URL)."""
        return self.path

    def board(self) -> BoardReader:
        """The board's reader over this same read-only connection (one connection per
        open file for the whole viewer; closed with this one)."""
        if self._board is None:
            from termal_tui.store.board.reader import BoardReader

            self._board = BoardReader(self._db, self.path, self.snapshot, self.identity)
            self._board.closed = self.closed
        return self._board

    def _mark_closed(self) -> None:
        self.closed = True
        if self._board is not None:
            self._board.closed = True

    async def _snapshot(self, work: Callable[[sqlite3.Connection], T], single: bool = False) -> T:
        """Run ``work`` as one snapshot in one thread hop (``single``: one statement)."""
        problem = self.file_problem()
        if problem is not None:
            raise StorageError(problem)
        try:
            async with self._lock:
                return await run(self._db, lambda conn: read_snapshot(conn, work, single))
        except sqlite3.Error as error:
            raise describe_error(self.path, error) from error

    async def list_mailboxes(
        self,
        *,
        session_id: str | None = None,
        limit: int | None = None,
        after: tuple[str, str] | None = None,
        matching: str | None = None,
    ) -> list[MailboxSummary]:
        """Newest activity first; ``limit``/``after`` page it (keyset: the last
        summary's ``(latest_message_at, id)``); ``matching`` keeps the mailboxes whose
        id or a participant's name or session id holds it (casefolded)."""
        return await self._snapshot(
            lambda db: queries.summaries(
                db, session_id, limit=limit, after=after, matching=matching
            )
        )

    async def count_matching(self, needle: str, *, session_id: str | None = None) -> int:
        """How many mailboxes ``list_mailboxes(matching=needle)`` lists in all."""
        return await self._snapshot(lambda db: queries.count_matching(db, session_id, needle))

    async def data_version(self) -> int:
        """SQLite's ``PRAGMA data_version`` on this reader's connection: it moves whenever
        another connection commits to the file (this reader never does), so a poll can
        tell "nothing changed" without reading a row."""
        return await self._snapshot(
            lambda db: int(db.execute("PRAGMA data_version").fetchone()[0]), single=True
        )

    async def index_totals(self, *, session_id: str | None = None) -> tuple[int, int]:
        """(mailboxes, unread) over everything :meth:`list_mailboxes` would list."""
        return await self._snapshot(lambda db: queries.totals(db, session_id))

    async def get_mailbox(
        self, mailbox_id: str, *, session_id: str | None = None
    ) -> MailboxSummary:
        def work(db: sqlite3.Connection) -> MailboxSummary:
            queries.authorize(db, mailbox_id, session_id)
            found = queries.summaries(db, session_id, mailbox_id)
            if not found:
                raise NotFoundError(f"mailbox {mailbox_id} has no visible messages")
            return found[0]

        return await self._snapshot(work)

    async def get_head(self, mailbox_id: str, *, session_id: str | None = None) -> MailboxSummary:
        """Participants, cursors and the latest visible sequence, without the unread count
        (``unread_count`` is 0): cheap at any mailbox size."""

        def work(db: sqlite3.Connection) -> MailboxSummary:
            found = queries.head(db, mailbox_id, session_id)
            if found is None:
                raise NotFoundError(f"mailbox {mailbox_id} has no visible messages")
            return found

        return await self._snapshot(work)

    async def change_token(self, mailbox_id: str) -> ChangeToken | None:
        """Changes whenever the mailbox gains a row or a cursor/departure moves (None: no
        such mailbox)."""
        return await self._snapshot(lambda db: queries.probe(db, mailbox_id), single=True)

    async def read_range(
        self,
        mailbox_id: str,
        after_sequence: int = 0,
        limit: int = READ_LIMIT_DEFAULT,
        *,
        session_id: str | None = None,
    ) -> list[MailboxMessage]:
        """TermAl's read: ascending from ``after_sequence``, limit clamped to 1..=200."""
        after = check_position("afterSequence", after_sequence)
        count = clamp_read_limit(check_count("limit", limit))
        outcome = self.schema.has_dispatch_outcome

        def work(db: sqlite3.Connection) -> list[MailboxMessage]:
            return queries.fetch_range(db, mailbox_id, after, count, session_id, outcome)

        return await self._snapshot(work, single=True)

    async def read_page(
        self,
        mailbox_id: str,
        before_sequence: int | None = None,
        limit: int = READ_LIMIT_DEFAULT,
        *,
        session_id: str | None = None,
    ) -> MessagePage:
        """Newest-first keyset page below ``before_sequence`` with an honest ``has_older``."""
        if before_sequence is not None:
            check_position("beforeSequence", before_sequence)
        count = clamp_read_limit(check_count("limit", limit))
        outcome = self.schema.has_dispatch_outcome

        def work(db: sqlite3.Connection) -> MessagePage:
            rows = queries.fetch_newest_first(
                db, mailbox_id, before_sequence, count + 1, session_id, outcome
            )
            return trusted(MessagePage, {"messages": rows[:count], "has_older": len(rows) > count})

        return await self._snapshot(work, single=True)

    async def read_hidden(
        self,
        mailbox_id: str,
        first: int = 1,
        last: int = queries.MAX_SEQUENCE,
        limit: int = READ_LIMIT_DEFAULT,
        *,
        session_id: str | None = None,
    ) -> list[MailboxMessage]:
        """The control-plane rows (review results) that the human and session views
        hide, between ``first`` and ``last``, newest first; for a person who asks to see
        them (the session view: only in a mailbox it takes part in)."""
        count = clamp_read_limit(check_count("limit", limit))
        outcome = self.schema.has_dispatch_outcome

        def work(db: sqlite3.Connection) -> list[MailboxMessage]:
            queries.authorize(db, mailbox_id, session_id)
            return queries.fetch_hidden(db, mailbox_id, first, last, count, outcome)

        return await self._snapshot(work)

    async def read_message(
        self, message_id: str, *, session_id: str | None = None
    ) -> MailboxMessage:
        outcome = self.schema.has_dispatch_outcome
        return await self._snapshot(
            lambda db: queries.fetch_message(db, message_id, session_id, outcome), single=True
        )

    async def health_rows(self, mailbox_ids: Collection[str] | None = None) -> HealthRows:
        """Every participant's unread range and its rows' wake states, in one read
        snapshot (only in ``mailbox_ids`` when given), for health.py's report."""
        return await self._snapshot(lambda db: health_queries.read_health_rows(db, mailbox_ids))

    async def search_chunk(
        self,
        mailbox_id: str,
        needle: str,
        before: int | None = None,
        scan: int = 20_000,
        *,
        session_id: str | None = None,
    ) -> tuple[list[MailboxMessage], int | None]:
        """One bounded step of a substring search, newest first (keyset: call again with
        the returned sequence until it is None). Each step is its own short snapshot."""
        start = queries.MAX_SEQUENCE if before is None else before
        outcome = self.schema.has_dispatch_outcome

        def work(db: sqlite3.Connection) -> tuple[list[MailboxMessage], int | None]:
            queries.authorize(db, mailbox_id, session_id)
            return queries.search_chunk(db, mailbox_id, needle, start, scan, session_id, outcome)

        return await self._snapshot(work)

    async def session_ids(self) -> list[str]:
        """Every session id that participates in any mailbox (for CLI validation)."""

        def work(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT DISTINCT session_id FROM mailbox_participants ORDER BY session_id"
            ).fetchall()
            return [queries.as_text(row[0]) for row in rows]

        return await self._snapshot(work)

    async def session_presence(self, session_id: str) -> tuple[int, int]:
        """(mailboxes the session is still in, mailboxes it has left)."""

        def work(db: sqlite3.Connection) -> tuple[int, int]:
            row = db.execute(
                "SELECT COUNT(*) FILTER (WHERE left_at IS NULL), "
                "COUNT(*) FILTER (WHERE left_at IS NOT NULL) "
                "FROM mailbox_participants WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            return int(row[0] or 0), int(row[1] or 0)

        return await self._snapshot(work)

    async def close(self) -> None:
        self._mark_closed()
        await self._db.close()


async def _open_verified(
    path: Path, *, immutable: bool, busy_timeout_ms: int
) -> tuple[aiosqlite.Connection, SchemaInfo, int]:
    """The connection, the schema it reads, and its ``data_version`` at the open: the
    settings, the checks and the version in one thread hop after the connect."""

    def verified(conn: sqlite3.Connection) -> tuple[SchemaInfo, int]:
        info = read_snapshot(conn, lambda c: verify_readable(c, path))
        return info, int(conn.execute("PRAGMA data_version").fetchone()[0])

    try:
        db, (info, version) = await connect_read_only_then(
            path, verified, immutable=immutable, busy_timeout_ms=busy_timeout_ms
        )
    except sqlite3.Error as error:
        raise describe_error(path, error) from error
    return db, info, version


@contextlib.asynccontextmanager
async def open_reader(
    path: str | os.PathLike[str], *, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> AsyncIterator[MailboxReader]:
    """Open a coordination database read-only. Raises a StoreError with one sentence.

    ``path`` is TermAl's SQLite file or a ``postgresql://`` URL (read-only transactions
    on the PostgreSQL engine, loaded only then)."""
    if is_postgres_url(path):
        from termal_tui.store.postgres import require_driver

        require_driver()
        from termal_tui.store.postgres.reader import open_pg_reader

        async with open_pg_reader(str(path), deadline=busy_timeout_ms / 1000) as pg:
            yield pg  # type: ignore[misc]  # the mailbox reads of the same API
        return
    refuse_other_url(path)
    resolved = Path(path).expanduser()
    is_wal = inspect_database_file(resolved)
    identity = file_identity(resolved)  # before connecting: the file the connection reads
    snapshot: str | None = None
    sidecars_missing = is_wal and not (
        Path(f"{resolved}-wal").exists() and Path(f"{resolved}-shm").exists()
    )
    if sidecars_missing and not Path(f"{resolved}-wal").exists():
        # Check the file through an immutable, lock-free open first: a rejected file
        # must not leave the sidecars a WAL open would make. Without a -wal the
        # main file holds every committed row, so this check sees the whole file.
        probe, _, _ = await _open_verified(
            resolved, immutable=True, busy_timeout_ms=busy_timeout_ms
        )
        await probe.close()
    if sidecars_missing and not directory_writable(resolved):
        snapshot = (
            "read-only directory: SQLite cannot add the WAL index, so this is a snapshot "
            "of the main file and live refresh is off"
        )
        if Path(f"{resolved}-wal").exists():
            snapshot += "; writes still in the -wal are not shown"
    try:
        db, info, version = await _open_verified(
            resolved, immutable=snapshot is not None, busy_timeout_ms=busy_timeout_ms
        )
    except StorageError:
        if snapshot is not None or not is_wal:
            raise
        # The directory looked writable but SQLite could not set up the WAL index.
        snapshot = "cannot set up the WAL index: this is a snapshot and live refresh is off"
        db, info, version = await _open_verified(
            resolved, immutable=True, busy_timeout_ms=busy_timeout_ms
        )
    reader = MailboxReader(db, resolved, info, snapshot, identity)
    reader.opened_version = version
    try:
        yield reader
    finally:
        reader._mark_closed()
        await db.close()
