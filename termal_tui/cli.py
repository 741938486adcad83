"""Command line: ``termal-tui [DB] [--demo] [--mailbox ID] [--session ID] [--interval S]``.

Bad input gets one clear sentence on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from termal_tui import __version__
from termal_tui.sanitize import quote, visible_line
from termal_tui.store.errors import NotFoundError, RetryableError, StoreError

AGENT_COMMANDS = ("session", "mcp", "wake", "hook", "send", "ls", "read", "ack")
EXIT_USAGE = 2
EXIT_INPUT = 1


def default_db_path() -> Path:
    home = os.environ.get("TERMAL_HOME")
    base = Path(home).expanduser() if home else Path.home() / ".termal"
    return base / "coordination.sqlite"


def build_parser() -> argparse.ArgumentParser:
    # Imported here: agent commands (hooks run on every prompt) never pay for them.
    from termal_tui.doctor import add_threshold_flags, seconds_arg

    interval = seconds_arg("the interval must be 0 (off) or a positive number")
    parser = argparse.ArgumentParser(
        prog="termal-tui",
        description="A read-only terminal viewer for TermAl agent mailboxes. "
        "`termal-tui doctor [DB] [--json]` reports stuck hand-offs for scripts; "
        "`termal-tui export [DB] --mailbox ID` writes messages as JSONL or Markdown. "
        "For agents: `termal-tui session add|list|rm`, `termal-tui mcp --session NAME` (a stdio "
        "MCP server with TermAl's mailbox tools), `termal-tui wake|hook`, and "
        "`termal-tui send|ls|read|ack --as NAME` (each has -h).",
    )
    parser.add_argument(
        "db",
        nargs="?",
        help="coordination database (default: $TERMAL_HOME/coordination.sqlite, "
        "else ~/.termal/coordination.sqlite)",
    )
    parser.add_argument("--demo", action="store_true", help="build and open a demo database")
    parser.add_argument("--mailbox", metavar="ID", help="open this mailbox's tab on start")
    parser.add_argument("--session", metavar="ID", help="view as this participant session")
    parser.add_argument(
        "--interval",
        metavar="SECONDS",
        type=interval,
        default=8.0,
        help="live refresh interval in seconds (0 turns polling off; default 8)",
    )
    parser.add_argument("--version", action="version", version=f"termal-tui {__version__}")
    add_threshold_flags(parser)  # for the health view (h) and the index markers
    return parser


async def _validate(path: Path, mailbox: str | None, session: str | None) -> None:
    from termal_tui.store.reader import open_reader

    async with open_reader(path) as reader:
        if session is not None and session not in await reader.session_ids():
            raise NotFoundError(f"no mailbox participant has session id {quote(session)}.")
        if mailbox is not None:
            try:
                await reader.get_head(mailbox, session_id=session)
            except NotFoundError:
                viewer = f" for session {quote(session)}" if session else ""
                raise NotFoundError(
                    f"no visible mailbox with id {quote(mailbox)}{viewer}."
                ) from None


def _fail(message: str) -> int:
    """One sentence on stderr; anything quoted from the database is made visible and capped."""
    print(f"termal-tui: error: {visible_line(message, 500)}", file=sys.stderr)
    return EXIT_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["doctor"]:
        from termal_tui.doctor import main as doctor

        return doctor(arguments[1:], default_db_path())
    if arguments[:1] and arguments[0] in AGENT_COMMANDS:
        from termal_tui.agents.cli import main as agents

        return agents(arguments, default_db_path())
    if arguments[:1] == ["export"]:
        from termal_tui.export import main as export

        return export(arguments[1:], default_db_path())
    args = build_parser().parse_args(arguments)
    temp_dir: tempfile.TemporaryDirectory[str] | None = None
    try:
        if args.demo:
            if args.db:
                return _fail("give either a database path or --demo, not both.")
            from termal_tui.demo import build_demo  # the demo writes; the viewer never does

            temp_dir = tempfile.TemporaryDirectory(prefix="termal-tui-demo-")
            path = Path(temp_dir.name) / "coordination.sqlite"
            asyncio.run(build_demo(path))
        else:
            path = Path(args.db).expanduser() if args.db else default_db_path()
            if not path.exists():
                return _fail(f"{path} does not exist. Try `termal-tui --demo` to see a demo.")
        try:
            asyncio.run(_validate(path, args.mailbox, args.session))
        except RetryableError as error:
            # Busy (locked by another process): the viewer opens Stale and keeps trying.
            message = visible_line(str(error).rstrip("."), 300)
            print(f"termal-tui: {message}; the viewer will keep trying.", file=sys.stderr)
        except StoreError as error:
            return _fail(str(error).rstrip(".") + ".")
        from termal_tui.doctor import thresholds_from
        from termal_tui.tui.app import make_app

        make_app(
            path,
            session_id=args.session,
            mailbox_id=args.mailbox,
            poll_interval=args.interval,
            thresholds=thresholds_from(args),
        ).run()
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        if temp_dir is not None:
            temp_dir.cleanup()
