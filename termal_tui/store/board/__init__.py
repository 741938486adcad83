"""The coordination board: TermAl's level-triggered, versioned JSON facts per project
scope, in the same database as the mailboxes (TermAl's coordination.sqlite, or a
PostgreSQL database named by a ``postgresql://`` URL: ``store/postgres/board``).

``open_board_reader`` (read-only, never writes) and ``open_board_writer`` (TermAl's
CAS, idempotency, tombstones, limits and retention). The writer is loaded lazily, so
importing the reader (as the viewer does) never loads a module that can write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from termal_tui.store.board.formats import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    canonical_value,
    dumps,
    format_board_timestamp,
    loads,
    normalize_author_name,
    request_hash,
)
from termal_tui.store.board.reader import BoardReader, open_board_reader
from termal_tui.store.board.records import (
    BoardGetResult,
    BoardHead,
    BoardListPage,
    BoardScope,
    BoardSetReceipt,
)

if TYPE_CHECKING:
    from termal_tui.store.board.writer import MISSING, BoardWriter, open_board_writer

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "MISSING",
    "BoardGetResult",
    "BoardHead",
    "BoardListPage",
    "BoardReader",
    "BoardScope",
    "BoardSetReceipt",
    "BoardWriter",
    "canonical_value",
    "dumps",
    "format_board_timestamp",
    "loads",
    "normalize_author_name",
    "open_board_reader",
    "open_board_writer",
    "request_hash",
]


def __getattr__(name: str) -> Any:
    if name in {"MISSING", "BoardWriter", "open_board_writer"}:
        from termal_tui.store.board import writer

        return getattr(writer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
