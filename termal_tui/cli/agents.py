"""What the agents' commands share: the busy timeout, the registry and tools they open."""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from termal_tui.cli.common import (
    EXIT_USAGE,
    CommandError,
    add_db,
    check_database,
    db_target,
)

if TYPE_CHECKING:
    from termal_tui.agents.registry import Registry, Session
    from termal_tui.agents.tools import AgentTools


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


def add_identity(parser: argparse.ArgumentParser, flag: str = "--as") -> None:
    dest = "as_" if flag == "--as" else "session"
    parser.add_argument(flag, dest=dest, required=True, metavar="NAME", help="your session")
    add_db(parser)


def mailbox_database(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Path | str:
    """The agents' database and its registry, both checked before anything opens either
    (the same check as every file we write): each may be missing (the first writer
    creates it), never a symlink, FIFO, foreign or non-SQLite file. Or a
    ``postgresql://`` URL (in ``DB``, ``--db`` or ``$TERMAL_HOME``): the registry is
    then in that database."""
    target = db_target(args, parser)
    if isinstance(target, Path):
        check_database(target, writing=True, may_create=True)
    registry_for(target).check()
    return target


def registry_for(target: Path | str) -> Registry:
    """The registry of a database: the file beside a SQLite one, or the PostgreSQL
    database itself (shared by every hub on it)."""
    from termal_tui.agents.registry import Registry

    return Registry.beside(target, busy_timeout=busy_timeout())


@asynccontextmanager
async def agent_tools(path: Path | str, name: str) -> AsyncIterator[AgentTools]:
    """The tools for the session named ``name`` (by name or id), over a writer."""
    import asyncio

    from termal_tui.agents.tools import AgentTools
    from termal_tui.store.writer import open_writer

    registry = registry_for(path)
    seconds = busy_timeout()
    me: Session = await asyncio.to_thread(registry.resolve_own, name)
    async with open_writer(path, deadline=seconds, busy_timeout_ms=int(seconds * 1000)) as writer:
        tools = AgentTools(writer, registry, me.id)

        async def engaged(mailbox_id: str, through: int) -> None:
            """Read or acknowledged from the command line (an agent in its shell): as
            through the tools, a wake pushed for it is answered, and its listener is
            nudged to wake it for what came after."""
            from termal_tui.agents.nudge import nudge

            await asyncio.to_thread(registry.mark_engaged, me.id, mailbox_id, through)
            nudge(registry.path, me.id)

        tools.on_engaged = engaged
        yield tools
