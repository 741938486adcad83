"""``termal-tui serve [--db DB] [--host 127.0.0.1] [--port 8765]``: the hub
(``agents/hub.py``): every session's tools over MCP streamable HTTP at ``/mcp``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from termal_tui.cli.agents import busy_timeout, mailbox_database, registry_for
from termal_tui.cli.common import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_db,
    local_db_path,
)

LEVELS = ("debug", "info", "warning", "error")


def describe(_name: str, _line: str) -> str:
    return (
        "Serve TermAl's mailbox and board tools to agents on other machines over MCP "
        "streamable HTTP at /mcp. Each session authenticates with its own bearer token "
        "(termal-tui session token NAME); the token decides who the caller is. Loopback "
        "only unless --allow-remote. The viewer needs no network: run it on this host "
        "(over SSH). On a postgresql:// database several hubs serve the same mailboxes: "
        "a token works on each, and an agent is woken whichever hub the message came "
        "through."
    )


# The hub's limits: flag, type, help ("{default}" is the default, as the hub has it).
LIMIT_FLAGS: tuple[tuple[str, type, str], ...] = (
    ("--rate", float, "requests per second per token, sustained (default {default})"),
    ("--burst", int, "requests per token at once (default {default})"),
    ("--max-connections", int, "open TCP connections in all (default {default}; 503 beyond)"),
    (
        "--max-pending-per-address",
        int,
        "connections per client address that have not yet shown a valid token (default "
        "{default}; beyond it the address's oldest idle one is set aside, and a newcomer "
        "whose request is already on its way waits for a free place)",
    ),
    (
        "--max-held",
        int,
        "idle connections without a token held open and unread, rather than closed, when "
        "their address is past its pending limit (default {default}; 0: closed at once; an "
        "attacker that reconnects whatever is closed finds nothing to churn)",
    ),
    ("--hold-timeout", float, "seconds a held connection stays open (default {default})"),
    ("--header-timeout", float, "seconds a request header may take to arrive (default {default})"),
    (
        "--body-timeout",
        float,
        "seconds a request body may take after its header (default {default})",
    ),
    ("--max-sessions", int, "open MCP sessions (default {default})"),
    ("--session-idle", float, "seconds an MCP session may stay idle (default {default})"),
    ("--keep-alive", float, "seconds an idle HTTP connection stays open (default {default})"),
    ("--drain", float, "SIGTERM: seconds in-flight calls may take to finish (default {default})"),
)


def _field(flag: str) -> str:
    """The HubLimits field (and argparse dest) of a limit's flag."""
    return flag.removeprefix("--").replace("-", "_")


# The limits whose 0 means something ("none held"); every other one is more than 0.
MAY_BE_ZERO = frozenset({"--max-held"})


def _positive(kind: type[float] | type[int], *, zero: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value < 0 if zero else not value > 0:
            raise argparse.ArgumentTypeError("must be 0 or more" if zero else "must be more than 0")
        return value

    return parse


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("a port is 0..65535 (0: any free port)")
    return value


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    from termal_tui.agents.hub import HubLimits

    defaults = HubLimits()
    add_db(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    parser.add_argument("--port", type=_port, default=8765, help="port (0: any free port)")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host that is not loopback (prints what it exposes)",
    )
    parser.add_argument("--certfile", type=Path, help="TLS certificate (PEM), with --keyfile")
    parser.add_argument("--keyfile", type=Path, help="TLS private key (PEM)")
    parser.add_argument("--log-level", choices=LEVELS, default="info", help="log threshold")
    parser.add_argument(
        "--request-log-level",
        choices=LEVELS,
        default="info",
        help="the level of the one line logged per request",
    )
    limits = parser.add_argument_group("limits")
    for flag, kind, text in LIMIT_FLAGS:
        default = getattr(defaults, _field(flag))
        limits.add_argument(
            flag,
            type=_positive(kind, zero=flag in MAY_BE_ZERO),
            default=default,
            help=text.format(default=f"{default:g}"),
        )


def check_tls(certfile: Path, keyfile: Path) -> None:
    """One sentence naming the file if the certificate or key cannot be used."""
    import ssl

    for flag, path in (("--certfile", certfile), ("--keyfile", keyfile)):
        try:
            with path.open("rb"):
                pass
        except FileNotFoundError:
            raise CommandError(f"{flag} {path}: no such file", EXIT_NOT_FOUND) from None
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise CommandError(f"{flag} {path} cannot be read: {reason}", EXIT_FAILED) from None
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(certfile, keyfile)
    except (ssl.SSLError, OSError) as error:
        reason = getattr(error, "reason", None) or error.strerror or type(error).__name__
        raise CommandError(
            f"--certfile {certfile} and --keyfile {keyfile} are not a PEM certificate and "
            f"its private key ({reason})",
            EXIT_INVALID,
        ) from None


def open_once(url: str, seconds: float) -> None:
    """Before serving a PostgreSQL database: connect and ensure its tables once, so a
    server that cannot be reached (the busy error, exit 5), a role or password it
    refuses, or a database that is not a coordination database is one sentence here,
    not a hub that fails to start."""
    import asyncio

    from termal_tui.store.board.writer import open_board_writer
    from termal_tui.store.writer import open_writer

    async def probe() -> None:
        busy_ms = int(seconds * 1000)
        async with open_writer(url, deadline=seconds, busy_timeout_ms=busy_ms):
            pass
        async with open_board_writer(url, deadline=seconds, busy_timeout_ms=busy_ms):
            pass

    asyncio.run(probe())


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    path = mailbox_database(args, parser)  # TermAl's file, or a postgresql:// URL
    try:
        from termal_tui.agents.hub import HubLimits, HubOptions, is_loopback
        from termal_tui.agents.hub_server import bind, exposure_lines, run_hub
    except ImportError:
        raise CommandError(
            "the hub needs the official mcp SDK: pip install 'termal-tui[mcp]'", EXIT_FAILED
        ) from None
    if (args.certfile is None) != (args.keyfile is None):
        parser.error("--certfile and --keyfile go together")
    if args.certfile is not None:
        check_tls(args.certfile, args.keyfile)
    options = HubOptions(
        db_path=path,
        state_path=path if isinstance(path, Path) else local_db_path(),
        host=args.host,
        port=args.port,
        certfile=args.certfile,
        keyfile=args.keyfile,
        log_level=args.log_level,
        request_log_level=args.request_log_level,
        limits=HubLimits(**{_field(flag): getattr(args, _field(flag)) for flag, *_ in LIMIT_FLAGS}),
        busy_timeout=busy_timeout(),
    )
    registry = registry_for(path)
    if not isinstance(path, Path):
        open_once(path, options.busy_timeout)
    if not is_loopback(args.host):
        if not args.allow_remote:
            raise CommandError(
                f"--host {args.host} is not a loopback address: every session with a token "
                "would be reachable from the network; pass --allow-remote to mean it (and "
                "--certfile/--keyfile, or put a TLS reverse proxy in front)",
                EXIT_USAGE,
            )
        for line in exposure_lines(options, registry):
            print(line, file=sys.stderr)
    try:
        sock = bind(args.host, args.port)
    except OSError as error:
        raise CommandError(
            f"cannot listen on {args.host}:{args.port}: {error}", EXIT_FAILED
        ) from None

    shown = path if isinstance(path, Path) else registry.shown  # never a password

    def ready(url: str) -> None:
        print(f"termal-tui serve: {url} (database {shown})", file=sys.stderr, flush=True)

    run_hub(options, sock, on_ready=ready)
    return EXIT_OK
