"""``termal-tui send|ls|read|ack --as NAME``: TermAl's mailbox tools from a shell.

Each command is one call of the typed tools API the MCP server also calls, so a shell
and an agent get the same contract, the same checks and the same errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from termal_tui.cli.agents import add_identity, agent_tools, mailbox_database
from termal_tui.cli.common import EXIT_NOT_FOUND, EXIT_OK, CommandError, whole_number

if TYPE_CHECKING:
    from termal_tui.agents.tools import AgentTools
    from termal_tui.core.models import MailboxSummary


def describe(_name: str, line: str) -> str:
    return line


_count = whole_number(0, "must be 0 or more")


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    add_identity(parser)
    if name == "send":
        parser.add_argument("target", help="peer session name or id")
        parser.add_argument("body", help="message text (- reads standard input)")
        parser.add_argument("--key", help="idempotency key (default: derived from the content)")
        parser.add_argument("--topic")
    elif name in ("read", "ack"):
        parser.add_argument("mailbox", help="mailbox id, or the peer's name or id")
        if name == "read":
            parser.add_argument("--after", type=_count, default=None, help="after this sequence")
            parser.add_argument("--limit", type=_count, default=50)
        else:
            parser.add_argument("sequence", type=_count)
    parser.add_argument("--json", action="store_true", help="TermAl's JSON, for scripts")
    parser.set_defaults(command=name)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    path = mailbox_database(args, parser)

    async def main() -> int:
        async with agent_tools(path, args.as_) as tools:
            handler = {"send": _send, "ls": _ls, "read": _read, "ack": _ack}[args.command]
            return await handler(args, tools)

    return asyncio.run(main())


def _print_json(value: Any) -> int:
    print(json.dumps(value, indent=2, ensure_ascii=False))
    return EXIT_OK


def derived_key(target_id: str, body: str, topic: str | None) -> str:
    """The same command run twice is one message (a retry), not two."""
    import hashlib

    digest = hashlib.sha256("\0".join((target_id, body, topic or "")).encode()).hexdigest()
    return f"cli-{digest[:32]}"


async def _send(args: argparse.Namespace, tools: AgentTools) -> int:
    from termal_tui.core.sanitize import visible_line

    body = sys.stdin.read() if args.body == "-" else args.body
    target = await tools.resolve_target(args.target.strip())
    key = args.key or derived_key(target.id, body.strip(), args.topic)
    sent = await tools.send(target, body, key, topic=args.topic)
    if args.json:
        return _print_json(sent.to_wire() | {"resolvedFrom": args.target})
    receipt = sent.receipt
    again = " (already sent: this is the original receipt)" if receipt.duplicate else ""
    print(
        f"sent #{receipt.sequence} to {visible_line(sent.target.name, 64)} in "
        f"{receipt.mailbox_id}: {receipt.notification_disposition}{again}"
    )
    return EXIT_OK


async def _ls(args: argparse.Namespace, tools: AgentTools) -> int:
    from termal_tui.cli.table import print_table

    summaries = await tools.mailboxes()
    if args.json:
        return _print_json({"mailboxes": [s.to_wire() for s in summaries]})
    rows = []
    for summary in summaries:
        mine = summary.participant(tools.session_id)
        peers = ", ".join(
            p.display_name for p in summary.participants if p.session_id != tools.session_id
        )
        rows.append(
            [
                peers,
                str(summary.unread_count),
                f"{mine.processed_through if mine else 0}/{summary.latest_sequence}",
                summary.latest_message_preview or "",
                summary.id,
            ]
        )
    # cursor: your processedThrough / the latest sequence
    print_table(["with", "unread", "cursor", "preview", "mailbox"], rows, "no mailboxes yet")
    return EXIT_OK


async def _summary(tools: AgentTools, reference: str) -> MailboxSummary:
    """The mailbox given by id, or the one shared with a peer named by name or id (a
    removed peer too: its history stays readable)."""
    from termal_tui.agents.tools import ToolError
    from termal_tui.core.errors import ErrorKind
    from termal_tui.core.sanitize import visible_line

    reference = reference.strip()
    summaries = await tools.mailboxes()
    if reference.startswith("mailbox-"):
        for summary in summaries:
            if summary.id == reference:
                return summary
        raise CommandError(f"no mailbox {reference} for this session", EXIT_NOT_FOUND)
    try:
        peer_ids = {(await tools.resolve_target(reference)).id}
    except ToolError as error:
        if error.kind is not ErrorKind.NOT_FOUND:
            raise
        removed = await asyncio.to_thread(tools.registry.find_removed_by_name, reference)
        peer_ids = {s.id for s in removed} or (
            {reference} if reference.startswith("session-") else set()
        )
        if not peer_ids:
            raise
    for summary in summaries:
        if any(p.session_id in peer_ids for p in summary.participants):
            return summary
    raise CommandError(f"you share no mailbox with {visible_line(reference, 64)}", EXIT_NOT_FOUND)


def _cursor_of(summary: MailboxSummary, session_id: str) -> int:
    participant = summary.participant(session_id)
    return participant.processed_through if participant else 0


async def _read(args: argparse.Namespace, tools: AgentTools) -> int:
    from termal_tui.cli.table import print_table

    summary = await _summary(tools, args.mailbox)
    after = _cursor_of(summary, tools.session_id) if args.after is None else args.after
    messages = await tools.read(summary.id, after, args.limit)
    if args.json:
        return _print_json({"mailboxId": summary.id, "messages": [m.to_wire() for m in messages]})
    # Processed or unread by its own target, as in the viewer (your own messages show
    # whether the peer has processed them).
    rows = [
        [
            f"#{m.sequence}",
            m.sender_name,
            m.created_at[:19].replace("T", " "),
            "processed" if m.sequence <= _cursor_of(summary, m.target_session_id) else "unread",
            m.body,
        ]
        for m in messages
    ]
    print_table(["seq", "from", "at", "state", "body"], rows, f"nothing after #{after}")
    return EXIT_OK


async def _ack(args: argparse.Namespace, tools: AgentTools) -> int:
    summary = await _summary(tools, args.mailbox)
    expected = _cursor_of(summary, tools.session_id)
    after = await tools.acknowledge(summary.id, expected, args.sequence)
    if args.json:
        return _print_json(after.to_wire())
    print(
        f"processed through #{_cursor_of(after, tools.session_id)} in {summary.id} "
        f"(was #{expected}); {after.unread_count} unread"
    )
    return EXIT_OK
