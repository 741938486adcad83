"""``termal-tui db copy SRC DST``: a coordination database copied between engines (TermAl's
SQLite file, a ``postgresql://`` database), in either direction, verified row for row."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from termal_tui.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_subparser,
    check_database,
    check_url,
    refuse_url,
    subparsers,
)

if TYPE_CHECKING:
    from termal_tui.store.copy import CopyReport

COPY_HELP = (
    "copy a coordination database between engines (a SQLite file, a postgresql:// URL), "
    "either way: every mailbox, message, cursor and board row (and the session registry, "
    "when the source has one), in one transaction, verified row for row. The source is "
    "only read. A destination that already holds exactly these rows is left as it is "
    "(run it again safely); one that holds other data is refused."
)


def describe(_name: str, line: str) -> str:
    return line


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    actions = subparsers(parser, "action")
    copy = add_subparser(actions, "copy", COPY_HELP)
    copy.add_argument("source", metavar="SRC", help="TermAl's coordination.sqlite, or a URL")
    copy.add_argument(
        "destination",
        metavar="DST",
        help="a new or empty file (created with TermAl's schema), or a URL",
    )


def _target(given: str, where: str) -> Path | str:
    from termal_tui.store.urls import is_postgres_url

    if is_postgres_url(given):
        return check_url(given, where)
    refuse_url(given, where)
    if not given.strip():
        raise CommandError(f"{where} is empty: give a file or a postgresql:// URL", EXIT_USAGE)
    return Path(given).expanduser()


def _same(source: Path | str, destination: Path | str) -> bool:
    if isinstance(source, Path) and isinstance(destination, Path):
        try:
            return os.path.realpath(source) == os.path.realpath(destination)
        except OSError:
            return False
    return source == destination


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    source = _target(args.source, "SRC")
    destination = _target(args.destination, "DST")
    if _same(source, destination):
        raise CommandError("SRC and DST are the same database; nothing was copied", EXIT_USAGE)
    if isinstance(source, Path):
        check_database(source)
    if isinstance(destination, Path):
        check_database(destination, writing=True, may_create=True)
    from termal_tui.store.copy import copy

    report = asyncio.run(copy(source, destination))
    print(summary(report))
    return EXIT_OK


def summary(report: CopyReport) -> str:
    """A few lines: what happened, then rows per table."""
    tables = [table for table in report.tables if table.rows or table.group == "coordination"]
    if report.outcome == "up to date":
        head = (
            f"{report.destination} is already up to date: it holds exactly the rows of "
            f"{report.source} ({report.rows:,} rows); nothing was changed"
        )
    else:
        what = {
            ("coordination",): "the coordination tables",
            ("registry",): "the session registry (the coordination tables were up to date)",
            ("coordination", "registry"): "the coordination tables and the session registry",
        }[report.copied]
        rows = sum(t.rows for t in report.tables if t.group in report.copied)
        head = (
            f"copied {report.source} to {report.destination}: {rows:,} rows of "
            f"{what}, in one transaction, verified row for row (counts and digests) in "
            f"{report.seconds:.1f} s"
        )
    width = max(len(table.name) for table in tables)
    lines = [head, *(f"  {t.name:<{width}}  {t.rows:>9,}" for t in tables)]
    return "\n".join(lines)
