"""``db copy`` on PostgreSQL: a database read in one snapshot (``REPEATABLE READ``, read
only) through server-side cursors, and written in one transaction with ``COPY`` (the
tables locked against other writers while it runs). The rules and the engine-neutral
part are in ``store/copy.py``.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, Final

import psycopg

from termal_tui.store.copy import (
    COORDINATION,
    DATA_TABLES,
    REGISTRY,
    REGISTRY_TABLES,
    TABLES,
    Side,
    Table,
)
from termal_tui.store.errors import (
    ConflictError,
    RetryableError,
    SchemaError,
    StorageError,
    ValidationError,
    busy_message,
)
from termal_tui.store.postgres.connection import (
    CONNECT_TIMEOUT_SECONDS,
    describe_error,
    first_line,
)
from termal_tui.store.urls import redact

LOCK_TIMEOUT_MS: Final = 5000
_cursor_names = itertools.count()
# A refused connection that waiting will not cure (libpq reports them without a SQLSTATE).
_NOT_A_MOMENT: Final = (
    "does not exist",
    "authentication failed",
    "no password supplied",
    "permission denied",
)


@contextlib.asynccontextmanager
async def _mapped(url: str, operation: str) -> AsyncIterator[None]:
    """Driver failures as the store's typed errors (one sentence, no password)."""
    try:
        yield
    except psycopg.Error as error:
        raise describe_error(url, error, operation) from None


async def _connect(url: str, operation: str) -> psycopg.AsyncConnection[Any]:
    shown = redact(url)
    try:
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
        )
    except psycopg.OperationalError as error:
        reason = first_line(error, url)
        if any(words in reason for words in _NOT_A_MOMENT):
            raise StorageError(f"cannot use PostgreSQL at {shown}: {reason}") from None
        mapped = describe_error(url, error, f"connecting to {shown}")
        if type(mapped) is RetryableError:
            raise RetryableError(
                busy_message(f"connecting to PostgreSQL at {shown}")
                + f" ({first_line(error, url)})"
            ) from None
        raise mapped from None
    except psycopg.Error as error:
        raise describe_error(url, error, operation) from None
    except Exception as error:  # a URL libpq cannot parse
        raise StorageError(
            f"cannot use the PostgreSQL URL {shown}: {first_line(error, url)}"
        ) from None
    try:
        await conn.execute(b"SET application_name = 'termal-tui db copy'")
        row = await (await conn.execute(b"SHOW server_encoding")).fetchone()
    except psycopg.Error as error:
        await conn.close()
        raise describe_error(url, error, operation) from None
    encoding = str(row[0]) if row else "?"
    if encoding.upper() not in ("UTF8", "UTF-8"):
        await conn.close()
        raise ValidationError(
            f"{shown} stores text as {encoding}, and db copy needs a UTF8 database to carry "
            "TermAl's text exactly; nothing was copied"
        )
    return conn


async def _present(conn: psycopg.AsyncConnection[Any]) -> set[str]:
    """The copied tables (and ``registry_meta``) visible through the search_path."""
    names = [table.name for table in TABLES] + ["registry_meta"]
    cursor = await conn.execute(
        ("SELECT " + ", ".join(f"to_regclass('{name}') IS NOT NULL" for name in names)).encode()
    )
    row = await cursor.fetchone()
    assert row is not None
    return {name for name, present in zip(names, row, strict=True) if present}


async def _registry_version(conn: psycopg.AsyncConnection[Any]) -> int | None:
    from termal_tui.store.postgres.registry import VERSION_KEY

    cursor = await conn.execute(b"SELECT value FROM registry_meta WHERE key = %s", (VERSION_KEY,))
    row = await cursor.fetchone()
    return None if row is None else int(row[0])


class PgSide:
    """One connection inside one transaction (the snapshot, or the write)."""

    def __init__(self, url: str, conn: psycopg.AsyncConnection[Any], tables: set[str]) -> None:
        self.url = url
        self.shown = redact(url)
        self._conn = conn
        self._tables = tables

    async def batches(self, table: Table, size: int) -> AsyncGenerator[list[tuple[Any, ...]]]:
        if table.name not in self._tables:
            return
        name = f"termal_copy_{next(_cursor_names)}"
        async with (
            _mapped(self.url, f"reading {table.name}"),
            self._conn.cursor(name=name) as cursor,
        ):
            await cursor.execute(
                f"SELECT {table.column_list} FROM {table.name} ORDER BY {table.order}".encode()
            )
            while batch := await cursor.fetchmany(size):
                yield batch

    async def count(self, table: Table) -> int:
        if table.name not in self._tables:
            return 0
        async with _mapped(self.url, f"counting {table.name}"):
            cursor = await self._conn.execute(f"SELECT COUNT(*) FROM {table.name}".encode())
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def insert(self, table: Table, rows: Sequence[tuple[Any, ...]]) -> None:
        statement = f"COPY {table.name} ({table.column_list}) FROM STDIN"
        try:
            async with self._conn.cursor() as cursor, cursor.copy(statement.encode()) as copy:
                for row in rows:
                    await copy.write_row(row)
        except psycopg.errors.IntegrityError as error:
            raise ValidationError(
                f"{self.shown}: {table.name} cannot take a source row "
                f"({first_line(error, self.url)}); nothing was copied"
            ) from None
        except psycopg.Error as error:
            raise describe_error(self.url, error, f"copying into {table.name}") from None

    async def put_meta(self, rows: Sequence[tuple[Any, ...]]) -> None:
        async with _mapped(self.url, "copying meta"), self._conn.cursor() as cursor:
            await cursor.executemany(
                b"INSERT INTO meta(key, value) VALUES(%s, %s) "
                b"ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                rows,
            )


class PgSource:
    """A PostgreSQL coordination database, read in one read-only snapshot."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = redact(url)

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[PgSide]:
        from termal_tui.store.postgres.schema import verify_readable
        from termal_tui.store.registry.schema import REGISTRY_VERSION

        conn = await _connect(self.url, "opening the source")
        try:
            async with _mapped(self.url, "reading the source"), conn.transaction():
                await conn.execute(b"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                await verify_readable(conn, self.url)
                tables = await _present(conn)
                if "registry_meta" in tables:
                    version = await _registry_version(conn)
                    if version is not None and version != REGISTRY_VERSION:
                        raise SchemaError(
                            f"the session registry in {self.shown} has version {version} "
                            f"and db copy copies version {REGISTRY_VERSION}: run any "
                            "termal-tui session command on it once (it migrates), then "
                            "copy; nothing was copied"
                        )
                else:
                    tables -= {table.name for table in REGISTRY_TABLES}
                yield PgSide(self.url, conn, tables)
        finally:
            await conn.close()

    async def groups(self, side: Side) -> tuple[str, ...]:
        for table in REGISTRY_TABLES:
            if await side.count(table):
                return (COORDINATION, REGISTRY)
        return (COORDINATION,)


class PgDestination:
    """A PostgreSQL database (or the schema its URL's search_path names) to copy into:
    the tables are created as the engine's writers create them."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = redact(url)

    def text_refusal(self, table: Table, row: tuple[Any, ...]) -> str | None:
        for value in row:
            if type(value) is str and "\x00" in value:
                break
        else:
            return None
        for (name, _kind), value in zip(table.columns, row, strict=True):
            if type(value) is str and "\x00" in value:
                return (
                    f"holds the NUL character (U+0000) in {name}, which PostgreSQL text "
                    "cannot store (TermAl's file can): keep this database on SQLite, or "
                    "remove the character at the source"
                )
        return None

    @contextlib.asynccontextmanager
    async def reading(self, groups: Sequence[str]) -> AsyncIterator[PgSide]:
        conn = await _connect(self.url, "reading the destination")
        try:
            async with _mapped(self.url, "reading the destination"), conn.transaction():
                await conn.execute(b"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                tables = await _present(conn)
                if tables & {"meta", "mailboxes"}:
                    from termal_tui.store.postgres.schema import verify_readable

                    await verify_readable(conn, self.url)
                yield PgSide(self.url, conn, tables)
        finally:
            await conn.close()

    @contextlib.asynccontextmanager
    async def writing(self, groups: Sequence[str]) -> AsyncIterator[PgSide]:
        from termal_tui.store.postgres.board.schema import ensure_board_schema

        conn = await _connect(self.url, "writing the destination")
        try:
            async with _mapped(self.url, "copying into the destination"), conn.transaction():
                await conn.execute(f"SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS}".encode())
                await ensure_board_schema(conn, self.url)
                if REGISTRY in groups:
                    await _ensure_registry(conn, self.url)
                tables = await _present(conn)
                copied = [t for t in DATA_TABLES if t.group in groups]
                names = ", ".join(["meta", *(table.name for table in copied)])
                # Other writers wait (readers do not) until the copy commits.
                await conn.execute(f"LOCK TABLE {names} IN EXCLUSIVE MODE".encode())
                side = PgSide(self.url, conn, tables)
                for table in copied:
                    if await side.count(table):
                        raise ConflictError(
                            f"{self.shown} gained rows in {table.name} while the copy "
                            "began; nothing was changed"
                        )
                yield side
        finally:
            await conn.close()


async def _ensure_registry(conn: psycopg.AsyncConnection[Any], url: str) -> None:
    """The registry's tables, as its PostgreSQL engine makes them (``registry.py``), in
    the copy's transaction."""
    from termal_tui.store.postgres.registry import DDL, REGISTRY_LOCK, VERSION_KEY
    from termal_tui.store.registry.schema import REGISTRY_VERSION

    if "registry_meta" in await _present(conn):
        version = await _registry_version(conn)
        if version == REGISTRY_VERSION:
            return
        if version is not None and version > REGISTRY_VERSION:
            raise StorageError(
                f"the session registry {redact(url)} has version {version}; this termal-tui "
                f"understands up to {REGISTRY_VERSION}"
            )
    await conn.execute(b"SELECT pg_advisory_xact_lock(%s)", (REGISTRY_LOCK,))
    for statement in DDL:
        await conn.execute(statement.encode())
    await conn.execute(
        b"INSERT INTO registry_meta(key, value) VALUES(%s, %s) "
        b"ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (VERSION_KEY, str(REGISTRY_VERSION)),
    )
