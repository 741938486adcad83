"""``termal-tui hook prompt|stop|session-start --session NAME``: hook adapters.

Hooks run on every prompt and every stop of every agent: this path imports the
registry and the synchronous lifecycle writer, and nothing else (no asyncio, no
aiosqlite, no pydantic, no rich).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from termal_tui.cli.agents import mailbox_database, registry_for
from termal_tui.cli.common import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_db,
)

EVENTS = ("prompt", "stop", "session-start")


def describe(_name: str, _line: str) -> str:
    return (
        "Hook adapters for Claude Code and Codex: read the hook's JSON on stdin, print "
        "the wake prompts as the client's hook output."
    )


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    parser.add_argument("event", choices=EVENTS)
    parser.add_argument(
        "--session", metavar="NAME", help="your session (required without --remote)"
    )
    add_db(parser)
    parser.add_argument(
        "--remote",
        metavar="URL",
        action="append",
        help="run the hook on a hub (termal-tui serve): its /mcp URL; the token decides "
        "the session. Once per hub of the same database: the next is tried when one "
        "cannot be reached",
    )
    parser.add_argument(
        "--token-env",
        metavar="VAR",
        default="TERMAL_TUI_TOKEN",
        help="with --remote: the variable holding the session's token (default TERMAL_TUI_TOKEN)",
    )
    parser.add_argument(
        "--register",
        action="store_true",
        help="register the session if it is new (otherwise an unknown name is an error)",
    )


def _hook_url(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    path = (path[: -len("/mcp")] if path.endswith("/mcp") else path) + "/hook"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _problem(error: Any) -> tuple[int, str] | None:
    """(exit code, sentence) from a hub error body's ``problem`` (its error kind), or None."""
    import json

    from termal_tui.core.errors import TABLE, ErrorKind
    from termal_tui.core.sanitize import visible_line

    try:
        problem = json.loads(error.read() or b"{}").get("problem") or {}
        kind = ErrorKind(problem["code"])
    except (ValueError, KeyError, TypeError, AttributeError, OSError):
        return None
    return TABLE[kind].exit_code, visible_line(str(problem.get("message", "")), 200)


def _run_remote(args: argparse.Namespace, parser: argparse.ArgumentParser, payload: dict) -> int:
    """POST the hook to the hub (stdlib only: a hook pays for no HTTP client)."""
    import json
    import os
    import urllib.error
    import urllib.request

    from termal_tui.cli.output import print_flushed

    if args.session or args.register or args.db_option:
        parser.error(
            "with --remote the token decides the session: leave out --session, --db, --register"
        )
    for url in args.remote:
        if not url.startswith(("http://", "https://")):
            parser.error("--remote takes an http:// or https:// URL (the hub's /mcp endpoint)")
    token = os.environ.get(args.token_env, "").strip()
    if not token:
        raise CommandError(f"--remote needs the session's token in ${args.token_env}", EXIT_USAGE)
    body = json.dumps({"event": args.event, "payload": payload}).encode()
    hubs = list(dict.fromkeys(args.remote))  # each hub once, in the order given
    text = ""
    for n, url in enumerate(hubs):
        request = urllib.request.Request(
            _hook_url(url),
            data=body,
            method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                text = answer.read().decode()
            break
        except urllib.error.HTTPError as error:
            code = EXIT_INVALID if error.code in (400, 401, 403, 413, 429) else EXIT_FAILED
            reason = f"{error.code} {error.reason}"
            problem = _problem(error)
            if problem is not None:  # the hub said which kind: the one table's exit code
                code, said = problem
                reason += f": {said}"
            raise CommandError(f"the hub refused the hook: {reason}", code) from None
        except (urllib.error.URLError, OSError) as error:
            # Not reached, or no answer: a hook only marks its own session's turn, so the
            # next hub of the same database may take it (marking twice changes nothing).
            if n + 1 == len(hubs):
                shown = "" if len(hubs) == 1 else f" (none of {', '.join(hubs)})"
                raise CommandError(
                    f"the hub could not be reached{shown}: {error}", EXIT_FAILED
                ) from None
    if text.strip():
        print_flushed(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from termal_tui.agents.hooks import parse_hook_input, run_hook
    from termal_tui.cli.output import print_flushed

    stdin = sys.stdin
    payload = parse_hook_input(stdin.read() if stdin is not None and not stdin.isatty() else "")
    if args.remote:
        return _run_remote(args, parser, payload)
    if not args.session:
        parser.error("the following arguments are required: --session (or --remote URL)")
    path = mailbox_database(args, parser)  # a file, or a postgresql:// URL
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
