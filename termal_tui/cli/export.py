"""``termal-tui export [DB] --mailbox ID [--from N] [--to M] [--format jsonl|markdown]``."""

from __future__ import annotations

import argparse
import asyncio
import errno
import sys
from typing import TextIO

from termal_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    CommandError,
    add_db,
    check_database,
    db_target,
    whole_number,
)


def describe(_name: str, _line: str) -> str:
    return (
        "Export a mailbox's messages (read-only): JSONL is TermAl's wire objects plus "
        "their derived state; Markdown is for people."
    )


_positive = whole_number(1, "a sequence number is 1 or more")


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    add_db(parser, positional=True)
    parser.add_argument("--mailbox", metavar="ID", required=True)
    parser.add_argument("--session", metavar="ID", help="as this participant (TermAl's view)")
    parser.add_argument("--from", dest="first", metavar="N", type=_positive, default=1)
    parser.add_argument("--to", dest="last", metavar="M", type=_positive, default=None)
    parser.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl")
    parser.add_argument("--output", metavar="FILE", help="write here instead of stdout")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from termal_tui.views.export import open_private, write_export

    if args.last is not None and args.last < args.first:
        parser.error("--to must be at least --from")
    path = db_target(args, parser)  # a file, or a postgresql:// URL (read-only there too)
    if not isinstance(path, str):
        check_database(path)

    def export(out: TextIO) -> None:
        asyncio.run(
            write_export(
                path,
                args.mailbox,
                out,
                first=args.first,
                last=args.last,
                fmt=args.format,
                session=args.session,
            )
        )

    if not args.output:
        export(sys.stdout)
        return EXIT_OK
    try:
        with open_private(args.output) as handle:
            export(handle)
    except OSError as error:
        reason = error.strerror or str(error)
        if error.errno == errno.ELOOP:
            reason = "it is a symbolic link (not followed)"
        raise CommandError(f"cannot write {args.output}: {reason}", EXIT_FAILED) from None
    return EXIT_OK
