"""``db copy``: a coordination database copied between engines (a SQLite file, a
PostgreSQL database) and verified row for row.

What moves, as TermAl stores it (every value exactly: ids, sequences, cursors,
timestamps as text, JSON as text byte for byte, idempotency keys and request hashes):

* **the coordination tables**: ``meta``, the mailboxes, their participants (cursors,
  ``left_at``) and messages (control-plane review rows, idempotency keys, notification
  state and dispatch outcome), and the coordination board (scopes and generations,
  heads with tombstones, history, idempotency receipts in their insertion order, deleted
  scopes);
* **the session registry**, when the source has one (sessions, token hashes, projects,
  wake marks and re-offers, hook runs): on a file it is ``termal-tui-sessions.sqlite``
  beside the coordination file, on PostgreSQL tables in the same database. Channel
  listeners are not copied: they are processes attached to the source, and each one
  registers again on the database it connects to. TermAl's own session list lives in its
  ``termal.sqlite``, never in the coordination database, and is not copied.

The rules:

* the source is read in one snapshot, read-only, and never changed;
* a destination whose copied tables are all empty (or that does not exist) receives
  every row in one transaction (the file's registry, a second file, in a second one),
  then is read back and compared before the commit, and again after it: per table, the
  row count and a digest of every row;
* a destination that already holds exactly the source's rows is left alone ("already
  up to date"); one that holds anything else is refused, with nothing changed;
* PostgreSQL text cannot hold the NUL character: a source row that has one is refused
  in one sentence that names it, and nothing is written.

Rows travel in batches (``batch_rows``): neither side is ever read into memory whole.
The engines' statements are here (SQLite) and in ``store/postgres/copy.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from termal_tui.store.errors import (
    ConflictError,
    SchemaError,
    StorageError,
    ValidationError,
)
from termal_tui.store.sqlite import (
    SIDECAR_SUFFIXES,
    connect_read_write_sync,
    describe_error,
    display_path,
    open_read_only,
)
from termal_tui.store.urls import is_postgres_url

BATCH_ROWS: Final = 1000
REGISTRY_FILENAME: Final = "termal-tui-sessions.sqlite"  # as notifiers.REGISTRY_FILENAME

TEXT: Final = "text"
INTEGER: Final = "integer"
REAL: Final = "real"

COORDINATION: Final = "coordination"
REGISTRY: Final = "registry"


@dataclass(frozen=True)
class Table:
    """One copied table: its columns (name, kind) in TermAl's order, the group it belongs
    to, and the order both engines read it in (a unique key: rows are copied, and digests
    taken, in that order; text compares as bytes on both). ``ordered``: the order is the
    rows' insertion order and part of their content (the board's receipts, trimmed
    oldest first: SQLite's rowid, PostgreSQL's ``insertion_order``)."""

    name: str
    columns: tuple[tuple[str, str], ...]
    group: str = COORDINATION
    order: str = ""
    ordered: bool = False
    sqlite_order: str = ""

    @property
    def order_on_sqlite(self) -> str:
        return self.sqlite_order or self.order

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    @property
    def column_list(self) -> str:
        return ", ".join(self.names)


def _t(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, TEXT) for name in names)


META: Final = Table("meta", _t("key", "value"), order="key")
_BOARD_VALUE: Final = (
    *_t("scope_id", "key"),
    ("revision", INTEGER),
    ("generation", INTEGER),
    *_t("value_json", "author_session_id", "author_name", "updated_at", "state_stamp"),
)
COORDINATION_TABLES: Final = (
    META,
    Table(
        "mailboxes",
        (*_t("id", "participant_key", "created_at"), ("next_sequence", INTEGER)),
        order="created_at, id",
    ),
    Table(
        "mailbox_participants",
        (
            *_t("mailbox_id", "session_id", "display_name"),
            ("processed_through", INTEGER),
            *_t("joined_at", "left_at"),
        ),
        order="joined_at, mailbox_id, session_id",
    ),
    Table(
        "mailbox_messages",
        (
            *_t("id", "mailbox_id"),
            ("sequence", INTEGER),
            *_t(
                "sender_session_id",
                "sender_name",
                "target_session_id",
                "target_name",
                "created_at",
                "class",
                "topic",
                "state_stamp",
                "body",
                "idempotency_key",
            ),
            ("unread_depth_at_append", INTEGER),
            *_t("notification_disposition", "dispatch_outcome"),
        ),
        # Into a file, oldest first: the activity view reads messages in rowid order.
        order="created_at, mailbox_id, sequence",
    ),
    Table(
        "coordination_board_scopes",
        (("scope_id", TEXT), ("generation", INTEGER)),
        order="scope_id",
    ),
    Table("coordination_board_entries", _BOARD_VALUE, order="scope_id, key"),
    Table("coordination_board_history", _BOARD_VALUE, order="scope_id, key, revision"),
    Table(
        "coordination_board_idempotency",
        _t(
            "scope_id",
            "author_session_id",
            "idempotency_key",
            "request_hash",
            "receipt_json",
            "created_at",
        ),
        order="insertion_order",
        ordered=True,
        sqlite_order="rowid",
    ),
    Table("coordination_board_deleted_scopes", _t("scope_id", "deleted_at"), order="scope_id"),
)
REGISTRY_TABLES: Final = (
    Table(
        "sessions",
        (
            *_t("id", "name", "name_key", "agent", "workdir", "created_at", "removed_at"),
            ("turn_started_at", TEXT),
            ("channel_pid", INTEGER),
            ("channel_seen_at", REAL),
        ),
        group=REGISTRY,
        order="created_at, id",
    ),
    Table(
        "session_tokens",
        _t("session_id", "token_hash", "created_at", "revoked_at"),
        group=REGISTRY,
        order="created_at, session_id",
    ),
    Table(
        "projects",
        _t("id", "name", "root_path", "created_at"),
        group=REGISTRY,
        order="created_at, id",
    ),
    Table(
        "session_projects",
        _t("session_id", "project_id", "updated_at"),
        group=REGISTRY,
        order="session_id",
    ),
    Table(
        "wake_marks",
        (
            *_t("session_id", "mailbox_id"),
            ("pending", INTEGER),
            ("seen_through", INTEGER),
            ("updated_at", TEXT),
        ),
        group=REGISTRY,
        order="session_id, mailbox_id",
    ),
    Table(
        "wake_reoffers",
        (*_t("session_id", "mailbox_id"), ("through", INTEGER), ("offered_at", TEXT)),
        group=REGISTRY,
        order="session_id, mailbox_id",
    ),
    Table(
        "notifier_seen",
        (("session_id", TEXT), ("hook_seen_at", REAL)),
        group=REGISTRY,
        order="session_id",
    ),
)
TABLES: Final = COORDINATION_TABLES + REGISTRY_TABLES
GROUP_TABLES: Final = {COORDINATION: COORDINATION_TABLES, REGISTRY: REGISTRY_TABLES}
DATA_TABLES: Final = tuple(table for table in TABLES if table is not META)


# ------------------------------------------------------------------ digests


@dataclass
class Digest:
    """Rows seen, and the SHA-256 of all of them in the table's order: the ``repr`` of
    each row (a tuple of str, int, float and None has exactly one), joined by ``", "``,
    however the rows came in batches."""

    rows: int = 0
    _sha: Any = field(default_factory=hashlib.sha256)

    def add(self, batch: Sequence[tuple[Any, ...]]) -> None:
        if not batch:
            return
        if self.rows:
            self._sha.update(b", ")
        # repr of a list is its items' reprs joined by ", ": one call per batch.
        self._sha.update(repr(list(batch))[1:-1].encode("utf-8", "surrogatepass"))
        self.rows += len(batch)

    def same(self, other: Digest) -> bool:
        return self.rows == other.rows and self._sha.digest() == other._sha.digest()


# ------------------------------------------------------------------ the two sides


class Side(Protocol):
    """One database as the copy reads it (a source, or a destination being inspected or
    read back inside its write transaction)."""

    shown: str

    def batches(self, table: Table, size: int) -> AsyncGenerator[list[tuple[Any, ...]]]:
        """The table's rows in insertion order, ``size`` at a time (none when the table
        is absent)."""
        ...

    async def count(self, table: Table) -> int: ...


class Writing(Side, Protocol):
    """A destination inside its write transaction (or transactions: a file's registry is
    a second file)."""

    async def insert(self, table: Table, rows: Sequence[tuple[Any, ...]]) -> None: ...

    async def put_meta(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Each source ``meta`` row, replacing the value the bootstrap wrote."""
        ...


class Source(Protocol):
    shown: str

    def reading(self) -> contextlib.AbstractAsyncContextManager[Side]: ...

    async def groups(self, side: Side) -> tuple[str, ...]:
        """The groups to copy: the coordination tables, and the registry if the source
        has one with rows."""
        ...


class Destination(Protocol):
    shown: str

    def reading(self, groups: Sequence[str]) -> contextlib.AbstractAsyncContextManager[Side]:
        """Read-only, outside any write (a missing database reads as empty)."""
        ...

    def writing(self, groups: Sequence[str]) -> contextlib.AbstractAsyncContextManager[Writing]:
        """Creates what is missing (TermAl's schema, the registry's), checks the groups'
        tables are still empty, and commits when the block ends without an error."""
        ...

    def text_refusal(self, table: Table, row: tuple[Any, ...]) -> str | None:
        """Why this engine cannot store a row's text exactly (None: it can)."""
        ...


# ------------------------------------------------------------------ the copy


@dataclass
class TableCount:
    name: str
    group: str
    rows: int
    batches: int = 0
    largest_batch: int = 0


@dataclass
class CopyReport:
    """What ``copy_database`` did: ``outcome`` is ``copied`` (``copied``: the groups it
    wrote) or ``up to date``; ``tables``: the rows of each table the destination holds."""

    source: str
    destination: str
    outcome: str
    tables: list[TableCount] = field(default_factory=list)
    groups: tuple[str, ...] = ()
    copied: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(table.rows for table in self.tables)


def _key_of(table: Table, row: tuple[Any, ...]) -> str:
    """A row named in a sentence: its first column (an id or key), shortened."""
    first = str(row[0]) if row else "?"
    shown = first if len(first) <= 80 else first[:77] + "..."
    return f"{table.name} row {shown!r}"


async def _digest(side: Side, table: Table, size: int) -> Digest:
    digest = Digest()
    async with contextlib.aclosing(side.batches(table, size)) as batches:
        async for batch in batches:
            digest.add(batch)
    return digest


async def _meta(side: Side, size: int) -> dict[str, str]:
    found: dict[str, str] = {}
    async with contextlib.aclosing(side.batches(META, size)) as batches:
        async for batch in batches:
            found.update((str(key), str(value)) for key, value in batch)
    return found


def _meta_differences(source: dict[str, str], destination: dict[str, str]) -> list[str]:
    return sorted(key for key, value in source.items() if destination.get(key) != value)


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _holding(counts: dict[str, int]) -> str:
    held = [f"{name}: {_plural(rows, 'row')}" for name, rows in counts.items() if rows]
    return ", ".join(held[:4]) + (", ..." if len(held) > 4 else "")


async def copy_database(
    source: Source, destination: Destination, *, batch_rows: int = BATCH_ROWS
) -> CopyReport:
    """Copy ``source`` into ``destination`` (see the module's docstring). Raises
    ConflictError when the destination holds other data, ValidationError when a row
    cannot be stored exactly there, StorageError when the copy read back differs.

    Each group (the coordination tables, the registry) is decided on its own: copied
    when the destination's tables of it are all empty, left when they hold exactly the
    source's rows; so a copy whose second part (a file's registry, a second file) failed
    is completed by running it again."""
    started = time.monotonic()
    async with source.reading() as reading:
        groups = await source.groups(reading)
        counts: dict[str, int] = {}
        pending: list[str] = []
        async with destination.reading(groups) as existing:
            for group in groups:
                data = [t for t in GROUP_TABLES[group] if t is not META]
                held = {table.name: await existing.count(table) for table in data}
                counts.update(held)
                if any(held.values()):
                    await _same_or_refuse(
                        reading, existing, source, destination, group, held, batch_rows
                    )
                elif not await _nothing_to_add(reading, existing, group, data, batch_rows):
                    pending.append(group)
            counts[META.name] = await existing.count(META)
        report = CopyReport(source.shown, destination.shown, "up to date", groups=groups)
        report.tables = [
            TableCount(t.name, t.group, counts[t.name]) for t in TABLES if t.group in groups
        ]
        if pending:
            report.outcome = "copied"
            report.copied = tuple(pending)
            await _copy_groups(reading, source, destination, pending, report, batch_rows)
    report.seconds = time.monotonic() - started
    return report


async def _copy_groups(
    reading: Side,
    source: Source,
    destination: Destination,
    groups: Sequence[str],
    report: CopyReport,
    batch_rows: int,
) -> None:
    tables = [table for table in TABLES if table.group in groups]
    data = [table for table in tables if table is not META]
    copied: dict[str, Digest] = {}
    source_meta: dict[str, str] = {}
    results = {result.name: result for result in report.tables}
    async with destination.writing(groups) as writing:
        for table in tables:
            copied[table.name] = digest = Digest()
            result = results[table.name]
            async with contextlib.aclosing(reading.batches(table, batch_rows)) as batches:
                async for batch in batches:
                    _refuse_text(source, destination, table, batch)
                    if table is META:
                        source_meta.update((str(k), str(v)) for k, v in batch)
                        await writing.put_meta(batch)
                    else:
                        await writing.insert(table, batch)
                    digest.add(batch)
                    result.batches += 1
                    result.largest_batch = max(result.largest_batch, len(batch))
            result.rows = digest.rows
        # Read back inside the transaction: a difference commits nothing.
        await _verify(writing, destination, copied, source_meta, data, batch_rows)
    # And once more through a fresh connection, after the commit.
    async with destination.reading(groups) as committed:
        meta = await _verify(committed, destination, copied, source_meta, data, batch_rows)
    if META.name in copied:
        results[META.name].rows = len(meta)  # the source's, and any marker the bootstrap added


def _refuse_text(
    source: Source, destination: Destination, table: Table, batch: Sequence[tuple[Any, ...]]
) -> None:
    for row in batch:
        refusal = destination.text_refusal(table, row)
        if refusal:
            raise ValidationError(
                f"{source.shown}: {_key_of(table, row)} {refusal}; nothing was copied to "
                f"{destination.shown}"
            )


async def _verify(
    side: Side,
    destination: Destination,
    copied: dict[str, Digest],
    source_meta: dict[str, str],
    data: Sequence[Table],
    batch_rows: int,
) -> dict[str, str]:
    """Every copied table as copied; the destination's meta (checked), returned."""
    for table in data:
        written = await _digest(side, table, batch_rows)
        if not written.same(copied[table.name]):
            raise StorageError(
                f"the copy in {destination.shown} does not match its source: {table.name} "
                f"has {_plural(written.rows, 'row')} where "
                f"{_plural(copied[table.name].rows, 'row')} were copied, or other values"
            )
    meta = await _meta(side, batch_rows)
    differences = _meta_differences(source_meta, meta)
    if differences:
        raise StorageError(
            f"the copy in {destination.shown} does not match its source: meta key "
            f"{differences[0]!r} differs"
        )
    return meta


async def _nothing_to_add(
    reading: Side, existing: Side, group: str, data: Sequence[Table], batch_rows: int
) -> bool:
    """An empty group at both ends (and, for the coordination tables, the source's meta
    already there): nothing to copy."""
    for table in data:
        if await reading.count(table):
            return False
    if group != COORDINATION:
        return True
    source_meta = await _meta(reading, batch_rows)
    return not _meta_differences(source_meta, await _meta(existing, batch_rows))


async def _same_or_refuse(
    reading: Side,
    existing: Side,
    source: Source,
    destination: Destination,
    group: str,
    held: dict[str, int],
    batch_rows: int,
) -> None:
    """A destination that holds rows of ``group`` must hold exactly the source's; else one
    sentence."""
    what = "other data" if group == COORDINATION else "another session registry"
    refusal = (
        f"{destination.shown} already holds {what} ({_holding(held)}); db copy never "
        "overwrites a database: give it a new file or an empty PostgreSQL database (or "
        "schema); nothing was changed"
    )
    data = [table for table in GROUP_TABLES[group] if table is not META]
    for table in data:
        if await reading.count(table) != held[table.name]:
            raise ConflictError(refusal)
    for table in data:
        if not (await _digest(reading, table, batch_rows)).same(
            await _digest(existing, table, batch_rows)
        ):
            raise ConflictError(refusal)
    if group != COORDINATION:
        return
    differences = _meta_differences(
        await _meta(reading, batch_rows), await _meta(existing, batch_rows)
    )
    if differences:
        raise ConflictError(
            f"{destination.shown} holds the same rows as {source.shown} but another "
            f"meta value ({differences[0]}); nothing was changed"
        )


# ------------------------------------------------------------------ SQLite


def registry_beside(path: Path) -> Path:
    return path.with_name(REGISTRY_FILENAME)


_UNDECODABLE: Final = "Could not decode to UTF-8"
_ALLOWED: Final = {TEXT: ("text", "null"), INTEGER: ("integer", "null"), REAL: ("real", "null")}


class SqliteSide:
    """Connections to a coordination file (and its registry file), one per group, each
    inside one transaction: a read snapshot, or the write transaction."""

    def __init__(
        self, shown: str, connections: dict[str, sqlite3.Connection], paths: dict[str, Path]
    ) -> None:
        self.shown = shown
        self._conns = connections
        self._paths = paths
        self._tables: dict[str, set[str]] = {}

    def _present(self, table: Table) -> sqlite3.Connection | None:
        conn = self._conns.get(table.group)
        if conn is None:
            return None
        if table.group not in self._tables:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            self._tables[table.group] = {str(row[0]) for row in rows.fetchall()}
        return conn if table.name in self._tables[table.group] else None

    def _error(self, table: Table, error: sqlite3.Error, *, writing: bool = False) -> Exception:
        path = self._paths[table.group]
        if _UNDECODABLE in str(error):
            return ValidationError(
                f"{display_path(path)}: {table.name} holds text that is not valid UTF-8, "
                "which db copy cannot carry exactly; nothing was copied"
            )
        return describe_error(path, error, writing=writing)

    def check_types(self, table: Table) -> None:
        """Every value is of its column's kind (SQLite would let a column hold any):
        else one sentence, before anything is written."""
        conn = self._present(table)
        if conn is None:
            return
        tests = " OR ".join(
            f"typeof({name}) NOT IN {_ALLOWED[kind]}" for name, kind in table.columns
        )
        try:
            row = conn.execute(
                f"SELECT {table.column_list} FROM {table.name} WHERE {tests} LIMIT 1"
            ).fetchone()
        except sqlite3.Error as error:
            raise self._error(table, error) from error
        if row is None:
            return
        for (name, kind), value in zip(table.columns, row, strict=True):
            if value is not None and _kind_of(value) != kind:
                raise ValidationError(
                    f"{display_path(self._paths[table.group])}: {_key_of(table, row)} holds "
                    f"{_kind_of(value)} in {name}, where TermAl stores {kind}; db copy "
                    "copies only TermAl's column types; nothing was copied"
                )

    async def batches(self, table: Table, size: int) -> AsyncGenerator[list[tuple[Any, ...]]]:
        conn = self._present(table)
        if conn is None:
            return
        try:
            cursor = conn.execute(
                f"SELECT {table.column_list} FROM {table.name} ORDER BY {table.order_on_sqlite}"
            )
            while batch := cursor.fetchmany(size):
                yield batch
        except sqlite3.Error as error:
            raise self._error(table, error) from error

    async def count(self, table: Table) -> int:
        conn = self._present(table)
        if conn is None:
            return 0
        try:
            return int(conn.execute(f"SELECT COUNT(*) FROM {table.name}").fetchone()[0])
        except sqlite3.Error as error:
            raise self._error(table, error) from error

    async def insert(self, table: Table, rows: Sequence[tuple[Any, ...]]) -> None:
        conn = self._conns[table.group]
        marks = ", ".join("?" for _ in table.columns)
        try:
            conn.executemany(f"INSERT INTO {table.name}({table.column_list}) VALUES({marks})", rows)
        except sqlite3.Error as error:
            raise self._insert_error(table, error) from error

    def _insert_error(self, table: Table, error: sqlite3.Error) -> Exception:
        if isinstance(error, sqlite3.IntegrityError):
            return ValidationError(
                f"{self.shown}: {table.name} cannot take a source row ({error}); nothing was copied"
            )
        return self._error(table, error, writing=True)

    async def put_meta(self, rows: Sequence[tuple[Any, ...]]) -> None:
        try:
            self._conns[COORDINATION].executemany(
                "INSERT INTO meta(key, value) VALUES(?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                rows,
            )
        except sqlite3.Error as error:
            raise self._insert_error(META, error) from error


def _kind_of(value: object) -> str:
    if isinstance(value, str):
        return TEXT
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return REAL
    return "a blob" if isinstance(value, bytes) else type(value).__name__


@contextlib.contextmanager
def _snapshot(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection inside one read transaction (the file is never changed)."""
    conn = open_read_only(path)
    try:
        try:
            conn.execute("BEGIN")
        except sqlite3.Error as error:
            raise describe_error(path, error) from error
        yield conn
    finally:
        conn.close()


def _registry_version(conn: sqlite3.Connection, path: Path) -> int:
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as error:
        raise describe_error(path, error) from error


class SqliteSource:
    """TermAl's coordination file (and the registry file beside it), read-only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.shown = display_path(path)
        self.registry = registry_beside(path)

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[Side]:
        from termal_tui.store.registry.schema import REGISTRY_VERSION
        from termal_tui.store.schema import verify_readable

        with contextlib.ExitStack() as stack:
            conn = stack.enter_context(_snapshot(self.path))
            try:
                info = verify_readable(conn, self.path)
            except sqlite3.Error as error:
                raise describe_error(self.path, error) from error
            if not info.has_dispatch_outcome:
                raise SchemaError(
                    f"{self.shown} predates TermAl's dispatch_outcome column: let TermAl (or "
                    "any termal-tui command that writes) open it once, then copy it; nothing "
                    "was copied"
                )
            conns = {COORDINATION: conn}
            paths = {COORDINATION: self.path, REGISTRY: self.registry}
            if self.registry.exists():
                registry = stack.enter_context(_snapshot(self.registry))
                version = _registry_version(registry, self.registry)
                if version != REGISTRY_VERSION:
                    raise SchemaError(
                        f"the session registry {display_path(self.registry)} has version "
                        f"{version} and db copy copies version {REGISTRY_VERSION}: run any "
                        "termal-tui session command on it once (it migrates), then copy; "
                        "nothing was copied"
                    )
                conns[REGISTRY] = registry
            side = SqliteSide(self.shown, conns, paths)
            for table in TABLES:
                if table.group in conns:
                    side.check_types(table)
            yield side

    async def groups(self, side: Side) -> tuple[str, ...]:
        for table in REGISTRY_TABLES:
            if await side.count(table):
                return (COORDINATION, REGISTRY)
        return (COORDINATION,)


def _remove_database(path: Path) -> None:
    for candidate in [path, *(Path(f"{path}{suffix}") for suffix in SIDECAR_SUFFIXES)]:
        with contextlib.suppress(OSError):
            candidate.unlink()


class SqliteDestination:
    """A coordination file to copy into: created with TermAl's schema (the writer's own
    bootstrap) when missing, and removed again if the copy then fails."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.shown = display_path(path)
        self.registry = registry_beside(path)

    def text_refusal(self, table: Table, row: tuple[Any, ...]) -> str | None:
        return None

    @contextlib.asynccontextmanager
    async def reading(self, groups: Sequence[str]) -> AsyncIterator[Side]:
        paths = {COORDINATION: self.path, REGISTRY: self.registry}
        with contextlib.ExitStack() as stack:
            conns: dict[str, sqlite3.Connection] = {}
            for group in groups:
                path = paths[group]
                if path.exists() and path.stat().st_size:
                    conns[group] = stack.enter_context(_snapshot(path))
            if COORDINATION in conns:
                from termal_tui.store.schema import verify_readable

                try:
                    conn = conns[COORDINATION]
                    tables = {
                        str(row[0])
                        for row in conn.execute(
                            "SELECT name FROM sqlite_master WHERE type = 'table'"
                        ).fetchall()
                    }
                    if tables:
                        verify_readable(conn, self.path)
                except sqlite3.Error as error:
                    raise describe_error(self.path, error) from error
            yield SqliteSide(self.shown, conns, paths)

    @contextlib.asynccontextmanager
    async def writing(self, groups: Sequence[str]) -> AsyncIterator[Writing]:
        from termal_tui.store.writer import open_writer

        created = not os.path.lexists(self.path)
        registry_created = REGISTRY in groups and not os.path.lexists(self.registry)
        try:
            async with open_writer(self.path):
                pass  # TermAl's schema, its markers and the file's hardening
            with contextlib.ExitStack() as stack:
                conns = {COORDINATION: stack.enter_context(_writing_file(self.path))}
                if REGISTRY in groups:
                    from termal_tui.store.registry.database import RegistryDatabase

                    registry = RegistryDatabase(self.registry)
                    stack.callback(registry.close)
                    conns[REGISTRY] = stack.enter_context(registry.transaction(write=True))
                side = SqliteSide(
                    self.shown, conns, {COORDINATION: self.path, REGISTRY: self.registry}
                )
                for table in DATA_TABLES:
                    if table.group in groups and await side.count(table):
                        raise ConflictError(
                            f"{self.shown} gained rows in {table.name} as the copy began "
                            "(another writer, or TermAl's legacy import from a termal.sqlite "
                            "beside it); nothing was copied"
                        )
                yield side
        except BaseException:
            if created:
                _remove_database(self.path)
            if registry_created:
                _remove_database(self.registry)
            raise


@contextlib.contextmanager
def _writing_file(path: Path) -> Iterator[sqlite3.Connection]:
    """TermAl's read-write connection inside ``BEGIN IMMEDIATE``: committed when the
    block ends, rolled back when it raises."""
    conn = connect_read_write_sync(path)
    try:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            raise describe_error(path, error, writing=True) from error
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as error:
            raise describe_error(path, error, writing=True) from error
    finally:
        conn.close()


# ------------------------------------------------------------------ either engine


def source_for(target: Path | str) -> Source:
    if isinstance(target, str) and is_postgres_url(target):
        from termal_tui.store.postgres import require_driver

        require_driver()
        from termal_tui.store.postgres.copy import PgSource

        return PgSource(target)
    return SqliteSource(Path(target))


def destination_for(target: Path | str) -> Destination:
    if isinstance(target, str) and is_postgres_url(target):
        from termal_tui.store.postgres import require_driver

        require_driver()
        from termal_tui.store.postgres.copy import PgDestination

        return PgDestination(target)
    return SqliteDestination(Path(target))


async def copy(
    source: Path | str, destination: Path | str, *, batch_rows: int = BATCH_ROWS
) -> CopyReport:
    """``db copy SOURCE DESTINATION``: paths or ``postgresql://`` URLs, either way."""
    return await copy_database(
        source_for(source), destination_for(destination), batch_rows=batch_rows
    )


__all__ = [
    "BATCH_ROWS",
    "CopyReport",
    "Digest",
    "Table",
    "TableCount",
    "copy",
    "copy_database",
]
