"""Export records: a mailbox's messages as JSONL or Markdown (headless; the command is
``cli/export.py``, and the viewer's ``e`` uses these too).

Messages with their derived state, read-only. JSONL is exact: each line is TermAl's
``MailboxMessage`` wire object plus ``processed`` and ``dispatchOutcome``. Markdown is for
people: every control or invisible character stays escaped as a visible stand-in.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TextIO

from termal_tui.core.formats import READ_LIMIT_MAX
from termal_tui.core.models import MailboxMessage, MailboxSummary
from termal_tui.core.sanitize import visible, visible_line
from termal_tui.store.reader import MailboxReader, open_reader
from termal_tui.views.presentation import format_time, is_processed, row_title


def export_record(message: MailboxMessage, summary: MailboxSummary) -> dict[str, object]:
    """TermAl's wire object plus the derived state a reader of the export needs."""
    record = message.to_wire()
    record["processed"] = is_processed(message, summary.participants)
    record["dispatchOutcome"] = message.dispatch_outcome
    return record


async def messages(
    reader: MailboxReader, mailbox_id: str, first: int, last: int | None, session: str | None
) -> AsyncIterator[MailboxMessage]:
    """Ascending from ``first`` to ``last`` in keyset pages (never the whole table)."""
    after = max(0, first - 1)
    while True:
        batch = await reader.read_range(mailbox_id, after, READ_LIMIT_MAX, session_id=session)
        for message in batch:
            if last is not None and message.sequence > last:
                return
            yield message
        if len(batch) < READ_LIMIT_MAX:
            return
        after = batch[-1].sequence


def markdown_block(message: MailboxMessage, summary: MailboxSummary) -> str:
    state = "✓ Processed" if is_processed(message, summary.participants) else "● Unread"
    body = visible(message.body)
    longest = max((len(run) for run in re.findall("`+", body)), default=0)
    fence = "`" * max(3, longest + 1)  # CommonMark: longer than any backtick run inside
    return (
        f"## #{message.sequence} · {visible_line(row_title(message), 120)}\n\n"
        f"- from **{visible_line(message.sender_name, 60)}** to "
        f"**{visible_line(message.target_name, 60)}**, "
        f"{visible_line(format_time(message.created_at), 40)}\n"
        f"- {state} · wake {visible_line(message.notification_state, 40)} · dispatch "
        f"{visible_line(message.dispatch_outcome or 'not finalized', 40)}\n\n"
        f"{fence}text\n{body}\n{fence}\n"
    )


async def write_export(
    path: Path | str,
    mailbox_id: str,
    out: TextIO,
    *,
    first: int = 1,
    last: int | None = None,
    fmt: str = "jsonl",
    session: str | None = None,
) -> int:
    async with open_reader(path) as reader:
        summary = await reader.get_head(mailbox_id, session_id=session)
        count = 0
        if fmt == "markdown":
            names = " ⇄ ".join(visible_line(p.display_name, 40) for p in summary.participants)
            out.write(f"# {names}\n\nMailbox `{visible_line(mailbox_id, 80)}`\n\n")
        async for message in messages(reader, mailbox_id, first, last, session):
            if fmt == "jsonl":
                out.write(json.dumps(export_record(message, summary), ensure_ascii=False) + "\n")
            else:
                out.write(markdown_block(message, summary) + "\n")
            count += 1
        return count


# Exports hold what agents wrote: readable by their owner only, like the 0600 database.
EXPORT_MODE = 0o600


def open_private(path: str | os.PathLike[str]) -> TextIO:
    """Open ``path`` for writing an export: a new file is created ``0600`` (whatever the
    umask), an existing one is truncated and narrowed to ``0600`` too, and a symbolic
    link at the path is refused rather than followed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags, EXPORT_MODE)
    with contextlib.suppress(OSError):  # a filesystem without modes: still written
        os.fchmod(descriptor, EXPORT_MODE)
    return open(descriptor, "w", encoding="utf-8")
