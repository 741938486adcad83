"""Public store API: ``open_reader`` (read-only), ``open_writer`` (delivery contract), errors.

The writer is loaded lazily, so importing the reader (as the viewer does) never
loads a module that can write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from termal_tui.store.errors import (
    ConflictError,
    NotFoundError,
    RetryableError,
    SchemaError,
    StoreError,
    ValidationError,
)
from termal_tui.store.reader import MailboxReader, open_reader

if TYPE_CHECKING:
    from termal_tui.store.writer import MailboxWriter, open_writer

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
    if name in {"MailboxWriter", "open_writer"}:
        from termal_tui.store import writer

        return getattr(writer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
