"""Results an agent reads without guessing: a read says whether more remains and the exact
next call, stays within its size budget (a long body is cut with a marker and the call
for the rest), says when it changed a limit; errors carry a code, whether a retry is
safe, and the state needed next; an unknown tool is an unknown tool."""

from __future__ import annotations

import json
from typing import Any

import pytest

from termal_tui.agents.board_tools import fit_page
from termal_tui.agents.catalog import READ_RESULT_BUDGET, tool_catalog
from termal_tui.agents.mcp_server import error_result
from termal_tui.agents.tools import AgentTools, ReplayPolicy, ToolError
from termal_tui.core.errors import ErrorKind
from termal_tui.core.formats import MAX_BODY_BYTES
from termal_tui.store.errors import RetryableError
from tests.agents.conftest import Peers
from tests.agents.conftest import send as _send

SCHEMAS = {tool["name"]: tool["outputSchema"] for tool in tool_catalog()}


def _valid(name: str, result: dict[str, Any]) -> dict[str, Any]:
    import jsonschema

    jsonschema.validate(result, SCHEMAS[name])
    return result


async def _mailbox(peers: Peers) -> str:
    (mailbox,) = (await peers.bob.call("termal_list_mailboxes", {}))["mailboxes"]
    return mailbox["id"]


async def _follow(tools: AgentTools, call: dict[str, Any]) -> dict[str, Any]:
    return _valid(call["name"], await tools.call(call["name"], call["arguments"]))


async def test_a_read_says_whether_more_remain_and_the_exact_next_call(peers: Peers):
    for n in range(1, 6):
        await _send(peers.alice, "bob", f"m{n}", f"k{n}")
    mailbox = await _mailbox(peers)
    page = _valid(
        "termal_read_mailbox",
        await peers.bob.call("termal_read_mailbox", {"mailboxId": mailbox, "limit": 2}),
    )
    seen = [m["sequence"] for m in page["messages"]]
    assert (seen, page["hasMore"], page["limit"]) == ([1, 2], True, 2)
    assert page["nextCall"] == {
        "name": "termal_read_mailbox",
        "arguments": {"mailboxId": mailbox, "afterSequence": 2, "limit": 2},
    }
    assert "notes" not in page  # nothing was changed or cut
    while page["hasMore"]:
        page = await _follow(peers.bob, page["nextCall"])
        seen += [m["sequence"] for m in page["messages"]]
    assert seen == [1, 2, 3, 4, 5] and page["nextCall"] is None
    exact = await peers.bob.call("termal_read_mailbox", {"mailboxId": mailbox, "limit": 5})
    assert exact["hasMore"] is False  # exactly the limit left: nothing more


@pytest.mark.parametrize(("asked", "used"), [(0, 1), (10**6, 200)])
async def test_a_limit_outside_the_range_is_clamped_and_the_result_says_so(
    peers: Peers, asked: int, used: int
):
    await _send(peers.alice, "bob", "m1", "k1")
    await _send(peers.alice, "bob", "m2", "k2")
    mailbox = await _mailbox(peers)
    page = _valid(
        "termal_read_mailbox",
        await peers.bob.call("termal_read_mailbox", {"mailboxId": mailbox, "limit": asked}),
    )
    assert page["limit"] == used
    assert page["notes"] == [f"limit {asked} is outside 1..200: {used} was used (TermAl clamps it)"]
    assert len(page["messages"]) == min(used, 2) and page["hasMore"] is (used < 2)


async def test_a_long_body_is_cut_with_a_marker_and_the_rest_is_one_exact_call_away(
    peers: Peers,
):
    unit = "x" * 95 + "éω"  # 99 bytes of UTF-8, multi-byte characters included
    body = unit * (MAX_BODY_BYTES // 99)
    body += "y" * (MAX_BODY_BYTES - len(body.encode()))
    assert len(body.encode()) == MAX_BODY_BYTES  # the largest body the store takes
    await _send(peers.alice, "bob", body, "big")
    await _send(peers.alice, "bob", "after", "k2")
    mailbox = await _mailbox(peers)
    page = _valid(
        "termal_read_mailbox", await peers.bob.call("termal_read_mailbox", {"mailboxId": mailbox})
    )
    text = json.dumps(page, indent=2, ensure_ascii=False)
    assert len(text.encode()) < READ_RESULT_BUDGET + 2048  # not a 300 KB tool result
    (first,) = page["messages"]  # the next message waits for the next page
    assert page["hasMore"] is True and page["nextCall"]["arguments"]["afterSequence"] == 1
    cut = first["bodyCut"]
    assert cut["offset"] == 0 and cut["totalChars"] == len(body)
    assert first["body"].startswith(body[: cut["returnedChars"]])
    marker = first["body"][cut["returnedChars"] :]
    assert marker.startswith("\n[termal-tui: body cut at character") and "bodyOffset" in marker
    assert any("bodyCut.nextCall" in note for note in page["notes"])
    pieces = [body[: cut["returnedChars"]]]
    calls = 0
    while cut["nextCall"] is not None:
        following = await _follow(peers.bob, cut["nextCall"])
        calls += 1
        cut = following["bodyCut"]
        piece = following["body"]
        pieces.append(piece[: cut["returnedChars"]])
        size = len(json.dumps(following, indent=2, ensure_ascii=False).encode())
        assert size < READ_RESULT_BUDGET + 2048
    assert "".join(pieces) == body  # every character exactly once, in order
    assert calls >= 3  # 256 KiB in results of at most 32 KiB
    rest = await _follow(peers.bob, page["nextCall"])
    assert [m["body"] for m in rest["messages"]] == ["after"] and rest["hasMore"] is False
    with pytest.raises(ToolError, match=r"bodyOffset .* is past the end of the body"):
        await peers.bob.call(
            "termal_read_mailbox_message",
            {"messageId": first["id"], "bodyOffset": len(body) + 1},
        )


async def test_a_short_message_read_by_id_is_termals_message_unchanged(peers: Peers):
    sent = await _send(peers.alice, "bob", "hello", "k")
    exact = await peers.bob.call("termal_read_mailbox_message", {"messageId": sent["messageId"]})
    assert exact["body"] == "hello" and "bodyCut" not in exact
    tail = await peers.bob.call(
        "termal_read_mailbox_message", {"messageId": sent["messageId"], "bodyOffset": 2}
    )
    assert tail["body"] == "llo" and tail["bodyCut"] == {
        "offset": 2,
        "returnedChars": 3,
        "totalChars": 5,
        "nextCall": None,
    }


async def test_a_stale_acknowledgement_carries_the_current_cursor_and_the_next_call(
    peers: Peers,
):
    for n in range(1, 4):
        await _send(peers.alice, "bob", f"m{n}", f"k{n}")
    mailbox = await _mailbox(peers)
    ack = {"mailboxId": mailbox, "expectedProcessedThrough": 0, "processedThrough": 2}
    await peers.bob.call("termal_acknowledge_mailbox", ack)
    with pytest.raises(ToolError) as stale:
        await peers.bob.call("termal_acknowledge_mailbox", ack | {"processedThrough": 3})
    error = stale.value.to_wire()["error"]
    assert error["code"] == "conflict" and error["retrySafe"] is False
    assert error["state"] == {"mailboxId": mailbox, "processedThrough": 2, "latestSequence": 3}
    assert error["nextCall"] == {
        "name": "termal_acknowledge_mailbox",
        "arguments": {"mailboxId": mailbox, "expectedProcessedThrough": 2, "processedThrough": 3},
    }
    done = await _follow(peers.bob, error["nextCall"])  # the next call works as given
    assert done["unreadCount"] == 0


async def test_a_busy_store_says_retry_is_safe_and_gives_the_same_call(
    peers: Peers, monkeypatch: pytest.MonkeyPatch
):
    await _send(peers.alice, "bob", "m", "k")
    mailbox = await _mailbox(peers)

    async def busy(*_args: object, **_kwargs: object) -> object:
        raise RetryableError("storage is busy; no mailbox write was committed by this operation")

    monkeypatch.setattr(peers.writer, "read_range", busy)
    peers.bob.replay = ReplayPolicy(attempts=1)
    arguments = {"mailboxId": mailbox, "afterSequence": 0}
    with pytest.raises(ToolError) as failure:
        await peers.bob.call("termal_read_mailbox", arguments)
    result = error_result(failure.value)  # what the MCP client receives
    assert result.is_error and "returned 503 Service Unavailable" in result.content[0].text  # type: ignore[union-attr]
    error = result.structured_content["error"]
    assert (error["code"], error["status"], error["retrySafe"]) == ("busy", 503, True)
    assert error["nextCall"] == {"name": "termal_read_mailbox", "arguments": arguments}


async def test_a_wrong_type_is_named_and_an_unknown_tool_is_an_unknown_tool(peers: Peers):
    with pytest.raises(ToolError) as typed:
        await _send(peers.alice, "bob", 123, "k")  # type: ignore[arg-type]
    assert "message must be a string" in str(typed.value)
    assert typed.value.to_wire()["error"]["code"] == "validation"
    with pytest.raises(ToolError) as unknown:
        await peers.alice.call("termal_watch_mailbox", {})
    assert unknown.value.kind is ErrorKind.UNKNOWN_TOOL
    assert "store" not in str(unknown.value)
    assert str(unknown.value).startswith("unknown tool `termal_watch_mailbox`: this server's")
    assert "termal_read_mailbox" in str(unknown.value)


async def test_a_target_not_found_points_at_the_listing(peers: Peers):
    with pytest.raises(ToolError) as missing:
        await _send(peers.alice, "carol", "m", "k")
    error = missing.value.to_wire()["error"]
    assert error["code"] == "not_found"
    assert error["nextCall"] == {"name": "termal_list_sessions", "arguments": {}}


def test_a_board_page_over_the_budget_ends_early_on_termals_continuation():
    entries = [{"key": f"k{n:03}", "revision": 1, "value": "v" * 3000} for n in range(40)]
    wire = {"generation": 9, "entries": entries, "unchanged": False}
    page = fit_page(wire, 40, READ_RESULT_BUDGET)
    kept = page["entries"]
    assert 1 <= len(kept) < 40 and kept == entries[: len(kept)]
    assert len(json.dumps(page).encode()) <= READ_RESULT_BUDGET
    assert page["nextAfterKey"] == kept[-1]["key"]
    assert page["nextCall"] == {
        "name": "termal_board_list",
        "arguments": {"afterKey": kept[-1]["key"], "snapshotGeneration": 9, "limit": 40},
    }
    assert page["notes"] and "same generation" in page["notes"][0]
    small = fit_page({"generation": 1, "entries": entries[:2], "unchanged": False}, None, 10**6)
    assert small == {"generation": 1, "entries": entries[:2], "unchanged": False}
