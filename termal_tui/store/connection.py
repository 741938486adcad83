"""Connection setup: the read-only URI connection and the read-write WAL connection,
file hardening, busy classification and in-process FIFO writer admission."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import stat
import sys
import weakref
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Final, TypeVar

import aiosqlite

from termal_tui.formats import BUSY_TIMEOUT_MS, REQUEST_DEADLINE_SECONDS
from termal_tui.sanitize import visible_line
from termal_tui.store.errors import (
    RetryableError,
    SchemaError,
    StorageError,
    StoreError,
    busy_message,
)

SIDECAR_SUFFIXES: Final = ("-wal", "-shm", "-journal")
INSECURE_ENV: Final = "TERMAL_ALLOW_INSECURE_STATE_PERMISSIONS"
_BUSY_CODES: Final = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
T = TypeVar("T")


def is_busy(error: BaseException) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _BUSY_CODES
    text = str(error).lower()
    return "database is locked" in text or "database table is locked" in text


SQLITE_MAGIC: Final = b"SQLite format 3\x00"


def read_only_uri(path: Path, *, immutable: bool = False) -> str:
    return path.resolve().as_uri() + ("?mode=ro&immutable=1" if immutable else "?mode=ro")


async def run(db: aiosqlite.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``work`` on the connection's own thread: one thread hop for a whole transaction."""
    conn = db._conn  # aiosqlite's underlying sqlite3 connection, used only on its thread
    return await db._execute(work, conn)


def _read(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T], single: bool) -> T:
    """On the connection's thread: ``work`` in one read transaction (BEGIN … ROLLBACK),
    or bare when it is ``single`` (one statement is its own snapshot)."""
    if single:
        return work(conn)
    conn.execute("BEGIN")
    try:
        return work(conn)
    finally:
        conn.execute("ROLLBACK")


def read_snapshot(
    conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T], single: bool = False
) -> T:
    """Run ``work`` as one snapshot; a file holding invalid UTF-8 is read again with every
    text value decoded visibly (the slow path, only for such files)."""
    try:
        return _read(conn, work, single)
    except sqlite3.OperationalError as error:
        if _UNDECODABLE not in str(error):
            raise
    conn.text_factory = _decode_text
    try:
        return _read(conn, work, single)
    finally:
        conn.text_factory = str


_UNDECODABLE: Final = "Could not decode to UTF-8"


def _decode_text(data: bytes) -> str:
    """``text_factory`` for the slow path: each invalid UTF-8 byte becomes visible ``\\xNN``."""
    return data.decode("utf-8", "backslashreplace")


def display_path(path: Path) -> str:
    return visible_line(os.fspath(path), 200)


def describe_error(path: Path, error: sqlite3.Error, *, writing: bool = False) -> StoreError:
    """One precise sentence for a SQLite failure on ``path`` (never "not SQLite" for a lock)."""
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    detail = str(error)
    name = display_path(path)
    if code in _BUSY_CODES or (code == 0 and is_busy(error)):
        return RetryableError(
            f"{name} is busy (locked by another process); nothing was "
            f"{'written' if writing else 'read'}, try again"
        )
    if code == sqlite3.SQLITE_NOTADB:
        return SchemaError(f"{name} is not a SQLite database")
    if code == sqlite3.SQLITE_CORRUPT:
        return SchemaError(f"{name} is a damaged SQLite database ({detail})")
    if code == sqlite3.SQLITE_FULL:
        return StorageError(
            f"the disk holding {name} is full; nothing was written, free space and retry"
        )
    if code in (sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH):
        return StorageError(f"permission denied for {name} ({detail})")
    if code == sqlite3.SQLITE_READONLY:
        return StorageError(
            f"{name} cannot be {'written' if writing else 'opened'}: its directory or file is "
            f"read-only ({detail})"
        )
    if code == sqlite3.SQLITE_CANTOPEN:
        return StorageError(
            f"cannot open {name}: check the permissions of the file and its directory ({detail})"
        )
    if code == sqlite3.SQLITE_IOERR:
        return StorageError(f"I/O error on {name}; nothing was changed ({detail})")
    return StorageError(f"SQLite error on {name} ({detail})")


def inspect_database_file(path: Path) -> bool:
    """Refuse what is not a readable regular SQLite file; True if its header says WAL.

    Reads only the 100-byte header with an ordinary ``open``: FIFOs, devices and
    sockets are refused before anything could block on them.
    """
    name = display_path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise SchemaError(f"{name} does not exist") from None
    except OSError as error:
        raise StorageError(f"cannot inspect {name}: {error.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise SchemaError(f"{name} is a directory, not a database file")
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "not a regular file"
        raise SchemaError(f"{name} is {kind}; a coordination database is a regular file")
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
    except PermissionError:
        raise StorageError(f"permission denied: cannot read {name}") from None
    except OSError as error:
        raise StorageError(f"cannot read {name}: {error.strerror}") from None
    if not header:
        return False  # SQLite treats an empty file as an empty database
    if not header.startswith(SQLITE_MAGIC) or len(header) < 100:
        raise SchemaError(f"{name} is not a SQLite database")
    return header[18] == 2 and header[19] == 2


def directory_writable(path: Path) -> bool:
    return os.access(path.parent, os.W_OK | os.X_OK)


async def connect_read_only(
    path: Path, *, immutable: bool = False, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> aiosqlite.Connection:
    """Open ``file:...?mode=ro`` with ``query_only``: this connection cannot write.

    ``immutable`` opens the main file as a snapshot: no locks, no sidecars, no WAL.
    """
    try:
        db = await aiosqlite.connect(
            read_only_uri(path, immutable=immutable), uri=True, isolation_level=None
        )
    except sqlite3.Error as error:
        raise describe_error(path, error) from error
    try:
        await db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        await db.execute("PRAGMA query_only = 1")
    except sqlite3.Error as error:
        await db.close()
        raise describe_error(path, error) from error
    return db


def _insecure_allowed() -> bool:
    return os.environ.get(INSECURE_ENV, "") in {"1", "true", "TRUE", "yes", "YES"}


def _hardening_failure(message: str) -> None:
    if _insecure_allowed():
        print(f"warning: {message}", file=sys.stderr)
        return
    raise SchemaError(message)


def harden_files(path: Path) -> None:
    """Refuse symlinks and chmod the db and existing sidecars 0600 (TermAl §1.1)."""
    for candidate in [path, *(Path(f"{path}{suffix}") for suffix in SIDECAR_SUFFIXES)]:
        if candidate.is_symlink():
            _hardening_failure(f"refusing to open {candidate}: it is a symlink.")
            continue
        if not candidate.exists():
            continue
        try:
            if stat.S_IMODE(candidate.stat().st_mode) != 0o600:
                candidate.chmod(0o600)
        except OSError as error:
            _hardening_failure(f"cannot restrict permissions of {candidate}: {error}.")


def is_state_directory(directory: Path) -> bool:
    """TermAl's own state directory (``~/.termal`` or ``$TERMAL_HOME``): the one it hardens."""
    if directory.name == ".termal":
        return True
    home = os.environ.get("TERMAL_HOME")
    if not home:
        return False
    try:
        return directory.resolve() == Path(home).expanduser().resolve()
    except OSError:
        return False


def prepare_state_dir(path: Path) -> None:
    """Create the state directory 0700, and restrict an existing *state* directory to 0700
    (as TermAl does with its own). Any other existing directory a path points into is
    left exactly as it is: opening a file there must not change the directory."""
    directory = path.parent
    if not directory.exists():
        directory.mkdir(mode=0o700, parents=True)
        return
    if not is_state_directory(directory):
        return
    try:
        if stat.S_IMODE(directory.stat().st_mode) != 0o700:
            directory.chmod(0o700)
    except OSError as error:
        _hardening_failure(f"cannot restrict permissions of {display_path(directory)}: {error}.")


def _refuse_foreign(db: sqlite3.Connection, path: Path) -> None:
    """An existing SQLite file with tables, none of them TermAl's: refuse before any write
    (no WAL switch, no tables added, no chmod)."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if tables and not tables & {"meta", "mailboxes", "mailbox_participants", "mailbox_messages"}:
        raise SchemaError(
            f"{display_path(path)} is a SQLite database but not a TermAl coordination "
            "database; nothing was changed"
        )


async def connect_read_write(
    path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> aiosqlite.Connection:
    """TermAl's connection setup: busy timeout, WAL, synchronous=NORMAL, foreign keys.

    What is there is checked before anything is changed: a symlink, a FIFO, a file that
    is not SQLite or a SQLite database of something else is refused with its bytes, its
    mode and its directory's mode untouched.
    """
    existed = path.exists() or path.is_symlink()
    if existed:
        if path.is_symlink():
            _hardening_failure(f"refusing to open {path}: it is a symlink.")
        inspect_database_file(path)
    prepare_state_dir(path)
    try:
        db = await aiosqlite.connect(os.fspath(path), isolation_level=None)
    except sqlite3.Error as error:
        raise describe_error(path, error, writing=True) from error
    try:
        await db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if existed:
            await run(db, lambda conn: _refuse_foreign(conn, path))
        harden_files(path)
        await db.execute("PRAGMA journal_mode = WAL")
        await db.execute("PRAGMA synchronous = NORMAL")
        await db.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as error:
        await db.close()
        if is_busy(error):
            raise RetryableError(busy_message("opening the coordination store")) from error
        raise describe_error(path, error, writing=True) from error
    except BaseException:
        await db.close()
        raise
    harden_files(path)
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
        while message_id in self.pending:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await changed.wait()
        return True

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
