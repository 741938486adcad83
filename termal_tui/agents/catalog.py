"""The tool list an agent reads: TermAl's nine tools exactly as TermAl lists them
(``termal_tools.json`` and ``termal_board_tools.json``, extracted from TermAl's bridge),
with what an agent otherwise has to guess added beside TermAl's words:

- a ``description`` on every parameter TermAl left undescribed, with its limits taken
  from the store's own constants (TermAl's ``class`` description is kept as it is);
- the arguments termal-tui adds (``bodyOffset`` on ``termal_read_mailbox_message``);
- ``annotations`` (read-only, idempotent, destructive, open-world hints and a title);
- an ``outputSchema`` describing the ``structuredContent`` of a successful result
  (TermAl's JSON, plus the paging fields termal-tui adds to a read).

Nothing TermAl wrote is changed: names, descriptions, required lists and every
constraint of TermAl's own properties stay (``tests/agents/test_tools_catalog.py`` checks it).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from typing import Any

from termal_tui.core.formats import (
    MAX_BODY_BYTES,
    MAX_IDEMPOTENCY_KEY_BYTES,
    MAX_METADATA_BYTES,
    READ_LIMIT_DEFAULT,
    READ_LIMIT_MAX,
)
from termal_tui.store.board.formats import (
    DEFAULT_PAGE_SIZE,
    MAX_KEY_BYTES,
    MAX_KEY_SEGMENTS,
    MAX_PAGE_SIZE,
    MAX_STATE_STAMP_BYTES,
    MAX_VALUE_BYTES,
    MAX_VALUE_DEPTH,
)
from termal_tui.store.board.formats import (
    MAX_IDEMPOTENCY_KEY_BYTES as BOARD_MAX_IDEMPOTENCY_KEY_BYTES,
)

# A read's messages (or one message's body) stop at this many bytes of JSON text, so one
# 256 KiB body cannot make a 300 KB tool result: the rest is one exact call away.
READ_RESULT_BUDGET = 32 * 1024


def _kib(size: int) -> str:
    return f"{size // 1024} KiB" if size % 1024 == 0 and size >= 1024 else f"{size} bytes"


_IDENTIFIER_RULE = "no /, \\, ?, #, % or control characters, and not . or .."
_BOARD_KEY_RULE = (
    f"1-{MAX_KEY_SEGMENTS} dot-separated segments of lowercase letters and digits (`_` and "
    f"`-` allowed after the first character), at most {MAX_KEY_BYTES} bytes, e.g. "
    "`activity.rust-suite`"
)

PARAMETERS: dict[str, dict[str, str]] = {
    "termal_send_to_session": {
        "sessionId": (
            "The peer to send to: its exact session id (`session-…`, from "
            "termal_list_sessions) or its name, case-insensitive. Never yourself. "
            f"A string, trimmed; {_IDENTIFIER_RULE}."
        ),
        "message": (
            "The message body: a string (not a number or an object), trimmed, not blank, "
            f"at most {_kib(MAX_BODY_BYTES)} ({MAX_BODY_BYTES} bytes) of UTF-8 after "
            "trimming. Stored durably; the peer fetches it with termal_read_mailbox."
        ),
        "idempotencyKey": (
            f"A string, trimmed, not blank, at most {MAX_IDEMPOTENCY_KEY_BYTES} bytes of "
            "UTF-8, scoped to you (the sender). One key per intent: the same key and "
            "content again returns the original receipt with duplicate=true; the same key "
            "with other content is a conflict."
        ),
        "topic": (
            f"Optional: a string of at most {_kib(MAX_METADATA_BYTES)} ({MAX_METADATA_BYTES} "
            "bytes), trimmed; a blank topic is dropped."
        ),
        "stateStamp": (
            "Optional: what the message was derived from (a commit, a build number), a "
            f"string of at most {_kib(MAX_METADATA_BYTES)} ({MAX_METADATA_BYTES} bytes), "
            "trimmed; a blank stamp is dropped."
        ),
    },
    "termal_read_mailbox": {
        "mailboxId": (
            f"The mailbox's id (`mailbox-…`, from termal_list_mailboxes); {_IDENTIFIER_RULE}."
        ),
        "afterSequence": (
            "Return messages whose sequence is greater than this (default 0). Pass your "
            "processedThrough (termal_list_mailboxes) to read only what you have not "
            "processed; a result's `nextCall` carries the value that continues it."
        ),
        "limit": (
            f"At most this many messages (default {READ_LIMIT_DEFAULT}, range "
            f"1..{READ_LIMIT_MAX}). A value outside the range is clamped into it, as TermAl "
            "does, and the result says so in `notes` (`limit` is the value used). A result "
            f"also stops at {_kib(READ_RESULT_BUDGET)} of messages: `hasMore` then says more "
            "remain and `nextCall` is the exact call for the rest."
        ),
    },
    "termal_read_mailbox_message": {
        "messageId": (
            "The message's id (`mailbox-message-…`, a receipt's messageId or a read's "
            f"`id`); {_IDENTIFIER_RULE}."
        ),
        "bodyOffset": (
            "termal-tui's addition: return the body from this character (Unicode code "
            "point) offset on (default 0). A body longer than "
            f"{_kib(READ_RESULT_BUDGET)} of JSON text is cut with a marker; its `bodyCut` "
            "gives `nextCall`, the exact call for the rest."
        ),
    },
    "termal_acknowledge_mailbox": {
        "mailboxId": (
            f"The mailbox's id (`mailbox-…`, from termal_list_mailboxes); {_IDENTIFIER_RULE}."
        ),
        "expectedProcessedThrough": (
            "The cursor you observed: your processedThrough from termal_list_mailboxes "
            "(or `error.state.processedThrough` from a conflict). A JSON integer >= 0."
        ),
        "processedThrough": (
            "The sequence you have processed through (a JSON integer >= 0, at most the "
            "mailbox's latest sequence). At or below the durable cursor it is a no-op "
            "success (a safe replay)."
        ),
    },
    "termal_board_list": {
        "afterKey": (
            "Continue after this key: the previous page's `nextAfterKey`, together with "
            f"`snapshotGeneration`. {_BOARD_KEY_RULE}."
        ),
        "limit": (
            f"Entries per page, {1}..{MAX_PAGE_SIZE} (default {DEFAULT_PAGE_SIZE}); a value "
            "outside the range is refused with the range, not changed."
        ),
        "snapshotGeneration": (
            "The first page's `generation`, given with `afterKey`; a write between pages "
            "answers 409 (restart from the first page). A JSON integer >= 0."
        ),
        "knownGeneration": (
            "A generation you have already seen, on a first page only: an unchanged board "
            "answers `unchanged: true` with no entries. A JSON integer >= 0."
        ),
    },
    "termal_board_get": {
        "key": f"The key to fetch: {_BOARD_KEY_RULE}.",
    },
    "termal_board_set": {
        "key": f"The key to write: {_BOARD_KEY_RULE}.",
        "value": (
            f"Any JSON value (`null` is a value), at most {_kib(MAX_VALUE_BYTES)} "
            f"({MAX_VALUE_BYTES} bytes) as canonical JSON, nested at most "
            f"{MAX_VALUE_DEPTH} deep. Omit it when `delete` is true."
        ),
        "delete": (
            "true deletes the key (give no `value`; `expectedRevision` must be >= 1). "
            "Default false."
        ),
        "expectedRevision": (
            "Compare-and-swap: 0 creates a key that never existed; otherwise the exact "
            "current revision from termal_board_get or termal_board_list (a tombstone's "
            "revision, from a 404/409 `detail`, restores a deleted key). A JSON integer >= 0."
        ),
        "idempotencyKey": (
            f"A string, not blank, at most {BOARD_MAX_IDEMPOTENCY_KEY_BYTES} bytes, scoped to "
            "you (the author): the same key and request again returns the original receipt "
            "with duplicate=true; other content under the same key is a conflict."
        ),
        "stateStamp": (
            "Optional: what the value was derived from; a non-empty string of at most "
            f"{MAX_STATE_STAMP_BYTES} bytes, stored exactly as given (not trimmed)."
        ),
    },
}

# Arguments termal-tui adds beside TermAl's (their schema; the description is above).
ADDED_ARGUMENTS: dict[str, dict[str, dict[str, Any]]] = {
    "termal_read_mailbox_message": {"bodyOffset": {"type": "integer", "minimum": 0}},
}


def _hints(title: str, *, read_only: bool, destructive: bool = False) -> dict[str, Any]:
    return {
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": True,  # every tool: a read, or a write replayed by its key/cursor
        "openWorldHint": False,  # one local coordination database, nothing beyond it
    }


ANNOTATIONS: dict[str, dict[str, Any]] = {
    "termal_send_to_session": _hints("Send a message to a peer session", read_only=False),
    "termal_list_sessions": _hints("List peer sessions", read_only=True),
    "termal_list_mailboxes": _hints("List your mailboxes and cursors", read_only=True),
    "termal_read_mailbox": _hints("Read mailbox messages", read_only=True),
    "termal_read_mailbox_message": _hints("Read one mailbox message", read_only=True),
    "termal_acknowledge_mailbox": _hints("Acknowledge processed messages", read_only=False),
    "termal_board_list": _hints("List the coordination board", read_only=True),
    "termal_board_get": _hints("Get one board key", read_only=True),
    # A set can overwrite or delete what a peer wrote (kept in history, restorable).
    "termal_board_set": _hints("Set or delete one board key", read_only=False, destructive=True),
}

# Fields termal-tui adds to TermAl's results (beside them; TermAl's own fields are exact).
ADDED_RESULT_FIELDS: dict[str, tuple[str, ...]] = {
    "termal_read_mailbox": ("limit", "hasMore", "nextCall", "notes"),
    "termal_read_mailbox_message": ("bodyCut",),
    "termal_board_list": ("nextCall", "notes"),
}


def termal_fields(name: str, result: Any) -> Any:
    """A tool's result without termal-tui's additions: TermAl's answer, to compare."""
    if not isinstance(result, dict):
        return result
    added = ADDED_RESULT_FIELDS.get(name, ())
    return {key: value for key, value in result.items() if key not in added}


# ------------------------------------------------------------------ output schemas

_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_BOOL = {"type": "boolean"}
_NULLABLE_STR = {"type": ["string", "null"]}


def _object(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


_CALL = _object(
    ["name", "arguments"],
    {"name": _STR, "arguments": {"type": "object"}},
)
_NEXT_CALL = {"anyOf": [_CALL, {"type": "null"}]}

_BODY_CUT = _object(
    ["offset", "returnedChars", "totalChars", "nextCall"],
    {
        "offset": _INT,
        "returnedChars": _INT,
        "totalChars": _INT,
        "nextCall": _NEXT_CALL,
    },
)

_MESSAGE = _object(
    ["id", "mailboxId", "sequence", "senderSessionId", "targetSessionId", "body"],
    {
        "id": _STR,
        "mailboxId": _STR,
        "sequence": _INT,
        "senderSessionId": _STR,
        "senderName": _STR,
        "targetSessionId": _STR,
        "targetName": _STR,
        "createdAt": _STR,
        "class": _STR,
        "topic": _STR,
        "stateStamp": _STR,
        "body": _STR,
        "notificationState": _STR,
        "bodyCut": _BODY_CUT,
    },
)

_SUMMARY = _object(
    ["id", "participants", "latestSequence", "unreadCount"],
    {
        "id": _STR,
        "participants": {
            "type": "array",
            "items": _object(
                ["sessionId", "processedThrough"],
                {"sessionId": _STR, "displayName": _STR, "processedThrough": _INT},
            ),
        },
        "latestSequence": _INT,
        "unreadCount": _INT,
        "latestMessagePreview": _STR,
        "latestMessageAt": _STR,
    },
)

_HEAD_FIELDS = {
    "key": _STR,
    "revision": _INT,
    "updatedAtGeneration": _INT,
    "value": {},
    "deleted": _BOOL,
    "authorSessionId": _STR,
    "authorName": _STR,
    "updatedAt": _STR,
    "stateStamp": _STR,
}

OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "termal_send_to_session": _object(
        ["mailboxId", "messageId", "sequence", "notificationDisposition", "duplicate"],
        {
            "mailboxId": _STR,
            "messageId": _STR,
            "sequence": _INT,
            "unreadDepth": _INT,
            "notificationDisposition": _STR,
            "duplicate": _BOOL,
            "sessionId": _STR,
            "resolvedFrom": _STR,
        },
    ),
    "termal_list_sessions": _object(
        ["sessions"],
        {
            "sessions": {
                "type": "array",
                "items": _object(
                    ["sessionId", "name"],
                    {
                        "sessionId": _STR,
                        "name": _STR,
                        "agent": _NULLABLE_STR,
                        "status": _STR,
                        "workdir": _NULLABLE_STR,
                        "preview": _NULLABLE_STR,
                    },
                ),
            }
        },
    ),
    "termal_list_mailboxes": _object(
        ["mailboxes"], {"mailboxes": {"type": "array", "items": _SUMMARY}}
    ),
    "termal_read_mailbox": _object(
        ["mailboxId", "messages", "limit", "hasMore", "nextCall"],
        {
            "mailboxId": _STR,
            "messages": {"type": "array", "items": _MESSAGE},
            "limit": {"type": "integer", "minimum": 1, "maximum": READ_LIMIT_MAX},
            "hasMore": _BOOL,
            "nextCall": _NEXT_CALL,
            "notes": {"type": "array", "items": _STR},
        },
    ),
    "termal_read_mailbox_message": _MESSAGE,
    "termal_acknowledge_mailbox": _SUMMARY,
    "termal_board_list": _object(
        ["generation", "entries", "unchanged"],
        {
            "generation": _INT,
            "entries": {"type": "array", "items": _object(["key", "revision"], _HEAD_FIELDS)},
            "nextAfterKey": _STR,
            "unchanged": _BOOL,
            "nextCall": _NEXT_CALL,
            "notes": {"type": "array", "items": _STR},
        },
    ),
    "termal_board_get": _object(
        ["key", "revision", "scopeGeneration"], _HEAD_FIELDS | {"scopeGeneration": _INT}
    ),
    "termal_board_set": _object(
        ["key", "revision", "priorRevision", "generation", "deleted", "duplicate"],
        _HEAD_FIELDS | {"priorRevision": _INT, "generation": _INT, "duplicate": _BOOL},
    ),
}


def termal_tools() -> list[dict[str, Any]]:
    """TermAl's nine tools as TermAl lists them, in TermAl's order."""
    package = resources.files("termal_tui.agents")
    return [
        *json.loads(package.joinpath("termal_tools.json").read_text()),
        *json.loads(package.joinpath("termal_board_tools.json").read_text()),
    ]


@cache
def _catalog() -> tuple[dict[str, Any], ...]:
    tools = []
    for termal in termal_tools():
        tool = copy.deepcopy(termal)
        name = tool["name"]
        properties = tool["inputSchema"].setdefault("properties", {})
        properties.update(copy.deepcopy(ADDED_ARGUMENTS.get(name, {})))
        for argument, text in PARAMETERS.get(name, {}).items():
            schema = properties[argument]
            schema.setdefault("description", text)  # TermAl's own description stays
        tool["annotations"] = ANNOTATIONS[name]
        tool["outputSchema"] = OUTPUT_SCHEMAS[name]
        tools.append(tool)
    return tuple(tools)


def tool_catalog() -> list[dict[str, Any]]:
    """TermAl's nine tools with termal-tui's structure beside TermAl's words (a copy)."""
    return copy.deepcopy(list(_catalog()))


def tool_names() -> frozenset[str]:
    return frozenset(tool["name"] for tool in _catalog())
