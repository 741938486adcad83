"""One long-lived connection per registry, one short transaction per call (WAL, so readers
never wait; no transaction is held between calls, so any number of processes share the
file).

Beside it, a second connection answers reads *at once* (:meth:`RegistryDatabase.at_once`)
for callers on an event loop, where a worker thread's round trip costs more than the read
itself: busy timeout 0 and ``query_only``, so it never sleeps on a lock and never writes;
whenever it cannot answer without waiting (its own lock taken, a lock on the file, the
file not open yet, any SQLite error) it raises :class:`WouldWait` and the caller asks
again in a worker thread, through the ordinary connection."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from termal_tui.store.errors import RetryableError, StorageError
from termal_tui.store.registry import schema
from termal_tui.store.sqlite import (
    SIDECAR_SUFFIXES,
    check_before_write,
    describe_error,
    display_path,
    harden_files,
)


class WouldWait(Exception):
    """The registry cannot answer this read at once: ask again where waiting is allowed
    (a worker thread)."""


def _create_private(path: Path) -> None:
    """Create the registry file 0600 before SQLite opens it (never a moment at 0644)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))


def _remove_new(path: Path) -> None:
    """Remove a registry this process just created and could not set up."""
    for candidate in [path, *(Path(f"{path}{suffix}") for suffix in SIDECAR_SUFFIXES)]:
        with contextlib.suppress(OSError):
            candidate.unlink()


class RegistryDatabase:
    """The registry file: ``transaction(write)`` yields a connection inside one
    transaction (BEGIN IMMEDIATE to write), committed when the block ends."""

    def __init__(self, path: Path, busy_timeout: float = 5.0) -> None:
        self.path = path
        self._timeout = busy_timeout
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._quick: sqlite3.Connection | None = None  # reads at once (``at_once``)
        self._quick_lock = threading.Lock()

    def check(self, *, prepare: bool = False) -> bool:
        """The one check every file we write gets (``sqlite.check_before_write``): not a
        symlink, a regular SQLite file that is a session registry (or empty). ``prepare``
        also creates its directory. Returns whether the file exists."""
        return check_before_write(self.path, schema.REGISTRY_FILE, prepare=prepare)

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            existed = self.check(prepare=True)
            if not existed:
                _create_private(self.path)
            try:
                db = sqlite3.connect(
                    self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
                )
            except (sqlite3.Error, OSError) as error:
                if not existed:
                    _remove_new(self.path)
                raise StorageError(
                    f"cannot open the session registry {display_path(self.path)}: {error}"
                ) from error
            try:
                schema.ensure(db, self.path)
            except BaseException as error:
                db.close()
                if not existed:
                    _remove_new(self.path)  # a failed first start leaves nothing behind
                if isinstance(error, sqlite3.Error):
                    raise describe_error(self.path, error, writing=True) from error
                raise
            harden_files(self.path)
            self._db = db
            self._open_quick()
        return self._db

    def _open_quick(self) -> None:
        """The connection for reads at once, opened beside the ordinary one (so in a worker
        thread, after the file was checked and its schema ensured). Without it, reads are
        only slower."""
        try:
            quick = sqlite3.connect(
                self.path, timeout=0, isolation_level=None, check_same_thread=False
            )
        except (sqlite3.Error, OSError):
            return
        try:
            quick.execute("PRAGMA query_only = ON")
        except sqlite3.Error:
            quick.close()
            return
        self._quick = quick

    @contextmanager
    def transaction(
        self, write: bool, *, exclusive: bool = False, announce: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """``exclusive``: the write checks, then claims (a name, a project); every write
        on a file is already one at a time (``BEGIN IMMEDIATE``). ``announce`` is for a
        shared database's hubs (nothing remembers a file's registry between calls)."""
        if not write and self._db is None and not self.path.exists():
            # Nothing registered yet: a read answers from an empty registry and creates
            # no file (a mistyped path must not leave one behind).
            empty = schema.empty()
            try:
                yield empty
            finally:
                empty.close()
            return
        with self._lock:
            try:
                db = self._connection()
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield db
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.OperationalError as error:
                if "locked" in str(error) or "busy" in str(error):
                    raise RetryableError(
                        "the session registry is temporarily busy; no registry write was "
                        "committed by this operation, so retry the same request"
                    ) from error
                raise describe_error(self.path, error, writing=write) from error
            except sqlite3.DatabaseError as error:
                raise describe_error(self.path, error, writing=write) from error

    @contextmanager
    def at_once(self, write: bool) -> Iterator[sqlite3.Connection]:
        """A read transaction that never waits, or :class:`WouldWait` (see the module's
        docstring). Only reads: ``write`` is a programming error here."""
        if write:
            raise RuntimeError("the registry's reads at once cannot write")
        quick = self._quick
        if quick is None or not self._quick_lock.acquire(blocking=False):
            raise WouldWait
        try:
            try:
                quick.execute("BEGIN")
            except sqlite3.Error as error:
                raise WouldWait from error
            try:
                yield quick
            except sqlite3.Error as error:
                with contextlib.suppress(sqlite3.Error):
                    quick.execute("ROLLBACK")
                raise WouldWait from error
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    quick.execute("ROLLBACK")
                raise
            try:
                quick.execute("COMMIT")
            except sqlite3.Error as error:
                with contextlib.suppress(sqlite3.Error):
                    quick.execute("ROLLBACK")
                raise WouldWait from error
        finally:
            self._quick_lock.release()

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            with self._quick_lock:
                if self._quick is not None:
                    self._quick.close()
                    self._quick = None
