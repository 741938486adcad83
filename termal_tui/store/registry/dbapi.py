"""What the registry's statements need of a connection, on either engine.

The statements in ``sessions``, ``wakes``, ``tokens`` and ``projects`` are written once,
in the SQL both engines speak (``?`` placeholders, ``ON CONFLICT ... DO UPDATE`` with
``excluded``, no engine-only functions): a ``sqlite3.Connection`` runs them as they are,
and the PostgreSQL engine's connection (``store/postgres/registry.py``) runs them with
its own placeholders. One text per statement keeps both registries' rules the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Db(Protocol):
    """A connection inside one registry transaction (``sqlite3.Connection`` is one)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...
