"""Typed store errors mirroring TermAl's error kinds (400/409/404/503) plus schema problems."""

from __future__ import annotations


class StoreError(Exception):
    """Base class. ``str(error)`` is a sentence a human can act on."""

    http_status: int = 500

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


class SchemaError(StoreError):
    """The file is missing, not SQLite, not a TermAl coordination DB, or an unknown version."""


def busy_message(operation: str) -> str:
    return (
        f"mailbox storage is temporarily busy while {operation}; no mailbox write was "
        "committed by this operation, so retry the same request"
    )
