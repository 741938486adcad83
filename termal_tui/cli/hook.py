"""``termal-tui hook prompt|stop|session-start --session NAME``: hook adapters.

Hooks run on every prompt and every stop of every agent: this path imports the
registry and the synchronous lifecycle writer, and nothing else (no asyncio, no
aiosqlite, no pydantic, no rich).
"""

from __future__ import annotations

import argparse
import sys

from termal_tui.cli.agents import add_identity, database, registry_for
from termal_tui.cli.common import EXIT_OK

EVENTS = ("prompt", "stop", "session-start")


def describe(_name: str, _line: str) -> str:
    return (
        "Hook adapters for Claude Code and Codex: read the hook's JSON on stdin, print "
        "the wake prompts as the client's hook output."
    )


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    parser.add_argument("event", choices=EVENTS)
    add_identity(parser, "--session")
    parser.add_argument(
        "--register",
        action="store_true",
        help="register the session if it is new (otherwise an unknown name is an error)",
    )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from termal_tui.agents.hooks import parse_hook_input, run_hook
    from termal_tui.cli.output import print_flushed

    path = database(args, parser)
    stdin = sys.stdin
    payload = parse_hook_input(stdin.read() if stdin is not None and not stdin.isatty() else "")
    run_hook(
        path,
        registry_for(path),
        args.event,
        args.session,
        payload,
        print_flushed,
        register=args.register,
    )
    return EXIT_OK
