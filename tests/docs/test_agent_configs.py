"""The agent configurations the docs show (docs/agents/), copied as a user would and run for real."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from termal_tui.agents.board_tools import BOARD_TOOL_NAMES
from termal_tui.agents.tools import TOOL_NAMES

DOCS = Path(__file__).resolve().parents[2] / "docs"
BIN = Path(sys.executable).parent
SIX = set(TOOL_NAMES) | set(BOARD_TOOL_NAMES)  # the mailbox six and the board three


def documented(name: str) -> str:
    """The fenced block that follows ``<!-- file: NAME -->`` in the docs (exactly one)."""
    pattern = rf"<!-- file: {re.escape(name)} -->\s*```\w*\n(.*?)```"
    blocks = [b for page in DOCS.rglob("*.md") for b in re.findall(pattern, page.read_text(), re.S)]
    assert len(blocks) == 1, f"the docs have {len(blocks)} blocks for {name}"
    return blocks[0]


def environment(home: Path) -> dict[str, str]:
    return {"TERMAL_HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def register_documented_session(args: list[str], home: Path) -> None:
    """As the docs say: the session is registered before its server starts."""
    name = args[args.index("--session") + 1]
    done = subprocess.run(
        [str(BIN / "termal-tui"), "session", "add", name],
        capture_output=True,
        text=True,
        env=environment(home),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


async def serve_and_list(command: str, args: list[str], home: Path) -> tuple[set[str], Any]:
    register_documented_session(args, home)
    executable = str(BIN / command) if command == "termal-tui" else command
    params = StdioServerParameters(command=executable, args=args, env=environment(home))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        info = await client.initialize()
        tools = await client.list_tools()
        return {t.name for t in tools.tools}, info.capabilities.experimental


async def test_the_claude_code_mcp_json_serves_the_six_tools_with_a_channel(tmp_path: Path):
    (server,) = json.loads(documented(".mcp.json"))["mcpServers"].values()
    names, experimental = await serve_and_list(server["command"], server["args"], tmp_path)
    assert names == SIX
    assert experimental == {"claude/channel": {}}


async def test_the_codex_config_toml_serves_the_six_tools(tmp_path: Path):
    server = tomllib.loads(documented("config.toml"))["mcp_servers"]["termal"]
    names, experimental = await serve_and_list(server["command"], server["args"], tmp_path)
    assert names == SIX
    assert not experimental  # no channel for Codex: its wakes come from the tools or hooks


def run_hook(command: str, home: Path, payload: dict[str, Any]) -> dict[str, Any] | None:
    done = subprocess.run(
        shlex.split(command),
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=environment(home),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


# What each client accepts on a hook's stdout (Codex validates with additionalProperties
# false: any other key is an error; Claude Code reads the same fields).
ALLOWED = {
    "SessionStart": {
        "continue",
        "hookSpecificOutput",
        "stopReason",
        "suppressOutput",
        "systemMessage",
    },
    "UserPromptSubmit": {
        "continue",
        "decision",
        "hookSpecificOutput",
        "reason",
        "stopReason",
        "suppressOutput",
        "systemMessage",
    },
    "Stop": {"continue", "decision", "reason", "stopReason", "suppressOutput", "systemMessage"},
}
ALLOWED_SPECIFIC = {"SessionStart": {"hookEventName", "additionalContext", "env"}}
ALLOWED_SPECIFIC["UserPromptSubmit"] = {"hookEventName", "additionalContext"}


def conforms(event: str, document: dict[str, Any] | None) -> bool:
    if document is None:
        return True
    specific = document.get("hookSpecificOutput")
    return set(document) <= ALLOWED[event] and (
        specific is None
        or (set(specific) <= ALLOWED_SPECIFIC[event] and specific["hookEventName"] == event)
    )


@pytest.mark.parametrize("settings", [".claude/settings.json", ".codex/hooks.json"])
def test_the_documented_hooks_produce_the_clients_shapes(tmp_path: Path, settings: str):
    hooks = json.loads(documented(settings))["hooks"]
    command = {event: entries[0]["hooks"][0]["command"] for event, entries in hooks.items()}
    me = shlex.split(command["Stop"])[-1]  # the session these hooks serve
    peer = "coder" if me == "planner" else "planner"
    cli = str(BIN / "termal-tui")
    env = environment(tmp_path)
    for argv in (["session", "add", "planner"], ["session", "add", "coder"]):
        subprocess.run([cli, *argv], env=env, check=True, capture_output=True)
    outputs: list[tuple[str, dict[str, Any] | None]] = []

    def send(body: str) -> None:
        subprocess.run(
            [cli, "send", "--as", peer, me, body], env=env, check=True, capture_output=True
        )

    def hook(event: str, payload: dict[str, Any]) -> Any:
        document = run_hook(command[event], tmp_path, payload)
        outputs.append((event, document))
        return document

    assert hook("SessionStart", {"hook_event_name": "SessionStart"}) is None  # nothing yet
    send("tests are green")
    start = hook("SessionStart", {"hook_event_name": "SessionStart"})
    assert start["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "tests are green" not in json.dumps(start)  # metadata only
    send("one more thing")
    prompt = hook("UserPromptSubmit", {"prompt": "go on"})
    assert prompt["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "[TermAl mailbox notification]" in prompt["hookSpecificOutput"]["additionalContext"]
    send("while you work")
    stop = hook("Stop", {"stop_hook_active": False})
    assert stop["decision"] == "block" and f"#3 from {peer}" in stop["reason"]
    assert hook("Stop", {"stop_hook_active": True}) is None
    assert all(conforms(event, document) for event, document in outputs), outputs
