"""The wake lifecycle's synchronous writer on PostgreSQL (what ``termal-tui wake`` and
the hooks use on a file through :class:`~termal_tui.store.lifecycle.LifecycleWriter`):
the PostgreSQL writer's own lifecycle methods, run on a private event loop, so the
statements and rules are that writer's, not a second copy."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from termal_tui.core.formats import REQUEST_DEADLINE_SECONDS
from termal_tui.core.models import UnreadWakeup
from termal_tui.store.postgres.writer import PgMailboxWriter, open_pg_writer


class PgLifecycleWriter:
    """``wakeups_for_session``, ``mark_recovered_through``, ``mark_delivered_through``
    without asyncio at the call site."""

    def __init__(self, runner: asyncio.Runner, writer: PgMailboxWriter) -> None:
        self._runner = runner
        self._writer = writer
        self.target = writer.target

    def wakeups_for_session(
        self, session_id: str, boot: bool = False, queued: bool = False
    ) -> list[UnreadWakeup]:
        return self._runner.run(self._writer.wakeups_for_session(session_id, boot, queued))

    def mark_recovered_through(
        self, session_id: str, mailbox_id: str, sequence: int, boot: bool = False
    ) -> int:
        return self._runner.run(
            self._writer.mark_recovered_through(session_id, mailbox_id, sequence, boot)
        )

    def mark_delivered_through(self, session_id: str, mailbox_id: str, sequence: int) -> int:
        return self._runner.run(
            self._writer.mark_delivered_through(session_id, mailbox_id, sequence)
        )


@contextlib.contextmanager
def open_pg_lifecycle_writer(
    url: str, deadline: float = REQUEST_DEADLINE_SECONDS
) -> Iterator[PgLifecycleWriter]:
    with asyncio.Runner() as runner:
        opened = open_pg_writer(url, deadline=deadline)
        writer = runner.run(opened.__aenter__())
        try:
            yield PgLifecycleWriter(runner, writer)
        finally:
            runner.run(opened.__aexit__(None, None, None))
