"""The PostgreSQL engine's connections: one pool per opened store, one transaction per
store call, and the one place where a driver failure becomes a typed store error.

Failures map onto the same kinds (and, where SQLite has one, the same sentence) as on a
file: a server that cannot be reached, a serialization failure, a deadlock, a lock or
statement timeout and a full pool are the retryable busy error (nothing committed); a
connection lost while COMMIT was in flight is an unknown outcome; a missing table is
"not ours"; anything else is a storage failure. No sentence holds a password: URLs are
shown redacted and the driver's text is scrubbed of the URL's secrets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import psycopg
import psycopg.errors
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from termal_tui.store.errors import (
    CommitOutcomeUnknownError,
    RetryableError,
    SchemaError,
    StorageError,
    StoreError,
    busy_message,
)
from termal_tui.store.urls import redact, scrub

T = TypeVar("T")

# The driver and its pool log what they do about a lost connection (a cancelled query,
# a connection discarded): every failure reaches the caller as a typed store error, and
# nothing may be written over the viewer's screen by logging's last-resort handler.
logging.getLogger("psycopg").addHandler(logging.NullHandler())

Work = Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]

POOL_MAX_SIZE: Final = 8
CONNECT_TIMEOUT_SECONDS: Final = 5

# SQLSTATEs that mean "try again": nothing was committed.
_RETRYABLE: Final = (
    psycopg.errors.SerializationFailure,  # 40001
    psycopg.errors.DeadlockDetected,  # 40P01
    psycopg.errors.LockNotAvailable,  # 55P03 (lock_timeout)
    psycopg.errors.QueryCanceled,  # 57014 (statement_timeout)
    psycopg.errors.AdminShutdown,  # 57P01
    psycopg.errors.CrashShutdown,  # 57P02
    psycopg.errors.CannotConnectNow,  # 57P03 (starting up, shutting down)
    psycopg.errors.TooManyConnections,  # 53300
)
# Refusals of who is asking (the URL's role), not of the moment: never retryable.
_ACCESS: Final = (
    psycopg.errors.InvalidPassword,  # 28P01
    psycopg.errors.InvalidAuthorizationSpecification,  # 28000
    psycopg.errors.InvalidCatalogName,  # 3D000: no such database
)


# A connection the server refused for who is asking, told apart by the server's words
# (libpq reports them with no SQLSTATE): never "busy" — waiting changes nothing. A server
# that speaks another language (``lc_messages``) is not recognized and stays busy.
_REFUSALS: Final = (
    (re.compile(r'FATAL:\s+database "(.*?)" does not exist'),
     'the database "{}" does not exist on that server (create it, or correct the URL)'),
    (re.compile(r'FATAL:\s+role "(.*?)" does not exist'),
     'the role "{}" does not exist on that server (create it, or correct the URL)'),
    (re.compile(r'FATAL:\s+password authentication failed for user "(.*?)"'),
     'the server refused the password of the role "{}"'),
    (re.compile(r"FATAL:\s+no pg_hba\.conf entry for host"),
     "the server's pg_hba.conf admits no connection from this host for that role and "
     "database"),
)  # fmt: skip


def refusal(url: str, error: BaseException) -> StorageError | None:
    """A connection refused for its database, role or password, as one sentence (a
    storage failure: nothing was changed, and retrying will not help); None otherwise."""
    text = str(error)
    for pattern, sentence in _REFUSALS:
        found = pattern.search(text)
        if found:
            said = sentence.format(*(scrub(g, url) for g in found.groups()))
            return StorageError(f"cannot use PostgreSQL at {redact(url)}: {said}")
    return None


def first_line(error: BaseException, url: str) -> str:
    text = str(error).strip().splitlines()
    return scrub(text[0] if text else type(error).__name__, url).removeprefix("connection failed: ")


def describe_error(
    url: str, error: psycopg.Error, operation: str, *, committing: bool = False
) -> StoreError:
    """A driver failure as a typed store error with one sentence (no password)."""
    shown = redact(url)
    reason = first_line(error, url)
    if isinstance(error, psycopg.errors.ReadOnlySqlTransaction):
        return StorageError(
            f"PostgreSQL refused a write while {operation}: this connection is read-only "
            f"({shown}); nothing was changed"
        )
    if isinstance(error, psycopg.errors.InsufficientPrivilege):
        return StorageError(
            f"PostgreSQL refused access while {operation} ({reason}); the role in {shown} "
            "lacks a privilege; nothing was changed"
        )
    if isinstance(error, psycopg.errors.UndefinedTable):
        return SchemaError(
            f"{shown} is a PostgreSQL database but not a TermAl coordination database ({reason})."
        )
    if isinstance(error, _ACCESS):
        return StorageError(f"cannot use PostgreSQL at {shown}: {reason}")
    refused = refusal(url, error) if isinstance(error, psycopg.OperationalError) else None
    if refused is not None:
        return refused
    if isinstance(error, _RETRYABLE):
        return RetryableError(busy_message(operation))
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        # The server went away or cannot be reached.
        if committing:
            return CommitOutcomeUnknownError(
                f"the connection to PostgreSQL at {shown} was lost while {operation}: it may "
                "or may not have been written"
            )
        return RetryableError(busy_message(operation))
    return StorageError(f"PostgreSQL failed while {operation} ({reason}); nothing was changed")


class PgDatabase:
    """A pool of connections to one database; :meth:`run` is one transaction.

    ``read_only``: every connection has ``default_transaction_read_only`` on and every
    transaction is opened ``READ ONLY`` (the viewer's reader: it cannot write, even
    through a role that could), ``REPEATABLE READ``: every statement of one call sees
    the same snapshot (a read-only transaction never fails to serialize).
    """

    def __init__(
        self,
        url: str,
        *,
        read_only: bool,
        deadline: float,
        max_size: int = POOL_MAX_SIZE,
        lock_timeout_ms: int | None = None,
    ) -> None:
        self.url = url
        self.shown = redact(url)
        self.read_only = read_only
        self.deadline = deadline
        self._lock_timeout_ms = lock_timeout_ms
        self.reconnects = 0  # calls run again after their connection was found dead
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            open=False,
            timeout=deadline,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_SECONDS},
            configure=self._configure,
            name="termal-tui",
        )

    async def _configure(self, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute("SET application_name = 'termal-tui'")
        if self._lock_timeout_ms is not None:
            await conn.execute(f"SET lock_timeout = {int(self._lock_timeout_ms)}")
        if self.read_only:
            await conn.execute("SET default_transaction_read_only = on")

    async def open(self) -> None:
        """Connect once (a bad URL, role or password fails here, in one sentence)."""
        try:
            probe = await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
            )
        except psycopg.Error as error:
            refused = refusal(self.url, error)
            if refused is not None:
                raise refused from None
            if isinstance(error, psycopg.OperationalError) and not isinstance(error, _ACCESS):
                raise RetryableError(
                    busy_message(f"connecting to PostgreSQL at {self.shown}")
                    + f" ({first_line(error, self.url)})"
                ) from None
            raise describe_error(self.url, error, f"connecting to {self.shown}") from None
        except Exception as error:  # a URL libpq cannot parse
            raise StorageError(
                f"cannot use the PostgreSQL URL {self.shown}: {first_line(error, self.url)}"
            ) from None
        await probe.close()
        await self._pool.open(wait=False)

    async def close(self) -> None:
        await self._pool.close()

    async def run(
        self,
        work: Work[T],
        operation: str,
        *,
        commit: str | None = None,
        single: bool = False,
        idempotent: bool | None = None,
    ) -> T:
        """``work`` in one transaction (READ ONLY on a read-only database); failures are
        typed store errors. ``commit``: the operation named if COMMIT itself fails.
        ``single``: ``work`` only reads, and needs no snapshot shared between its
        statements (one statement, atomic by itself; or reads that a READ COMMITTED
        transaction would run each on its own snapshot anyway): it runs without BEGIN
        and COMMIT (two round trips fewer). Never on a read-only database's reader, whose
        calls share one snapshot.

        A pooled connection the server dropped while it sat idle (a restart, a network
        cut) fails the first statement sent on it. When ``work`` may simply run again —
        ``idempotent``, by default every read — such a failure before COMMIT (so nothing
        was committed) is not the caller's: ``work`` runs once more on a sound connection.
        Whatever the work, the pool's idle connections are checked after such a failure
        (the dead ones, likely all lost together, are discarded), so a caller's replay
        does not meet the next one. Anything else is said as it was."""
        again = (single or self.read_only) if idempotent is None else idempotent
        for attempt in (1, 2):
            committing = False
            broken = False
            try:
                async with self._pool.connection(timeout=self.deadline) as conn:
                    try:
                        if single:
                            return await work(conn)
                        async with conn.transaction():
                            if self.read_only:
                                # One snapshot for the whole call, as a read on a file has.
                                await conn.execute(
                                    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
                                )
                            result = await work(conn)
                            committing = True
                        return result
                    except (psycopg.OperationalError, psycopg.InterfaceError):
                        broken = conn.broken
                        raise
            except PoolTimeout:
                raise RetryableError(busy_message(operation)) from None
            except psycopg.Error as error:
                if broken:
                    # The others idle beside it were likely lost together: checked now,
                    # the dead ones discarded, so the next call (or the caller's replay)
                    # meets a sound one.
                    with contextlib.suppress(Exception):
                        await self._pool.check()
                    if again and not committing and attempt == 1:
                        self.reconnects += 1
                        continue
                raise describe_error(
                    self.url,
                    error,
                    commit if committing and commit else operation,
                    committing=committing,
                ) from None
            except TimeoutError:
                raise RetryableError(busy_message(operation)) from None
            except asyncio.CancelledError:
                raise
        raise AssertionError("unreachable")  # pragma: no cover


async def one(conn: psycopg.AsyncConnection[Any], sql: str, params: Any = ()) -> Any:
    """The first row of ``sql``, or None."""
    cursor = await conn.execute(sql.encode(), params)
    return await cursor.fetchone()


async def every(conn: psycopg.AsyncConnection[Any], sql: str, params: Any = ()) -> list[Any]:
    cursor = await conn.execute(sql.encode(), params)
    return await cursor.fetchall()


async def count(conn: psycopg.AsyncConnection[Any], sql: str, params: Any = ()) -> int:
    """How many rows a statement changed."""
    cursor = await conn.execute(sql.encode(), params)
    return max(0, cursor.rowcount)
