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
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import aiosqlite

from termal_tui.store.errors import RetryableError, SchemaError, busy_message
from termal_tui.store.formats import BUSY_TIMEOUT_MS, REQUEST_DEADLINE_SECONDS

SIDECAR_SUFFIXES: Final = ("-wal", "-shm", "-journal")
INSECURE_ENV: Final = "TERMAL_ALLOW_INSECURE_STATE_PERMISSIONS"
_BUSY_CODES: Final = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def is_busy(error: BaseException) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _BUSY_CODES
    text = str(error).lower()
    return "database is locked" in text or "database table is locked" in text


def read_only_uri(path: Path) -> str:
    return path.resolve().as_uri() + "?mode=ro"


async def connect_read_only(path: Path) -> aiosqlite.Connection:
    """Open ``file:...?mode=ro`` with ``query_only``: this connection cannot write."""
    if not path.exists():
        raise SchemaError(f"{path} does not exist.")
    if path.is_dir():
        raise SchemaError(f"{path} is a directory, not a database file.")
    try:
        db = await aiosqlite.connect(read_only_uri(path), uri=True, isolation_level=None)
    except sqlite3.Error as error:
        raise SchemaError(f"cannot open {path} read-only: {error}.") from error
    try:
        await db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        await db.execute("PRAGMA query_only = 1")
    except sqlite3.DatabaseError as error:
        await db.close()
        raise SchemaError(f"{path} is not a SQLite database ({error}).") from error
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


def prepare_state_dir(path: Path) -> None:
    directory = path.parent
    if not directory.exists():
        directory.mkdir(mode=0o700, parents=True)
        directory.chmod(0o700)


async def connect_read_write(path: Path) -> aiosqlite.Connection:
    """TermAl's connection setup: busy timeout, WAL, synchronous=NORMAL, foreign keys."""
    prepare_state_dir(path)
    harden_files(path)
    try:
        db = await aiosqlite.connect(os.fspath(path), isolation_level=None)
    except sqlite3.Error as error:
        raise SchemaError(f"cannot open {path}: {error}.") from error
    try:
        await db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        await db.execute("PRAGMA journal_mode = WAL")
        await db.execute("PRAGMA synchronous = NORMAL")
        await db.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as error:
        await db.close()
        if is_busy(error):
            raise RetryableError(busy_message("opening the coordination store")) from error
        raise SchemaError(f"{path} is not a SQLite database ({error}).") from error
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
