"""One error taxonomy: a kind on every error decides the HTTP status, the MCP error and the
exit code from one table; nothing is inferred from another layer's status."""

from __future__ import annotations

import pytest

from termal_tui.agents.board_tools import BoardToolError, board_error
from termal_tui.agents.tools import SEND_OUTCOME_UNKNOWN, ToolError, as_tool_error
from termal_tui.cli.common import (
    EXIT_BUSY,
    EXIT_CONFLICT,
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_UNKNOWN,
    CommandError,
    exit_code_for,
    guarded,
)
from termal_tui.core.errors import TABLE, ErrorKind, error_document, exit_code_of, kind_of
from termal_tui.store.errors import (
    CommitOutcomeUnknownError,
    ConflictError,
    NotFoundError,
    RetryableError,
    SchemaError,
    StorageError,
    StoreError,
    UnprocessableError,
    ValidationError,
)


def test_the_table_covers_every_kind_once():
    assert set(TABLE) == set(ErrorKind)
    assert all(kind.value == kind.value.lower() for kind in ErrorKind)  # machine codes


@pytest.mark.parametrize(
    ("error", "kind", "status", "code"),
    [
        (ValidationError("bad"), ErrorKind.VALIDATION, 400, EXIT_INVALID),
        (UnprocessableError("bad"), ErrorKind.UNPROCESSABLE, 422, EXIT_INVALID),
        (NotFoundError("gone"), ErrorKind.NOT_FOUND, 404, EXIT_NOT_FOUND),
        (ConflictError("moved"), ErrorKind.CONFLICT, 409, EXIT_CONFLICT),
        (RetryableError("busy"), ErrorKind.BUSY, 503, EXIT_BUSY),
        (StorageError("full"), ErrorKind.STORAGE, 500, EXIT_FAILED),
        # a read that meets a failed COMMIT changed nothing: storage, not unknown
        (CommitOutcomeUnknownError("io"), ErrorKind.STORAGE, 500, EXIT_FAILED),
        (SchemaError("not ours"), ErrorKind.NOT_OURS, 500, EXIT_INVALID),
        (StoreError("?"), ErrorKind.INTERNAL, 500, EXIT_FAILED),
    ],
)
def test_store_errors_keep_termals_statuses_and_the_exit_codes(
    error: StoreError, kind: ErrorKind, status: int, code: int
):
    assert (kind_of(error), error.http_status, exit_code_for(error)) == (kind, status, code)


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        (ErrorKind.VALIDATION, EXIT_INVALID),
        (ErrorKind.NOT_FOUND, EXIT_NOT_FOUND),
        (ErrorKind.CONFLICT, EXIT_CONFLICT),
        (ErrorKind.BUSY, EXIT_BUSY),
        (ErrorKind.UNKNOWN_OUTCOME, EXIT_UNKNOWN),
        (ErrorKind.INTERNAL, EXIT_FAILED),
    ],
)
def test_tool_errors_take_their_exit_code_from_their_kind(kind: ErrorKind, code: int):
    assert exit_code_for(ToolError(kind, "x")) == code
    assert exit_code_for(BoardToolError(kind, "x")) == code


def test_nothing_is_guessed_from_a_status_attribute():
    """An error from elsewhere that happens to carry ``status = 404`` is not a 404."""

    class Foreign(Exception):
        status = 404

    assert exit_code_for(Foreign("x")) == EXIT_FAILED
    assert kind_of(Foreign("x")) is ErrorKind.INTERNAL


def test_a_command_error_keeps_its_own_code():
    assert exit_code_for(CommandError("no", 3)) == 3


def test_guarded_prints_one_sentence_for_a_kind_and_unexpected_for_the_rest(capsys):
    def refused() -> int:
        raise ToolError(ErrorKind.CONFLICT, "stale")

    assert guarded(refused) == EXIT_CONFLICT
    err = capsys.readouterr().err
    assert err == "termal-tui: error: termal-tui mailbox store returned 409 Conflict: stale\n"

    class Foreign(Exception):
        status = 409

    def foreign() -> int:
        raise Foreign("odd")

    assert guarded(foreign) == EXIT_FAILED
    assert "unexpected failure (Foreign: odd)" in capsys.readouterr().err


def test_unknown_outcome_is_its_sentence_alone_and_safe_to_retry():
    failure = as_tool_error(RuntimeError("boom"), SEND_OUTCOME_UNKNOWN)
    assert failure.kind is ErrorKind.UNKNOWN_OUTCOME
    assert str(failure) == f"{SEND_OUTCOME_UNKNOWN}: boom"
    assert exit_code_of(failure) == EXIT_UNKNOWN
    wire = failure.to_wire()["error"]
    assert (wire["code"], wire["retrySafe"]) == ("unknown_outcome", True)


def test_store_errors_keep_their_kind_text_and_detail_as_tool_errors():
    conflict = ConflictError("revision moved", detail={"currentGeneration": 3})
    board = board_error(conflict)
    assert board.kind is ErrorKind.CONFLICT and board.detail == {"currentGeneration": 3}
    assert str(board) == "termal-tui board store returned 409 Conflict: revision moved"
    mailbox = as_tool_error(RetryableError("busy; no mailbox write was committed"))
    assert mailbox.kind is ErrorKind.BUSY and mailbox.to_wire()["error"]["retrySafe"] is True
    assert as_tool_error(StorageError("disk full")).to_wire()["error"]["retrySafe"] is False


def test_the_error_document_is_machine_readable():
    document = error_document(
        ToolError(ErrorKind.CONFLICT, "stale"),
        state={"processedThrough": 4},
        next_call={"name": "termal_list_mailboxes", "arguments": {}},
    )
    assert document == {
        "error": {
            "code": "conflict",
            "status": 409,
            "retrySafe": False,
            "next": TABLE[ErrorKind.CONFLICT].hint,
            "message": "termal-tui mailbox store returned 409 Conflict: stale",
            "state": {"processedThrough": 4},
            "nextCall": {"name": "termal_list_mailboxes", "arguments": {}},
        }
    }


def test_the_errors_module_is_pure():
    """No I/O and nothing beyond the standard library: a later step moves it to core/."""
    import ast
    from pathlib import Path

    import termal_tui.core.errors as module

    tree = ast.parse(Path(module.__file__).read_text())
    imported = {
        (node.module or "").split(".")[0] if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= {"__future__", "enum", "typing"}


def test_the_docs_error_table_is_the_table():
    from pathlib import Path

    from termal_tui.core.errors import TABLE

    text = (Path(__file__).resolve().parents[2] / "docs/agents/errors.md").read_text()
    documented = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[1].isdigit() and cells[2].isdigit():
            documented[cells[0].strip("`")] = (int(cells[1]), int(cells[2]), cells[3] == "yes")
    assert documented == {
        kind.value: (m.http_status, m.exit_code, m.retry_safe) for kind, m in TABLE.items()
    }
