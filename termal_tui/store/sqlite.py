"""SQLite files without asyncio: what every opener checks and sets up (file type, header,
symlinks, permissions, TermAl's pragmas), busy classification, one-sentence errors and
read snapshots. The async connections (``connection.py``) and the synchronous ones
(the registry, the hooks' lifecycle writer) share all of it."""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final, NamedTuple, TypeVar

from termal_tui.core.formats import BUSY_TIMEOUT_MS
from termal_tui.core.sanitize import visible_line
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


def open_in_this_process(info: os.stat_result) -> bool:
    """Whether this process already holds the file open (a SQLite connection to it).

    Closing *any* descriptor of a file drops every POSIX advisory lock the process holds
    on it, SQLite's included: the next process to close its last connection then thinks
    it is alone, checkpoints and deletes the ``-wal`` and ``-shm`` under the live
    connection, and committed rows vanish or collide (SQLite's "How To Corrupt", §2.2).
    So a file this process has open is never opened again with plain I/O. Linux tells
    which files are open through ``/proc/self/fd``; elsewhere this answers False.
    """
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return False
    for fd in descriptors:
        try:
            other = os.stat(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino):
            return True
    return False


def inspect_database_file(path: Path) -> bool:
    """Refuse what is not a readable regular SQLite file; True if its header says WAL.

    Reads only the 100-byte header with an ordinary ``open``: FIFOs, devices and
    sockets are refused before anything could block on them. A file this process
    already has open (it was checked when it was opened) is not opened again: that would
    drop SQLite's locks on it (:func:`open_in_this_process`); its ``-wal`` says whether
    it is in WAL mode.
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
    if open_in_this_process(info):
        return Path(f"{path}-wal").exists()
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
        if candidate.exists():
            _restrict(candidate, 0o600)


def _restrict(path: Path, mode: int) -> None:
    """chmod ``path`` to ``mode`` unless it already is (a failure is a hardening failure)."""
    try:
        if stat.S_IMODE(path.stat().st_mode) != mode:
            path.chmod(mode)
    except OSError as error:
        _hardening_failure(f"cannot restrict permissions of {display_path(path)}: {error}.")


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
    if is_state_directory(directory):
        _restrict(directory, 0o700)


class FileKind(NamedTuple):
    """What a file we write must be, if it exists: its name in sentences, and the tables
    of which it must have at least one (an empty database is fine: it becomes one)."""

    name: str
    tables: frozenset[str]


COORDINATION: Final = FileKind(
    "TermAl coordination database",
    frozenset({"meta", "mailboxes", "mailbox_participants", "mailbox_messages"}),
)


def open_read_only(path: Path, *, immutable: bool | None = None) -> sqlite3.Connection:
    """The one synchronous read-only open of a SQLite file (the async one is
    ``connection.connect_read_only``, built on the same URI): ``mode=ro`` and
    ``query_only``, so the connection cannot write; through the file's own locks when it
    is in use (its -wal and -shm exist), else (or with ``immutable``) as an immutable
    snapshot, so no -wal or -shm is created beside someone else's database. Raises a
    StoreError with one sentence; the caller closes the connection."""
    if immutable is None:
        immutable = not (Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists())
    try:
        conn = sqlite3.connect(read_only_uri(path, immutable=immutable), uri=True)
    except sqlite3.Error as error:
        raise describe_error(path, error) from error
    try:
        conn.execute("PRAGMA query_only = 1")
    except sqlite3.Error as error:
        conn.close()
        raise describe_error(path, error) from error
    return conn


def _peek_tables(path: Path) -> set[str]:
    """The table names of an existing SQLite file, read without changing it
    (:func:`open_read_only`)."""
    if path.stat().st_size == 0:
        return set()
    conn = open_read_only(path)
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.Error as error:
        raise describe_error(path, error) from error
    finally:
        conn.close()
    return {str(row[0]) for row in rows}


def check_before_write(path: Path, kind: FileKind = COORDINATION, *, prepare: bool = True) -> bool:
    """The one check before any SQLite file of ours is opened for writing (the
    coordination database, the session registry): the file and its sidecars are not
    symlinks; an existing file is a regular SQLite file (checked by its header, without
    blocking on a FIFO) and is ``kind`` (or empty). Anything else is refused with its
    bytes, mode and directory untouched. Then (``prepare``) creates the state directory
    if missing. Returns whether the file existed."""
    for candidate in [path, *(Path(f"{path}{suffix}") for suffix in SIDECAR_SUFFIXES)]:
        if candidate.is_symlink():
            _hardening_failure(f"refusing to open {display_path(candidate)}: it is a symlink.")
    existed = os.path.lexists(path)
    if existed:
        inspect_database_file(path)
        tables = _peek_tables(path)
        if tables and not tables & kind.tables:
            raise SchemaError(
                f"{display_path(path)} is a SQLite database but not a {kind.name}; "
                "nothing was changed"
            )
    if prepare:
        prepare_state_dir(path)
    return existed


def configure_read_write(
    conn: sqlite3.Connection, path: Path, existed: bool, busy_timeout_ms: int
) -> None:
    """TermAl's connection setup on an open connection: busy timeout, a foreign database
    refused before any write, files hardened, WAL, synchronous=NORMAL, foreign keys.
    Raises a typed StoreError (busy: RetryableError) and leaves closing to the caller."""
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        harden_files(path)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as error:
        if is_busy(error):
            raise RetryableError(busy_message("opening the coordination store")) from error
        raise describe_error(path, error, writing=True) from error
    harden_files(path)


def connect_read_write_sync(
    path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> sqlite3.Connection:
    """The read-write connection without asyncio (for short-lived commands: hooks)."""
    existed = check_before_write(path)
    try:
        conn = sqlite3.connect(os.fspath(path), isolation_level=None)
    except sqlite3.Error as error:
        raise describe_error(path, error, writing=True) from error
    try:
        configure_read_write(conn, path, existed, busy_timeout_ms)
    except BaseException:
        conn.close()
        raise
    return conn
