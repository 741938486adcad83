"""``termal-tui mcp --session NAME [DB] [--channel]``: one agent's stdio MCP server;
``termal-tui mcp --remote URL [--token-env VAR] [--channel]``: the same, forwarded to a hub."""

from __future__ import annotations

import argparse
from pathlib import Path

from termal_tui.cli.agents import busy_timeout, mailbox_database, registry_for
from termal_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_db,
    local_db_path,
)


def describe(_name: str, _line: str) -> str:
    return (
        "Serve one agent TermAl's six mailbox tools and three coordination-board tools "
        "over stdio MCP (needs the mcp extra: "
        "pip install 'termal-tui[mcp]')."
    )


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 60:
        raise argparse.ArgumentTypeError("the interval is more than 0 and at most 60 seconds")
    return value


def _switch(text: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "on", "yes", "1"):
        return True
    if word in ("false", "off", "no", "0", ""):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    add_db(parser, positional=True)
    parser.add_argument(
        "--session", metavar="NAME", help="the agent's session (required without --remote)"
    )
    parser.add_argument(
        "--remote",
        metavar="URL",
        action="append",
        help="forward every call to a hub (termal-tui serve) at URL, e.g. "
        "https://hub.example:8765/mcp; the token decides the session. Give it once per hub "
        "of the same PostgreSQL database: the shim uses the first and moves to the next "
        "when one cannot be reached, sending a call that failed in transit again, exactly",
    )
    parser.add_argument(
        "--token-env",
        metavar="VAR",
        default="TERMAL_TUI_TOKEN",
        help="with --remote: the environment variable holding the session's token "
        "(default TERMAL_TUI_TOKEN)",
    )
    parser.add_argument("--agent", help="what runs it (shown by termal_list_sessions)")
    parser.add_argument(
        "--register",
        action="store_true",
        help="register the session if it is new (otherwise an unknown name is an error)",
    )
    parser.add_argument(
        "--channel",
        action="store_true",
        help="push wake-ups as Claude Code channel events (claude/channel)",
    )
    parser.add_argument(
        "--channel-switch",
        type=_switch,
        default=False,
        metavar="true|false",
        help="--channel when true (for configs that can only fill in a value, such as a "
        "Claude Code plugin option)",
    )
    parser.add_argument(
        "--project",
        metavar="ID|PATH",
        help="the board's project for this session (kept for it; default: the TermAl project "
        "containing its directory, else its git top-level)",
    )
    parser.add_argument("--interval", type=_interval, default=0.2, help=argparse.SUPPRESS)
    # With --remote: how often the shim pings the hub (the hub counts its wake stream
    # dead after three missed); tests shorten it.
    parser.add_argument("--ping-every", type=_interval, default=5.0, help=argparse.SUPPRESS)


def _run_remote(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import os

    if args.session or args.register or args.project or args.db or args.db_option:
        parser.error(
            "with --remote the hub's file and the token decide the session: leave out "
            "DB, --db, --session, --register and --project"
        )
    for url in args.remote:
        if not url.startswith(("http://", "https://")):
            parser.error("--remote takes an http:// or https:// URL (the hub's /mcp endpoint)")
    token = os.environ.get(args.token_env, "").strip()
    if not token:
        raise CommandError(
            f"--remote needs the session's token in ${args.token_env} (from `termal-tui "
            "session token NAME` on the hub)",
            EXIT_USAGE,
        )
    try:
        from termal_tui.agents.remote import RemoteOptions, StartupError, serve_remote
    except ImportError:
        raise CommandError(
            "the MCP server needs the official mcp SDK: pip install 'termal-tui[mcp]'",
            EXIT_FAILED,
        ) from None
    import anyio

    options = RemoteOptions(
        url=args.remote[0],
        fallbacks=tuple(dict.fromkeys(args.remote))[1:],  # each hub once, in the order given
        token=token,
        channel=args.channel or args.channel_switch,
        ping_every=args.ping_every,
    )
    try:
        anyio.run(serve_remote, options)
    except StartupError as error:
        # Before the MCP handshake: the agent's client shows this server as failed, with
        # this sentence in its log, rather than connected with tools that cannot work.
        raise CommandError(f"termal-tui mcp --remote: {error}", EXIT_FAILED) from None
    return EXIT_OK


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.remote:
        return _run_remote(args, parser)
    if not args.session:
        parser.error("the following arguments are required: --session (or --remote URL)")
    path = mailbox_database(args, parser)  # a path, or a postgresql:// URL
    if not args.register:
        # An unknown or removed name is refused before the server starts (one sentence
        # and exit 3, not a server that fails its first tool call).
        registry_for(path).resolve_own(args.session)
    try:
        from termal_tui.agents.mcp_server import ServerOptions, serve
    except ImportError:
        raise CommandError(
            "the MCP server needs the official mcp SDK: pip install 'termal-tui[mcp]'",
            EXIT_FAILED,
        ) from None
    options = ServerOptions(
        db_path=path,
        state_path=path if isinstance(path, Path) else local_db_path(),
        session=args.session,
        channel=args.channel or args.channel_switch,
        interval=args.interval,
        busy_timeout=busy_timeout(),
        agent=args.agent,
        register=args.register,
        project=args.project,
    )
    import anyio

    anyio.run(serve, options)
    return EXIT_OK
