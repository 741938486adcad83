"""The tool list an agent reads: TermAl's words exactly, and beside them every parameter
described with its limits (from the store's constants), annotations on every tool, and an
output schema that real results satisfy."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from termal_tui.agents.board_tools import BOARD_TOOL_NAMES
from termal_tui.agents.catalog import READ_RESULT_BUDGET, termal_tools, tool_catalog
from termal_tui.agents.tools import TOOL_NAMES
from termal_tui.core.formats import (
    MAX_BODY_BYTES,
    MAX_IDEMPOTENCY_KEY_BYTES,
    MAX_METADATA_BYTES,
    READ_LIMIT_MAX,
)
from termal_tui.store.board.formats import MAX_KEY_BYTES, MAX_PAGE_SIZE, MAX_VALUE_BYTES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _tool(name: str) -> dict:
    return next(t for t in tool_catalog() if t["name"] == name)


def _described(name: str, argument: str) -> str:
    return _tool(name)["inputSchema"]["properties"][argument]["description"]


def test_termals_words_are_kept_exactly():
    termal = json.loads((FIXTURES / "termal_mailbox_tools.json").read_text()) + json.loads(
        (FIXTURES / "termal_board_tools.json").read_text()
    )
    assert termal_tools() == termal
    for ours, theirs in zip(tool_catalog(), termal, strict=True):
        assert (ours["name"], ours["description"]) == (theirs["name"], theirs["description"])
        assert ours["inputSchema"].get("required") == theirs["inputSchema"].get("required")
        for argument, schema in theirs["inputSchema"]["properties"].items():
            # every constraint (and TermAl's one description, on `class`) stays as is
            assert ours["inputSchema"]["properties"][argument].items() >= schema.items()
    assert [t["name"] for t in tool_catalog()] == [*TOOL_NAMES, *BOARD_TOOL_NAMES]


def test_every_parameter_is_described():
    for tool in tool_catalog():
        for argument, schema in tool["inputSchema"]["properties"].items():
            assert len(schema.get("description", "")) > 20, (tool["name"], argument)


def test_limits_are_the_stores_own():
    send = "termal_send_to_session"
    assert f"{MAX_BODY_BYTES} bytes" in _described(send, "message")
    assert f"{MAX_IDEMPOTENCY_KEY_BYTES} bytes" in _described(send, "idempotencyKey")
    assert f"{MAX_METADATA_BYTES} bytes" in _described(send, "topic")
    assert f"{MAX_METADATA_BYTES} bytes" in _described(send, "stateStamp")
    assert "must be a string" not in _described(send, "message")  # a rule, not an error
    limit = _described("termal_read_mailbox", "limit")
    assert f"1..{READ_LIMIT_MAX}" in limit and "clamped" in limit and "notes" in limit
    assert str(READ_RESULT_BUDGET // 1024) in limit and "nextCall" in limit
    assert "bodyOffset" in _tool("termal_read_mailbox_message")["inputSchema"]["properties"]
    assert f"{MAX_PAGE_SIZE}" in _described("termal_board_list", "limit")
    assert "refused" in _described("termal_board_list", "limit")
    assert f"{MAX_KEY_BYTES} bytes" in _described("termal_board_get", "key")
    assert f"{MAX_VALUE_BYTES} bytes" in _described("termal_board_set", "value")


@pytest.mark.parametrize(
    ("name", "read_only", "destructive"),
    [
        ("termal_send_to_session", False, False),
        ("termal_list_sessions", True, False),
        ("termal_list_mailboxes", True, False),
        ("termal_read_mailbox", True, False),
        ("termal_read_mailbox_message", True, False),
        ("termal_acknowledge_mailbox", False, False),
        ("termal_board_list", True, False),
        ("termal_board_get", True, False),
        ("termal_board_set", False, True),
    ],
)
def test_every_tool_is_annotated(name: str, read_only: bool, destructive: bool):
    annotations = _tool(name)["annotations"]
    assert all(isinstance(annotations[hint], bool) for hint in HINTS)
    assert annotations["readOnlyHint"] is read_only
    assert annotations["destructiveHint"] is destructive
    assert annotations["idempotentHint"] is True  # a key or a cursor makes a replay safe
    assert annotations["openWorldHint"] is False
    assert annotations["title"]


def test_every_output_schema_is_a_valid_object_schema():
    for tool in tool_catalog():
        schema = tool["outputSchema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", tool["name"]
