"""Public store API: ``open_reader`` (read-only), ``open_writer`` (delivery contract), errors.

Both openers take a path to TermAl's SQLite file or a ``postgresql://`` URL (the engine in
``store/postgres``, loaded only for a URL).

Everything is loaded on first use (PEP 562), so importing ``termal_tui.store.errors``
costs nothing more, and importing the reader (as the viewer does) never loads a module
that can write.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from termal_tui.store.errors import (
        ConflictError,
        NotFoundError,
        RetryableError,
        SchemaError,
        StoreError,
        ValidationError,
    )
    from termal_tui.store.reader import MailboxReader, open_reader
    from termal_tui.store.writer import MailboxWriter, open_writer

_HOMES = {
    "ConflictError": "errors",
    "NotFoundError": "errors",
    "RetryableError": "errors",
    "SchemaError": "errors",
    "StoreError": "errors",
    "ValidationError": "errors",
    "MailboxReader": "reader",
    "open_reader": "reader",
    "MailboxWriter": "writer",
    "open_writer": "writer",
}

__all__ = [
    "ConflictError",
    "MailboxReader",
    "MailboxWriter",
    "NotFoundError",
    "RetryableError",
    "SchemaError",
    "StoreError",
    "ValidationError",
    "open_reader",
    "open_writer",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"termal_tui.store.{home}"), name)
