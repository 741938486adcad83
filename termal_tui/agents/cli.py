"""The agents' command line: sessions, the MCP server, wake-ups and hooks, send/ls/read/ack.

    termal-tui session add NAME | list | rm NAME          the session registry
    termal-tui mcp --session NAME [--channel] [DB]        stdio MCP server for one agent
    termal-tui wake --session NAME [--boot]               print wake prompts (pull)
    termal-tui hook prompt|stop|session-start --session NAME   Claude Code hook adapters
    termal-tui send --as NAME TARGET BODY [--key K] [--topic T]
    termal-tui ls --as NAME | read --as NAME MAILBOX [--after N] | ack --as NAME MAILBOX N

Every command takes ``--db PATH`` (default: $TERMAL_HOME/coordination.sqlite, else
~/.termal/coordination.sqlite). Bad input is one sentence on stderr and an exit code
per error class (see EXIT_CODES), never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from termal_tui.agents.registry import Registry, Session
from termal_tui.agents.tools import AgentTools, ToolError
from termal_tui.models import UnreadWakeup
from termal_tui.sanitize import visible, visible_line
from termal_tui.store.errors import SchemaError, StoreError

T = TypeVar("T")

EXIT_OK = 0
EXIT_INVALID = 1  # 400/422: the request itself is wrong
EXIT_USAGE = 2  # argparse: the command line is wrong
EXIT_NOT_FOUND = 3  # 404: no such session, mailbox or message
EXIT_CONFLICT = 4  # 409: idempotency key reused, stale cursor
EXIT_BUSY = 5  # 503: busy; nothing was committed, run the same command again
EXIT_UNKNOWN = 6  # the outcome is unknown: run the exact same command again
EXIT_FAILED = 7  # storage or internal failure

EXIT_CODES = {400: EXIT_INVALID, 422: EXIT_INVALID, 404: EXIT_NOT_FOUND, 409: EXIT_CONFLICT}
EXIT_CODES |= {503: EXIT_BUSY, 0: EXIT_UNKNOWN, 500: EXIT_FAILED}

COMMANDS = ("session", "mcp", "wake", "hook", "send", "ls", "read", "ack")


class CommandError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _fail(message: str, code: int) -> int:
    print(f"termal-tui: error: {visible_line(message, 500)}", file=sys.stderr)
    return code


def _db_path(args: argparse.Namespace, default_db: Path) -> Path:
    given = getattr(args, "db_option", None) or getattr(args, "db", None)
    return Path(given).expanduser() if given else default_db


def busy_timeout(default: float = 5.0) -> float:
    """Seconds to wait for a busy database before a retryable failure (then replayed)."""
    raw = os.environ.get("TERMAL_TUI_BUSY_TIMEOUT")
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise CommandError(
            f"TERMAL_TUI_BUSY_TIMEOUT must be a number of seconds, not {raw!r}", EXIT_USAGE
        ) from None
    if not value > 0:
        raise CommandError("TERMAL_TUI_BUSY_TIMEOUT must be positive", EXIT_USAGE)
    return value


def _add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="PATH", help="coordination database")


EXIT_HELP = (
    "exit codes: 0 done; 1 invalid request (400) or not a coordination database; 2 bad "
    "command line; 3 not found (404); 4 conflict (409: key reused for other content, stale "
    "cursor); 5 busy (503: nothing committed, run it again); 6 outcome unknown (run the exact "
    "same command again); 7 storage or internal failure"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="termal-tui", description="Durable agent mailboxes.", epilog=EXIT_HELP
    )
    sub = parser.add_subparsers(dest="command", required=True)

    session = sub.add_parser("session", help="the session registry")
    session_sub = session.add_subparsers(dest="action", required=True)
    add = session_sub.add_parser("add", help="register a session")
    add.add_argument("name")
    add.add_argument("--agent", help="what runs it (e.g. Claude, Codex)")
    _add_db(add)
    listing = session_sub.add_parser("list", help="list sessions")
    listing.add_argument("--all", action="store_true", help="include removed sessions")
    listing.add_argument("--json", action="store_true")
    _add_db(listing)
    rm = session_sub.add_parser("rm", help="remove a session (ends its mailbox participation)")
    rm.add_argument("name")
    _add_db(rm)

    mcp = sub.add_parser("mcp", help="serve one agent over stdio (needs termal-tui[mcp])")
    mcp.add_argument("db", nargs="?", help="coordination database")
    mcp.add_argument("--db", dest="db_option", metavar="PATH", help=argparse.SUPPRESS)
    mcp.add_argument("--session", required=True, metavar="NAME")
    mcp.add_argument("--agent", help="what runs it (shown by termal_list_sessions)")
    mcp.add_argument(
        "--channel",
        action="store_true",
        help="push wake-ups as Claude Code channel events (claude/channel)",
    )
    mcp.add_argument("--interval", type=float, default=0.2, help=argparse.SUPPRESS)

    wake = sub.add_parser("wake", help="print a wake prompt per mailbox with unread mail")
    wake.add_argument("--session", required=True, metavar="NAME")
    wake.add_argument("--boot", action="store_true", help="every unread mailbox, not only new")
    wake.add_argument("--json", action="store_true")
    _add_db(wake)

    hook = sub.add_parser("hook", help="Claude Code hook adapters (read the hook's JSON)")
    hook.add_argument("event", choices=("prompt", "stop", "session-start"))
    hook.add_argument("--session", required=True, metavar="NAME")
    _add_db(hook)

    send = sub.add_parser("send", epilog=EXIT_HELP, help="send a message")
    send.add_argument("--as", dest="as_", required=True, metavar="NAME")
    send.add_argument("target", help="peer session name or id")
    send.add_argument("body", help="message text (- reads standard input)")
    send.add_argument("--key", help="idempotency key (default: derived from the content)")
    send.add_argument("--topic")
    send.add_argument("--json", action="store_true")
    _add_db(send)

    ls = sub.add_parser("ls", epilog=EXIT_HELP, help="list your mailboxes")
    ls.add_argument("--as", dest="as_", required=True, metavar="NAME")
    ls.add_argument("--json", action="store_true")
    _add_db(ls)

    read = sub.add_parser("read", epilog=EXIT_HELP, help="read a mailbox (never moves your cursor)")
    read.add_argument("--as", dest="as_", required=True, metavar="NAME")
    read.add_argument("mailbox", help="mailbox id, or the peer's name or id")
    read.add_argument("--after", type=int, default=None, help="after this sequence")
    read.add_argument("--limit", type=int, default=50)
    read.add_argument("--json", action="store_true")
    _add_db(read)

    ack = sub.add_parser(
        "ack", epilog=EXIT_HELP, help="acknowledge through a sequence (compare-and-set)"
    )
    ack.add_argument("--as", dest="as_", required=True, metavar="NAME")
    ack.add_argument("mailbox", help="mailbox id, or the peer's name or id")
    ack.add_argument("sequence", type=int)
    ack.add_argument("--json", action="store_true")
    _add_db(ack)
    return parser


def main(argv: Sequence[str], default_db: Path) -> int:
    args = build_parser().parse_args(list(argv))
    path = _db_path(args, default_db)
    try:
        if args.command == "mcp":
            return _mcp(args, path)
        return asyncio.run(_dispatch(args, path))
    except CommandError as error:
        return _fail(str(error), error.code)
    except ToolError as error:
        return _fail(str(error), EXIT_CODES.get(error.status, EXIT_FAILED))
    except SchemaError as error:  # the file given is not a coordination database
        return _fail(str(error), EXIT_INVALID)
    except StoreError as error:
        return _fail(str(error), EXIT_CODES.get(error.http_status, EXIT_FAILED))
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # never a traceback: one sentence and a non-zero exit
        return _fail(f"unexpected failure ({type(error).__name__}: {error})", EXIT_FAILED)


async def _check_database(path: Path) -> None:
    """A database that exists must be a coordination database (read-only check), so a
    mistyped path gets one sentence and no registry file is created beside it."""
    if path.exists() or path.is_symlink():
        from termal_tui.store.reader import open_reader

        async with open_reader(path):
            pass


async def _dispatch(args: argparse.Namespace, path: Path) -> int:
    registry = Registry.beside(path, busy_timeout=busy_timeout())
    if args.command == "session":
        await _check_database(path)  # the only command that writes the registry first
        return await _session(args, path, registry)
    if args.command == "wake":
        return await _wake(args, path, registry)
    if args.command == "hook":
        return await _hook(args, path, registry)
    me = await asyncio.to_thread(registry.resolve_own, args.as_)
    async with _tools(path, registry, me) as tools:
        handler: Callable[[argparse.Namespace, AgentTools], Awaitable[int]] = {
            "send": _send,
            "ls": _ls,
            "read": _read,
            "ack": _ack,
        }[args.command]
        return await handler(args, tools)


@asynccontextmanager
async def _tools(path: Path, registry: Registry, me: Session) -> Any:
    from termal_tui.store.writer import open_writer

    seconds = busy_timeout()
    async with open_writer(path, deadline=seconds, busy_timeout_ms=int(seconds * 1000)) as writer:
        yield AgentTools(writer, registry, me.id)


# ------------------------------------------------------------------ sessions


async def _session(args: argparse.Namespace, path: Path, registry: Registry) -> int:
    if args.action == "add":
        session = await asyncio.to_thread(registry.add, args.name, args.agent, os.getcwd())
        print(f"added {session.name} ({session.id})")
        return EXIT_OK
    if args.action == "rm":
        session = await asyncio.to_thread(registry.remove, args.name)
        departed = 0
        if path.exists():
            from termal_tui.store.writer import open_writer

            async with open_writer(path) as writer:
                departed = await writer.mark_session_left(session.id)
        print(f"removed {session.name} ({session.id}); left {departed} mailbox(es)")
        return EXIT_OK
    sessions = await asyncio.to_thread(registry.sessions, args.all)
    unread = await _unread_by_session(path, [s.id for s in sessions])
    if args.json:
        documents = [_session_json(s) | {"unreadCount": unread.get(s.id, 0)} for s in sessions]
        print(json.dumps(documents, indent=2, ensure_ascii=False))
        return EXIT_OK
    rows = [
        [
            s.name,
            s.id,
            s.status,
            str(unread.get(s.id, 0)),
            "connected" if s.channel_connected() else "",
            s.agent or "",
            s.created_at[:19].replace("T", " "),
        ]
        for s in sessions
    ]
    headers = ["name", "id", "status", "unread", "channel", "agent", "created"]
    _table(headers, rows, "no sessions yet")
    return EXIT_OK


async def _unread_by_session(path: Path, session_ids: list[str]) -> dict[str, int]:
    """Inbound mail each session has not processed (read-only; none without a database)."""
    if not path.exists() or not session_ids:
        return {}
    from termal_tui.store.reader import open_reader

    async with open_reader(path) as reader:
        return {
            session_id: sum(
                m.unread_count for m in await reader.list_mailboxes(session_id=session_id)
            )
            for session_id in session_ids
        }


def _session_json(session: Session) -> dict[str, Any]:
    return {
        "sessionId": session.id,
        "name": session.name,
        "agent": session.agent,
        "status": session.status,
        "workdir": session.workdir,
        "createdAt": session.created_at,
        "removedAt": session.removed_at,
        "channelConnected": session.channel_connected(),
    }


# ------------------------------------------------------------------ send/ls/read/ack


def derived_key(target_id: str, body: str, topic: str | None) -> str:
    """The same command run twice is one message (a retry), not two."""
    digest = hashlib.sha256("\0".join((target_id, body, topic or "")).encode()).hexdigest()
    return f"cli-{digest[:32]}"


async def _send(args: argparse.Namespace, tools: AgentTools) -> int:
    body = sys.stdin.read() if args.body == "-" else args.body
    target = await tools.resolve_target(args.target.strip())
    arguments = {"sessionId": args.target, "message": body, "topic": args.topic}
    arguments["idempotencyKey"] = args.key or derived_key(target.id, body.strip(), args.topic)
    receipt = await tools.call("termal_send_to_session", arguments)
    if args.json:
        print(json.dumps(receipt, indent=2, ensure_ascii=False))
        return EXIT_OK
    again = " (already sent: this is the original receipt)" if receipt["duplicate"] else ""
    print(
        f"sent #{receipt['sequence']} to {visible_line(target.name, 64)} in "
        f"{receipt['mailboxId']}: {receipt['notificationDisposition']}{again}"
    )
    return EXIT_OK


async def _ls(args: argparse.Namespace, tools: AgentTools) -> int:
    result = await tools.call("termal_list_mailboxes", {})
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return EXIT_OK
    rows = []
    for summary in result["mailboxes"]:
        mine = next(p for p in summary["participants"] if p["sessionId"] == tools.session_id)
        peers = ", ".join(
            p["displayName"] for p in summary["participants"] if p["sessionId"] != tools.session_id
        )
        rows.append(
            [
                peers,
                str(summary["unreadCount"]),
                f"{mine['processedThrough']}/{summary['latestSequence']}",
                summary.get("latestMessagePreview") or "",
                summary["id"],
            ]
        )
    # cursor: your processedThrough / the latest sequence
    _table(["with", "unread", "cursor", "preview", "mailbox"], rows, "no mailboxes yet")
    return EXIT_OK


async def _mailbox_id(tools: AgentTools, reference: str) -> str:
    """A mailbox id as given, or the mailbox shared with a peer named by name or id (a
    removed peer too: its history stays readable)."""
    if reference.startswith("mailbox-"):
        return reference
    reference = reference.strip()
    try:
        peer_ids = {(await tools.resolve_target(reference)).id}
    except ToolError as error:
        if error.status != 404:
            raise
        removed = tools.registry.find_removed_by_name(reference)
        peer_ids = {s.id for s in removed} or (
            {reference} if reference.startswith("session-") else set()
        )
        if not peer_ids:
            raise
    for summary in (await tools.call("termal_list_mailboxes", {}))["mailboxes"]:
        if any(p["sessionId"] in peer_ids for p in summary["participants"]):
            return str(summary["id"])
    raise CommandError(f"you share no mailbox with {visible_line(reference, 64)}", EXIT_NOT_FOUND)


async def _summary(tools: AgentTools, mailbox_id: str) -> dict[str, Any]:
    for summary in (await tools.call("termal_list_mailboxes", {}))["mailboxes"]:
        if summary["id"] == mailbox_id:
            return dict(summary)
    raise CommandError(f"no mailbox {mailbox_id} for this session", EXIT_NOT_FOUND)


def _cursor_of(summary: dict[str, Any], session_id: str) -> int:
    for participant in summary["participants"]:
        if participant["sessionId"] == session_id:
            return int(participant["processedThrough"])
    return 0


async def _read(args: argparse.Namespace, tools: AgentTools) -> int:
    mailbox_id = await _mailbox_id(tools, args.mailbox)
    summary = await _summary(tools, mailbox_id)
    after = _cursor_of(summary, tools.session_id) if args.after is None else args.after
    result = await tools.call(
        "termal_read_mailbox",
        {"mailboxId": mailbox_id, "afterSequence": after, "limit": args.limit},
    )
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return EXIT_OK
    # Processed or unread by its own target, as in the viewer (your own messages show
    # whether the peer has processed them).
    rows = [
        [
            f"#{m['sequence']}",
            m["senderName"],
            m["createdAt"][:19].replace("T", " "),
            "processed" if m["sequence"] <= _cursor_of(summary, m["targetSessionId"]) else "unread",
            m["body"],
        ]
        for m in result["messages"]
    ]
    _table(["seq", "from", "at", "state", "body"], rows, f"nothing after #{after}")
    return EXIT_OK


async def _ack(args: argparse.Namespace, tools: AgentTools) -> int:
    mailbox_id = await _mailbox_id(tools, args.mailbox)
    expected = _cursor_of(await _summary(tools, mailbox_id), tools.session_id)
    summary = await tools.call(
        "termal_acknowledge_mailbox",
        {
            "mailboxId": mailbox_id,
            "expectedProcessedThrough": expected,
            "processedThrough": args.sequence,
        },
    )
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return EXIT_OK
    mine = next(p for p in summary["participants"] if p["sessionId"] == tools.session_id)
    print(
        f"processed through #{mine['processedThrough']} in {mailbox_id} "
        f"(was #{expected}); {summary['unreadCount']} unread"
    )
    return EXIT_OK


# ------------------------------------------------------------------ wake and hooks


async def _wake_prompts(
    path: Path, registry: Registry, name: str, boot: bool, emit: Callable[[str], None]
) -> list[UnreadWakeup]:
    from termal_tui.agents.wake import wake_pass
    from termal_tui.store.writer import open_writer

    me = await asyncio.to_thread(registry.resolve_own, name)
    if not path.exists():
        return []  # no database yet: nothing to say

    async def written(_wake: UnreadWakeup, prompt: str) -> None:
        emit(prompt)

    async with open_writer(path) as writer:
        return await wake_pass(writer, me.id, written, boot=boot)


def _print_flushed(text: str) -> None:
    """Delivered means written: a broken pipe raises, leaving the rows recoverable."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError as error:
        raise OSError("standard output is closed") from error


async def _wake(args: argparse.Namespace, path: Path, registry: Registry) -> int:
    first = [True]

    def emit(prompt: str) -> None:
        if args.json:
            _print_flushed(json.dumps({"prompt": prompt}, ensure_ascii=False) + "\n")
        else:
            # Names in a prompt come from the database: never raw escapes on a terminal.
            _print_flushed(("" if first[0] else "\n") + visible(prompt) + "\n")
        first[0] = False

    await _wake_prompts(path, registry, args.session, args.boot, emit)
    return EXIT_OK


def _hook_input() -> dict[str, Any]:
    """The hook's JSON on stdin (absent or malformed input is an empty object)."""
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    try:
        value = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def hook_output(
    event: str, prompts: list[str], unread_waiting: bool, stop_active: bool
) -> dict[str, Any] | None:
    """What a Claude Code hook prints: context for prompt/session-start, block for stop."""
    text = "\n\n".join(prompts)
    if event == "stop":
        if prompts:
            return {"decision": "block", "reason": text}
        if unread_waiting and not stop_active:
            return {
                "decision": "block",
                "reason": "Unread mailbox messages are waiting: call termal_list_mailboxes, "
                "read them with termal_read_mailbox and acknowledge what you processed with "
                "termal_acknowledge_mailbox before stopping.",
            }
        return None
    if not prompts:
        return None
    name = "SessionStart" if event == "session-start" else "UserPromptSubmit"
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}


async def _hook(args: argparse.Namespace, path: Path, registry: Registry) -> int:
    payload = _hook_input()
    from termal_tui.agents.wake import mark_delivered, prepare_wakes
    from termal_tui.store.writer import open_writer

    async def begin() -> Session:
        # Like `mcp`, a hook registers its session if new (a SessionStart hook may run
        # before the agent's MCP server has started). A prompt starts a turn; a new
        # session starts idle (closing a turn an agent that died mid-turn left open).
        me = await asyncio.to_thread(registry.ensure, args.session)
        if args.event in ("prompt", "session-start"):
            await asyncio.to_thread(registry.set_turn, me.id, args.event == "prompt")
        return me

    if not path.exists():  # no mail yet: nothing to say
        me = await begin()
        if args.event == "stop":
            await asyncio.to_thread(registry.set_turn, me.id, False)
        return EXIT_OK
    async with open_writer(path) as writer:  # first: a bad path is refused before the registry
        me = await begin()
        # Hook output is one JSON document: every wake is prepared (recoveredWake) first
        # and delivered only once that document is out.
        prepared = await prepare_wakes(writer, me.id, boot=args.event == "session-start")
        prompts = [prompt for _wake, prompt in prepared]
        unread = bool(prompts) or bool(await writer.wakeups_for_session(me.id, boot=True))
        output = hook_output(args.event, prompts, unread, bool(payload.get("stop_hook_active")))
        if output is not None:
            _print_flushed(json.dumps(output, ensure_ascii=False) + "\n")
        await mark_delivered(writer, me.id, [wake for wake, _prompt in prepared])
    if args.event == "stop" and output is None:
        await asyncio.to_thread(registry.set_turn, me.id, False)
    return EXIT_OK


# ------------------------------------------------------------------ the MCP server


def _mcp(args: argparse.Namespace, path: Path) -> int:
    try:
        from termal_tui.agents.mcp_server import ServerOptions, serve
    except ImportError:
        return _fail(
            "the MCP server needs the official mcp SDK: pip install 'termal-tui[mcp]'",
            EXIT_FAILED,
        )
    options = ServerOptions(
        db_path=path,
        session=args.session,
        channel=args.channel,
        interval=args.interval,
        busy_timeout=busy_timeout(),
        agent=args.agent,
    )
    import anyio

    anyio.run(serve, options)
    return EXIT_OK


# ------------------------------------------------------------------ output


def _table(headers: list[str], rows: list[list[str]], empty: str) -> None:
    """A rich table; every cell is plain text (agent-written content is never markup).

    Ids are never cut (they are what you copy); a ``body`` column keeps its lines with
    control characters made visible; the ``preview`` column is what gives way. When even
    that cannot make the table fit the terminal, each row is printed as a small block of
    ``header: value`` lines instead of a squeezed table.
    """
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    if not rows:
        console.print(Text(empty, style="dim"))
        return
    cells = [
        [
            visible(cell) if header == "body" else visible_line(cell, 400)
            for header, cell in zip(headers, row, strict=True)
        ]
        for row in rows
    ]
    flexible = {"preview", "body"}
    fixed = sum(
        max(len(header), *(len(row[i]) for row in cells))
        for i, header in enumerate(headers)
        if header not in flexible
    )
    if fixed + 2 * (len(headers) - 1) + 10 * len(flexible & set(headers)) > console.width:
        width = max(len(header) for header in headers)
        for number, row in enumerate(cells):
            if number:
                console.print()
            for header, cell in zip(headers, row, strict=True):
                line = Text(f"{header:>{width}}  ", style="bold")
                line.append(cell.replace("\n", "\n" + " " * (width + 2)))
                console.print(line, overflow="fold")
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    room = console.width - fixed - 2 * (len(headers) - 1)  # what the flexible column gets
    for index, header in enumerate(headers):
        widest = max(len(header), *(len(row[index]) for row in cells))
        table.add_column(
            header,
            overflow="fold" if header == "body" else "ellipsis",
            no_wrap=header != "body",
            width=None if header in flexible else widest,
            max_width=max(len(header), room) if header in flexible else None,
        )
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
