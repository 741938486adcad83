"""Typed store errors mirroring TermAl's error kinds (400/409/404/503) plus schema problems."""

from __future__ import annotations

from typing import Any


class StoreError(Exception):
    """Base class. ``str(error)`` is a sentence a human can act on.

    ``detail`` is the structured JSON object TermAl attaches to some errors (the
    coordination board's 404/409: ``current`` head and ``currentGeneration``), else None.
    """

    http_status: int = 500

    def __init__(self, *args: object, detail: dict[str, Any] | None = None) -> None:
        super().__init__(*args)
        self.detail = detail

    @property
    def message(self) -> str:
        return str(self)


class ValidationError(StoreError):
    http_status = 400


class UnprocessableError(ValidationError):
    """The request is not well-formed JSON for its type (TermAl's 422: unknown or missing
    field, wrong type, integer out of range)."""

    http_status = 422


class ConflictError(StoreError):
    http_status = 409


class NotFoundError(StoreError):
    http_status = 404


class RetryableError(StoreError):
    """Busy past the deadline; nothing was committed, so retrying is safe."""

    http_status = 503


class StorageError(StoreError):
    """The file system or SQLite failed (permissions, I/O, full disk); nothing was changed."""

    http_status = 500


class CommitOutcomeUnknownError(StorageError):
    """The COMMIT itself failed with an I/O error: SQLite may have made the transaction
    durable or not, so its outcome is unknown (retry the exact same request). Every other
    storage failure happens before or at a commit SQLite rolled back: nothing was written."""


class SchemaError(StoreError):
    """The file is missing, not SQLite, not a TermAl coordination DB, or an unknown version."""


def busy_message(operation: str) -> str:
    return (
        f"mailbox storage is temporarily busy while {operation}; no mailbox write was "
        "committed by this operation, so retry the same request"
    )
