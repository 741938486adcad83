"""``termal-tui doctor [DB] [--json]``: stuck hand-offs for scripts and CI.

Exit status: 0 when nothing is stuck, 1 when something is, 2 when the database cannot be
read (one sentence on stderr). Read-only, like the viewer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from termal_tui.health import HealthReport, Thresholds, format_age, health_report
from termal_tui.sanitize import visible_line
from termal_tui.store.errors import StoreError
from termal_tui.store.reader import open_reader

EXIT_HEALTHY = 0
EXIT_STUCK = 1
EXIT_ERROR = 2


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


_seconds = seconds_arg("a threshold must be 0 or a positive number of seconds")


_THRESHOLD_FLAGS: Final = (
    ("--never-woken-after", "never_woken", "unread and never woken for this long is stuck"),
    ("--unprocessed-after", "woken_unprocessed", "woken but not processed for this long is stuck"),
    ("--lagging-after", "lagging", "oldest unprocessed row older than this lags"),
)


def add_threshold_flags(parser: argparse.ArgumentParser) -> None:
    """The health thresholds, shared by ``doctor`` and the viewer."""
    defaults = Thresholds()
    for flag, field, meaning in _THRESHOLD_FLAGS:
        default = getattr(defaults, field)
        parser.add_argument(
            flag,
            metavar="SECONDS",
            type=_seconds,
            default=default,
            help=f"{meaning} (default {default:g})",
        )


def thresholds_from(args: argparse.Namespace) -> Thresholds:
    return Thresholds(args.never_woken_after, args.unprocessed_after, args.lagging_after)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="termal-tui doctor",
        description="Report stuck hand-offs in a TermAl coordination database (read-only). "
        "Exit 0: healthy; 1: something is stuck; 2: the database cannot be read.",
    )
    parser.add_argument("db", nargs="?", help="coordination database (default as the viewer)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_threshold_flags(parser)
    return parser


async def _report(path: Path, thresholds: Thresholds) -> HealthReport:
    async with open_reader(path) as reader:
        return await health_report(reader, thresholds=thresholds)


def render_json(report: HealthReport) -> str:
    return json.dumps(
        {
            "healthy": report.healthy,
            "mailboxes": report.mailboxes,
            "unread": report.unread,
            "findings": [finding.to_json() for finding in report.findings],
        },
        ensure_ascii=False,
        indent=2,
    )


def render_table(report: HealthReport) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    if report.healthy:
        console.print(
            Text(
                f"✓ Nothing is stuck: {report.mailboxes} mailboxes, {report.unread:,} unread, "
                "every unread row is recent or on its way.",
                style="green",
            )
        )
        return
    table = Table(title=f"{len(report.findings)} stuck hand-offs", title_justify="left")
    for column in ("severity", "mailbox", "who", "problem", "first", "oldest"):
        table.add_column(column)
    for finding in report.findings:
        table.add_row(
            Text("high" if finding.severity >= 3 else "medium" if finding.severity == 2 else "low"),
            Text(visible_line(finding.participants, 40)),
            Text(visible_line(finding.display_name, 24)),
            Text(visible_line(finding.describe(), 80)),
            Text(f"#{finding.first_sequence:,}"),
            Text(format_age(finding.age_seconds)),
        )
    console.print(table)


def main(argv: Sequence[str], default_db: Path) -> int:
    args = build_parser().parse_args(argv)
    path = Path(args.db).expanduser() if args.db else default_db
    thresholds = thresholds_from(args)
    try:
        report = asyncio.run(_report(path, thresholds))
    except StoreError as error:
        print(f"termal-tui doctor: error: {visible_line(str(error), 500)}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(render_json(report))
    else:
        render_table(report)
    return EXIT_HEALTHY if report.healthy else EXIT_STUCK
