"""``termal-tui wake --session NAME [--boot] [--json]``: print wake prompts (a pull pass)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from termal_tui.cli.agents import add_identity, mailbox_database, registry_for
from termal_tui.cli.common import EXIT_OK


def describe(_name: str, line: str) -> str:
    return line


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    add_identity(parser, "--session")
    parser.add_argument("--boot", action="store_true", help="every unread mailbox, not only new")
    parser.add_argument("--json", action="store_true", help="one JSON object per wake")


def _wake(path: Path | str, name: str, boot: bool, as_json: bool) -> None:
    """One pull pass on the synchronous lifecycle writer (no asyncio, as the hooks): each
    wake is delivered only once its prompt was written to stdout."""
    from termal_tui.agents.hooks import prepare_wakes
    from termal_tui.cli.output import print_flushed
    from termal_tui.core.sanitize import visible
    from termal_tui.store.lifecycle import open_lifecycle_writer

    me = registry_for(path).resolve_own(name)
    if isinstance(path, Path) and not path.exists():
        return  # no database yet: nothing to say
    with open_lifecycle_writer(path) as writer:
        for number, (wake, prompt) in enumerate(prepare_wakes(writer, me.id, boot=boot)):
            try:
                if as_json:
                    print_flushed(json.dumps({"prompt": prompt}, ensure_ascii=False) + "\n")
                else:
                    # Names in a prompt come from the database: never raw escapes on a
                    # terminal.
                    print_flushed(("\n" if number else "") + visible(prompt) + "\n")
            except OSError:
                return  # not written: this and the rest stay recoverable (a boot pass)
            writer.mark_delivered_through(me.id, wake.mailbox_id, wake.sequence)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    _wake(mailbox_database(args, parser), args.session, args.boot, args.json)
    return EXIT_OK
