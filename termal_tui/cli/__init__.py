"""The command line: one command tree.

``termal-tui [DB]`` opens the viewer; ``termal-tui COMMAND ...`` runs a command. Each
command group is a module of this package with ``HELP`` (its line in ``--help``),
``configure(parser)`` and ``run(args, parser) -> int``; only the chosen command's module
is imported and only its parser is built, so a hook pays for nothing else.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from termal_tui.cli.common import (
    EXIT_TABLE,
    EXIT_USAGE,
    begin_command,
    guarded,
    make_parser,
)

# name -> (module, one line for --help). Order is the order of --help.
COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "doctor": ("doctor", "report stuck hand-offs (read-only; exit 1 when stuck)"),
    "export": ("export", "write a mailbox's messages as JSONL or Markdown (read-only)"),
    "session": ("session", "the session registry: add, list, rm, token"),
    "send": ("mail", "send a message to a peer session"),
    "ls": ("mail", "list your mailboxes, with your cursor in each"),
    "read": ("mail", "read a mailbox (never moves your cursor)"),
    "ack": ("mail", "acknowledge through a sequence (compare-and-swap)"),
    "wake": ("wake", "print a wake prompt per mailbox with unread mail"),
    "board": ("board", "the project's coordination board: ls, get, set, rm"),
    "hook": ("hook", "Claude Code / Codex hook adapters (prompt, stop, session-start)"),
    "mcp": ("mcp", "serve one agent TermAl's mailbox tools over stdio MCP"),
    "serve": ("serve", "serve every session's tools over MCP streamable HTTP (a hub)"),
    "setup": ("setup", "connect Claude Code or Codex to a session (--check: is it set up?)"),
    "db": ("db", "db copy: a coordination database between SQLite and PostgreSQL"),
}

DESCRIPTION = """\
A read-only terminal viewer for TermAl agent mailboxes, and durable mailboxes for
your agents. With no command, opens the viewer on DB (or the default database).

commands (each has -h):
{commands}

  termal-tui --demo            the viewer on a built-in demo database
  termal-tui [DB] [options]    the viewer (options below)"""


def _command_lines() -> str:
    width = max(map(len, COMMANDS))
    return "\n".join(f"  {name:<{width}}  {line}" for name, (_m, line) in COMMANDS.items())


def root_description() -> str:
    return DESCRIPTION.format(commands=_command_lines())


def suggest(word: str) -> str | None:
    """The nearest command name to a mistyped one, if any is near."""
    import difflib

    close = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.6)
    return close[0] if close else None


def _looks_like_a_path(word: str) -> bool:
    return (
        Path(word).expanduser().exists()
        or Path(word).is_symlink()
        or any(mark in word for mark in ("/", "\\", ".", "~"))
    )


def _unknown_command(word: str) -> int:
    from termal_tui.core.sanitize import visible_line

    shown = visible_line(word, 60)
    near = suggest(word)
    hint = f" (did you mean {near!r}?)" if near else ""
    print("usage: termal-tui [DB] [options] | termal-tui COMMAND ...", file=sys.stderr)
    print(
        f"termal-tui: error: unknown command {shown!r}{hint}; `termal-tui --help` lists the "
        f"commands, and a database path that does not exist yet needs a directory part "
        f"(./{shown})",
        file=sys.stderr,
    )
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    first = arguments[0] if arguments else ""
    begin_command()
    if first in COMMANDS:
        module_name, line = COMMANDS[first]
        module = importlib.import_module(f"termal_tui.cli.{module_name}")
        parser = make_parser(f"termal-tui {first}", module.describe(first, line))
        module.configure(parser, first)
        try:
            args = parser.parse_args(arguments[1:])
        except SystemExit as exit_:
            return int(exit_.code or 0)
        return guarded(lambda: int(module.run(args, parser)))
    if first and not first.startswith("-") and not _looks_like_a_path(first):
        return _unknown_command(first)
    from termal_tui.cli import viewer

    parser = make_parser("termal-tui", root_description())
    parser.usage = "termal-tui [DB] [options] | termal-tui COMMAND ..."
    viewer.configure(parser, "")
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return guarded(lambda: viewer.run(args, parser))


__all__ = ["COMMANDS", "EXIT_TABLE", "main"]
