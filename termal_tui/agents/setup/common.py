"""What setup writes and where: the target, the client's files, the environment the
client gives its server, recognising our entries, and reading and writing files exactly."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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

# What each client passes to a stdio MCP server from its own environment: nothing else
# (TERMAL_HOME included) unless the server's entry names it. Claude Code: the MCP
# TypeScript SDK's default environment; Codex: its rmcp client's default variables.
CLIENT_ENV_KEEP: dict[Client, tuple[str, ...]] = {
    "claude": ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"),
    "codex": (
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "USER",
        "__CF_USER_TEXT_ENCODING",
        "LANG",
        "LC_ALL",
        "TERM",
        "TMPDIR",
        "TZ",
    ),
}
DB_FILENAME = "coordination.sqlite"


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


# ------------------------------------------------------------------ the client's environment


def client_env(
    client: Client, server: Mapping[str, Any] | None, environ: Mapping[str, str]
) -> dict[str, str]:
    """The environment ``client`` starts its server with: its default variables taken
    from ``environ`` (the client's own), then the entry's ``env`` (and, for Codex, the
    variables its ``env_vars`` forwards)."""
    env = {k: environ[k] for k in CLIENT_ENV_KEEP[client] if k in environ}
    if server is None:
        return env
    forwarded = server.get("env_vars") if client == "codex" else None
    if isinstance(forwarded, list):
        env.update({k: environ[k] for k in forwarded if isinstance(k, str) and k in environ})
    given = server.get("env")
    if isinstance(given, Mapping):
        env.update({k: v for k, v in given.items() if isinstance(k, str) and isinstance(v, str)})
    return env


def default_db_in(env: Mapping[str, str]) -> Path | str | None:
    """The database ``termal-tui`` opens by default in ``env`` (None: no HOME to find it;
    a str: ``$TERMAL_HOME`` is a ``postgresql://`` URL)."""
    from termal_tui.store.urls import is_postgres_url

    home = env.get("TERMAL_HOME")
    if home and is_postgres_url(home):
        return home.strip()
    if home:
        return Path(home).expanduser() / DB_FILENAME
    user_home = env.get("HOME")
    return Path(user_home) / ".termal" / DB_FILENAME if user_home else None


def db_to_write(
    client: Client, explicit: Path | str | None, environ: Mapping[str, str]
) -> Path | str | None:
    """The ``--db`` setup must write: the one given, else this environment's default
    when the client's environment would open another (``TERMAL_HOME`` is not passed
    on), else None (the default is the same there)."""
    if explicit is not None:
        return explicit
    ours = default_db_in(environ)
    if ours is None:
        return None
    theirs = default_db_in(client_env(client, None, environ))
    if theirs == ours:
        return None
    if isinstance(ours, str):
        from termal_tui.store.urls import without_secrets

        return without_secrets(ours)  # its password stays in the environment
    return ours.absolute()


# ------------------------------------------------------------------ what we write


@dataclass(frozen=True)
class Target:
    """One agent's connection: which session, which database, which command."""

    client: Client
    session: str
    command: tuple[str, ...]
    # None: the default database, resolved when the agent runs; a str: a postgresql://
    # URL (written without its password: see ``cli/setup.py``).
    db: Path | str | None = None
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


# ------------------------------------------------------------------ recognising ours


def words_of(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def is_termal(words: Sequence[str]) -> bool:
    if not words:
        return False
    first = Path(words[0]).name
    return first.startswith("termal-tui") or (
        len(words) > 2 and words[1] == "-m" and words[2] == "termal_tui"
    )


def hook_of(command: str) -> tuple[str, str | None] | None:
    """``(event, session)`` when ``command`` is a termal-tui hook, else None."""
    words = words_of(command)
    if not is_termal(words) or "hook" not in words:
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


def server_words(server: Any) -> list[str] | None:
    """The command line of a stdio server entry, or None (not a stdio entry)."""
    if not isinstance(server, dict) or not isinstance(server.get("command"), str):
        return None
    args = server.get("args") or []
    if not _string_list(args):
        return None  # a client would not start it either
    return [server["command"], *args]


def _string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _shown(value: Any) -> str:
    """A value from the user's file, as JSON (escaped, one line), cut to a phrase."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def is_our_server(server: Any) -> bool:
    """A stdio entry that starts termal-tui (what ``--remove`` may take away)."""
    words = server_words(server)
    return words is not None and is_termal(words) and "mcp" in words


def same_server(existing: Any, ours: dict[str, Any]) -> bool:
    return (
        isinstance(existing, dict)
        and existing.get("command") == ours["command"]
        and existing.get("args") == ours["args"]
    )


def describe_server(server: Any) -> str:
    """One phrase for an entry: what it starts, or where it connects."""
    if not isinstance(server, dict):
        return "is not a server table"
    if "command" in server and not isinstance(server["command"], str):
        return f"has a command that is not a string ({_shown(server['command'])})"
    if "command" in server and not _string_list(server.get("args") or []):
        return f"has args that are not a list of strings ({_shown(server['args'])})"
    if "url" in server and not isinstance(server["url"], str):
        return f"has a url that is not a string ({_shown(server['url'])})"
    words = server_words(server)
    if words is not None:
        return f"starts `{shlex.join(words)}`"
    url = server.get("url")
    if isinstance(url, str):
        kind = server.get("type")
        shown = f"{kind} " if isinstance(kind, str) and kind else ""
        return f"connects to the {shown}server at {url}"
    keys = ", ".join(sorted(map(str, server))) or "nothing"
    return f"has no command or url (it sets {keys})"


def as_database(given: str) -> Path | str:
    """A ``--db`` value as written: a ``postgresql://`` URL stays a URL."""
    from termal_tui.store.urls import is_postgres_url

    return given.strip() if is_postgres_url(given) else Path(given).expanduser()


def db_from(words: Sequence[str]) -> Path | str | None:
    if "--db" in words[:-1]:
        given = words[list(words).index("--db") + 1]
        return as_database(given) if given else None
    return None


def server_db(server: dict[str, Any]) -> Path | str | None:
    args = [a for a in server.get("args") or [] if isinstance(a, str)]
    db = db_from(args)
    if db is None:
        after = args[args.index("mcp") + 1 :] if "mcp" in args else []
        positional = [
            a
            for i, a in enumerate(after)
            if not a.startswith("-") and (i == 0 or not after[i - 1].startswith("--"))
        ]
        db = as_database(positional[0]) if positional else None
    return db


# ------------------------------------------------------------------ files, exactly


def read_text(path: Path) -> str | None:
    """The file's text exactly (no newline translation), None when missing."""
    if path.is_symlink() and not path.exists():
        raise SetupError(f"{path} is a symlink to nothing")
    if not path.exists():
        return None
    if not path.is_file():
        raise SetupError(f"{path} is not a regular file")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise SetupError(f"{path} is not UTF-8 text") from None


def real_path(path: Path) -> Path:
    return path.resolve() if path.is_symlink() else path


def missing_parents(path: Path) -> list[Path]:
    """The directories writing ``path`` would create, outermost first."""
    missing: list[Path] = []
    parent = real_path(path).parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    return list(reversed(missing))


def write_text(path: Path, text: str) -> None:
    """Write atomically, through a symlink to its target, keeping the mode (a new file
    gets the umask's), bytes exactly as given."""
    real = real_path(path)
    real.parent.mkdir(parents=True, exist_ok=True)
    mode = real.stat().st_mode & 0o7777 if real.exists() else None
    handle, temporary = tempfile.mkstemp(prefix=f".{real.name}.", dir=real.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(text.encode("utf-8"))
        os.chmod(temporary, mode if mode is not None else 0o666 & ~_umask())
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
