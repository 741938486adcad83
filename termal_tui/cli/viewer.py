"""``termal-tui [DB] [--demo] [--mailbox ID] [--session ID] [--interval S]``: the viewer."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from termal_tui.cli.common import EXIT_USAGE, CommandError, add_db, check_database, db_target

if TYPE_CHECKING:
    from termal_tui.views.config import ViewerConfig
    from termal_tui.views.findings import Thresholds

HELP = "open the read-only viewer"
DEFAULT_INTERVAL: Final = 8.0


def describe(_name: str, line: str) -> str:
    return line


def seconds_arg(rule: str) -> Callable[[str], float]:
    """An argparse type for a finite, non-negative number of seconds; ``rule`` is the
    sentence shown when the value breaks it."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not math.isfinite(value) or value < 0:
            raise argparse.ArgumentTypeError(rule)
        return value

    return parse


_THRESHOLD_FLAGS: Final = (
    ("--never-woken-after", "never_woken", "unread and never woken for this long is stuck", 120),
    (
        "--unprocessed-after",
        "woken_unprocessed",
        "woken but not processed for this long is stuck",
        900,
    ),
    ("--lagging-after", "lagging", "oldest unprocessed row older than this lags", 3600),
    (
        "--no-notifier-after",
        "no_notifier",
        "unread for a session with no channel server and no hook run for this long is stuck",
        300,
    ),
)


def add_threshold_flags(parser: argparse.ArgumentParser) -> None:
    """The health thresholds, shared by ``doctor`` and the viewer (defaults: health.py's
    ``Thresholds``; a test keeps the two equal without importing health here)."""
    seconds = seconds_arg("a threshold must be 0 or a positive number of seconds")
    for flag, field, meaning, default in _THRESHOLD_FLAGS:
        parser.add_argument(
            flag,
            dest=field,
            metavar="SECONDS",
            type=seconds,
            default=float(default),
            help=f"{meaning} (default {default:g})",
        )


def thresholds_from(args: argparse.Namespace) -> Thresholds:
    from termal_tui.views.findings import Thresholds

    return Thresholds(
        **{field: getattr(args, field) for _flag, field, _meaning, _d in _THRESHOLD_FLAGS}
    )


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    from termal_tui import __version__

    add_db(parser, positional=True)
    parser.add_argument("--demo", action="store_true", help="build and open a demo database")
    parser.add_argument("--mailbox", metavar="ID", help="open this mailbox's tab on start")
    parser.add_argument("--session", metavar="ID", help="view as this participant session")
    parser.add_argument(
        "--interval",
        metavar="SECONDS",
        type=seconds_arg("the interval must be 0 (off) or a positive number"),
        default=None,
        help=(
            "changes are shown as they are committed (file notifications); this is how "
            "often the file is also polled, where notifications do not arrive; a "
            "postgresql:// server is polled every 0.5 s or this, if less "
            "(0 pauses live refresh; default 8)"
        ),
    )
    parser.add_argument("--version", action="version", version=f"termal-tui {__version__}")
    add_threshold_flags(parser)  # for the health view (h) and the index markers
    # A flag not given is None: the config file's value, then the default, applies.
    parser.set_defaults(**{field: None for _flag, field, _meaning, _d in _THRESHOLD_FLAGS})


def settings_from(args: argparse.Namespace, config: ViewerConfig) -> tuple[float, Thresholds]:
    """Command-line flags over the config file over the defaults."""
    from termal_tui.views.findings import Thresholds

    interval = args.interval if args.interval is not None else config.interval
    values = {}
    for _flag, field, _meaning, default in _THRESHOLD_FLAGS:
        given = getattr(args, field, None)
        values[field] = float(given if given is not None else config.thresholds.get(field, default))
    return (DEFAULT_INTERVAL if interval is None else interval), Thresholds(**values)


async def _validate(path: Path | str, mailbox: str | None, session: str | None) -> None:
    from termal_tui.core.sanitize import quote
    from termal_tui.store.errors import NotFoundError
    from termal_tui.store.reader import open_reader

    async with open_reader(path) as reader:
        if session is not None and session not in await reader.session_ids():
            raise NotFoundError(f"no mailbox participant has session id {quote(session)}")
        if mailbox is not None:
            try:
                await reader.get_head(mailbox, session_id=session)
            except NotFoundError:
                viewer = f" for session {quote(session)}" if session else ""
                raise NotFoundError(
                    f"no visible mailbox with id {quote(mailbox)}{viewer}"
                ) from None


def first_run_possible(path: Path) -> bool:
    """A missing database the viewer may wait for: no link or other thing at the path,
    and a folder that exists (or whose nearest existing parent is a folder we may use)."""
    if os.path.lexists(path):
        return False  # a dangling symlink or something else: said, not waited for
    parent = path.parent
    while not parent.exists():
        if parent == parent.parent:
            return False
        parent = parent.parent
    return parent.is_dir() and os.access(parent, os.R_OK | os.X_OK)


def register_demo_sessions(path: Path) -> None:
    """The demo's sessions in the registry beside it, under their ids, so
    `termal-tui send --db DEMO --as planner …` writes into what the viewer shows."""
    from termal_tui.agents.registry import Registry
    from termal_tui.demo import AGENTS

    registry = Registry.beside(path)
    for session_id, name in AGENTS.items():
        registry.adopt(session_id, name)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # Imported here: `--help` builds this parser and must not pay for asyncio.
    import asyncio
    import tempfile

    from termal_tui.core.sanitize import visible_line
    from termal_tui.store.errors import NotFoundError, RetryableError

    temp_dir: tempfile.TemporaryDirectory[str] | None = None
    greeting: str | None = None
    path: Path | str
    waiting = False
    try:
        if args.demo:
            if args.db or args.db_option:
                raise CommandError("give either a database path or --demo, not both", EXIT_USAGE)
            # the demo writes; the viewer never does
            from termal_tui.demo import build_demo, recent_start

            temp_dir = tempfile.TemporaryDirectory(prefix="termal-tui-demo-")
            path = Path(temp_dir.name) / "coordination.sqlite"
            asyncio.run(build_demo(path, start=recent_start()))
            register_demo_sessions(path)
            greeting = (
                f"Demo database: {path} (removed when you quit). Send into it from "
                f"another terminal: termal-tui send --db {path} --as planner backend 'hello'"
            )
        elif isinstance(target := db_target(args, parser), str):
            path = target  # a postgresql:// URL: read-only transactions on the server
        else:
            path = target
            try:
                check_database(path)
            except NotFoundError as error:
                if not first_run_possible(path) or args.mailbox or args.session:
                    raise NotFoundError(
                        f"{str(error).rstrip('.')}. Try `termal-tui --demo` to see a demo"
                    ) from None
                # The first run: the file agents are about to make. The viewer opens,
                # says it waits (the index) and shows the file the moment it appears.
                waiting = True
        try:
            if not waiting:
                asyncio.run(_validate(path, args.mailbox, args.session))
        except RetryableError as error:
            # Busy (locked by another process; a server that cannot be reached): the
            # viewer opens Stale and keeps trying.
            message = visible_line(str(error).rstrip("."), 300)
            if isinstance(path, str):
                from termal_tui.store.urls import redact

                message = f"PostgreSQL at {redact(path)} cannot be reached or is busy"
            print(f"termal-tui: {message}; the viewer will keep trying.", file=sys.stderr)
        from termal_tui.tui.app import make_app
        from termal_tui.views.config import load_config

        config = load_config()  # never raises: a bad file is sentences shown in the app
        interval, thresholds = settings_from(args, config)
        make_app(
            path,
            session_id=args.session,
            mailbox_id=args.mailbox,
            poll_interval=interval,
            thresholds=thresholds,
            config=config,
            greeting=greeting,
        ).run()
        return 0
    finally:
        if temp_dir is not None:
            temp_dir.cleanup()
