"""Typed store errors mirroring TermAl's error kinds (400/409/404/503) plus schema problems.

Each class names its :class:`~termal_tui.core.errors.ErrorKind`; the HTTP status (TermAl's),
the MCP code and the exit code come from the one table in ``termal_tui/core/errors.py``.
"""

from __future__ import annotations

from typing import Any

from termal_tui.core.errors import ErrorKind, TermalError


class StoreError(TermalError):
    """Base class. ``str(error)`` is a sentence a human can act on.

    ``detail`` is the structured JSON object TermAl attaches to some errors (the
    coordination board's 404/409: ``current`` head and ``currentGeneration``), else None.
    ``http_status`` is the kind's status in the table (TermAl's status for the kind).
    """

    kind = ErrorKind.INTERNAL

    def __init__(self, *args: object, detail: dict[str, Any] | None = None) -> None:
        super().__init__(*args)
        self.detail = detail

    @property
    def message(self) -> str:
        return str(self)


class ValidationError(StoreError):
    kind = ErrorKind.VALIDATION


class UnprocessableError(ValidationError):
    """The request is not well-formed JSON for its type (TermAl's 422: unknown or missing
    field, wrong type, integer out of range)."""

    kind = ErrorKind.UNPROCESSABLE


class ConflictError(StoreError):
    kind = ErrorKind.CONFLICT


class NotFoundError(StoreError):
    kind = ErrorKind.NOT_FOUND


class RetryableError(StoreError):
    """Busy past the deadline; nothing was committed, so retrying is safe."""

    kind = ErrorKind.BUSY


class StorageError(StoreError):
    """The file system or SQLite failed (permissions, I/O, full disk); nothing was changed."""

    kind = ErrorKind.STORAGE


class CommitOutcomeUnknownError(StorageError):
    """The COMMIT itself failed with an I/O error: SQLite may have made the transaction
    durable or not, so its outcome is unknown (retry the exact same request). Every other
    storage failure happens before or at a commit SQLite rolled back: nothing was written.

    Its kind stays storage: a read that meets it changed nothing. A write's caller (the
    tools) turns it into ``unknown_outcome`` with its own sentence."""


class SchemaError(StoreError):
    """The file is missing, not SQLite, not a TermAl coordination DB, or an unknown version."""

    kind = ErrorKind.NOT_OURS


def busy_message(operation: str) -> str:
    return (
        f"mailbox storage is temporarily busy while {operation}; no mailbox write was "
        "committed by this operation, so retry the same request"
    )
