"""``termal-tui hook --remote``: the hub's error kind decides the exit code (one table)."""

from __future__ import annotations

import io
import json
import urllib.error

from termal_tui.cli.hook import _problem
from termal_tui.core.errors import TABLE, ErrorKind


def refusal(code: int, body: bytes) -> urllib.error.HTTPError:
    return urllib.error.HTTPError("http://127.0.0.1/hook", code, "x", {}, io.BytesIO(body))  # type: ignore[arg-type]


def test_a_busy_hook_is_the_tables_busy_exit_code_with_its_sentence():
    body = json.dumps(
        {"error": "busy", "problem": {"code": "busy", "message": "database is busy\x1b[31m"}}
    ).encode()
    code, said = _problem(refusal(503, body))  # type: ignore[misc]
    assert code == TABLE[ErrorKind.BUSY].exit_code
    assert "database is busy" in said and "\x1b" not in said  # agent-facing: made visible


def test_a_body_without_a_known_kind_falls_back():
    assert _problem(refusal(500, b"not json")) is None
    assert _problem(refusal(500, b'{"problem": {"code": "no-such-kind"}}')) is None
    assert _problem(refusal(500, b"[]")) is None
