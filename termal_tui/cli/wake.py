"""``termal-tui wake --session NAME [--boot] [--json]``: print wake prompts (a pull pass)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from termal_tui.cli.agents import add_identity, database, registry_for
from termal_tui.cli.common import EXIT_OK


def describe(_name: str, line: str) -> str:
    return line


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    add_identity(parser, "--session")
    parser.add_argument("--boot", action="store_true", help="every unread mailbox, not only new")
    parser.add_argument("--json", action="store_true", help="one JSON object per wake")


async def _wake(path: Path, name: str, boot: bool, as_json: bool) -> None:
    from termal_tui.agents.wake import wake_pass
    from termal_tui.cli.output import print_flushed
    from termal_tui.models import UnreadWakeup
    from termal_tui.sanitize import visible
    from termal_tui.store.writer import open_writer

    registry = registry_for(path)
    me = await asyncio.to_thread(registry.resolve_own, name)
    if not path.exists():
        return  # no database yet: nothing to say
    first = True

    async def written(_wake: UnreadWakeup, prompt: str) -> None:
        nonlocal first
        if as_json:
            print_flushed(json.dumps({"prompt": prompt}, ensure_ascii=False) + "\n")
        else:
            # Names in a prompt come from the database: never raw escapes on a terminal.
            print_flushed(("" if first else "\n") + visible(prompt) + "\n")
        first = False

    async with open_writer(path) as writer:
        await wake_pass(writer, me.id, written, boot=boot)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    asyncio.run(_wake(database(args, parser), args.session, args.boot, args.json))
    return EXIT_OK
