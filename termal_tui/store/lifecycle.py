"""The wake lifecycle's statements, shared by the async writer and :class:`LifecycleWriter`.

A hook runs on every prompt and stop of every agent, so its start-up is the agent's
latency: it must not pay for asyncio and aiosqlite (~40-70 ms to import). It needs only
the lifecycle half of the writer: which mailboxes need a wake, and moving their rows to
``recoveredWake`` and ``deliveredToIdleSession``. Both writers build those statements
here and run them with the same transaction function, so there is one implementation of
the rules and two ways to reach SQLite.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, TypeVar

from termal_tui.core.formats import BUSY_TIMEOUT_MS, NEVER_WOKEN_PASS_CAP
from termal_tui.core.models import (
    CONTROL_TOPIC,
    DELIVERED_TO_IDLE_SESSION,
    DURABLE_BUT_NOT_WOKEN,
    QUEUED_BEHIND_ACTIVE_TURN,
    UnreadWakeup,
)
from termal_tui.store import queries
from termal_tui.store.errors import CommitOutcomeUnknownError, RetryableError, busy_message
from termal_tui.store.schema import ensure_schema
from termal_tui.store.sqlite import (
    connect_read_write_sync,
    describe_error,
    is_busy,
    read_snapshot,
)
from termal_tui.store.urls import is_postgres_url, refuse_other_url

T = TypeVar("T")

LIFECYCLE_BEGIN: Final = "beginning a mailbox lifecycle update"
LIFECYCLE_COMMIT: Final = "committing a mailbox lifecycle update"
RECOVERY_ADMISSION: Final = "reactivating a mailbox participant"

_RECOVER_BOOT: Final = (
    "UPDATE mailbox_messages SET notification_disposition = 'recoveredWake' "
    "WHERE mailbox_id = ?1 AND target_session_id = ?2 AND EXISTS ("
    "  SELECT 1 FROM mailbox_participants participant"
    "  WHERE participant.mailbox_id = mailbox_messages.mailbox_id"
    "    AND participant.session_id = mailbox_messages.target_session_id"
    "    AND participant.left_at IS NULL"
    "    AND mailbox_messages.sequence > participant.processed_through)"
    " AND sequence <= ?3 AND notification_disposition != 'recoveredWake'"
)
_RECOVER: Final = (
    "UPDATE mailbox_messages SET notification_disposition = 'recoveredWake' "
    "WHERE mailbox_id = ?1 AND target_session_id = ?2 AND sequence <= ?3 "
    "AND notification_disposition = 'durableButNotWoken'"
)
_DELIVER: Final = (
    "UPDATE mailbox_messages SET notification_disposition = ?4 "
    "WHERE mailbox_id = ?1 AND target_session_id = ?2 AND sequence <= ?3 "
    "AND notification_disposition != ?4"
)


def recovered_update(
    session_id: str, mailbox_id: str, sequence: int, boot: bool
) -> tuple[str, tuple[Any, ...]]:
    """Covered rows to ``recoveredWake``: never-woken ones, or every unread one on boot."""
    return (_RECOVER_BOOT if boot else _RECOVER), (mailbox_id, session_id, sequence)


def delivered_update(
    session_id: str, mailbox_id: str, sequence: int
) -> tuple[str, tuple[Any, ...]]:
    """Runtime acceptance: every covered row becomes ``deliveredToIdleSession``."""
    return _DELIVER, (mailbox_id, session_id, sequence, DELIVERED_TO_IDLE_SESSION)


def wakeups_query(session_id: str, boot: bool, queued: bool) -> tuple[str, dict[str, Any]]:
    """Mailboxes needing a wake: the never-woken pass capped at 16, the boot pass unbounded.

    ``queued`` also counts rows whose wake is queued behind an active turn
    (``queuedBehindActiveTurn``) as candidates of the capped pass: without TermAl's
    in-process prompt queue, the end of that turn is when their wake is delivered.
    """
    unread = queries.UNREAD_FOR.format(
        mailbox="m.id", cursor="mine.processed_through", session=":s"
    )
    sql = f"""
        SELECT m.id, message.id, message.sequence, ({unread}),
          message.sender_session_id, message.sender_name
        FROM mailboxes m
        JOIN mailbox_participants mine
          ON mine.mailbox_id = m.id AND mine.session_id = :s AND mine.left_at IS NULL
        JOIN mailbox_messages message
          ON message.mailbox_id = m.id AND message.sequence = (
            SELECT MAX(candidate.sequence) FROM mailbox_messages candidate
            WHERE candidate.mailbox_id = m.id
              AND candidate.sequence > mine.processed_through
              AND candidate.target_session_id = :s
              AND {queries.NOT_CONTROL.format(t="candidate.")}
              AND (:boot = 1 OR candidate.notification_disposition = '{DURABLE_BUT_NOT_WOKEN}'
                   OR (:queued = 1 AND candidate.notification_disposition
                       = '{QUEUED_BEHIND_ACTIVE_TURN}')))
        ORDER BY message.created_at DESC, m.id
        LIMIT CASE WHEN :boot = 1 THEN -1 ELSE {NEVER_WOKEN_PASS_CAP} END
    """
    params = {"s": session_id, "ctl": CONTROL_TOPIC, "boot": int(boot), "queued": int(queued)}
    return sql, params


def wakeups_from(rows: list[Any]) -> list[UnreadWakeup]:
    return [
        UnreadWakeup(
            mailbox_id=row[0],
            message_id=row[1],
            sequence=row[2],
            unread_count=row[3],
            sender_session_id=row[4],
            sender_name=row[5],
        )
        for row in rows
    ]


def in_write_transaction(
    db: sqlite3.Connection,
    work: Callable[[sqlite3.Connection], T],
    begin: str,
    commit: str,
    *,
    busy: Callable[[str], str] = busy_message,
) -> T:
    """On the connection's thread: BEGIN IMMEDIATE, work, COMMIT (ROLLBACK on any failure);
    busy at the start or the commit is RetryableError (``busy(operation)`` is its
    sentence: the mailboxes' or the board's wording) with nothing committed."""
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        if is_busy(error):
            raise RetryableError(busy(begin)) from error
        raise
    try:
        result = work(db)
    except BaseException:
        rollback(db)
        raise
    try:
        db.execute("COMMIT")
    except sqlite3.Error as error:
        rollback(db)
        if is_busy(error):
            raise RetryableError(busy(commit)) from error
        if (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF == sqlite3.SQLITE_IOERR:
            raise CommitOutcomeUnknownError(
                f"I/O error while {commit} ({error}): it may or may not have been written"
            ) from error
        raise
    return result


def rollback(db: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        if db.in_transaction:
            db.execute("ROLLBACK")


class LifecycleWriter:
    """The wake-lifecycle half of :class:`~termal_tui.store.writer.MailboxWriter` on a
    plain ``sqlite3`` connection (no asyncio): the same statements, the same transaction
    function, the same typed errors. Open it with :func:`open_lifecycle_writer`. It has
    no in-process writer admission: it is for one short-lived command at a time."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self.path = path

    def _guarded(self, work: Callable[[sqlite3.Connection], T], *, writing: bool) -> T:
        try:
            return work(self._db)
        except sqlite3.Error as error:
            raise describe_error(self.path, error, writing=writing) from error

    def _update(self, statement: tuple[str, tuple[Any, ...]]) -> int:
        sql, params = statement
        return self._guarded(
            lambda db: in_write_transaction(
                db, lambda d: d.execute(sql, params).rowcount, LIFECYCLE_BEGIN, LIFECYCLE_COMMIT
            ),
            writing=True,
        )

    def wakeups_for_session(
        self, session_id: str, boot: bool = False, queued: bool = False
    ) -> list[UnreadWakeup]:
        sql, params = wakeups_query(session_id, boot, queued)
        rows = self._guarded(
            lambda db: read_snapshot(db, lambda d: d.execute(sql, params).fetchall()),
            writing=False,
        )
        return wakeups_from(rows)

    def mark_recovered_through(
        self, session_id: str, mailbox_id: str, sequence: int, boot: bool = False
    ) -> int:
        return self._update(recovered_update(session_id, mailbox_id, sequence, boot))

    def mark_delivered_through(self, session_id: str, mailbox_id: str, sequence: int) -> int:
        return self._update(delivered_update(session_id, mailbox_id, sequence))

    def close(self) -> None:
        self._db.close()


@contextlib.contextmanager
def open_lifecycle_writer(
    path: Path | str, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> Iterator[LifecycleWriter]:
    """Open (creating if needed) a coordination database as :func:`open_writer` does
    (same checks, pragmas and schema), for the lifecycle statements only. A
    ``postgresql://`` URL opens the PostgreSQL engine's twin (loaded only then)."""
    if is_postgres_url(path):
        from termal_tui.store.postgres import require_driver

        require_driver()
        from termal_tui.store.postgres.lifecycle import open_pg_lifecycle_writer

        with open_pg_lifecycle_writer(str(path), busy_timeout_ms / 1000) as pg:
            yield pg  # type: ignore[misc]  # the same three methods
        return
    refuse_other_url(path)
    resolved = Path(path).expanduser()
    db = connect_read_write_sync(resolved, busy_timeout_ms)
    writer = LifecycleWriter(db, resolved)
    try:
        writer._guarded(lambda conn: ensure_schema(conn, resolved), writing=True)
        yield writer
    finally:
        writer.close()
