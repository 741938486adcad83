"""``termal-tui setup``: connect Claude Code or Codex CLI to a session in one step.

Headless: it plans edits of the client's own files and applies them, and checks what
is there. Nothing here prints or parses a command line (``cli/setup.py`` does).

The user's files are edited, never rewritten: JSON members are found by their byte
spans (``_JsonText``) and only our member is inserted or replaced, so every other
server and hook keeps its bytes; TOML (which Python can only read) gets our own table
appended or replaced as text, so comments and formatting elsewhere stay. Every result
is parsed again before it is written, and a file whose content would not change is not
touched. An entry of ours that says something else (another session, another command)
is a conflict: named, and left unless ``force``.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Client = Literal["claude", "codex"]
CLIENTS: tuple[Client, ...] = ("claude", "codex")
SERVER_NAME = "termal"
# client hook event -> ``termal-tui hook EVENT``
HOOK_EVENTS: dict[str, str] = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "prompt",
    "Stop": "stop",
}


class SetupError(Exception):
    """A file setup cannot edit (not JSON, not a regular file, ...); one sentence."""


# ------------------------------------------------------------------ the command


def termal_command(argv0: str | None = None) -> tuple[str, ...]:
    """The full path of the running ``termal-tui`` (what the clients must start).

    ``sys.argv[0]`` when it is the installed script, else ``termal-tui`` on ``PATH``,
    else this interpreter with ``-m termal_tui``: always absolute, never a bare name
    that the agent's own environment might not find.
    """
    first = sys.argv[0] if argv0 is None else argv0
    if first and Path(first).name.startswith("termal-tui") and Path(first).is_file():
        return (str(Path(first).absolute()),)
    found = shutil.which("termal-tui")
    if found:
        return (str(Path(found).absolute()),)
    return (str(Path(sys.executable).absolute()), "-m", "termal_tui")


# ------------------------------------------------------------------ what we write


@dataclass(frozen=True)
class Target:
    """One agent's connection: which session, which database, which command."""

    client: Client
    session: str
    command: tuple[str, ...]
    db: Path | None = None  # None: the default database, resolved when the agent runs
    channel: bool = False

    def db_args(self) -> list[str]:
        return ["--db", str(self.db)] if self.db is not None else []

    def server(self) -> dict[str, Any]:
        args = [*self.command[1:], "mcp", "--session", self.session, *self.db_args()]
        if self.channel:
            args.append("--channel")
        return {"command": self.command[0], "args": args}

    def hook_command(self, event: str) -> str:
        words = [*self.command, "hook", HOOK_EVENTS[event], "--session", self.session]
        return shlex.join([*words, *self.db_args()])


@dataclass(frozen=True)
class Files:
    """Where one client's configuration lives."""

    config: Path  # .mcp.json or config.toml
    hooks: Path  # .claude/settings.json or hooks.json
    codex_project: Path | None = None  # a project-level Codex config: needs trust


def codex_home(home: Path | None = None) -> Path:
    explicit = os.environ.get("CODEX_HOME")
    if explicit:
        return Path(explicit).expanduser()
    return (home or Path.home()) / ".codex"


def files_for(client: Client, project: Path | None, home: Path | None = None) -> Files:
    """Claude Code: the project's ``.mcp.json`` and ``.claude/settings.json`` (the
    current directory without ``project``). Codex: ``~/.codex/config.toml`` and
    ``hooks.json`` (``$CODEX_HOME``), or the project's ``.codex/`` with ``project``."""
    if client == "claude":
        root = (project or Path.cwd()).absolute()
        return Files(root / ".mcp.json", root / ".claude" / "settings.json")
    if project is not None:
        root = project.absolute()
        return Files(root / ".codex" / "config.toml", root / ".codex" / "hooks.json", root)
    base = codex_home(home)
    return Files(base / "config.toml", base / "hooks.json")


# ------------------------------------------------------------------ JSON, edited in place


class _JsonText:
    """A JSON document whose members can be replaced or added by their byte spans."""

    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.path = path
        try:
            self.value = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as error:
            raise SetupError(
                f"{path} is not plain JSON ({error.msg} at line {error.lineno}); "
                "fix it or edit it by hand"
            ) from None
        if not isinstance(self.value, dict):
            raise SetupError(f"{path} is not a JSON object")
        self.unit = _indent_unit(text)

    def _skip(self, at: int) -> int:
        while at < len(self.text) and self.text[at] in " \t\r\n":
            at += 1
        return at

    def _object_at(self, start: int) -> tuple[dict[str, tuple[int, int]], int]:
        """Members of the object at ``start``: key -> value span; and its ``}``."""
        decoder = json.JSONDecoder()
        at = self._skip(start)
        assert self.text[at] == "{"
        at = self._skip(at + 1)
        members: dict[str, tuple[int, int]] = {}
        if self.text[at] == "}":
            return members, at
        while True:
            key, at = decoder.raw_decode(self.text, at)
            at = self._skip(self._skip(at) + 1)  # past the colon
            _value, end = decoder.raw_decode(self.text, at)
            members[key] = (at, end)
            at = self._skip(end)
            if self.text[at] == "}":
                return members, at
            at = self._skip(at + 1)  # past the comma

    def _array_end(self, start: int) -> tuple[int, bool]:
        """The ``]`` of the array at ``start`` and whether it is empty."""
        _value, end = json.JSONDecoder().raw_decode(self.text, start)
        inner = self.text[start + 1 : end - 1]
        return end - 1, not inner.strip()

    def _locate(self, keys: Sequence[str]) -> int:
        """Where the value at ``keys`` (every one present) starts."""
        at = self._skip(0)
        for key in keys:
            members, _close = self._object_at(at)
            at = members[key][0]
        return at

    def _line_indent(self, at: int) -> str:
        line_start = self.text.rfind("\n", 0, at) + 1
        line = self.text[line_start:at]
        return line[: len(line) - len(line.lstrip())]

    def _render(self, value: Any, indent: str) -> str:
        rendered = json.dumps(value, indent=self.unit, ensure_ascii=False)
        return rendered.replace("\n", "\n" + indent)

    def _splice(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]
        self.value = json.loads(self.text)

    def get(self, keys: Sequence[str]) -> Any:
        value: Any = self.value
        for key in keys:
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
        return value

    def set(self, keys: Sequence[str], value: Any) -> None:
        """Set ``keys`` to ``value``: the existing value's span replaced, or a member
        added at the end of the deepest object that exists (parents created)."""
        if not self.text.strip():
            nested: Any = value
            for key in reversed(keys):
                nested = {key: nested}
            self.text = json.dumps(nested, indent=self.unit, ensure_ascii=False) + "\n"
            self.value = json.loads(self.text)
            return
        present = 0
        node: Any = self.value
        for key in keys[:-1]:
            child = node.get(key) if isinstance(node, dict) else None
            if not isinstance(child, dict):
                break
            node, present = child, present + 1
        if not isinstance(node, dict):
            raise SetupError(f"{self.path}: {'.'.join(keys[:present])} is not an object")
        if present == len(keys) - 1 and keys[-1] in node:
            start = self._locate(keys)
            _v, end = json.JSONDecoder().raw_decode(self.text, start)
            self._splice(start, end, self._render(value, self._line_indent(start)))
            return
        if present < len(keys) - 1 and keys[present] in node:
            raise SetupError(f"{self.path}: {'.'.join(keys[: present + 1])} is not an object")
        nested = value
        for key in reversed(keys[present + 1 :]):
            nested = {key: nested}
        self._add_member(keys[:present], keys[present], nested)

    def _add_member(self, parent: Sequence[str], key: str, value: Any) -> None:
        start = self._locate(parent)
        members, close = self._object_at(start)
        outer = self._line_indent(close) if self._closes_own_line(close) else ""
        if members:
            last_end = max(end for _s, end in members.values())
            first_start = min(s for s, _e in members.values())
            key_at = self.text.rfind('"', 0, first_start)
            key_at = self.text.rfind('"', 0, key_at)  # the opening quote of the key
            inner = self._line_indent(key_at)
            separator = "\n" if "\n" in self.text[start:first_start] else " "
            member = f"{json.dumps(key, ensure_ascii=False)}: {self._render(value, inner)}"
            if separator == "\n":
                self._splice(last_end, last_end, f",\n{inner}{member}")
            else:
                self._splice(last_end, last_end, f", {member}")
            return
        inner = outer + " " * self.unit
        member = f"{json.dumps(key, ensure_ascii=False)}: {self._render(value, inner)}"
        self._splice(start + 1, close, f"\n{inner}{member}\n{outer}")

    def _closes_own_line(self, at: int) -> bool:
        line_start = self.text.rfind("\n", 0, at) + 1
        return not self.text[line_start:at].strip()

    def append(self, keys: Sequence[str], item: Any) -> None:
        """Append ``item`` to the array at ``keys`` (which exists)."""
        start = self._locate(keys)
        close, empty = self._array_end(start)
        if empty:
            indent = self._line_indent(start)
            inner = indent + " " * self.unit
            self._splice(start + 1, close, f"\n{inner}{self._render(item, inner)}\n{indent}")
            return
        value_end = close
        while self.text[value_end - 1] in " \t\r\n":
            value_end -= 1
        previous_start = self._last_item_start(start, value_end)
        if "\n" in self.text[start:previous_start]:
            inner = self._line_indent(previous_start)
            self._splice(value_end, value_end, f",\n{inner}{self._render(item, inner)}")
        else:
            rendered = json.dumps(item, ensure_ascii=False)
            self._splice(value_end, value_end, f", {rendered}")

    def _last_item_start(self, start: int, value_end: int) -> int:
        decoder = json.JSONDecoder()
        at = self._skip(start + 1)
        last = at
        while at < value_end:
            last = at
            _v, end = decoder.raw_decode(self.text, at)
            at = self._skip(end)
            if self.text[at] == ",":
                at = self._skip(at + 1)
        return last

    def replace_string(self, keys: Sequence[str | int], new: str) -> None:
        """Replace the string at ``keys`` (objects by key, arrays by index)."""
        at = self._skip(0)
        decoder = json.JSONDecoder()
        for key in keys:
            if isinstance(key, str):
                members, _c = self._object_at(at)
                at = members[key][0]
            else:
                at = self._skip(at + 1)
                for _ in range(key):
                    _v, end = decoder.raw_decode(self.text, at)
                    at = self._skip(self._skip(end) + 1)
        _v, end = decoder.raw_decode(self.text, at)
        self._splice(at, end, json.dumps(new, ensure_ascii=False))


def _indent_unit(text: str) -> int:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(line) > len(stripped):
            return len(line) - len(stripped)
    return 2


# ------------------------------------------------------------------ recognising ours


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _is_termal(words: Sequence[str]) -> bool:
    if not words:
        return False
    first = Path(words[0]).name
    return first.startswith("termal-tui") or (
        len(words) > 2 and words[1] == "-m" and words[2] == "termal_tui"
    )


def hook_of(command: str) -> tuple[str, str | None] | None:
    """``(event, session)`` when ``command`` is a termal-tui hook, else None."""
    words = _words(command)
    if not _is_termal(words) or "hook" not in words:
        return None
    rest = words[words.index("hook") + 1 :]
    if not rest or rest[0] not in HOOK_EVENTS.values():
        return None
    session = rest[rest.index("--session") + 1] if "--session" in rest[:-1] else None
    return rest[0], session


def server_session(server: Any) -> str | None:
    args = server.get("args") if isinstance(server, dict) else None
    if isinstance(args, list) and "--session" in args[:-1]:
        value = args[args.index("--session") + 1]
        return value if isinstance(value, str) else None
    return None


def _same_server(existing: Any, ours: dict[str, Any]) -> bool:
    return (
        isinstance(existing, dict)
        and existing.get("command") == ours["command"]
        and existing.get("args") == ours["args"]
    )


def _describe_server(server: Any) -> str:
    if not isinstance(server, dict):
        return "not a server table"
    words = [str(server.get("command", "?")), *map(str, server.get("args") or [])]
    return shlex.join(words)


# ------------------------------------------------------------------ plans


@dataclass
class FilePlan:
    """One file's change: its text before (None: missing) and after."""

    path: Path
    before: str | None
    after: str
    changes: list[str] = field(default_factory=list)  # what was added or replaced

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        before = (self.before or "").splitlines(keepends=True)
        after = self.after.splitlines(keepends=True)
        label = str(self.path)
        lines = difflib.unified_diff(
            before,
            after,
            fromfile="/dev/null" if self.before is None else label,
            tofile=label,
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass
class Plan:
    target: Target
    files: Files
    plans: list[FilePlan]
    conflicts: list[str]  # entries of ours that say something else, left as they are
    replaced: list[str]  # the same, replaced because of ``force``

    @property
    def changed(self) -> bool:
        return any(p.changed for p in self.plans)


def _read(path: Path) -> str | None:
    if path.is_symlink() and not path.exists():
        raise SetupError(f"{path} is a symlink to nothing")
    if not path.exists():
        return None
    if not path.is_file():
        raise SetupError(f"{path} is not a regular file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SetupError(f"{path} is not UTF-8 text") from None


def _plan_json_server(path: Path, target: Target, force: bool) -> tuple[FilePlan, str | None]:
    before = _read(path)
    doc = _JsonText(before or "", path)
    ours = target.server()
    existing = doc.get(["mcpServers", SERVER_NAME])
    plan = FilePlan(path, before, before or "")
    conflict = None
    if existing is None:
        doc.set(["mcpServers", SERVER_NAME], ours)
        plan.changes.append(f"added server {SERVER_NAME} (session {target.session})")
    elif not _same_server(existing, ours):
        conflict = (
            f"{path}: server {SERVER_NAME} is already there and starts "
            f"`{_describe_server(existing)}`"
        )
        if force:
            doc.set(["mcpServers", SERVER_NAME], ours)
            plan.changes.append(f"replaced server {SERVER_NAME} (session {target.session})")
    plan.after = doc.text
    return plan, conflict


def _plan_hooks(path: Path, target: Target, force: bool) -> tuple[FilePlan, list[str]]:
    before = _read(path)
    doc = _JsonText(before or "", path)
    plan = FilePlan(path, before, before or "")
    conflicts: list[str] = []
    added: list[str] = []
    for event in HOOK_EVENTS:
        wanted = target.hook_command(event)
        groups = doc.get(["hooks", event])
        if groups is not None and not isinstance(groups, list):
            raise SetupError(f"{path}: hooks.{event} is not a list")
        found: list[tuple[int, int, str]] = []
        for g, group in enumerate(groups or []):
            inner = group.get("hooks") if isinstance(group, dict) else None
            for h, hook in enumerate(inner if isinstance(inner, list) else []):
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str):
                    recognised = hook_of(command)
                    if recognised and recognised[0] == HOOK_EVENTS[event]:
                        found.append((g, h, command))
        if any(command == wanted for _g, _h, command in found):
            continue
        if found:
            g, h, command = found[0]
            conflicts.append(f"{path}: the {event} hook is already there and runs `{command}`")
            if force:
                doc.replace_string(["hooks", event, g, "hooks", h, "command"], wanted)
                added.append(f"replaced the {event} hook")
            continue
        entry = {"hooks": [{"type": "command", "command": wanted}]}
        if groups is None:
            doc.set(["hooks", event], [entry])
        else:
            doc.append(["hooks", event], entry)
        added.append(event)
    new_events = [a for a in added if not a.startswith("replaced")]
    if new_events:
        plan.changes.append(f"added hooks {', '.join(new_events)} (session {target.session})")
    plan.changes.extend(a for a in added if a.startswith("replaced"))
    plan.after = doc.text
    return plan, conflicts


# ------------------------------------------------------------------ TOML, our table as text

_TABLE = re.compile(
    r"^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*(?:termal|\"termal\"|'termal')[ \t]*\]"
)
_SUBTABLE = re.compile(
    r"^[ \t]*\[\[?[ \t]*mcp_servers[ \t]*\.[ \t]*(?:termal|\"termal\"|'termal')[ \t]*\."
)
_ANY_TABLE = re.compile(r"^[ \t]*\[")


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a valid TOML basic string


def _toml_table(server: dict[str, Any]) -> str:
    args = ", ".join(_toml_string(a) for a in server["args"])
    return (
        f"[mcp_servers.{SERVER_NAME}]\n"
        f"command = {_toml_string(server['command'])}\n"
        f"args = [{args}]\n"
    )


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SetupError(f"{path} is not valid TOML ({error}); fix it first") from None


def _our_table_span(lines: list[str]) -> tuple[int, int] | None:
    """Lines of ``[mcp_servers.termal]`` and its sub-tables (end exclusive), without
    the blank lines and comments that lead into the next table."""
    start = next((i for i, line in enumerate(lines) if _TABLE.match(line)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines):
        if _ANY_TABLE.match(lines[end]) and not _SUBTABLE.match(lines[end]):
            break
        end += 1
    while end > start + 1 and (
        not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")
    ):
        end -= 1
    return start, end


def _plan_toml(path: Path, target: Target, force: bool) -> tuple[FilePlan, str | None]:
    before = _read(path)
    text = before or ""
    parsed = _parse_toml(text, path)
    ours = target.server()
    existing = (parsed.get("mcp_servers") or {}).get(SERVER_NAME)
    plan = FilePlan(path, before, text)
    if existing is not None and _same_server(existing, ours):
        return plan, None
    conflict = None
    lines = text.splitlines(keepends=True)
    span = _our_table_span(lines)
    if existing is not None:
        conflict = (
            f"{path}: server {SERVER_NAME} is already there and starts "
            f"`{_describe_server(existing)}`"
        )
        if not force:
            return plan, conflict
        if span is None:
            raise SetupError(
                f"{path} defines mcp_servers.{SERVER_NAME} in a form setup cannot edit "
                "(inline or dotted keys); edit it by hand"
            )
        start, end = span
        after = "".join(lines[:start]) + _toml_table(ours) + "".join(lines[end:])
        plan.changes.append(f"replaced server {SERVER_NAME} (session {target.session})")
    else:
        if text and not text.endswith("\n"):
            text += "\n"
        after = text + ("\n" if text.strip() else "") + _toml_table(ours)
        plan.changes.append(f"added server {SERVER_NAME} (session {target.session})")
    result = (_parse_toml(after, path).get("mcp_servers") or {}).get(SERVER_NAME)
    if not _same_server(result, ours):  # pragma: no cover - a bug, never a bad write
        raise SetupError(f"{path}: the edited file would not hold our server; nothing written")
    plan.after = after
    return plan, conflict


def plan(target: Target, files: Files, *, force: bool = False) -> Plan:
    """What setting up ``target`` in ``files`` would change (nothing is written)."""
    if target.client == "claude":
        config, conflict = _plan_json_server(files.config, target, force)
    else:
        config, conflict = _plan_toml(files.config, target, force)
    hooks, hook_conflicts = _plan_hooks(files.hooks, target, force)
    conflicts = ([conflict] if conflict else []) + hook_conflicts
    return Plan(
        target,
        files,
        [config, hooks],
        [] if force else conflicts,
        conflicts if force else [],
    )


def write(plan_: Plan) -> list[Path]:
    """Write every changed file (atomically, through a symlink to its target, keeping
    its mode); returns the paths written. Nothing is written while conflicts stand."""
    if plan_.conflicts:
        raise SetupError("conflicts stand: nothing written")
    written = []
    for file_plan in plan_.plans:
        if file_plan.changed:
            _write_text(file_plan.path, file_plan.after)
            written.append(file_plan.path)
    return written


def _write_text(path: Path, text: str) -> None:
    real = path.resolve() if path.is_symlink() else path
    real.parent.mkdir(parents=True, exist_ok=True)
    mode = real.stat().st_mode & 0o7777 if real.exists() else None
    handle, temporary = tempfile.mkstemp(prefix=f".{real.name}.", dir=real.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        if mode is not None:
            os.chmod(temporary, mode)
        else:
            os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ------------------------------------------------------------------ --check


@dataclass(frozen=True)
class Finding:
    part: Literal["config", "hooks", "session"]
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


def _db_from(words: Sequence[str]) -> Path | None:
    if "--db" in words[:-1]:
        given = words[list(words).index("--db") + 1]
        return Path(given).expanduser() if given else None
    return None


def _server_db(server: dict[str, Any]) -> Path | None:
    args = [a for a in server.get("args") or [] if isinstance(a, str)]
    db = _db_from(args)
    if db is None:
        after = args[args.index("mcp") + 1 :] if "mcp" in args else []
        positional = [
            a
            for i, a in enumerate(after)
            if not a.startswith("-") and (i == 0 or not after[i - 1].startswith("--"))
        ]
        db = Path(positional[0]).expanduser() if positional else None
    return db


def _command_finding(command: str) -> str | None:
    """Why ``command`` cannot start, or None."""
    if os.sep in command:
        path = Path(command)
        if not path.is_file() or not os.access(path, os.X_OK):
            return f"{command} is not an executable file"
        return None
    if shutil.which(command) is None:
        return f"{command} is not on PATH"
    return None


def check(
    client: Client,
    files: Files,
    *,
    session_exists: Any,
    default_db: Path,
    trusted: bool | None = None,
) -> Report:
    """Whether ``client``'s config, hooks and session line up.

    ``session_exists(db, name) -> str | None`` answers whether ``name`` is a live
    session in the registry beside ``db`` (its id) -- the caller's registry, so this
    module opens no database itself.
    """
    findings: list[Finding] = []
    present = False
    sessions: set[str] = set()
    dbs: set[Path] = set()
    try:
        text = _read(files.config)
        if client == "claude":
            server = _JsonText(text or "", files.config).get(["mcpServers", SERVER_NAME])
        else:
            parsed = _parse_toml(text or "", files.config)
            server = (parsed.get("mcp_servers") or {}).get(SERVER_NAME)
    except SetupError as error:
        server, text = None, None
        findings.append(Finding("config", False, str(error)))
    if server is None and not findings:
        findings.append(
            Finding("config", False, f"missing: no {SERVER_NAME} server in {files.config}")
        )
    elif isinstance(server, dict):
        present = True
        name = server_session(server)
        command = server.get("command")
        problem = _command_finding(command) if isinstance(command, str) else "no command"
        if name is None:
            findings.append(
                Finding("config", False, f"{files.config}: the server names no --session")
            )
        elif problem:
            findings.append(Finding("config", False, f"{files.config}: {problem}"))
        else:
            sessions.add(name)
            dbs.add(_server_db(server) or default_db)
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
    try:
        hooks_doc = _JsonText(_read(files.hooks) or "", files.hooks)
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
            words = _words(mine[0])
            if (h := hook_of(mine[0])) and h[1]:
                sessions.add(h[1])
            dbs.add(_db_from(words) or default_db)
        if missing:
            findings.append(
                Finding("hooks", False, f"missing in {files.hooks}: {', '.join(missing)}")
            )
        else:
            findings.append(Finding("hooks", True, f"{files.hooks}: {', '.join(HOOK_EVENTS)}"))
    except SetupError as error:
        findings.append(Finding("hooks", False, str(error)))
    if len(sessions) > 1 or len(dbs) > 1:
        findings.append(
            Finding(
                "session",
                False,
                "the config and hooks disagree: sessions "
                + ", ".join(sorted(sessions))
                + ("; databases " + ", ".join(sorted(map(str, dbs))) if len(dbs) > 1 else ""),
            )
        )
    elif sessions:
        (name,) = sessions
        db = next(iter(dbs), default_db)
        known = session_exists(db, name)
        if known:
            findings.append(Finding("session", True, f"{name} is registered ({known}) in {db}"))
        else:
            findings.append(
                Finding(
                    "session",
                    False,
                    f"missing: {name} is not registered in {db} "
                    f"(termal-tui session add {shlex.quote(name)})",
                )
            )
    else:
        findings.append(Finding("session", False, "missing: no session named yet"))
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


PLUGIN_NAME = "termal-tui"


def claude_plugin(
    project: Path | None, home: Path | None = None
) -> tuple[str, dict[str, Any]] | None:
    """The enabled termal-tui Claude Code plugin (user or project settings) and its
    options as ``claude plugin install --config`` stored them, or None (read-only)."""
    places = [(home or Path.home()) / ".claude" / "settings.json"]
    places.append((project or Path.cwd()) / ".claude" / "settings.json")
    found: tuple[str, dict[str, Any]] | None = None
    options: dict[str, Any] = {}
    for path in places:
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(settings, dict):
            continue
        enabled = settings.get("enabledPlugins")
        for plugin_id, on in enabled.items() if isinstance(enabled, dict) else []:
            if on is True and plugin_id.split("@")[0] == PLUGIN_NAME:
                found = (plugin_id, options)
        configs = settings.get("pluginConfigs")
        if isinstance(configs, dict) and found is not None:
            stored = (configs.get(found[0]) or {}).get("options")
            if isinstance(stored, dict):
                options.update(stored)
    return found
