"""``setup --check``: whether a client's config, hooks and session line up, judged the
way the client will run them: the server's database is the one it opens in the
environment the client gives it (never this shell's ``TERMAL_HOME``), and the server is
started with that environment and the configured command line and must answer an MCP
``initialize`` handshake."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import threading
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from termal_tui.agents.setup import tomledit
from termal_tui.agents.setup.common import (
    HOOK_EVENTS,
    SERVER_NAME,
    Client,
    Files,
    SetupError,
    client_env,
    codex_home,
    db_from,
    default_db_in,
    describe_server,
    hook_of,
    read_text,
    server_db,
    server_session,
    server_words,
    words_of,
)
from termal_tui.agents.setup.jsontext import JsonText

HANDSHAKE_SECONDS = 20.0
PROTOCOL_VERSION = "2025-06-18"


@dataclass(frozen=True)
class Finding:
    part: Literal["config", "hooks", "session", "server"]
    ok: bool
    text: str


@dataclass
class Report:
    client: Client
    files: Files
    findings: list[Finding]
    present: bool  # anything of ours is there (a client with nothing is "not set up")

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)


def _command_finding(command: str, env: Mapping[str, str]) -> str | None:
    """Why ``command`` cannot start (with the client's PATH), or None."""
    if os.sep in command:
        path = Path(command)
        if not path.is_file() or not os.access(path, os.X_OK):
            return f"{command} is not an executable file"
        return None
    if shutil.which(command, path=env.get("PATH", "")) is None:
        return f"{command} is not on the PATH the client gives its server"
    return None


# ------------------------------------------------------------------ the handshake


def handshake(
    words: Sequence[str],
    env: Mapping[str, str],
    cwd: Path | None = None,
    timeout: float = HANDSHAKE_SECONDS,
) -> tuple[bool, str]:
    """Start ``words`` with exactly ``env`` and speak MCP to it over stdio: initialize,
    initialized, tools/list. ``(True, "N tools")`` or ``(False, what failed)``."""
    try:
        process = subprocess.Popen(
            list(words),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
        )
    except OSError as error:
        return False, f"it does not start: {error.strerror or error}"
    assert process.stdin and process.stdout and process.stderr
    stderr_lines: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr_lines.extend(process.stderr or []), daemon=True)
    reader.start()
    replies: dict[int, Any] = {}
    done = threading.Event()

    def read_replies() -> None:
        for line in process.stdout or []:
            try:
                message = json.loads(line)
            except ValueError:
                replies.setdefault(-1, line[:200].decode("utf-8", "replace"))
                continue
            if isinstance(message, dict) and isinstance(message.get("id"), int):
                replies[message["id"]] = message
                if message["id"] == 2:
                    break
        done.set()

    threading.Thread(target=read_replies, daemon=True).start()

    def send(message: dict[str, Any]) -> None:
        assert process.stdin
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "termal-tui setup --check", "version": "1"},
                },
            }
        )
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    except OSError:
        pass  # it exited: said below
    answered = done.wait(timeout)
    with contextlib.suppress(OSError):
        process.stdin.close()
    try:
        code = process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    reader.join(timeout=2)
    said = b"".join(stderr_lines).decode("utf-8", "replace").strip().splitlines()
    why = f": {said[-1].strip()}" if said else ""
    first, listed = replies.get(1), replies.get(2)
    if isinstance(first, dict) and "result" in first:
        if isinstance(listed, dict) and isinstance(listed.get("result"), dict):
            tools = listed["result"].get("tools")
            return True, f"{len(tools) if isinstance(tools, list) else 0} tools"
        return False, f"it answered initialize but not tools/list{why}"
    if isinstance(first, dict) and "error" in first:
        return False, f"it refused initialize: {first['error'].get('message', first['error'])}"
    if not answered:
        return False, f"no answer to initialize within {timeout:g} s{why}"
    return False, f"it closed the connection before answering (exit {code}){why}"


# ------------------------------------------------------------------ the check


def check(
    client: Client,
    files: Files,
    *,
    session_exists: Callable[[Path | str, str], str | None],
    environ: Mapping[str, str] | None = None,
    trusted: bool | None = None,
    start_server: bool = True,
) -> Report:
    """Whether ``client``'s config, hooks and session line up.

    ``session_exists(db, name) -> str | None`` answers whether ``name`` is a live
    session in the registry beside ``db`` (its id) -- the caller's registry, so this
    module opens no database itself. ``environ`` is the client's own environment (this
    process's by default): its server gets only what the client passes on, its hooks
    run with all of it. With ``start_server``, a registered session's server is started
    as the client starts it and must answer the MCP handshake.
    """
    environ = os.environ if environ is None else environ
    findings: list[Finding] = []
    present = False
    sessions: set[str] = set()
    dbs: dict[Path | str, str] = {}  # a path, or a postgresql:// URL
    server: Any = None
    server_env: dict[str, str] = {}
    try:
        text = read_text(files.config) or ""
        if client == "claude":
            server = JsonText(text, files.config).get(["mcpServers", SERVER_NAME])
        else:
            server = tomledit.server_of(text, files.config)
    except SetupError as error:
        findings.append(Finding("config", False, str(error)))
    words = server_words(server)
    if server is None and not findings:
        findings.append(
            Finding("config", False, f"missing: no {SERVER_NAME} server in {files.config}")
        )
    elif server is not None and words is None:
        present = True
        findings.append(
            Finding(
                "config",
                False,
                f"{files.config}: server {SERVER_NAME} {describe_server(server)}, not a "
                "termal-tui command (setup --force replaces it)",
            )
        )
    elif words is not None:
        present = True
        server_env = client_env(client, server, environ)
        name = server_session(server)
        problem = _command_finding(words[0], server_env)
        if name is None:
            findings.append(
                Finding("config", False, f"{files.config}: the server names no --session")
            )
        elif problem:
            findings.append(Finding("config", False, f"{files.config}: {problem}"))
        else:
            sessions.add(name)
            db = server_db(server) or default_db_in(server_env)
            if db is None:
                findings.append(
                    Finding(
                        "config",
                        False,
                        f"{files.config}: the server has no --db and no HOME to find the "
                        "default database in",
                    )
                )
            else:
                dbs.setdefault(db, "the server")
            extra = ""
            if client == "codex" and files.codex_project is not None and trusted is False:
                extra = (
                    f"; but Codex reads {files.config} only once the project is trusted "
                    f'([projects."{files.codex_project}"] trust_level = "trusted" in '
                    f"{codex_home() / 'config.toml'}, which Codex asks for on first start)"
                )
            findings.append(
                Finding(
                    "config",
                    not extra,
                    f"{files.config}: server {SERVER_NAME} serves session {name}{extra}",
                )
            )
    hooks_db = default_db_in(environ)
    try:
        hooks_doc = JsonText(read_text(files.hooks) or "", files.hooks)
        missing: list[str] = []
        for event, ours in HOOK_EVENTS.items():
            commands: list[str] = [
                hook["command"]
                for group in hooks_doc.get(["hooks", event]) or []
                if isinstance(group, dict)
                for hook in group.get("hooks") or []
                if isinstance(hook, dict) and isinstance(hook.get("command"), str)
            ]
            mine = [c for c in commands if (h := hook_of(c)) and h[0] == ours]
            if not mine:
                missing.append(event)
                continue
            present = True
            if (h := hook_of(mine[0])) and h[1]:
                sessions.add(h[1])
            db = db_from(words_of(mine[0])) or hooks_db
            if db is not None:
                dbs.setdefault(db, "the hooks")
        if missing:
            findings.append(
                Finding("hooks", False, f"missing in {files.hooks}: {', '.join(missing)}")
            )
        else:
            findings.append(Finding("hooks", True, f"{files.hooks}: {', '.join(HOOK_EVENTS)}"))
    except SetupError as error:
        findings.append(Finding("hooks", False, str(error)))
    registered = False
    if len(sessions) > 1 or len(dbs) > 1:
        parts = ["the config and hooks disagree"]
        if len(sessions) > 1:
            parts.append("sessions " + ", ".join(sorted(sessions)))
        if len(dbs) > 1:
            parts.append(
                "databases "
                + ", ".join(
                    f"{db} ({who})"
                    for db, who in sorted(dbs.items(), key=lambda item: str(item[0]))
                )
                + (
                    " (the client does not pass TERMAL_HOME to its server: "
                    "setup again to write --db)"
                    if "TERMAL_HOME" in environ
                    else ""
                )
            )
        findings.append(Finding("session", False, "; ".join(parts)))
    elif sessions:
        (name,) = sessions
        db = next(iter(dbs), None)
        known = session_exists(db, name) if db is not None else None
        if known:
            registered = True
            findings.append(Finding("session", True, f"{name} is registered ({known}) in {db}"))
        else:
            findings.append(
                Finding(
                    "session",
                    False,
                    f"missing: {name} is not registered in {db} "
                    f"(termal-tui session add {shlex.quote(name)}"
                    + (f" --db {shlex.quote(str(db))}" if db != default_db_in(environ) else "")
                    + ")",
                )
            )
    else:
        findings.append(Finding("session", False, "missing: no session named yet"))
    if start_server and words is not None and registered and all(f.ok for f in findings):
        cwd = files.config.parent if client == "claude" else files.codex_project
        # Without --channel: a channel server would take the session's wake-ups from
        # the agent that is running now, for as long as the check lasts.
        started = [w for w in words if w != "--channel"]
        ok, said = handshake(started, server_env, cwd)
        how = "Claude Code" if client == "claude" else "Codex"
        how += " starts it" + (" (without --channel)" if started != words else "")
        findings.append(
            Finding(
                "server",
                ok,
                f"started as {how}, it answers the MCP handshake ({said})"
                if ok
                else f"started as {how} ({shlex.join(started)}), {said}",
            )
        )
    return Report(client, files, findings, present)


def codex_trusts(project: Path, home: Path | None = None) -> bool:
    """Whether the user's Codex config marks ``project`` trusted (read-only)."""
    path = codex_home(home) / "config.toml"
    try:
        parsed = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    projects = parsed.get("projects") or {}
    for key in (str(project), str(project.resolve())):
        entry = projects.get(key)
        if isinstance(entry, dict) and entry.get("trust_level") == "trusted":
            return True
    return False
