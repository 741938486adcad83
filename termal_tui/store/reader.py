"""MailboxReader: the read-only half of the store.

Opens ``file:...?mode=ro`` with ``PRAGMA query_only``, never runs schema setup,
and wraps each call in one short read transaction that is closed before the
call returns, so a long-lived viewer never pins a WAL snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import aiosqlite

from termal_tui.models import MailboxMessage, MailboxSummary, MessagePage
from termal_tui.store import queries
from termal_tui.store.connection import connect_read_only, is_busy
from termal_tui.store.errors import NotFoundError, RetryableError, SchemaError, ValidationError
from termal_tui.store.formats import READ_LIMIT_DEFAULT, clamp_read_limit
from termal_tui.store.schema import SchemaInfo, verify_readable

T = TypeVar("T")


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(f"{name} must be a non-negative integer")
    return value


class MailboxReader:
    """Read-only queries over one coordination database. Has no method that writes."""

    def __init__(self, db: aiosqlite.Connection, path: Path, info: SchemaInfo) -> None:
        self._db = db
        self.path = path
        self.schema = info
        # Calls from concurrent tasks share one connection: one snapshot at a time.
        self._lock = asyncio.Lock()

    async def _snapshot(self, work: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run ``work`` inside one deferred read transaction, always closed afterwards."""
        try:
            async with self._lock:
                await self._db.execute("BEGIN")
                try:
                    return await work(self._db)
                finally:
                    await self._db.execute("ROLLBACK")
        except sqlite3.OperationalError as error:
            if is_busy(error):
                raise RetryableError(
                    f"{self.path} is busy; nothing was read, try again ({error})."
                ) from error
            raise

    async def list_mailboxes(self, session_id: str | None = None) -> list[MailboxSummary]:
        return await self._snapshot(lambda db: queries.summaries(db, session_id))

    async def get_mailbox(self, mailbox_id: str, session_id: str | None = None) -> MailboxSummary:
        async def work(db: aiosqlite.Connection) -> MailboxSummary:
            await queries.authorize(db, mailbox_id, session_id)
            found = await queries.summaries(db, session_id, mailbox_id)
            if not found:
                raise NotFoundError(f"mailbox {mailbox_id} has no visible messages")
            return found[0]

        return await self._snapshot(work)

    async def read_range(
        self,
        mailbox_id: str,
        after_sequence: int = 0,
        limit: int = READ_LIMIT_DEFAULT,
        session_id: str | None = None,
    ) -> list[MailboxMessage]:
        """TermAl's read: ascending from ``after_sequence``, limit clamped to 1..=200."""
        after = _check_count("afterSequence", after_sequence)
        count = clamp_read_limit(_check_count("limit", limit))

        async def work(db: aiosqlite.Connection) -> list[MailboxMessage]:
            await queries.authorize(db, mailbox_id, session_id)
            return await queries.fetch_range(
                db, mailbox_id, after, count, session_id, self.schema.has_dispatch_outcome
            )

        return await self._snapshot(work)

    async def read_page(
        self,
        mailbox_id: str,
        before_sequence: int | None = None,
        limit: int = READ_LIMIT_DEFAULT,
        session_id: str | None = None,
    ) -> MessagePage:
        """Newest-first keyset page below ``before_sequence`` with an honest ``has_older``."""
        if before_sequence is not None:
            _check_count("beforeSequence", before_sequence)
        count = clamp_read_limit(_check_count("limit", limit))

        async def work(db: aiosqlite.Connection) -> MessagePage:
            await queries.authorize(db, mailbox_id, session_id)
            rows = await queries.fetch_newest_first(
                db,
                mailbox_id,
                before_sequence,
                count + 1,
                session_id,
                self.schema.has_dispatch_outcome,
            )
            return MessagePage(messages=rows[:count], has_older=len(rows) > count)

        return await self._snapshot(work)

    async def read_message(self, message_id: str, session_id: str | None = None) -> MailboxMessage:
        return await self._snapshot(
            lambda db: queries.fetch_message(
                db, message_id, session_id, self.schema.has_dispatch_outcome
            )
        )

    async def session_ids(self) -> list[str]:
        """Every session id that participates in any mailbox (for CLI validation)."""

        async def work(db: aiosqlite.Connection) -> list[str]:
            async with db.execute(
                "SELECT DISTINCT session_id FROM mailbox_participants ORDER BY session_id"
            ) as cursor:
                return [row[0] for row in await cursor.fetchall()]

        return await self._snapshot(work)

    async def close(self) -> None:
        await self._db.close()


@contextlib.asynccontextmanager
async def open_reader(path: str | os.PathLike[str]) -> AsyncIterator[MailboxReader]:
    """Open a coordination database read-only. Raises SchemaError with an actionable sentence."""
    resolved = Path(path).expanduser()
    db = await connect_read_only(resolved)
    try:
        try:
            info = await verify_readable(db, resolved)
        except sqlite3.DatabaseError as error:
            raise SchemaError(f"{resolved} is not a SQLite database ({error}).") from error
        reader = MailboxReader(db, resolved, info)
        yield reader
    finally:
        await db.close()
