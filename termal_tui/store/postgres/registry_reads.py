"""What the viewer and ``doctor`` read of the session registry on PostgreSQL (its tables
live in the coordination database): who listens for each session's wake-ups, and the
projects termal-tui minted. Read-only and synchronous (callers on an event loop run them
in a worker thread), each one short ``READ ONLY`` transaction on a connection of its own.

As a registry file that is missing or cannot be read, a database whose registry tables
are absent, unreadable by the URL's role or out of reach reads as "no registry" (None,
or no names): these reads add to a view, and never fail it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import psycopg

from termal_tui.store.postgres.connection import CONNECT_TIMEOUT_SECONDS
from termal_tui.store.registry.wakes import LISTENER_COLUMNS, NotifierRows

T = TypeVar("T")


@contextlib.contextmanager
def _read_only(url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS) as conn:
        conn.execute(b"SET application_name = 'termal-tui'")
        conn.execute(b"SET default_transaction_read_only = on")
        with conn.transaction():
            conn.execute(b"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield conn


def _tables(conn: psycopg.Connection[Any], *names: str) -> set[str]:
    row = conn.execute(
        ("SELECT " + ", ".join(f"to_regclass('{name}') IS NOT NULL" for name in names)).encode()
    ).fetchone()
    return {name for name, present in zip(names, row or (), strict=False) if present}


def _quietly(url: str, read: Callable[[psycopg.Connection[Any]], T], empty: T) -> T:
    try:
        with _read_only(url) as conn:
            return read(conn)
    except Exception:  # unreachable, no such table, no privilege: nothing to add
        return empty


def read_notifier_rows(url: str) -> NotifierRows | None:
    """Live sessions with their hook runs, and every channel listener (None: this
    database has no registry, or it cannot be read)."""

    def read(conn: psycopg.Connection[Any]) -> NotifierRows | None:
        tables = _tables(conn, "sessions", "notifier_seen", "channel_listeners")
        if "sessions" not in tables:
            return None
        hooks = "NULL"
        if "notifier_seen" in tables:
            hooks = "(SELECT hook_seen_at FROM notifier_seen n WHERE n.session_id = s.id)"
        sessions = conn.execute(
            f"SELECT s.id, s.name, s.channel_pid, s.channel_seen_at, {hooks} FROM sessions s "
            "WHERE s.removed_at IS NULL".encode()
        ).fetchall()
        found: list[Any] = []
        if "channel_listeners" in tables:
            found = conn.execute(
                f"SELECT {LISTENER_COLUMNS} FROM channel_listeners "
                "ORDER BY since DESC, id DESC".encode()
            ).fetchall()
        return NotifierRows([tuple(row) for row in sessions], [tuple(row) for row in found])

    return _quietly(url, read, None)


def minted_project_names(url: str) -> dict[str, str]:
    """Project id → name of the projects termal-tui minted in this database's registry."""

    def read(conn: psycopg.Connection[Any]) -> dict[str, str]:
        if "projects" not in _tables(conn, "projects"):
            return {}
        rows = conn.execute(b"SELECT id, name FROM projects").fetchall()
        return {str(project_id): str(name) for project_id, name in rows}

    return _quietly(url, read, {})
