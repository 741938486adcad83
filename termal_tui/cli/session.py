"""``termal-tui session add NAME | list | rm NAME | token NAME [--revoke]``: the session
registry (beside a SQLite database, or in a ``postgresql://`` one)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from termal_tui.cli.agents import mailbox_database, registry_for
from termal_tui.cli.common import EXIT_OK, add_db, add_subparser, subparsers

if TYPE_CHECKING:
    from termal_tui.agents.registry import Session
    from termal_tui.store.reader import MailboxReader


def describe(_name: str, line: str) -> str:
    return line


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    actions = subparsers(parser, "action")
    add = add_subparser(actions, "add", "register a session")
    add.add_argument("name")
    add.add_argument("--agent", help="what runs it (e.g. Claude, Codex)")
    add_db(add)
    listing = add_subparser(actions, "list", "list sessions, with each one's unread mail")
    listing.add_argument("--all", action="store_true", help="include removed sessions")
    listing.add_argument("--json", action="store_true")
    add_db(listing)
    rm = add_subparser(actions, "rm", "remove a session (ends its mailbox participation)")
    rm.add_argument("name")
    add_db(rm)
    token = add_subparser(
        actions,
        "token",
        "print a new bearer token for the session (for termal-tui serve; replaces its "
        "previous one; only a hash is kept)",
    )
    token.add_argument("name")
    token.add_argument("--revoke", action="store_true", help="end the session's token")
    add_db(token)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    path = mailbox_database(args, parser)
    return asyncio.run(_session(args, path))


def _has_mail(path: Path | str) -> bool:
    """Whether there may be mailboxes to read or leave: a non-empty file, or always on
    PostgreSQL (the registry's tables share the database with them)."""
    return isinstance(path, str) or (path.exists() and bool(path.stat().st_size))


async def _check_coordination(path: Path | str) -> None:
    """An existing database must be a coordination database of a version we read
    (read-only check), so no registry file is created beside anything else. An empty
    file is an empty database, as for every writer. On PostgreSQL the registry is in
    the database itself: there is nothing beside it to protect."""
    if isinstance(path, Path) and _has_mail(path):
        from termal_tui.store.reader import open_reader

        async with open_reader(path):
            pass


async def _session(args: argparse.Namespace, path: Path | str) -> int:
    await _check_coordination(path)
    registry = registry_for(path)
    if args.action == "add":
        session = await asyncio.to_thread(registry.add, args.name, args.agent, os.getcwd())
        print(f"added {session.name} ({session.id})")
        return EXIT_OK
    if args.action == "rm":
        session = await asyncio.to_thread(registry.remove, args.name)
        departed = 0
        if _has_mail(path):
            from termal_tui.store.writer import open_writer

            async with open_writer(path) as writer:
                departed = await writer.mark_session_left(session.id)
        print(f"removed {session.name} ({session.id}); left {departed} mailbox(es)")
        return EXIT_OK
    if args.action == "token":
        if args.revoke:
            session, ended = await asyncio.to_thread(registry.revoke_token, args.name)
            state = "revoked its token" if ended else "it had no token"
            print(f"{session.name} ({session.id}): {state}")
            return EXIT_OK
        session, token = await asyncio.to_thread(registry.issue_token, args.name)
        print(token)  # alone on stdout, for $(termal-tui session token NAME)
        print(
            f"termal-tui: a new token for {session.name} ({session.id}); its previous one, "
            "if any, no longer works",
            file=sys.stderr,
        )
        return EXIT_OK
    sessions = await asyncio.to_thread(registry.sessions, args.all)
    unread = await _unread_by_session(path, [s.id for s in sessions])
    holders = await asyncio.to_thread(registry.token_holders)
    if args.json:
        documents = [
            session_json(s) | {"unreadCount": unread.get(s.id, 0), "hasToken": s.id in holders}
            for s in sessions
        ]
        print(json.dumps(documents, indent=2, ensure_ascii=False))
        return EXIT_OK
    from termal_tui.cli.table import print_table

    rows = [
        [
            s.name,
            s.id,
            s.status,
            str(unread.get(s.id, 0)),
            channel_text(s),
            "yes" if s.id in holders else "",
            s.agent or "",
            s.created_at[:19].replace("T", " "),
        ]
        for s in sessions
    ]
    headers = ["name", "id", "status", "unread", "channel", "token", "agent", "created"]
    print_table(headers, rows, "no sessions yet")
    return EXIT_OK


async def _unread_by_session(path: Path | str, session_ids: list[str]) -> dict[str, int]:
    """Inbound mail each session has not processed (read-only; none without a database,
    nor in a PostgreSQL database that has sessions and no mailbox tables yet)."""
    if not _has_mail(path) or not session_ids:
        return {}
    from termal_tui.store.errors import SchemaError
    from termal_tui.store.reader import open_reader

    try:
        async with open_reader(path) as reader:
            return await _unread(reader, session_ids)
    except SchemaError as error:
        if isinstance(path, str) and "(missing table " in str(error):
            return {}  # no mail was ever sent there
        raise


async def _unread(reader: MailboxReader, session_ids: list[str]) -> dict[str, int]:
    return {
        session_id: sum(m.unread_count for m in await reader.list_mailboxes(session_id=session_id))
        for session_id in session_ids
    }


def session_json(session: Session) -> dict[str, Any]:
    listed = {key: value for key, value in session.to_wire().items() if key != "preview"}
    return listed | {
        "createdAt": session.created_at,
        "removedAt": session.removed_at,
        "channelConnected": session.channel_connected(),
        # Which process holds the session's channel: local or remote, pid/host, since when.
        "channel": session.channel.to_json()
        if session.channel_connected() and session.channel
        else None,
    }


def channel_text(session: Session) -> str:
    """Who holds the session's channel (``local pid 4242 since …``), or nothing."""
    if session.channel is None or not session.channel_connected():
        return ""
    from termal_tui.core.sanitize import visible_line

    return visible_line(session.channel.describe(), 100)
