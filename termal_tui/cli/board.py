"""``termal-tui board ls|get|set|rm --as NAME``: the coordination board from a shell.

Each action is one call of the board tools' typed API (``agents/board_tools.py``), the
one the MCP server's ``termal_board_*`` tools call, so a person and an agent get the same
scope (the session's project), the same checks and TermAl's errors, mapped onto the
exit-code table. ``--json`` prints TermAl's JSON for scripts.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from termal_tui.cli.agents import add_identity, busy_timeout, mailbox_database, registry_for
from termal_tui.cli.common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_UNKNOWN,
    CommandError,
    add_subparser,
    subparsers,
    whole_number,
)

if TYPE_CHECKING:
    from termal_tui.agents.board_tools import BoardTools
    from termal_tui.store.board import BoardHead


def describe(_name: str, line: str) -> str:
    return (
        f"{line}. The board is TermAl's: small versioned JSON facts per project, read at "
        "each session's own pace; a write never wakes anyone. A session's project is its "
        "--project (an id or a path, kept for it), else the TermAl project containing its "
        "directory, else its directory's git top-level. Every action takes --as NAME (your "
        "session), --db PATH (or a postgresql:// URL), --project and --json."
    )


def _common(parser: argparse.ArgumentParser) -> None:
    add_identity(parser)
    parser.add_argument(
        "--project",
        metavar="ID|PATH",
        help="the session's project (an id or a directory; kept for the session)",
    )
    parser.add_argument("--json", action="store_true", help="TermAl's JSON, for scripts")


def _write_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--expect",
        type=whole_number(0, "a revision is 0 or more"),
        metavar="REV",
        help="the revision you saw (compare-and-swap; default: the current one, 0 if the "
        "key never existed; a deleted key is restored only by giving its revision)",
    )
    parser.add_argument(
        "--key",
        metavar="IDEMPOTENCY_KEY",
        help="idempotency key (default: derived from the request)",
    )


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    actions = subparsers(parser, "action")
    ls = add_subparser(actions, "ls", "list the project's live keys (every page)")
    _common(ls)
    get = add_subparser(actions, "get", "show one key's value, revision and author")
    get.add_argument("board_key", metavar="KEY")
    _common(get)
    set_ = add_subparser(actions, "set", "create or update a key (compare-and-swap)")
    set_.add_argument("board_key", metavar="KEY")
    set_.add_argument("value", metavar="VALUE", help="JSON (- reads standard input)")
    set_.add_argument(
        "--text", action="store_true", help="VALUE is plain text (stored as a JSON string)"
    )
    set_.add_argument("--stamp", help="stateStamp: what the value was derived from")
    _write_options(set_)
    _common(set_)
    rm = add_subparser(actions, "rm", "delete a key (it becomes a tombstone)")
    rm.add_argument("board_key", metavar="KEY")
    _write_options(rm)
    _common(rm)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    path = mailbox_database(args, parser)  # a path, or a postgresql:// URL

    async def main() -> int:
        async with board_tools(path, args.as_, args.project) as tools:
            handler = {"ls": _ls, "get": _get, "set": _set, "rm": _rm}[args.action]
            return await handler(args, tools)

    return asyncio.run(main())


@asynccontextmanager
async def board_tools(
    path: Path | str, name: str, project: str | None
) -> AsyncIterator[BoardTools]:
    """The board tools for the session named ``name`` (by name or id). On a
    ``postgresql://`` URL, sessions and projects come from the local state (the registry
    and TermAl's projects beside ``$TERMAL_HOME/coordination.sqlite``, else ``~/.termal``),
    as for the mailbox commands."""
    from termal_tui.agents.board_tools import BoardTools
    from termal_tui.cli.common import local_db_path
    from termal_tui.store.board import open_board_writer

    registry = registry_for(path)
    seconds = busy_timeout()
    me = await asyncio.to_thread(registry.resolve_own, name)
    async with open_board_writer(
        path, deadline=seconds, busy_timeout_ms=int(seconds * 1000)
    ) as writer:
        local = path if isinstance(path, Path) else local_db_path()
        yield BoardTools(writer, registry, me.id, db_path=local, project=project)


def _print_json(value: Any) -> int:
    print(json.dumps(value, indent=2, ensure_ascii=False))
    return EXIT_OK


def _compact(value: Any) -> str:
    from termal_tui.store.board import dumps

    return dumps(value)


async def _ls(args: argparse.Namespace, tools: BoardTools) -> int:
    from termal_tui.cli.table import print_table
    from termal_tui.core.sanitize import visible_line

    project = await tools.project()
    generation, entries = await tools.list_all()
    if args.json:
        return _print_json(
            {
                "generation": generation,
                "entries": [entry.to_wire() for entry in entries],
                "unchanged": False,
            }
        )
    print(
        f"board of {visible_line(project.name, 64)} ({project.id}): generation {generation}, "
        f"{len(entries)} key{'' if len(entries) == 1 else 's'}"
    )
    stamps = any(entry.state_stamp is not None for entry in entries)
    rows = [
        [
            entry.key,
            str(entry.revision),
            str(entry.updated_at_generation),
            entry.author_name,
            entry.updated_at,
            *([entry.state_stamp or ""] if stamps else []),
            _compact(entry.value),
        ]
        for entry in entries
    ]
    headers = ["key", "rev", "gen", "author", "updated", *(["stamp"] if stamps else [])]
    print_table([*headers, "preview"], rows, "no keys yet")
    return EXIT_OK


async def _get(args: argparse.Namespace, tools: BoardTools) -> int:
    from termal_tui.core.sanitize import visible, visible_line

    found = await tools.get(args.board_key)
    if args.json:
        return _print_json(found.to_wire())
    head: BoardHead = found.head
    stamp = f", stamp {visible_line(head.state_stamp, 80)}" if head.state_stamp else ""
    print(
        f"{head.key}: revision {head.revision} (written at generation "
        f"{head.updated_at_generation}; the scope is at {found.scope_generation}) by "
        f"{visible_line(head.author_name, 64)} at {head.updated_at}{stamp}"
    )
    print(visible(json.dumps(head.value, indent=2, ensure_ascii=False)))
    return EXIT_OK


def derived_key(scope_id: str, key: str, expected: int, intent: str, stamp: str | None) -> str:
    """The same command run twice is one write (a retry), not two."""
    text = "\0".join((scope_id, key, str(expected), intent, stamp or ""))
    return f"cli-{hashlib.sha256(text.encode()).hexdigest()[:32]}"


async def _expected(args: argparse.Namespace, tools: BoardTools) -> int:
    """``--expect``, else the live revision, else 0 (a tombstone then answers TermAl's
    409 with its revision, which ``--expect`` restores deliberately)."""
    from termal_tui.agents.board_tools import BoardToolError
    from termal_tui.core.errors import ErrorKind

    if args.expect is not None:
        return int(args.expect)
    try:
        return (await tools.get(args.board_key)).head.revision
    except BoardToolError as error:
        if error.kind is not ErrorKind.NOT_FOUND:
            raise
        if args.action == "rm":
            raise
        return 0


def _value(args: argparse.Namespace) -> Any:
    from termal_tui.store.board import loads

    text = sys.stdin.read() if args.value == "-" else args.value
    if args.text:
        return text
    try:
        return loads(text)
    except ValueError as error:
        raise CommandError(
            f"VALUE must be JSON ({error}); plain text needs --text or JSON quotes, "
            "e.g. '\"ready\"'",
            EXIT_INVALID,
        ) from None


async def _write(args: argparse.Namespace, tools: BoardTools, value: Any, delete: bool) -> Any:
    from termal_tui.agents.board_tools import BoardToolError
    from termal_tui.core.errors import ErrorKind
    from termal_tui.store.board import canonical_value

    project = await tools.project()
    expected = await _expected(args, tools)
    stamp = getattr(args, "stamp", None)
    intent = "<delete>" if delete else canonical_value(value)
    key = args.key or derived_key(project.id, args.board_key, expected, intent, stamp)
    try:
        if delete:
            return await tools.set(
                args.board_key,
                expected_revision=expected,
                idempotency_key=key,
                delete=True,
                state_stamp=stamp,
            )
        return await tools.set(
            args.board_key,
            expected_revision=expected,
            idempotency_key=key,
            value=value,
            state_stamp=stamp,
        )
    except BoardToolError as error:
        if error.kind is not ErrorKind.UNKNOWN_OUTCOME:
            raise
        raise CommandError(
            f"{error}; run the exact same command again with --expect {expected} --key {key}",
            EXIT_UNKNOWN,
        ) from error


async def _set(args: argparse.Namespace, tools: BoardTools) -> int:
    receipt = await _write(args, tools, _value(args), delete=False)
    if args.json:
        return _print_json(receipt.to_wire())
    if receipt.duplicate:
        what = "already written: this is the original receipt"
    elif receipt.prior_revision == 0:
        what = "created"
    else:
        what = f"updated from revision {receipt.prior_revision}"
    print(
        f"{receipt.key}: revision {receipt.revision} ({what}); scope generation "
        f"{receipt.generation}"
    )
    return EXIT_OK


async def _rm(args: argparse.Namespace, tools: BoardTools) -> int:
    receipt = await _write(args, tools, None, delete=True)
    if args.json:
        return _print_json(receipt.to_wire())
    again = " (already deleted: this is the original receipt)" if receipt.duplicate else ""
    print(
        f"{receipt.key}: deleted at revision {receipt.revision}{again}; restore it with "
        f"`board set {receipt.key} VALUE --expect {receipt.revision}`"
    )
    return EXIT_OK
