"""Whether a message's dispatch outcome is still being finalized, knowable from any host
that reaches the database: the PostgreSQL twin of ``store/finalizers.py`` (which uses
local sockets, so it sees only finalizers on its own host).

A finalizer claims a message with a session-level advisory lock, taken on a connection
of its own before the COMMIT that makes the message visible; anyone asks "is it alive?"
by looking for that lock in ``pg_locks`` (readable by every role). The lock goes with the
connection: when the finalizer's process dies (``kill -9`` included) its socket closes,
the server ends the session and the claim is gone, with nothing to clean up. (A host
that vanishes without closing its sockets is noticed when TCP keepalives give up: set
``keepalives_idle`` in the URL to bound that.)
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any, Final

import psycopg

from termal_tui.store.postgres.connection import CONNECT_TIMEOUT_SECONDS, one

_MASK: Final = 0xFFFFFFFF


def lock_key(message_id: str) -> int:
    """The advisory lock's 64-bit key for a message (signed, as PostgreSQL's bigint)."""
    return int.from_bytes(
        hashlib.blake2b(message_id.encode(), digest_size=8, person=b"termal-fin").digest(),
        "big",
        signed=True,
    )


# A bigint advisory lock shows in pg_locks as classid (high half), objid (low half),
# objsubid 1, in its database.
ALIVE_SQL: Final = (
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND classid::bigint = %s AND objid::bigint = %s AND objsubid = 1)"
)


def alive_params(message_id: str) -> tuple[int, int]:
    key = lock_key(message_id) & 0xFFFFFFFFFFFFFFFF
    return key >> 32, key & _MASK


async def finalizer_alive(conn: psycopg.AsyncConnection[Any], message_id: str) -> bool:
    """True while some session (on any host) holds the claim on ``message_id``."""
    row = await one(conn, ALIVE_SQL, alive_params(message_id))
    return bool(row and row[0])


class PgFinalizerClaims:
    """The claims one writer holds, on one connection of its own (opened on first use)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._opening = asyncio.Lock()
        self._held: set[str] = set()
        self._pending: set[asyncio.Task[None]] = set()

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        async with self._opening:
            if self._conn is None or self._conn.closed:
                self._conn = await psycopg.AsyncConnection.connect(
                    self._url,
                    autocommit=True,
                    connect_timeout=CONNECT_TIMEOUT_SECONDS,
                    application_name="termal-tui finalizer",
                )
            return self._conn

    async def claim(self, message_id: str) -> None:
        """Claim ``message_id`` (before the COMMIT that makes it visible). Never waits
        for another holder: message ids are unique."""
        if message_id in self._held:
            return
        conn = await self._connection()
        await conn.execute(b"SELECT pg_try_advisory_lock(%s)", (lock_key(message_id),))
        self._held.add(message_id)

    async def _unlock(self, message_id: str) -> None:
        conn = self._conn
        if conn is None or conn.closed:
            return
        try:
            await conn.execute(b"SELECT pg_advisory_unlock(%s)", (lock_key(message_id),))
        except psycopg.Error:
            await conn.close()  # closing the session lets every claim go

    def release(self, message_id: str) -> None:
        """Let the claim go (in the background: callers are synchronous; a waiter that
        looks meanwhile still sees the outcome first, recorded before this)."""
        if message_id not in self._held:
            return
        self._held.discard(message_id)
        task = asyncio.get_running_loop().create_task(self._unlock(message_id))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def close(self) -> None:
        """Let every claim go (the session ends)."""
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        self._held.clear()
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
