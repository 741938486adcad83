"""The Claude Code plugin in the repository: its manifests against what Claude Code
accepts, its MCP server started as Claude Code starts it, its hooks run as Claude Code
runs them, and (where ``claude`` is installed) ``claude plugin validate``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.docs.test_agent_configs import BIN, SIX, conforms, serve_and_list

ROOT = Path(__file__).resolve().parents[2]
MARKETPLACE = ROOT / ".claude-plugin" / "marketplace.json"
CLI = str(BIN / "termal-tui")

# What Claude Code 2.1.197's plugin manifest schema accepts for one userConfig option
# (a strict object) and its option keys (they become CLAUDE_PLUGIN_OPTION_<KEY>).
OPTION_FIELDS = {
    "type",
    "title",
    "description",
    "required",
    "default",
    "multiple",
    "sensitive",
    "min",
    "max",
}
OPTION_TYPES = {"string", "number", "boolean", "directory", "file"}
OPTION_KEY = re.compile(r"^[A-Za-z_]\w*$")


def plugin_root() -> Path:
    (entry,) = json.loads(MARKETPLACE.read_text())["plugins"]
    return (ROOT / entry["source"]).resolve()


def manifest() -> dict[str, Any]:
    return json.loads((plugin_root() / ".claude-plugin" / "plugin.json").read_text())


def test_the_marketplace_lists_the_plugin_by_its_name():
    market = json.loads(MARKETPLACE.read_text())
    assert OPTION_KEY.match(market["name"].replace("-", "_"))
    assert market["owner"]["name"]
    (entry,) = market["plugins"]
    assert entry["source"].startswith("./")  # relative: works from any checkout
    assert entry["name"] == manifest()["name"] == "termal-tui"


def test_the_options_are_what_claude_code_accepts():
    options = manifest()["userConfig"]
    assert set(options) == {"session", "db", "channel", "command"}
    for key, option in options.items():
        assert OPTION_KEY.match(key)
        assert set(option) <= OPTION_FIELDS
        assert option["type"] in OPTION_TYPES and option["title"] and option["description"]
    assert options["session"]["required"] is True and "default" not in options["session"]
    assert options["channel"] == options["channel"] | {"type": "boolean", "default": False}
    assert options["command"]["default"] == "termal-tui" and options["db"]["default"] == ""


def test_nothing_in_the_plugin_is_tied_to_one_machine():
    for path in plugin_root().rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert str(Path.home()) not in text and "/work/" not in text and "/tmp/" not in text
            assert not re.search(r'"(/|~)[^"$]', text), path  # no absolute path in a value


def test_the_skill_says_list_read_process_acknowledge():
    text = (plugin_root() / "skills" / "mailboxes" / "SKILL.md").read_text()
    front = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert front and "name: mailboxes" in front.group(1) and "description: " in front.group(1)
    order = [
        text.index(word) for word in ("**List**", "**Read**", "**Process**", "**Acknowledge**")
    ]
    assert order == sorted(order)
    for needle in ("expectedProcessedThrough", "untrusted", "same idempotencyKey"):
        assert needle in text


def substitute(value: str, options: dict[str, Any]) -> str:
    """What Claude Code does to a plugin's MCP command and args: ``${user_config.KEY}``
    becomes the option's value (its default when unset), booleans as true/false."""

    def one(match: re.Match[str]) -> str:
        found = options[match.group(1)]
        return str(found).lower() if isinstance(found, bool) else str(found)

    return re.sub(r"\$\{user_config\.([^}]+)\}", one, value)


def plugin_server(options: dict[str, Any]) -> tuple[str, list[str]]:
    defaults = {k: o["default"] for k, o in manifest()["userConfig"].items() if "default" in o}
    merged = defaults | options
    servers = json.loads((plugin_root() / ".mcp.json").read_text())["mcpServers"]
    assert set(servers) == {"termal"} and manifest()["channels"] == [{"server": "termal"}]
    server = servers["termal"]
    return substitute(server["command"], merged), [substitute(a, merged) for a in server["args"]]


@pytest.mark.parametrize("channel", [True, False])
async def test_the_plugins_server_serves_the_tools(tmp_path: Path, channel: bool):
    db = tmp_path / "elsewhere" / "coordination.sqlite"
    command, args = plugin_server(
        {"session": "planner", "db": str(db), "channel": channel, "command": CLI}
    )
    names, experimental = await serve_and_list(command, args, db.parent)
    assert names == SIX
    if channel:
        assert experimental == {"claude/channel": {}}
    else:
        assert not experimental
    assert db.exists()  # the option, not the default database


async def test_the_plugins_server_uses_the_default_database_when_db_is_empty(tmp_path: Path):
    command, args = plugin_server({"session": "planner"})
    assert command == "termal-tui"  # found on PATH, as the README says
    names, _experimental = await serve_and_list(command, args, tmp_path)
    assert names == SIX and (tmp_path / "coordination.sqlite").exists()


def plugin_hooks() -> dict[str, str]:
    document = json.loads((plugin_root() / "hooks" / "hooks.json").read_text())
    return {event: groups[0]["hooks"][0]["command"] for event, groups in document["hooks"].items()}


def run_plugin_hook(command: str, env: dict[str, str], payload: dict[str, Any]) -> Any:
    """As Claude Code runs a plugin's command hook: through the shell, with each set
    option exported as CLAUDE_PLUGIN_OPTION_<KEY>."""
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


@pytest.mark.parametrize("with_db", [True, False])
def test_the_plugins_hooks_answer_in_the_clients_shapes(tmp_path: Path, with_db: bool):
    assert set(plugin_hooks()) == {"SessionStart", "UserPromptSubmit", "Stop"}
    db = tmp_path / ("custom.sqlite" if with_db else "coordination.sqlite")
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "TERMAL_HOME": str(tmp_path),
        "CLAUDE_PLUGIN_OPTION_SESSION": "planner",
    }
    if with_db:
        env["CLAUDE_PLUGIN_OPTION_DB"] = str(db)
        env["CLAUDE_PLUGIN_OPTION_COMMAND"] = CLI
    for argv in (["session", "add", "planner"], ["session", "add", "coder"]):
        subprocess.run([CLI, *argv, "--db", str(db)], env=env, check=True, capture_output=True)
    hooks = plugin_hooks()
    assert run_plugin_hook(hooks["SessionStart"], env, {"hook_event_name": "SessionStart"}) is None
    subprocess.run(
        [CLI, "send", "--as", "coder", "planner", "hi", "--db", str(db)],
        env=env,
        check=True,
        capture_output=True,
    )
    outputs = {
        "UserPromptSubmit": run_plugin_hook(hooks["UserPromptSubmit"], env, {"prompt": "go"}),
        "Stop": run_plugin_hook(hooks["Stop"], env, {"stop_hook_active": False}),
    }
    prompt = outputs["UserPromptSubmit"]
    assert "[TermAl mailbox notification]" in prompt["hookSpecificOutput"]["additionalContext"]
    assert outputs["Stop"]["decision"] == "block"
    assert all(conforms(event, document) for event, document in outputs.items()), outputs


def claude() -> str | None:
    return os.environ.get("TERMAL_TUI_CLAUDE") or shutil.which("claude")


@pytest.mark.skipif(claude() is None, reason="claude is not installed (TERMAL_TUI_CLAUDE)")
@pytest.mark.parametrize("path", [ROOT, ROOT / "plugins" / "termal-tui"])
def test_claude_plugin_validate_passes_strictly(tmp_path: Path, path: Path):
    done = subprocess.run(
        [str(claude()), "plugin", "validate", "--strict", str(path)],
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout
