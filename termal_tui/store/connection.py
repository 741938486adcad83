"""The async connections: the read-only URI connection and the read-write WAL
connection (aiosqlite), and in-process FIFO writer admission. Everything they check and
set up is shared with the synchronous openers (``sqlite.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import weakref
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

import aiosqlite

from termal_tui.core.formats import BUSY_TIMEOUT_MS, REQUEST_DEADLINE_SECONDS
from termal_tui.store.errors import RetryableError, busy_message
from termal_tui.store.sqlite import (  # re-exported: the store's openers import them here
    INSECURE_ENV,
    SIDECAR_SUFFIXES,
    SQLITE_MAGIC,
    check_before_write,
    configure_read_write,
    describe_error,
    directory_writable,
    display_path,
    harden_files,
    inspect_database_file,
    is_busy,
    is_state_directory,
    open_read_only,
    prepare_state_dir,
    read_only_uri,
    read_snapshot,
)

T = TypeVar("T")

FILE_GONE = "gone"
FILE_SWAPPED = "swapped"


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path`` now, or None when nothing is there."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return (-1, -1)  # unreadable metadata: not the file we opened either
    return (found.st_dev, found.st_ino)


class FollowsPath:
    """A reader that knows which file it opened: a connection keeps reading the inode it
    opened after the file at its path was moved away or replaced, so each call checks
    the path first (one stat) and refuses with a sentence instead of showing an old
    file as live."""

    path: Path
    identity: tuple[int, int] | None
    closed: bool

    def follow(self, path: Path, identity: tuple[int, int] | None = None) -> None:
        """``identity``: the file's, taken before its connection was opened (a file
        swapped during the open is then noticed, at worst as one needless reopen);
        without it, the file at ``path`` now."""
        self.path = path
        self.identity = identity if identity is not None else file_identity(path)
        self.closed = False

    def file_state(self) -> str | None:
        """None while ``path`` is still the file this reader opened; ``FILE_GONE`` when
        nothing is at the path (moved away or unlinked), ``FILE_SWAPPED`` when another
        file is there now (a restore, a reinstall). Read-only: one stat."""
        now = file_identity(self.path)
        if now is None:
            return FILE_GONE
        return None if now == self.identity else FILE_SWAPPED

    def file_problem(self) -> str | None:
        """The sentence a call fails with when it would read an old or closed file."""
        if self.closed:
            return "this connection was closed (the viewer reopened the database)"
        state = self.file_state()
        if state == FILE_GONE:
            return (
                f"the database file {self.path.name} is gone (moved away or unlinked); "
                "waiting for it to come back"
            )
        if state == FILE_SWAPPED:
            return f"another file is at {self.path.name} now; opening it"
        return None


__all__ = [
    "FILE_GONE",
    "FILE_SWAPPED",
    "INSECURE_ENV",
    "SIDECAR_SUFFIXES",
    "SQLITE_MAGIC",
    "FollowsPath",
    "WriterAdmission",
    "connect_read_only",
    "connect_read_only_then",
    "connect_read_write",
    "describe_error",
    "directory_writable",
    "display_path",
    "file_identity",
    "harden_files",
    "inspect_database_file",
    "is_busy",
    "is_state_directory",
    "open_read_only",
    "prepare_state_dir",
    "read_only_uri",
    "read_snapshot",
    "run",
]


async def run(db: aiosqlite.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``work`` on the connection's own thread: one thread hop for a whole transaction."""
    try:
        conn = db._conn  # aiosqlite's underlying sqlite3 connection, used only on its thread
    except ValueError as error:  # aiosqlite's "no active connection": closed meanwhile
        raise sqlite3.ProgrammingError("this connection was closed") from error
    return await db._execute(work, conn)


async def connect_read_only(
    path: Path, *, immutable: bool = False, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> aiosqlite.Connection:
    """Open ``file:...?mode=ro`` with ``query_only``: this connection cannot write.
    The async twin of ``sqlite.open_read_only`` (same URI, same refusal sentences).

    ``immutable`` opens the main file as a snapshot: no locks, no sidecars, no WAL.
    """
    db, _ = await connect_read_only_then(
        path, lambda _conn: None, immutable=immutable, busy_timeout_ms=busy_timeout_ms
    )
    return db


async def connect_read_only_then(
    path: Path,
    work: Callable[[sqlite3.Connection], T],
    *,
    immutable: bool = False,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
) -> tuple[aiosqlite.Connection, T]:
    """:func:`connect_read_only`, then ``work`` on the new connection in the same thread
    hop as its settings (a viewer's open is two hops, not one per statement). A
    ``sqlite3.Error`` of ``work`` closes the connection and propagates as it is (the
    caller describes it); one of the settings is described here."""
    try:
        db = await aiosqlite.connect(
            read_only_uri(path, immutable=immutable), uri=True, isolation_level=None
        )
    except sqlite3.Error as error:
        raise describe_error(path, error) from error

    def setup(conn: sqlite3.Connection) -> T:
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            conn.execute("PRAGMA query_only = 1")
        except sqlite3.Error as error:
            raise _SettingFailed(error) from error
        return work(conn)

    try:
        result = await run(db, setup)
    except _SettingFailed as failed:
        await db.close()
        raise describe_error(path, failed.error) from failed.error
    except BaseException:
        await db.close()
        raise
    return db, result


class _SettingFailed(Exception):
    def __init__(self, error: sqlite3.Error) -> None:
        super().__init__(str(error))
        self.error = error


async def connect_read_write(
    path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> aiosqlite.Connection:
    """TermAl's connection setup (``sqlite.configure_read_write``) on an aiosqlite
    connection, after the same checks as every opener (``sqlite.check_before_write``)."""
    existed = check_before_write(path)
    try:
        db = await aiosqlite.connect(os.fspath(path), isolation_level=None)
    except sqlite3.Error as error:
        raise describe_error(path, error, writing=True) from error
    try:
        await run(db, lambda conn: configure_read_write(conn, path, existed, busy_timeout_ms))
    except BaseException:
        await db.close()
        raise
    return db


class WriterAdmission:
    """Per-file, in-process FIFO writer admission (asyncio.Lock is FIFO).

    Request-owned writes wait at most the request deadline and then fail
    retryable; internal lifecycle writes wait without a deadline.
    """

    _registry: weakref.WeakValueDictionary[tuple[int, str], WriterAdmission] = (
        weakref.WeakValueDictionary()
    )

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        # Messages whose dispatch outcome a live request is still finalizing.
        self.pending: set[str] = set()
        self._changed = asyncio.Event()
        # Set while some duplicate waits here for a finalization (tests await it).
        self.waiting = asyncio.Event()
        self._waiters = 0

    def finish(self, message_id: str) -> None:
        """The finalizer of ``message_id`` is done (outcome recorded or abandoned)."""
        if message_id in self.pending:
            self.pending.discard(message_id)
            self._changed.set()
            self._changed = asyncio.Event()

    async def wait_finalized(self, message_id: str, timeout: float) -> bool:
        """Wait (holding nothing) until ``message_id`` is not pending; False on timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        if message_id not in self.pending:
            return True
        self._waiters += 1
        self.waiting.set()
        try:
            while message_id in self.pending:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                changed = self._changed
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await changed.wait()
            return True
        finally:
            self._waiters -= 1
            if not self._waiters:
                self.waiting.clear()

    @classmethod
    def for_path(cls, path: Path) -> WriterAdmission:
        key = (id(asyncio.get_running_loop()), os.path.realpath(path))
        admission = cls._registry.get(key)
        if admission is None:
            admission = cls()
            cls._registry[key] = admission
        return admission

    @contextlib.asynccontextmanager
    async def request(
        self, operation: str, deadline: float = REQUEST_DEADLINE_SECONDS
    ) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(deadline):
                await self._lock.acquire()
        except TimeoutError:
            raise RetryableError(busy_message(operation)) from None
        try:
            yield
        finally:
            self._lock.release()

    @contextlib.asynccontextmanager
    async def internal(self) -> AsyncIterator[None]:
        async with self._lock:
            yield
