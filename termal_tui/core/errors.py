"""One error taxonomy: every failure has a kind, and one table decides what the kind means
to each audience — the HTTP status, the MCP tool error (its machine-readable code and
whether the same call may be repeated) and the command line's exit code.

Pure: no I/O, no imports beyond the standard library (hooks start through the CLI, which
imports this at module level). The store's errors (``store/errors.py``), the agents' tool
errors (``agents/tools.py``) and the CLI (``cli/common.py``) all read :data:`TABLE`; nobody
infers one status from another.
"""

from __future__ import annotations

import enum
from typing import Any, Final, NamedTuple

# ------------------------------------------------------------------ exit codes

EXIT_OK: Final = 0
EXIT_STUCK: Final = 1  # doctor only: something is stuck
EXIT_USAGE: Final = 2  # the command line is wrong (argparse's code; nothing else uses it)
EXIT_NOT_FOUND: Final = 3  # no such database file, session, mailbox or message (404)
EXIT_CONFLICT: Final = 4  # 409: idempotency key reused for other content, stale cursor
EXIT_BUSY: Final = 5  # 503: busy; nothing was committed, run the same command again
EXIT_UNKNOWN: Final = 6  # the outcome is unknown: run the exact same command again
EXIT_FAILED: Final = 7  # storage or internal failure (disk full, I/O, permissions, a bug)
EXIT_INVALID: Final = 8  # 400/422: the request was refused, or the file is not a database of ours
EXIT_INTERRUPTED: Final = 130

# JSON-RPC 2.0's codes (MCP reports an unknown tool as invalid params).
JSONRPC_PARSE_ERROR: Final = -32700
JSONRPC_INVALID_REQUEST: Final = -32600
JSONRPC_INVALID_PARAMS: Final = -32602


class ErrorKind(enum.Enum):
    """What went wrong, as far as the caller's next step is concerned. The value is the
    machine-readable ``code`` an agent reads in a tool error."""

    VALIDATION = "validation"  # the request was refused as given (TermAl's 400)
    UNPROCESSABLE = "unprocessable"  # not well-formed for its type (TermAl's 422)
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"  # a compare-and-swap lost, or a key reused for other content
    BUSY = "busy"  # busy past the deadline; nothing was committed
    UNKNOWN_OUTCOME = "unknown_outcome"  # a write may or may not have committed
    STORAGE = "storage"  # the file system or SQLite failed; nothing was changed
    NOT_OURS = "not_ours"  # not a coordination database, or a version we do not know
    UNKNOWN_TOOL = "unknown_tool"  # a tool name this server does not serve
    UNAUTHORIZED = "unauthorized"  # a token was missing, unknown or revoked
    UNREACHABLE = "unreachable"  # the hub could not be reached: nothing was sent
    INTERNAL = "internal"  # anything this process cannot account for (a bug)


class Meaning(NamedTuple):
    """One row of the table."""

    http_status: int
    exit_code: int
    retry_safe: bool  # the same call, repeated as is, cannot do harm and may succeed
    hint: str  # what the caller does next, in a few words
    # MCP: None is a tool result with isError (the agent reads it and corrects itself);
    # a number is a JSON-RPC error of that code (the call itself was not one we serve).
    jsonrpc_code: int | None = None


TABLE: Final[dict[ErrorKind, Meaning]] = {
    ErrorKind.VALIDATION: Meaning(400, EXIT_INVALID, False, "fix the arguments"),
    ErrorKind.UNPROCESSABLE: Meaning(422, EXIT_INVALID, False, "fix the arguments"),
    ErrorKind.NOT_FOUND: Meaning(404, EXIT_NOT_FOUND, False, "list what exists first"),
    ErrorKind.CONFLICT: Meaning(409, EXIT_CONFLICT, False, "re-read the current state"),
    ErrorKind.BUSY: Meaning(503, EXIT_BUSY, True, "retry the same request"),
    ErrorKind.UNKNOWN_OUTCOME: Meaning(
        500, EXIT_UNKNOWN, True, "retry the exact same request (same idempotency key)"
    ),
    ErrorKind.STORAGE: Meaning(500, EXIT_FAILED, False, "fix the storage, then retry"),
    ErrorKind.NOT_OURS: Meaning(500, EXIT_INVALID, False, "point at a coordination database"),
    ErrorKind.UNKNOWN_TOOL: Meaning(
        400, EXIT_INVALID, False, "call a listed tool", jsonrpc_code=JSONRPC_INVALID_PARAMS
    ),
    ErrorKind.UNAUTHORIZED: Meaning(401, EXIT_INVALID, False, "use a valid token"),
    ErrorKind.UNREACHABLE: Meaning(
        503, EXIT_BUSY, True, "retry the same request when the hub is up"
    ),
    ErrorKind.INTERNAL: Meaning(500, EXIT_FAILED, False, "report it"),
}
assert set(TABLE) == set(ErrorKind)

HTTP_REASONS: Final[dict[int, str]] = {
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    409: "Conflict",
    422: "Unprocessable Entity",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class TermalError(Exception):
    """The base of every error with a kind. ``str(error)`` is the sentence a person or an
    agent reads; :attr:`kind` decides everything else through :data:`TABLE`."""

    kind: ErrorKind = ErrorKind.INTERNAL  # a class's kind; an instance may carry its own

    @property
    def meaning(self) -> Meaning:
        return TABLE[self.kind]

    @property
    def http_status(self) -> int:
        return self.meaning.http_status

    @property
    def exit_code(self) -> int:
        return self.meaning.exit_code


def kind_of(error: BaseException) -> ErrorKind:
    """The kind of any failure: its own if it has one, else internal."""
    if isinstance(error, TermalError):
        return error.kind
    return ErrorKind.INTERNAL


def exit_code_of(error: BaseException) -> int:
    return TABLE[kind_of(error)].exit_code


def http_status_of(error: BaseException) -> int:
    return TABLE[kind_of(error)].http_status


def error_document(
    error: BaseException,
    *,
    message: str | None = None,
    detail: Any = None,
    state: dict[str, Any] | None = None,
    next_call: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The machine-readable side of an error, as a tool result's ``structuredContent``
    (and the hub's JSON error bodies): ``code`` (the kind), ``status`` (its HTTP status),
    ``retrySafe``, ``message`` (the sentence), and where known TermAl's ``detail``, the
    ``state`` the caller needs next and the exact ``nextCall``."""
    kind = kind_of(error)
    meaning = TABLE[kind]
    document: dict[str, Any] = {
        "code": kind.value,
        "status": meaning.http_status,
        "retrySafe": meaning.retry_safe,
        "next": meaning.hint,
        "message": str(error) if message is None else message,
    }
    if detail is not None:
        document["detail"] = detail
    if state:
        document["state"] = state
    if next_call is not None:
        document["nextCall"] = next_call
    return {"error": document}
