"""One long-lived connection per registry, one short transaction per call (WAL, so readers
never wait; no transaction is held between calls, so any number of processes share the
file)."""

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
        return self._db

    @contextmanager
    def transaction(self, write: bool, *, exclusive: bool = False) -> Iterator[sqlite3.Connection]:
        """``exclusive``: the write checks, then claims (a name, a project); every write
        on a file is already one at a time (``BEGIN IMMEDIATE``)."""
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

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
