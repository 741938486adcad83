"""``termal-tui doctor [DB] [--json]``: stuck hand-offs for scripts and CI (read-only).

Exit 0 when nothing is stuck, 1 when something is; a database that cannot be read
exits with the table's code for why (3 missing, 8 not a coordination database, ...).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

from termal_tui.cli.common import EXIT_OK, EXIT_STUCK, add_db, check_database, db_path
from termal_tui.cli.viewer import add_threshold_flags, thresholds_from

if TYPE_CHECKING:
    from termal_tui.health import HealthReport, Thresholds


def describe(_name: str, _line: str) -> str:
    return (
        "Report stuck hand-offs in a TermAl coordination database (read-only). "
        "Exit 0: nothing is stuck; 1: something is."
    )


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    add_db(parser, positional=True)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_threshold_flags(parser)


async def _report(path: Path, thresholds: Thresholds) -> HealthReport:
    from termal_tui.health import health_report
    from termal_tui.store.reader import open_reader

    async with open_reader(path) as reader:
        return await health_report(reader, thresholds=thresholds)


def render_json(report: HealthReport) -> str:
    return json.dumps(report.to_json(), ensure_ascii=False, indent=2)


def render_table(report: HealthReport) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from termal_tui.health import format_age
    from termal_tui.sanitize import visible_line
    from termal_tui.vocabulary import counted

    console = Console()
    if report.healthy:
        console.print(
            Text(
                f"✓ Nothing is stuck: {counted(report.mailboxes, 'mailbox', 'mailboxes')}, "
                f"{report.unread:,} unread, "
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


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    path = db_path(args, parser)
    check_database(path)
    report = asyncio.run(_report(path, thresholds_from(args)))
    if args.json:
        print(render_json(report))
    else:
        render_table(report)
    return EXIT_OK if report.healthy else EXIT_STUCK
