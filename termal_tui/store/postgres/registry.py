"""The session registry on PostgreSQL: its tables in the coordination database itself (so
every hub on one database shares sessions, tokens, wake marks and listeners), one
connection per registry, one short transaction per call.

The statements are the registry's own (``store/registry/``: written once in the SQL
both engines speak); this module gives them a connection that speaks PostgreSQL's
placeholders, the tables with PostgreSQL's types, and the same rules as on a file:

* a write that claims a name or mints a project holds the registry's advisory lock
  for its transaction (on a file, ``BEGIN IMMEDIATE``): two hubs registering the same
  or look-alike names take turns, and the second meets the first's row and its sentence;
* every other write is one atomic statement (an upsert or a keyed update);
* busy past the deadline (a lock timeout, a serialization failure, a server that
  cannot be reached) is the registry's busy sentence, nothing committed;
* a read before the registry has tables answers from an empty registry and creates
  nothing (as a read of a file that does not exist yet).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

import psycopg

from termal_tui.store.errors import RetryableError, StorageError
from termal_tui.store.postgres.connection import (
    CONNECT_TIMEOUT_SECONDS,
    describe_error,
    first_line,
)
from termal_tui.store.postgres.notify import NOTIFY_REGISTRY_SQL
from termal_tui.store.registry import schema
from termal_tui.store.registry.dbapi import Cursor, Db
from termal_tui.store.urls import redact

# The registry's advisory lock (transaction-scoped): "termal-reg".
REGISTRY_LOCK: Final = 0x7465726D616C2D72
VERSION_KEY: Final = "version"
# Connections one registry keeps at most (one transaction on each at a time).
REGISTRY_CONNECTIONS: Final = 4

# Every text column is COLLATE "C" (bytes, as SQLite compares): ordering by created_at and
# id, and the timestamp comparisons of the wake re-offers, are the file's.
DDL: Final = (
    """CREATE TABLE IF NOT EXISTS registry_meta (
      key TEXT COLLATE "C" PRIMARY KEY,
      value TEXT COLLATE "C" NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS sessions (
      id TEXT COLLATE "C" PRIMARY KEY,
      name TEXT COLLATE "C" NOT NULL,
      name_key TEXT COLLATE "C" NOT NULL,
      agent TEXT COLLATE "C",
      workdir TEXT COLLATE "C",
      created_at TEXT COLLATE "C" NOT NULL,
      removed_at TEXT COLLATE "C",
      turn_started_at TEXT COLLATE "C",
      channel_pid BIGINT,
      channel_seen_at DOUBLE PRECISION
    )""",
    """CREATE UNIQUE INDEX IF NOT EXISTS sessions_live_name
      ON sessions(name_key) WHERE removed_at IS NULL""",
    """CREATE TABLE IF NOT EXISTS wake_marks (
      session_id TEXT COLLATE "C" NOT NULL,
      mailbox_id TEXT COLLATE "C" NOT NULL,
      pending INTEGER NOT NULL,
      seen_through BIGINT NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (session_id, mailbox_id)
    )""",
    """CREATE TABLE IF NOT EXISTS projects (
      id TEXT COLLATE "C" PRIMARY KEY,
      name TEXT COLLATE "C" NOT NULL,
      root_path TEXT COLLATE "C" NOT NULL UNIQUE,
      created_at TEXT COLLATE "C" NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS session_projects (
      session_id TEXT COLLATE "C" PRIMARY KEY,
      project_id TEXT COLLATE "C" NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS notifier_seen (
      session_id TEXT COLLATE "C" PRIMARY KEY,
      hook_seen_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS wake_reoffers (
      session_id TEXT COLLATE "C" NOT NULL,
      mailbox_id TEXT COLLATE "C" NOT NULL,
      through BIGINT NOT NULL,
      offered_at TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (session_id, mailbox_id)
    )""",
    """CREATE TABLE IF NOT EXISTS session_tokens (
      session_id TEXT COLLATE "C" PRIMARY KEY,
      token_hash TEXT COLLATE "C" NOT NULL UNIQUE,
      created_at TEXT COLLATE "C" NOT NULL,
      revoked_at TEXT COLLATE "C"
    )""",
    """CREATE TABLE IF NOT EXISTS channel_listeners (
      id TEXT COLLATE "C" PRIMARY KEY,
      session_id TEXT COLLATE "C" NOT NULL,
      kind TEXT COLLATE "C" NOT NULL,
      pid BIGINT NOT NULL,
      host TEXT COLLATE "C" NOT NULL,
      peer TEXT COLLATE "C",
      since DOUBLE PRECISION NOT NULL,
      seen_at DOUBLE PRECISION NOT NULL,
      runs_on TEXT COLLATE "C"
    )""",
    'ALTER TABLE channel_listeners ADD COLUMN IF NOT EXISTS runs_on TEXT COLLATE "C"',
    """CREATE INDEX IF NOT EXISTS channel_listeners_session
      ON channel_listeners(session_id, since)""",
)

BUSY: Final = (
    "the session registry is temporarily busy; no registry write was committed by this "
    "operation, so retry the same request"
)


@functools.lru_cache(maxsize=256)
def placeholders(sql: str) -> bytes:
    """A registry statement with PostgreSQL's placeholders (its ``?`` are all positional
    parameters: no statement holds a literal ``?`` or ``%``)."""
    assert "%" not in sql, sql
    return sql.replace("?", "%s").encode()


class PgRegistryConnection:
    """A psycopg connection inside one registry transaction, as the statements use it."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        return self._conn.execute(placeholders(sql), parameters)


class PgRegistryDatabase:
    """The registry in a PostgreSQL database: ``transaction(write)`` yields a connection
    inside one transaction, committed when the block ends; ``exclusive`` also takes the
    registry's advisory lock (the writes that check, then claim)."""

    def __init__(
        self, url: str, busy_timeout: float = 5.0, *, connections: int = REGISTRY_CONNECTIONS
    ) -> None:
        self.url = url
        self.shown = redact(url)
        self._timeout = busy_timeout
        self._idle: list[psycopg.Connection[Any]] = []  # connections not in a transaction
        self._slots = threading.BoundedSemaphore(connections)
        self._ready = False  # the tables exist at this version
        self._lock = threading.Lock()  # guards ``_idle``

    def _take(self) -> psycopg.Connection[Any]:
        """An idle connection (a new one if none is idle); the caller holds a slot."""
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed and not conn.broken:
                    return conn
                conn.close()
        return self._connect()

    def _give_back(self, conn: psycopg.Connection[Any]) -> None:
        if conn.closed or conn.broken:
            conn.close()
            return
        with self._lock:
            self._idle.append(conn)

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
            )
        except psycopg.Error as error:
            mapped = describe_error(self.url, error, f"connecting to {self.shown}")
            if type(mapped) is RetryableError:  # not there (yet): as busy, said where
                raise RetryableError(
                    f"{BUSY} (PostgreSQL at {self.shown} cannot be reached: "
                    f"{first_line(error, self.url)})"
                ) from None
            raise mapped from None
        except Exception as error:  # a URL libpq cannot parse
            raise StorageError(f"cannot use the PostgreSQL URL {self.shown}: {error}") from None
        try:
            conn.execute("SET application_name = 'termal-tui'")
            conn.execute(f"SET lock_timeout = {max(1, int(self._timeout * 1000))}".encode())
        except psycopg.Error:
            conn.close()
            raise
        return conn

    def _drop_all(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _version(self, conn: psycopg.Connection[Any]) -> int | None:
        """The registry's version in this database (None: it has no registry yet)."""
        present = conn.execute(b"SELECT to_regclass('registry_meta') IS NOT NULL").fetchone()
        if not present or not present[0]:
            return None
        row = conn.execute(
            b"SELECT value FROM registry_meta WHERE key = %s", (VERSION_KEY,)
        ).fetchone()
        return None if row is None else int(row[0])

    def _ensure(self, conn: psycopg.Connection[Any], write: bool) -> bool:
        """Whether the registry's tables exist (created first when ``write``); refuses
        a newer registry as a file does."""
        if self._ready:
            return True
        version = self._version(conn)
        if version is not None and version > schema.REGISTRY_VERSION:
            raise StorageError(
                f"the session registry {self.shown} has version {version}; this termal-tui "
                f"understands up to {schema.REGISTRY_VERSION}"
            )
        if version == schema.REGISTRY_VERSION:
            self._ready = True
            return True
        if not write:
            return False
        with conn.transaction():
            conn.execute(b"SELECT pg_advisory_xact_lock(%s)", (REGISTRY_LOCK,))
            for statement in DDL:
                conn.execute(statement.encode())
            conn.execute(
                b"INSERT INTO registry_meta(key, value) VALUES(%s, %s) "
                b"ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (VERSION_KEY, str(schema.REGISTRY_VERSION)),
            )
        self._ready = True
        return True

    def check(self, *, prepare: bool = False) -> bool:
        """Nothing on disk to check (the URL was checked when it was parsed): the
        registry is wherever the database is."""
        return True

    @contextmanager
    def transaction(
        self, write: bool, *, exclusive: bool = False, announce: bool = False
    ) -> Iterator[Db]:
        """``announce``: the write changes what hubs remember (``store/registry/cache.py``):
        a notification on the registry's channel goes with its COMMIT."""
        operation = "writing the session registry" if write else "reading the session registry"
        # One transaction per connection at a time; a few connections, so the calls of a
        # hub's many agents do not queue behind one round trip (each waits for a free one
        # at most the busy timeout).
        if not self._slots.acquire(timeout=self._timeout):
            raise RetryableError(BUSY)
        conn: psycopg.Connection[Any] | None = None
        try:
            committing = False
            try:
                conn = self._take()
                if not self._ensure(conn, write):
                    # Nothing registered yet: answer from an empty registry, create nothing.
                    empty = schema.empty()
                    try:
                        yield empty
                    finally:
                        empty.close()
                    return
                if not write:
                    # A read is one or two SELECTs (a session, then who holds its channel),
                    # each atomic by itself: no BEGIN and COMMIT around them (two round
                    # trips fewer on every token check and revalidation of a hub's call).
                    yield PgRegistryConnection(conn)
                    return
                with conn.transaction():
                    if exclusive:
                        conn.execute(b"SELECT pg_advisory_xact_lock(%s)", (REGISTRY_LOCK,))
                    yield PgRegistryConnection(conn)
                    if announce:
                        conn.execute(NOTIFY_REGISTRY_SQL)
                    committing = True
            except psycopg.Error as error:
                if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
                    if conn is not None:  # this one is lost: the next call connects anew
                        conn.close()
                    self._drop_all()  # the others likely went with it (a restart)
                mapped = describe_error(self.url, error, operation, committing=committing)
                if type(mapped) is RetryableError:
                    raise RetryableError(BUSY) from None
                raise mapped from None
        finally:
            if conn is not None:
                self._give_back(conn)
            self._slots.release()

    def close(self) -> None:
        self._drop_all()
        self._ready = False
