"""PgMailboxReader: the read-only half of the store on PostgreSQL, with the mailbox reads
of :class:`~termal_tui.store.reader.MailboxReader`.

Every connection has ``default_transaction_read_only`` on and every call is one
``READ ONLY`` transaction, closed before the call returns (the viewer never pins a
snapshot); it never runs schema setup, so a role with only SELECT can read. It never
imports the writer.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any, Final, TypeVar

import psycopg

from termal_tui.core.formats import (
    READ_LIMIT_DEFAULT,
    REQUEST_DEADLINE_SECONDS,
    check_count,
    check_position,
    clamp_read_limit,
)
from termal_tui.core.models import ChangeToken, MailboxMessage, MailboxSummary, MessagePage, trusted
from termal_tui.store.activity import ActivitySnapshot, MessageRow, ParticipantRow, SessionLoad
from termal_tui.store.errors import NotFoundError, StorageError
from termal_tui.store.health_queries import HealthRows
from termal_tui.store.postgres import activity, health, queries
from termal_tui.store.postgres.connection import PgDatabase
from termal_tui.store.postgres.schema import verify_readable
from termal_tui.store.queries import MAX_SEQUENCE
from termal_tui.store.schema import SchemaInfo
from termal_tui.store.urls import redact

if TYPE_CHECKING:
    from termal_tui.store.postgres.board.reader import PgBoardReader
    from termal_tui.store.postgres.checks import ServerFacts

T = TypeVar("T")
Conn = psycopg.AsyncConnection[Any]

READER_POOL_SIZE: Final = 2


class PgMailboxReader:
    """Read-only queries over one PostgreSQL coordination database."""

    # A database has no file to follow, and is never an immutable snapshot.
    snapshot: str | None = None

    def __init__(self, db: PgDatabase, url: str, info: SchemaInfo) -> None:
        self._db = db
        self.url = url
        self.target = redact(url)
        self.schema = info
        self.closed = False
        self._board: PgBoardReader | None = None
        self.insertion_order = activity.InsertionOrder()  # asked once (see the class)

    @property
    def location(self) -> str:
        """The URL it reads (it may hold a password: show :attr:`target`)."""
        return self.url

    def board(self) -> PgBoardReader:
        """The board's reader over this same pool of read-only connections (closed with
        this reader)."""
        if self._board is None:
            from termal_tui.store.postgres.board.reader import PgBoardReader

            self._board = PgBoardReader(self._db, self.url)
            self._board.closed = self.closed
        return self._board

    def file_state(self) -> str | None:
        return None

    def file_problem(self) -> str | None:
        return (
            "this connection was closed (the viewer reopened the database)" if self.closed else None
        )

    async def _read(
        self, work: Callable[[Conn], Awaitable[T]], operation: str, *, single: bool = False
    ) -> T:
        problem = self.file_problem()
        if problem is not None:
            raise StorageError(problem)
        return await self._db.run(work, operation, single=single)

    async def list_mailboxes(
        self,
        *,
        session_id: str | None = None,
        limit: int | None = None,
        after: tuple[str, str] | None = None,
        matching: str | None = None,
    ) -> list[MailboxSummary]:
        return await self._read(
            lambda conn: queries.summaries(
                conn, session_id, limit=limit, after=after, matching=matching
            ),
            "listing mailboxes",
        )

    async def count_matching(self, needle: str, *, session_id: str | None = None) -> int:
        """How many mailboxes ``list_mailboxes(matching=needle)`` lists in all."""
        return await self._read(
            lambda conn: queries.count_matching(conn, session_id, needle), "counting mailboxes"
        )

    async def data_version(self) -> int:
        """Moves whenever anything commits (a poll's cheap "has anything changed?"; it may
        also move without a change to the mailboxes)."""
        return await self._read(queries.data_version, "reading the database's version", single=True)

    async def index_totals(self, *, session_id: str | None = None) -> tuple[int, int]:
        return await self._read(lambda conn: queries.totals(conn, session_id), "counting mailboxes")

    async def get_mailbox(
        self, mailbox_id: str, *, session_id: str | None = None
    ) -> MailboxSummary:
        async def work(conn: Conn) -> MailboxSummary:
            await queries.authorize(conn, mailbox_id, session_id)
            found = await queries.summaries(conn, session_id, mailbox_id)
            if not found:
                raise NotFoundError(f"mailbox {mailbox_id} has no visible messages")
            return found[0]

        return await self._read(work, "reading a mailbox")

    async def get_head(self, mailbox_id: str, *, session_id: str | None = None) -> MailboxSummary:
        async def work(conn: Conn) -> MailboxSummary:
            found = await queries.head(conn, mailbox_id, session_id)
            if found is None:
                raise NotFoundError(f"mailbox {mailbox_id} has no visible messages")
            return found

        return await self._read(work, "reading a mailbox")

    async def change_token(self, mailbox_id: str) -> ChangeToken | None:
        return await self._read(lambda conn: queries.probe(conn, mailbox_id), "reading a mailbox")

    async def read_range(
        self,
        mailbox_id: str,
        after_sequence: int = 0,
        limit: int = READ_LIMIT_DEFAULT,
        *,
        session_id: str | None = None,
    ) -> list[MailboxMessage]:
        after = check_position("afterSequence", after_sequence)
        number = clamp_read_limit(check_count("limit", limit))
        return await self._read(
            lambda conn: queries.fetch_range(conn, mailbox_id, after, number, session_id),
            "reading mailbox messages",
        )

    async def read_page(
        self,
        mailbox_id: str,
        before_sequence: int | None = None,
        limit: int = READ_LIMIT_DEFAULT,
        *,
        session_id: str | None = None,
    ) -> MessagePage:
        if before_sequence is not None:
            check_position("beforeSequence", before_sequence)
        number = clamp_read_limit(check_count("limit", limit))

        async def work(conn: Conn) -> MessagePage:
            found = await queries.fetch_newest_first(
                conn, mailbox_id, before_sequence, number + 1, session_id
            )
            return trusted(
                MessagePage, {"messages": found[:number], "has_older": len(found) > number}
            )

        return await self._read(work, "reading mailbox messages")

    async def read_hidden(
        self,
        mailbox_id: str,
        first: int = 1,
        last: int = MAX_SEQUENCE,
        limit: int = READ_LIMIT_DEFAULT,
        *,
        session_id: str | None = None,
    ) -> list[MailboxMessage]:
        number = clamp_read_limit(check_count("limit", limit))

        async def work(conn: Conn) -> list[MailboxMessage]:
            await queries.authorize(conn, mailbox_id, session_id)
            return await queries.fetch_hidden(conn, mailbox_id, first, last, number)

        return await self._read(work, "reading mailbox messages")

    async def read_message(
        self, message_id: str, *, session_id: str | None = None
    ) -> MailboxMessage:
        return await self._read(
            lambda conn: queries.fetch_message(conn, message_id, session_id),
            "reading a mailbox message",
        )

    async def health_rows(self, mailbox_ids: Collection[str] | None = None) -> HealthRows:
        """Every participant's unread range and its rows' wake states, in one snapshot."""
        return await self._read(
            lambda conn: health.read_health_rows(conn, mailbox_ids), "reading delivery health"
        )

    async def search_chunk(
        self,
        mailbox_id: str,
        needle: str,
        before: int | None = None,
        scan: int = 20_000,
        *,
        session_id: str | None = None,
    ) -> tuple[list[MailboxMessage], int | None]:
        """One bounded step of a substring search, newest first (as on a file)."""
        start = MAX_SEQUENCE if before is None else before

        async def work(conn: Conn) -> tuple[list[MailboxMessage], int | None]:
            await queries.authorize(conn, mailbox_id, session_id)
            return await queries.search_chunk(conn, mailbox_id, needle, start, scan, session_id)

        return await self._read(work, "searching a mailbox")

    async def activity_page(self, *, before_rowid: int | None, limit: int) -> list[MessageRow]:
        """Messages newest first below ``before_rowid`` (their insertion order)."""
        return await self._read(
            lambda conn: activity.messages_before(conn, before_rowid, limit, self.insertion_order),
            "reading activity",
        )

    async def activity_snapshot(
        self,
        *,
        after_rowid: int | None,
        limit: int,
        wake_window: tuple[int, int] | None = None,
    ) -> ActivitySnapshot:
        """As on a file, in one snapshot; rows above ``after_rowid`` come with the ones
        just below it that may have committed late (``activity.LATE_WINDOW``)."""
        return await self._read(
            lambda conn: activity.activity_snapshot(
                conn, after_rowid, limit, wake_window, self.insertion_order
            ),
            "reading activity",
        )

    async def sessions_overview(
        self,
    ) -> tuple[list[ParticipantRow], list[SessionLoad], dict[str, str], list[tuple[str, str]]]:
        """Everything the sessions view shows but the notifiers, in one snapshot."""
        return await self._read(
            lambda conn: activity.sessions_overview(conn, self.insertion_order),
            "reading sessions",
        )

    async def server_facts(self) -> ServerFacts:
        """The server, the role and what it may read (``doctor``'s checks on a URL)."""
        from termal_tui.store.postgres.checks import server_facts

        return await self._read(server_facts, "checking the server")

    async def session_ids(self) -> list[str]:
        return await self._read(queries.session_ids, "listing sessions")

    async def session_presence(self, session_id: str) -> tuple[int, int]:
        return await self._read(
            lambda conn: queries.session_presence(conn, session_id), "reading a session"
        )

    async def close(self) -> None:
        self.closed = True
        if self._board is not None:
            self._board.closed = True
        await self._db.close()


@contextlib.asynccontextmanager
async def open_pg_reader(
    url: str, *, deadline: float = REQUEST_DEADLINE_SECONDS
) -> AsyncIterator[PgMailboxReader]:
    """Open a PostgreSQL coordination database read-only (schema verified, never made)."""
    db = PgDatabase(url, read_only=True, deadline=deadline, max_size=READER_POOL_SIZE)
    await db.open()
    try:
        info = await db.run(lambda conn: verify_readable(conn, url), "checking the schema")
    except BaseException:
        await db.close()
        raise
    reader = PgMailboxReader(db, url, info)
    try:
        yield reader
    finally:
        await reader.close()
