"""``termal-tui setup``: run as a user would, against a temporary HOME and project that
already hold someone else's servers and hooks."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from termal_tui.agents import setup
from tests.docs.test_agent_configs import BIN, SIX, conforms, run_hook, serve_and_list

CLI = str(BIN / "termal-tui")

MCP_JSON = """{
    "mcpServers": {
        "other": {"command": "npx", "args": ["-y", "other-server"], "env": {"K": "v"}}
    }
}
"""
SETTINGS_JSON = """{
  "permissions": {"allow": ["Bash(ls:*)"]},
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done"}]}
    ],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}]
  }
}
"""
CONFIG_TOML = """# my codex config
model = "o3"   # keep this comment

[mcp_servers.other]
command = "other"   # theirs
args = ["--x"]

[mcp_servers.other.env]
TOKEN = "t"
"""
OTHER_GROUP = '{"hooks": [{"type": "command", "command": "notify-send done"}]}'
OTHER_SERVER = '"other": {"command": "npx", "args": ["-y", "other-server"], "env": {"K": "v"}}'


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    (home / ".codex").mkdir(parents=True)
    (project / ".claude").mkdir(parents=True)
    (project / ".mcp.json").write_text(MCP_JSON)
    (project / ".claude" / "settings.json").write_text(SETTINGS_JSON)
    (home / ".codex" / "config.toml").write_text(CONFIG_TOML)
    env = {
        "HOME": str(home),
        "TERMAL_HOME": str(tmp_path / "termal"),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return {"home": home, "project": project, "env": env, "termal": tmp_path / "termal"}


def db_args(world: dict[str, Any]) -> list[str]:
    """What setup adds with TERMAL_HOME set and no --db: the clients do not pass
    TERMAL_HOME to their server, so the default would be another file there."""
    return ["--db", str(world["termal"] / "coordination.sqlite")]


def run(world: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "setup", *args],
        cwd=world["project"],
        env=world["env"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def snapshot(world: dict[str, Any]) -> dict[str, bytes]:
    roots = [world["project"], world["home"]]
    return {
        str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_claude_setup_merges_keeps_theirs_and_a_second_run_changes_nothing(world: dict[str, Any]):
    done = run(world, "claude", "--session", "planner", "--register")
    assert done.returncode == 0, done.stderr
    assert "registered planner (session-" in done.stdout
    assert "note: wrote --db " in done.stderr and "does not pass TERMAL_HOME" in done.stderr
    mcp_text = (world["project"] / ".mcp.json").read_text()
    settings_text = (world["project"] / ".claude" / "settings.json").read_text()
    assert OTHER_SERVER in mcp_text  # their server, byte for byte
    assert OTHER_GROUP in settings_text and '"permissions": {"allow": ["Bash(ls:*)"]}' in (
        settings_text
    )
    mcp = json.loads(mcp_text)
    assert mcp["mcpServers"]["other"] == json.loads(MCP_JSON)["mcpServers"]["other"]
    assert mcp["mcpServers"]["termal"] == {
        "command": CLI,
        "args": ["mcp", "--session", "planner", *db_args(world)],
    }
    settings = json.loads(settings_text)
    assert settings["permissions"] == {"allow": ["Bash(ls:*)"]}
    assert settings["hooks"]["PreToolUse"] == json.loads(SETTINGS_JSON)["hooks"]["PreToolUse"]
    assert settings["hooks"]["Stop"][0] == json.loads(OTHER_GROUP)
    for event, name in setup.HOOK_EVENTS.items():
        commands = [h["command"] for g in settings["hooks"][event] for h in g["hooks"]]
        assert shlex.join([CLI, "hook", name, "--session", "planner", *db_args(world)]) in commands
    before = snapshot(world)
    again = run(world, "claude", "--session", "planner", "--register")
    assert again.returncode == 0, again.stderr
    assert "nothing to change" in again.stdout and "registered" not in again.stdout
    assert snapshot(world) == before


def test_codex_setup_appends_our_table_and_keeps_their_comments(world: dict[str, Any]):
    done = run(world, "codex", "--session", "coder", "--register")
    assert done.returncode == 0, done.stderr
    config = world["home"] / ".codex" / "config.toml"
    text = config.read_text()
    assert text.startswith(CONFIG_TOML)  # every byte of theirs, comments included
    parsed = tomllib.loads(text)
    assert parsed["model"] == "o3"
    assert parsed["mcp_servers"]["other"] == {
        "command": "other",
        "args": ["--x"],
        "env": {"TOKEN": "t"},
    }
    assert parsed["mcp_servers"]["termal"] == {
        "command": CLI,
        "args": ["mcp", "--session", "coder", *db_args(world)],
    }
    hooks = json.loads((world["home"] / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == set(setup.HOOK_EVENTS)
    before = snapshot(world)
    again = run(world, "codex", "--session", "coder")
    assert again.returncode == 0 and "nothing to change" in again.stdout
    assert snapshot(world) == before


def test_codex_project_config_goes_into_the_projects_codex_directory(world: dict[str, Any]):
    done = run(world, "codex", "--session", "coder", "--project", str(world["project"]))
    assert done.returncode == 0, done.stderr
    assert "only once it trusts" in done.stderr  # Codex reads it for a trusted project
    assert "not registered yet" in done.stderr  # registration is explicit
    assert (world["project"] / ".codex" / "config.toml").exists()
    assert (world["project"] / ".codex" / "hooks.json").exists()
    assert (world["home"] / ".codex" / "config.toml").read_text() == CONFIG_TOML


def test_dry_run_prints_a_diff_and_writes_nothing(world: dict[str, Any]):
    before = snapshot(world)
    done = run(world, "claude", "--session", "planner", "--register", "--channel", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"--- {world['project'] / '.mcp.json'}" in done.stdout
    assert '+        "termal": {' in done.stdout and '+                "--channel"' in done.stdout
    assert "would register planner" in done.stdout
    assert snapshot(world) == before
    assert not world["termal"].exists()  # not even the registry


def test_a_conflicting_entry_is_named_and_left_and_force_replaces_only_it(world: dict[str, Any]):
    assert run(world, "claude", "--session", "planner", "--register").returncode == 0
    assert run(world, "codex", "--session", "coder", "--register").returncode == 0
    before = snapshot(world)
    for client in ("claude", "codex"):
        refused = run(world, client, "--session", "reviewer")
        assert refused.returncode == 4, refused.stderr
        assert "server termal is already there" in refused.stderr
        assert "the Stop hook is already there" in refused.stderr
        assert "nothing written" in refused.stderr
    assert snapshot(world) == before
    forced = run(world, "claude", "--session", "reviewer", "--force", "--register")
    assert forced.returncode == 0, forced.stderr
    mcp_text = (world["project"] / ".mcp.json").read_text()
    assert OTHER_SERVER in mcp_text
    assert json.loads(mcp_text)["mcpServers"]["termal"]["args"] == [
        "mcp",
        "--session",
        "reviewer",
        *db_args(world),
    ]
    settings_text = (world["project"] / ".claude" / "settings.json").read_text()
    assert OTHER_GROUP in settings_text and "--session planner" not in settings_text
    assert settings_text.count("--session reviewer") == 3
    forced = run(world, "codex", "--session", "reviewer", "--force")
    assert forced.returncode == 0, forced.stderr
    text = (world["home"] / ".codex" / "config.toml").read_text()
    assert text.startswith(CONFIG_TOML) and text.count("[mcp_servers.termal]") == 1
    assert tomllib.loads(text)["mcp_servers"]["termal"]["args"][:3] == [
        "mcp",
        "--session",
        "reviewer",
    ]


def test_check_reports_what_is_missing(world: dict[str, Any]):
    nothing = run(world, "--check")
    assert nothing.returncode == 3 and "claude: not set up" in nothing.stdout
    assert run(world, "claude", "--session", "planner").returncode == 0  # not registered
    missing = run(world, "--check")
    assert missing.returncode == 3
    assert "FAIL session  missing: planner is not registered" in missing.stdout
    assert "codex: not set up" in missing.stdout
    subprocess.run([CLI, "session", "add", "planner"], env=world["env"], check=True)
    assert run(world, "--check").returncode == 0
    settings = world["project"] / ".claude" / "settings.json"
    document = json.loads(settings.read_text())
    del document["hooks"]["Stop"][1]
    settings.write_text(json.dumps(document))
    broken = run(world, "--check", "claude")
    assert broken.returncode == 3
    assert f"FAIL hooks    missing in {settings}: Stop" in broken.stdout
    codex = run(world, "--check", "codex")
    assert codex.returncode == 3 and "missing: no termal server" in codex.stdout


def test_what_setup_writes_serves_the_tools_and_its_hooks_answer_in_the_clients_shapes(
    world: dict[str, Any],
):
    db = world["termal"] / "other.sqlite"
    done = run(world, "claude", "--session", "planner", "--db", str(db), "--register")
    assert done.returncode == 0, done.stderr
    subprocess.run([CLI, "session", "add", "coder", "--db", str(db)], env=world["env"], check=True)
    subprocess.run(
        [CLI, "send", "--as", "coder", "planner", "hello", "--db", str(db)],
        env=world["env"],
        check=True,
        capture_output=True,
    )
    settings = json.loads((world["project"] / ".claude" / "settings.json").read_text())
    ours = {
        event: next(
            h["command"]
            for g in settings["hooks"][event]
            for h in g["hooks"]
            if setup.hook_of(h["command"])
        )
        for event in setup.HOOK_EVENTS
    }
    home = world["termal"]
    start = run_hook(ours["SessionStart"], home, {"hook_event_name": "SessionStart"})
    assert start and "[TermAl mailbox notification]" in json.dumps(start)
    stop = run_hook(ours["Stop"], home, {"stop_hook_active": False})
    assert stop and stop["decision"] == "block"
    assert conforms("SessionStart", start) and conforms("Stop", stop)
    prompt = run_hook(ours["UserPromptSubmit"], home, {"prompt": "go"})
    assert conforms("UserPromptSubmit", prompt)


async def test_the_server_setup_writes_serves_the_tools(world: dict[str, Any]):
    done = run(world, "codex", "--session", "coder")  # serve_and_list registers it
    assert done.returncode == 0, done.stderr
    config = tomllib.loads((world["home"] / ".codex" / "config.toml").read_text())
    server = config["mcp_servers"]["termal"]
    names, experimental = await serve_and_list(server["command"], server["args"], world["termal"])
    assert names == SIX and not experimental


# ------------------------------------------------------------------ the editor, directly


def target(session: str = "planner") -> setup.Target:
    return setup.Target("claude", session, ("/opt/termal-tui",))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{}",
        "{}\n",
        '{"mcpServers": {}}',
        '{"a": 1, "mcpServers": {"x": {"command": "x"}}}',
        '{\n\t"mcpServers": {\n\t\t"x": {"command": "x"}\n\t}\n}\n',
        '{"hooks": {"Stop": []}}',
        '{"hooks": {"Stop": [{"hooks": []}], "Other": [1, 2]}, "z": [\n  1\n]}',
    ],
)
def test_the_json_editor_adds_ours_to_any_shape_and_keeps_the_rest(tmp_path: Path, text: str):
    files = setup.Files(tmp_path / "mcp.json", tmp_path / "settings.json")
    for path in (files.config, files.hooks):
        path.write_text(text)
    planned = setup.plan(target(), files)
    original = json.loads(text) if text.strip() else {}
    for file_plan in planned.plans:
        result = json.loads(file_plan.after)
        for key, value in original.items():
            if key not in ("mcpServers", "hooks"):
                assert result[key] == value
    mcp = json.loads(planned.plans[0].after)
    assert mcp["mcpServers"]["termal"] == target().server()
    for key, value in original.get("mcpServers", {}).items():
        assert mcp["mcpServers"][key] == value
    hooks = json.loads(planned.plans[1].after)["hooks"]
    for event, groups in original.get("hooks", {}).items():
        assert hooks[event][: len(groups)] == groups
    setup.write(planned)
    assert not setup.plan(target(), files).changed  # idempotent


def test_a_file_that_is_not_json_is_refused_and_left(tmp_path: Path):
    files = setup.Files(tmp_path / "mcp.json", tmp_path / "settings.json")
    files.config.write_text('{"mcpServers": {} // a comment\n}')
    with pytest.raises(setup.SetupError, match="not plain JSON"):
        setup.plan(target(), files)


def test_a_symlinked_config_is_written_through_the_link(tmp_path: Path):
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text(MCP_JSON)
    link = tmp_path / "mcp.json"
    link.symlink_to(real)
    files = setup.Files(link, tmp_path / "settings.json")
    setup.write(setup.plan(target(), files))
    assert link.is_symlink() and "termal" in json.loads(real.read_text())["mcpServers"]


def test_the_command_is_the_full_path():
    assert setup.termal_command(CLI) == (CLI,)
    (command, *rest) = setup.termal_command("/nowhere/pytest")
    assert os.path.isabs(command) and (not rest or rest == ["-m", "termal_tui"])


def test_check_sees_the_claude_code_plugin_and_setup_twice(world: dict[str, Any]):
    settings = world["home"] / ".claude" / "settings.json"
    settings.parent.mkdir()
    # The shape `claude plugin install termal-tui@termal-tui --config session=...` writes.
    settings.write_text(
        json.dumps(
            {
                "enabledPlugins": {"termal-tui@termal-tui": True},
                "pluginConfigs": {"termal-tui@termal-tui": {"options": {"session": "planner"}}},
            }
        )
    )
    unregistered = run(world, "--check", "claude")
    assert unregistered.returncode == 3
    assert "the plugin termal-tui@termal-tui is enabled" in unregistered.stdout
    assert "FAIL session  missing: planner is not registered" in unregistered.stdout
    # TERMAL_HOME is set and the db option is empty: its server would open ~/.termal's
    db = world["termal"] / "coordination.sqlite"
    assert (
        f"FAIL database its server opens {world['home'] / '.termal' / 'coordination.sqlite'}"
        in unregistered.stdout
    )
    assert f"--config db={db}" in unregistered.stdout
    subprocess.run([CLI, "session", "add", "planner"], env=world["env"], check=True)
    document = json.loads(settings.read_text())
    document["pluginConfigs"]["termal-tui@termal-tui"]["options"]["db"] = str(db)
    settings.write_text(json.dumps(document))
    registered = run(world, "--check")
    assert registered.returncode == 0, registered.stdout
    assert "claude: not set up" not in registered.stdout
    assert run(world, "claude", "--session", "planner").returncode == 0
    twice = run(world, "--check")
    assert twice.returncode == 3 and "FAIL twice" in twice.stdout


def test_usage_errors_write_nothing(world: dict[str, Any]):
    before = snapshot(world)
    for argv in (
        ["codex", "--channel"],
        [],
        ["--check", "--force"],
        ["claude", "--session", "a/b"],
    ):
        done = run(world, *argv)
        assert done.returncode in (2, 8), (argv, done.stderr)
        assert done.stderr.startswith(("usage:", "termal-tui: error:", "Usage:"))
    assert snapshot(world) == before


# ------------------------------------------------------------------ what the client needs


def test_the_db_is_written_only_when_the_clients_default_would_differ(tmp_path: Path):
    home = {"HOME": str(tmp_path), "PATH": "/usr/bin"}
    moved = {**home, "TERMAL_HOME": str(tmp_path / "elsewhere")}
    for client in setup.CLIENTS:
        assert setup.db_to_write(client, None, home) is None  # ~/.termal for both
        assert setup.db_to_write(client, None, moved) == tmp_path / "elsewhere" / (
            "coordination.sqlite"
        )
        given = tmp_path / "given.sqlite"
        assert setup.db_to_write(client, given, moved) == given
        # TERMAL_HOME pointing at the default directory changes nothing there
        same = {**home, "TERMAL_HOME": str(tmp_path / ".termal")}
        assert setup.db_to_write(client, None, same) is None


def test_the_client_gives_its_server_only_its_own_variables():
    environ = {
        "HOME": "/h",
        "PATH": "/p",
        "TERMAL_HOME": "/t",
        "LANG": "C.UTF-8",
        "SECRET": "s",
        "FORWARD": "f",
    }
    assert setup.client_env("claude", None, environ) == {"HOME": "/h", "PATH": "/p"}
    assert setup.client_env("codex", None, environ) == {
        "HOME": "/h",
        "PATH": "/p",
        "LANG": "C.UTF-8",
    }
    server = {"command": "x", "env": {"TERMAL_HOME": "/given"}, "env_vars": ["FORWARD"]}
    assert setup.client_env("claude", server, environ)["TERMAL_HOME"] == "/given"
    assert "FORWARD" not in setup.client_env("claude", server, environ)  # Codex's key only
    assert setup.client_env("codex", server, environ)["FORWARD"] == "f"
    assert setup.default_db_in(setup.client_env("claude", server, environ)) == Path(
        "/given/coordination.sqlite"
    )


def _old_setup(world: dict[str, Any], session: str = "planner") -> None:
    """What setup wrote before it knew about TERMAL_HOME: no --db anywhere."""
    target = setup.Target("claude", session, (CLI,))
    setup.write(setup.plan(target, setup.files_for("claude", world["project"])))


def test_check_fails_where_the_client_would_open_another_database(world: dict[str, Any]):
    _old_setup(world)
    subprocess.run([CLI, "session", "add", "planner"], env=world["env"], check=True)
    checked = run(world, "--check", "claude")
    assert checked.returncode == 3, checked.stdout  # said `ok` before
    home_db = world["home"] / ".termal" / "coordination.sqlite"
    ours = world["termal"] / "coordination.sqlite"
    assert "FAIL session  the config and hooks disagree" in checked.stdout
    assert f"{home_db} (the server)" in checked.stdout
    assert f"{ours} (the hooks)" in checked.stdout
    assert "setup again to write --db" in checked.stdout
    assert not (world["home"] / ".termal").exists()  # the check created nothing there
    fixed = run(world, "claude", "--session", "planner", "--force")
    assert fixed.returncode == 0, fixed.stderr
    again = run(world, "--check", "claude")
    assert again.returncode == 0, again.stdout
    assert "ok   server   started as Claude Code starts it, it answers the MCP handshake" in (
        again.stdout
    )


def test_check_starts_the_server_and_says_why_it_fails(world: dict[str, Any]):
    broken = world["home"] / "bin" / "termal-tui-broken"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'cannot open the database: disk on fire' >&2\nexit 7\n")
    broken.chmod(0o755)
    db = world["termal"] / "coordination.sqlite"
    subprocess.run([CLI, "session", "add", "coder"], env=world["env"], check=True)
    config = world["home"] / ".codex" / "config.toml"
    args = ["mcp", "--session", "coder", "--db", str(db)]
    config.write_text(
        CONFIG_TOML + f"\n[mcp_servers.termal]\ncommand = {json.dumps(str(broken))}\n"
        f"args = {json.dumps(args)}\n"
    )
    target = setup.Target("codex", "coder", (CLI,), db=db)
    hooks_plan = setup.plan(target, setup.files_for("codex", None, world["home"]), force=True)
    setup.write(setup.Plan(target, hooks_plan.files, hooks_plan.plans[1:], [], []))
    checked = run(world, "--check", "codex")
    assert checked.returncode == 3, checked.stdout
    assert "FAIL server   started as Codex starts it" in checked.stdout
    assert "(exit 7): cannot open the database: disk on fire" in checked.stdout


def test_the_handshake_is_a_real_mcp_exchange(tmp_path: Path):
    import sys

    fake = tmp_path / "fake.py"
    fake.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m.get('method') == 'initialize':\n"
        "        assert m['params']['protocolVersion']\n"
        "        r = {'protocolVersion': '2025-06-18', 'capabilities': {}, "
        "'serverInfo': {'name': 'f', 'version': '1'}}\n"
        "    elif m.get('method') == 'tools/list':\n"
        "        r = {'tools': [{'name': 'a'}, {'name': 'b'}]}\n"
        "    else:\n"
        "        continue\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}), flush=True)\n"
    )
    env = {"PATH": os.environ["PATH"]}
    assert setup.handshake([sys.executable, str(fake)], env) == (True, "2 tools")
    silent = [sys.executable, "-c", "import time; time.sleep(30)"]
    ok, said = setup.handshake(silent, env, timeout=0.2)
    assert not ok and "no answer to initialize within 0.2 s" in said
    ok, said = setup.handshake([str(tmp_path / "missing")], env)
    assert not ok and said.startswith("it does not start")
    env_probe = [sys.executable, "-c", "import os, sys; sys.exit(os.environ.get('X', 'unset'))"]
    ok, said = setup.handshake(env_probe, {"PATH": os.environ["PATH"]})
    assert not ok and said.endswith(": unset")  # exactly the env given, nothing inherited


# ------------------------------------------------------------------ conflicts, described


def test_a_conflicting_http_entry_is_described_by_its_url(world: dict[str, Any]):
    (world["project"] / ".mcp.json").write_text(
        '{"mcpServers": {"termal": {"type": "http", "url": "http://127.0.0.1:8765/mcp"}}}\n'
    )
    config = world["home"] / ".codex" / "config.toml"
    config.write_text(CONFIG_TOML + '\n[mcp_servers.termal]\nurl = "http://127.0.0.1:8765/mcp"\n')
    claude = run(world, "claude", "--session", "planner")
    assert claude.returncode == 4
    assert (
        "server termal is already there and connects to the http server at "
        "http://127.0.0.1:8765/mcp" in claude.stderr
    )
    assert "'?'" not in claude.stderr
    codex = run(world, "codex", "--session", "planner")
    assert codex.returncode == 4
    assert "connects to the server at http://127.0.0.1:8765/mcp" in codex.stderr
    checked = run(world, "--check", "codex")
    assert "FAIL config" in checked.stdout and "not a termal-tui command" in checked.stdout


@pytest.mark.parametrize(
    ("entry", "phrase"),
    [
        ({"command": 42}, "has a command that is not a string (42)"),
        (
            {"command": "termal-tui", "args": "mcp"},
            'has args that are not a list of strings ("mcp")',
        ),
        (
            {"command": "termal-tui", "args": ["mcp", 7]},
            'has args that are not a list of strings (["mcp", 7])',
        ),
        ({"url": 8765}, "has a url that is not a string (8765)"),
        ({"env": {}}, "has no command or url (it sets env)"),
        ({"command": "termal-tui", "args": None}, "starts `termal-tui`"),
    ],
)
def test_a_malformed_entry_is_described_as_it_is(entry: dict[str, Any], phrase: str):
    """Each phrase says what is wrong with the entry as written: a string of args is not
    read letter by letter as a command line, a number is not "no command"."""
    assert setup.common.describe_server(entry) == phrase


# ------------------------------------------------------------------ --remove


def test_remove_restores_every_byte_after_setup(world: dict[str, Any]):
    before = snapshot(world)
    for client in ("claude", "codex"):
        assert run(world, client, "--session", "planner", "--register").returncode == 0
    assert snapshot(world) != before
    dry = run(world, "--remove", "--dry-run")
    assert dry.returncode == 0 and "dry run: nothing written" in dry.stdout
    assert "restored to its bytes before setup" in dry.stdout
    assert f"--- {world['project'] / '.mcp.json'}" in dry.stdout
    done = run(world, "--remove")
    assert done.returncode == 0, done.stderr
    assert snapshot(world) == before  # byte for byte, every file
    again = run(world, "--remove")
    assert "claude: nothing of ours to remove" in again.stdout
    assert snapshot(world) == before


def test_remove_deletes_what_setup_created_directories_included(tmp_path: Path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    world = {
        "home": home,
        "project": project,
        "env": {"HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
        "termal": home / ".termal",
    }
    done = run(world, "claude", "--session", "planner")
    assert done.returncode == 0, done.stderr
    assert (project / ".mcp.json").exists() and (project / ".claude" / "settings.json").exists()
    assert "--db" not in (project / ".mcp.json").read_text()  # the default is the same there
    codex = run(world, "codex", "--session", "planner", "--project", str(project))
    assert codex.returncode == 0, codex.stderr
    removed = run(world, "--remove", "--project", str(project))
    assert removed.returncode == 0, removed.stderr
    assert "removed (setup created it)" in removed.stdout
    assert sorted(p.name for p in project.iterdir()) == []  # .claude and .codex too
    assert not list((home / ".termal" / "setup").iterdir())  # the records are gone


def test_remove_takes_only_ours_from_a_file_changed_since(world: dict[str, Any]):
    assert run(world, "claude", "--session", "planner").returncode == 0
    assert run(world, "codex", "--session", "planner").returncode == 0
    mcp = world["project"] / ".mcp.json"
    edited = mcp.read_text().replace('"other": {', '"mine": {"command": "m"},\n        "other": {')
    mcp.write_text(edited)
    config = world["home"] / ".codex" / "config.toml"
    config.write_text(config.read_text() + "\n# a note of mine\n[profiles.x]\nmodel = 'y'\n")
    settings = world["project"] / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace('"Bash(ls:*)"', '"Bash(ls:*)", "Read"'))
    done = run(world, "--remove")
    assert done.returncode == 0, done.stderr
    assert "removed our entries (changed since setup" in done.stdout
    assert mcp.read_text() == MCP_JSON.replace(
        '"other": {', '"mine": {"command": "m"},\n        "other": {'
    )
    assert settings.read_text() == SETTINGS_JSON.replace('"Bash(ls:*)"', '"Bash(ls:*)", "Read"')
    # their comment after our table belongs to their table: it stays, and so does the rest
    assert config.read_text() == CONFIG_TOML + "\n# a note of mine\n[profiles.x]\nmodel = 'y'\n"
    hooks = world["home"] / ".codex" / "hooks.json"
    assert not hooks.exists()  # created by setup and unchanged since


def test_remove_without_a_record_takes_out_only_ours(world: dict[str, Any]):
    before = snapshot(world)
    assert run(world, "claude", "--session", "planner").returncode == 0
    for record in (world["termal"] / "setup").iterdir():
        record.unlink()
    done = run(world, "--remove", "claude")
    assert done.returncode == 0, done.stderr
    assert "removed our entries (the rest kept as it is)" in done.stdout
    assert snapshot(world) == before  # our entries were appended: taking them out restores


def test_remove_restores_crlf_and_a_missing_final_newline_exactly(tmp_path: Path):
    files = setup.Files(tmp_path / "mcp.json", tmp_path / "settings.json")
    files.config.write_bytes(b'{\r\n  "mcpServers": {\r\n    "x": {"command": "x"}\r\n  }\r\n}')
    files.hooks.write_bytes(b'{"hooks": {}}')
    before = {p: p.read_bytes() for p in (files.config, files.hooks)}
    records = tmp_path / "records"
    setup.write(setup.plan(target(), files), records)
    assert files.config.read_bytes() != before[files.config]
    setup.apply_removal(setup.plan_removal("claude", files, records))
    assert {p: p.read_bytes() for p in (files.config, files.hooks)} == before
    files.config.chmod(0o600)
    setup.write(setup.plan(target(), files), records)
    assert files.config.stat().st_mode & 0o777 == 0o600  # the mode is kept


def test_remove_usage_errors(world: dict[str, Any]):
    before = snapshot(world)
    for argv in (
        ["--remove", "--check"],
        ["--remove", "--session", "x"],
        ["--remove", "--force"],
        ["--check", "--db", "/tmp/x.sqlite"],
    ):
        done = run(world, *argv)
        assert done.returncode == 2, (argv, done.stderr)
    assert snapshot(world) == before


@pytest.mark.parametrize(
    "text",
    [
        '{"mcpServers": {"termal": {"command": "/opt/termal-tui", "args": ["mcp"]}}}',
        '{"a": 1, "mcpServers": {"termal": {"command": "/opt/termal-tui", "args": ["mcp"]}}}',
        '{\n  "mcpServers": {\n    "x": {"command": "x"},\n    "termal": {"command": '
        '"/opt/termal-tui", "args": ["mcp"]}\n  }\n}\n',
        '{\n  "mcpServers": {\n    "termal": {"command": "/opt/termal-tui", "args": ["mcp"]},\n'
        '    "x": {"command": "x"}\n  },\n  "z": 2\n}\n',
    ],
)
def test_the_json_editor_deletes_only_our_server(tmp_path: Path, text: str):
    from termal_tui.agents.setup import undo

    path = tmp_path / "mcp.json"
    stripped = undo._strip(path, text)
    expected = json.loads(text)
    del expected["mcpServers"]["termal"]
    if not expected["mcpServers"]:
        del expected["mcpServers"]
    assert json.loads(stripped) == expected
    for line in text.splitlines():  # every other line is still there as it was
        if "termal" not in line and line.strip() not in ("{", "}", "},", '"mcpServers": {'):
            assert line.rstrip(",") in stripped


def test_the_toml_editor_adds_and_removes_our_table_and_keeps_the_rest(tmp_path: Path):
    from termal_tui.agents.setup import tomledit

    path = tmp_path / "config.toml"
    server = target().server()
    for text in [
        "",
        'model = "x"',
        CONFIG_TOML,
        "[mcp_servers.other]\ncommand = 'x'\n\n[profiles.p]\nmodel = 'y'\n",
        "mcp_servers = { other = { command = 'x' } }\n",
    ]:
        added = tomledit.with_server(text, path, server)
        parsed = tomllib.loads(added)
        assert parsed["mcp_servers"]["termal"] == server
        original = tomllib.loads(text)
        for key, value in original.items():
            if key != "mcp_servers":
                assert parsed[key] == value
        for name, value in original.get("mcp_servers", {}).items():
            assert parsed["mcp_servers"][name] == value
        removed = tomllib.loads(tomledit.without_server(added, path))
        assert removed == original
        if text.endswith("\n") and "profiles" not in text and "{" not in text:
            assert added.startswith(text)  # appended: every byte of theirs first
    replaced = tomledit.with_server(
        CONFIG_TOML + '\n[mcp_servers.termal]\ncommand = "old"  # was\n', path, server
    )
    assert replaced.startswith(CONFIG_TOML) and replaced.count("[mcp_servers.termal]") == 1
    assert tomllib.loads(replaced)["mcp_servers"]["termal"] == server


def test_check_starts_a_channel_server_without_its_channel(world: dict[str, Any]):
    done = run(world, "claude", "--session", "planner", "--register", "--channel")
    assert done.returncode == 0, done.stderr
    checked = run(world, "--check", "claude")
    assert checked.returncode == 0, checked.stdout
    assert "ok   server   started as Claude Code starts it (without --channel), it answers" in (
        checked.stdout
    )
    sessions = subprocess.run(
        [CLI, "session", "list"], env=world["env"], capture_output=True, text=True, check=True
    )
    assert "channel connected" not in sessions.stdout  # the check took no wake-ups


def test_setup_on_postgresql_writes_the_url_without_its_password_and_check_works(
    world: dict[str, Any], pg_url: str
):
    """A postgresql:// --db: registered in that database, written into the config and
    the hooks without its password (the server's command line is in the process list;
    libpq takes it from ~/.pgpass, PGPASSFILE or PGPASSWORD), and --check checks it."""
    with_password = pg_url.replace("termal@", "termal:s3cret-pw@", 1)
    assert with_password != pg_url
    done = run(world, "claude", "--session", "planner", "--db", with_password, "--register")
    assert done.returncode == 0, done.stderr
    assert "holds a password" in done.stderr  # the warning every command gives
    assert "password is not written" in done.stderr
    assert "registered planner" in done.stdout
    written = "".join(v.decode() for v in snapshot(world).values())
    assert "s3cret-pw" not in written
    server = json.loads((world["project"] / ".mcp.json").read_text())["mcpServers"]["termal"]
    assert server["args"][-2:] == ["--db", pg_url]
    settings = (world["project"] / ".claude" / "settings.json").read_text()
    assert shlex.quote(pg_url) in settings
    assert not list(Path(world["project"]).glob("postgresql*"))  # no folder named like it

    checked = run(world, "--check", "claude")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "planner is registered (session-" in checked.stdout and pg_url in checked.stdout
    assert "it answers the MCP handshake" in checked.stdout
