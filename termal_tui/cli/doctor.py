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

from termal_tui.cli.common import EXIT_OK, EXIT_STUCK, add_db, check_database, db_target
from termal_tui.cli.viewer import add_threshold_flags, thresholds_from

if TYPE_CHECKING:
    from termal_tui.store.postgres.checks import ServerFacts
    from termal_tui.views.findings import HealthReport, Thresholds
    from termal_tui.views.notifiers import Listener


def describe(_name: str, _line: str) -> str:
    return (
        "Report stuck hand-offs in a TermAl coordination database (read-only). "
        "Exit 0: nothing is stuck; 1: something is."
    )


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    add_db(parser, positional=True)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_threshold_flags(parser)


async def _report(
    path: Path | str, thresholds: Thresholds
) -> tuple[HealthReport, ServerFacts | None]:
    """The health report and, on a ``postgresql://`` URL, the server's and the role's
    checks (in place of the file's: the reader opening it has checked the schema)."""
    from termal_tui.store.reader import open_reader
    from termal_tui.views.findings import health_report

    async with open_reader(path) as reader:
        facts = None
        if isinstance(path, str):
            facts = await reader.server_facts()  # type: ignore[attr-defined]
        return await health_report(reader, thresholds=thresholds), facts


def channel_holders(path: Path | str) -> dict[str, Listener]:
    """Each registered session's channel holder, by name (read-only; none without a
    registry)."""
    from termal_tui.views.notifiers import read_notifiers

    found = read_notifiers(path) or {}
    return {n.name: n.holder for n in found.values() if n.holder is not None}


def render_json(
    report: HealthReport,
    holders: dict[str, Listener] | None = None,
    facts: ServerFacts | None = None,
) -> str:
    document = report.to_json()
    if holders:  # only when a channel is held: the document is otherwise as it was
        document["channels"] = {name: holder.to_json() for name, holder in holders.items()}
    if facts is not None:  # a postgresql:// database: the server and the role
        document["database"] = facts.to_json()
    return json.dumps(document, ensure_ascii=False, indent=2)


def render_server(facts: ServerFacts, shown: str) -> None:
    """One line on the server and the role, then one per table the role cannot read."""
    from rich.console import Console
    from rich.text import Text

    from termal_tui.core.sanitize import visible_line

    console = Console()
    standby = " (a standby)" if facts.standby else ""
    access = (
        "may also write (the viewer and doctor never do: READ ONLY transactions)"
        if facts.can_write
        else "may only read (all the viewer and doctor need)"
    )
    line = f"PostgreSQL {facts.version}{standby} at {shown}: role {facts.role} {access}"
    console.print(Text(visible_line(line, 300)))
    for problem in facts.unreadable:
        console.print(Text(f"✗ {visible_line(problem, 200)}", style="red"))


def render_channels(holders: dict[str, Listener]) -> None:
    """Which process holds each session's channel (local or remote, since when)."""
    from rich.console import Console
    from rich.text import Text

    from termal_tui.core.sanitize import visible_line

    console = Console()
    for name, holder in sorted(holders.items()):
        console.print(
            Text(f"channel of {visible_line(name, 40)}: {visible_line(holder.describe(), 120)}")
        )


def render_table(report: HealthReport) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from termal_tui.core.sanitize import visible_line
    from termal_tui.core.vocabulary import counted
    from termal_tui.views.findings import format_age

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
    path = db_target(args, parser)
    if isinstance(path, Path):
        check_database(path)
    report, facts = asyncio.run(_report(path, thresholds_from(args)))
    holders = channel_holders(path)
    if args.json:
        print(render_json(report, holders, facts))
    else:
        if facts is not None:
            from termal_tui.store.urls import redact

            render_server(facts, redact(str(path)))
        render_table(report)
        render_channels(holders)
    return EXIT_OK if report.healthy else EXIT_STUCK
