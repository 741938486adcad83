"""MailboxWriter: the store half of TermAl's mailbox delivery contract.

Every write is one ``BEGIN IMMEDIATE`` transaction behind the per-file FIFO
writer admission. Request-owned writes (append, acknowledge, reactivation,
recovery marking) fail retryable after 5 s; lifecycle writes wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import aiosqlite

from termal_tui.core.formats import (
    BUSY_TIMEOUT_MS,
    READ_LIMIT_DEFAULT,
    REQUEST_DEADLINE_SECONDS,
    Clock,
    IdSource,
    check_count,
    check_position,
    clamp_read_limit,
    format_timestamp,
    mailbox_id_from,
    message_id_from,
    new_uuid,
    participant_key,
    utc_now_ns,
)
from termal_tui.core.models import (
    DURABLE_BUT_NOT_WOKEN,
    AppendReceipt,
    MailboxMessage,
    MailboxSummary,
    UnreadWakeup,
)
from termal_tui.store import lifecycle, queries, rules
from termal_tui.store.connection import (
    WriterAdmission,
    connect_read_write,
    describe_error,
    read_snapshot,
    run,
)
from termal_tui.store.errors import (
    ConflictError,
    NotFoundError,
    RetryableError,
)
from termal_tui.store.finalizers import FinalizerClaims, finalizer_alive
from termal_tui.store.lifecycle import in_write_transaction
from termal_tui.store.rules import (  # re-exported: callers import them here
    FINALIZER_POLL_SECONDS as FINALIZER_POLL_SECONDS,
)
from termal_tui.store.rules import (
    FINALIZING_MESSAGE as FINALIZING_MESSAGE,
)
from termal_tui.store.rules import validate_append as validate_append
from termal_tui.store.schema import ensure_schema
from termal_tui.store.urls import is_postgres_url, refuse_other_url

if TYPE_CHECKING:
    from termal_tui.core.review import ReviewResult
    from termal_tui.store.postgres.notify import MailSubscription

T = TypeVar("T")


def _one(db: sqlite3.Connection, sql: str, params: Any = ()) -> Any:
    return db.execute(sql, params).fetchone()


class MailboxWriter:
    """Writes TermAl-compatible mailbox rows. Construct with :func:`open_writer`.

    Every method, read or write, is one transaction run as one function on the
    connection's own thread, so calls from concurrent tasks never nest or see each
    other's uncommitted rows. Writes also pass the per-file FIFO admission.

    A duplicate of a row another process is still finalizing waits for it, measured on
    ``timer`` (default: the event loop's clock) and pausing with ``sleep`` between two
    looks; tests set both to drive that wait.
    """

    timer: Callable[[], float] | None = None  # None: the running event loop's time()
    sleep: Callable[[float], Awaitable[None]] = staticmethod(asyncio.sleep)

    def __init__(
        self,
        db: aiosqlite.Connection,
        path: Path,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        deadline: float = REQUEST_DEADLINE_SECONDS,
    ) -> None:
        self._db = db
        self.path = path
        self._clock = clock or utc_now_ns
        self._new_id = new_id or new_uuid
        self._deadline = deadline
        self._admission = WriterAdmission.for_path(path)
        self._registered: set[str] = set()
        self._claims = FinalizerClaims(path)

    def _time(self) -> float:
        return asyncio.get_running_loop().time() if self.timer is None else self.timer()

    def _now(self) -> str:
        return format_timestamp(self._clock())

    async def _call(self, work: Callable[[sqlite3.Connection], T], *, writing: bool) -> T:
        """One hop to the connection's thread; SQLite failures become typed store errors."""
        try:
            return await run(self._db, work)
        except sqlite3.Error as error:
            raise describe_error(self.path, error, writing=writing) from error

    async def _transaction(
        self,
        work: Callable[[sqlite3.Connection], T],
        *,
        admission: str | None,
        begin: str,
        commit: str,
    ) -> T:
        """One BEGIN IMMEDIATE transaction; busy anywhere is RetryableError with nothing committed."""
        gate = (
            self._admission.request(admission, self._deadline)
            if admission is not None
            else self._admission.internal()
        )
        async with gate:
            return await self._call(
                lambda db: in_write_transaction(db, work, begin, commit), writing=True
            )

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """One deferred read transaction (WAL: never waits for a writer)."""
        return await self._call(lambda db: read_snapshot(db, work), writing=False)

    async def ensure_schema(self) -> None:
        async with self._admission.internal():
            await self._call(lambda db: ensure_schema(db, self.path), writing=True)

    # ------------------------------------------------------------------ append

    async def append(
        self,
        *,
        sender_session_id: str,
        sender_name: str,
        target_session_id: str,
        target_name: str,
        body: str,
        idempotency_key: str,
        topic: str | None = None,
        state_stamp: str | None = None,
        message_class: str | None = None,
        finalizing: bool = False,
        dispatch_outcome: str | None = None,
    ) -> AppendReceipt:
        """Commit one message with the next dense sequence, or return the original receipt.

        With ``finalizing=True`` the caller promises to finalize the new message's
        dispatch outcome (:meth:`record_dispatch_outcome`, or :meth:`abandon_dispatch`);
        until then a duplicate waits for it, outside the writer slot, up to the request
        deadline, then fails retryable. Without it there is no live finalizer and a
        duplicate of an unfinalized row gets ``durableButNotWoken`` at once.

        ``dispatch_outcome``: the outcome, when the caller knows it before the append (the
        receiver is in a turn, or has no channel): the new row commits with it as both its
        receipt outcome and its notification state, so there is nothing to finalize
        (``finalizing`` is then ignored), as if it had been recorded at once.
        """
        if dispatch_outcome is not None:
            rules.check_outcome(dispatch_outcome)
            finalizing = False
        validate_append(
            sender_session_id=sender_session_id,
            target_session_id=target_session_id,
            body=body,
            idempotency_key=idempotency_key,
            topic=topic,
            state_stamp=state_stamp,
            message_class=message_class,
        )
        started = self._time()
        claimed: list[str] = []

        def work(db: sqlite3.Connection) -> AppendReceipt:
            existing = _one(
                db,
                f"SELECT {rules.DUPLICATE_COLUMNS} FROM mailbox_messages "
                "WHERE sender_session_id = ? AND idempotency_key = ?",
                (sender_session_id, idempotency_key),
            )
            if existing is not None:
                return rules.duplicate_receipt(
                    existing,
                    idempotency_key=idempotency_key,
                    target_session_id=target_session_id,
                    body=body,
                    topic=topic,
                    state_stamp=state_stamp,
                )
            receipt = self._insert_message(
                db,
                sender_session_id=sender_session_id,
                sender_name=sender_name,
                target_session_id=target_session_id,
                target_name=target_name,
                body=body,
                idempotency_key=idempotency_key,
                topic=topic,
                state_stamp=state_stamp,
                outcome=dispatch_outcome,
            )
            if finalizing:  # registered before COMMIT, so no duplicate can miss it, in
                # this process (pending) or in any other (the claim).
                self._admission.pending.add(receipt.message_id)
                self._claims.claim(receipt.message_id)
                claimed.append(receipt.message_id)
            return receipt

        try:
            receipt = await self._transaction(
                work,
                admission="waiting to begin mailbox append",
                begin="beginning mailbox append",
                commit="committing mailbox append",
            )
        except BaseException:
            # Rolled back: nothing to finalize (the claim `work` took is let go).
            for message_id in claimed:
                self._admission.finish(message_id)
                self._claims.release(message_id)
            raise
        if not receipt.duplicate:
            if finalizing:
                self._registered.add(receipt.message_id)
            return receipt
        if receipt.notification_disposition:
            return receipt
        # The original has no outcome yet: wait for its finalizer without the slot.
        remaining = self._deadline - (self._time() - started)
        outcome = await self._final_outcome(receipt.message_id, remaining)
        return receipt.replace(notification_disposition=outcome)

    async def _final_outcome(self, message_id: str, remaining: float) -> str:
        """The original's outcome once its finalizer (in this process or another) is done;
        retryable if it is still finalizing at the deadline; ``durableButNotWoken`` if
        no live finalizer holds it (a crash, a restart)."""
        give_up = self._time() + max(0.0, remaining)
        if not await self._admission.wait_finalized(message_id, remaining):
            raise RetryableError(FINALIZING_MESSAGE)
        while True:
            row = await self._read(
                lambda db: _one(
                    db, "SELECT dispatch_outcome FROM mailbox_messages WHERE id = ?", (message_id,)
                )
            )
            if row is None:
                raise NotFoundError(f"mailbox message `{message_id}` disappeared during dispatch")
            if row[0] is not None:
                return str(row[0])
            if not finalizer_alive(self.path, message_id):
                # Finalized just now (read again), or no live finalizer (a crash, a
                # restart): the append-boundary receipt.
                again = await self._read(
                    lambda db: _one(
                        db,
                        "SELECT dispatch_outcome FROM mailbox_messages WHERE id = ?",
                        (message_id,),
                    )
                )
                return str(again[0]) if again and again[0] else DURABLE_BUT_NOT_WOKEN
            if self._time() >= give_up:  # another process is still finalizing it
                raise RetryableError(FINALIZING_MESSAGE)
            await self.sleep(min(FINALIZER_POLL_SECONDS, max(0.0, give_up - self._time())))

    def _insert_message(
        self,
        db: sqlite3.Connection,
        *,
        sender_session_id: str,
        sender_name: str,
        target_session_id: str,
        target_name: str,
        body: str,
        idempotency_key: str,
        topic: str | None,
        state_stamp: str | None,
        outcome: str | None = None,
    ) -> AppendReceipt:
        now = self._now()
        key = participant_key(sender_session_id, target_session_id)
        row = _one(db, "SELECT id FROM mailboxes WHERE participant_key = ?", (key,))
        if row is None:
            mailbox_id = mailbox_id_from(self._new_id())
            db.execute(
                "INSERT INTO mailboxes(id, participant_key, created_at, next_sequence) "
                "VALUES(?, ?, ?, 1)",
                (mailbox_id, key, now),
            )
        else:
            mailbox_id = row[0]
        for session_id, name in (
            (sender_session_id, sender_name),
            (target_session_id, target_name),
        ):
            db.execute(
                "INSERT INTO mailbox_participants(mailbox_id, session_id, display_name, "
                "processed_through, joined_at, left_at) VALUES(?, ?, ?, 0, ?, NULL) "
                "ON CONFLICT(mailbox_id, session_id) DO UPDATE SET display_name = "
                "excluded.display_name",
                (mailbox_id, session_id, name, now),
            )
        sequence = _one(
            db,
            "UPDATE mailboxes SET next_sequence = next_sequence + 1 WHERE id = ? "
            "RETURNING next_sequence - 1",
            (mailbox_id,),
        )[0]
        cursor_row = _one(
            db,
            "SELECT processed_through FROM mailbox_participants "
            "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL",
            (mailbox_id, target_session_id),
        )
        if cursor_row is None:
            raise ConflictError(rules.DEPARTED_TARGET)
        unread_depth = _one(
            db,
            "SELECT COUNT(*) + 1 FROM mailbox_messages WHERE mailbox_id = ? "
            "AND target_session_id = ? AND sequence > ?",
            (mailbox_id, target_session_id, cursor_row[0]),
        )[0]
        message_id = message_id_from(self._new_id())
        db.execute(
            "INSERT INTO mailbox_messages(id, mailbox_id, sequence, sender_session_id, "
            "sender_name, target_session_id, target_name, created_at, class, topic, "
            "state_stamp, body, idempotency_key, unread_depth_at_append, "
            "notification_disposition, dispatch_outcome) "
            "VALUES(?, ?, ?, ?, ?, ?, ?, ?, 'routine', ?, ?, ?, ?, ?, ?, ?)",
            (
                message_id,
                mailbox_id,
                sequence,
                sender_session_id,
                sender_name,
                target_session_id,
                target_name,
                now,
                topic,
                state_stamp,
                body,
                idempotency_key,
                unread_depth,
                outcome or DURABLE_BUT_NOT_WOKEN,
                outcome,
            ),
        )
        # The sender's cursor follows its own message only when it was already
        # caught up to the message just before it, so no unread peer message is
        # silently consumed by an unrelated send.
        db.execute(
            "UPDATE mailbox_participants SET processed_through = ? "
            "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL "
            "AND processed_through = ? - 1",
            (sequence, mailbox_id, sender_session_id, sequence),
        )
        return AppendReceipt(
            mailbox_id=mailbox_id,
            message_id=message_id,
            sequence=sequence,
            unread_depth=unread_depth,
            notification_disposition=outcome or DURABLE_BUT_NOT_WOKEN,
            duplicate=False,
        )

    # ------------------------------------------------------- wake lifecycle

    async def record_dispatch_outcome(self, message_id: str, outcome: str) -> str:
        """Record the immutable receipt outcome once; returns the authoritative outcome.

        The mutable state advances only while it is still ``durableButNotWoken``,
        so a recovery or delivery that already happened is never regressed. Ends the
        pending finalization that duplicates of this message wait for.
        """
        rules.check_outcome(outcome)

        def work(db: sqlite3.Connection) -> str:
            cursor = db.execute(
                "UPDATE mailbox_messages SET dispatch_outcome = ? "
                "WHERE id = ? AND dispatch_outcome IS NULL",
                (outcome, message_id),
            )
            if cursor.rowcount == 0:
                row = _one(
                    db, "SELECT dispatch_outcome FROM mailbox_messages WHERE id = ?", (message_id,)
                )
                if row is None:
                    raise rules.missing_message(message_id)
                return str(row[0])
            db.execute(
                "UPDATE mailbox_messages SET notification_disposition = ? "
                "WHERE id = ? AND notification_disposition = ?",
                (outcome, message_id, DURABLE_BUT_NOT_WOKEN),
            )
            return outcome

        try:
            return await self._transaction(
                work,
                admission=None,
                begin="beginning initial mailbox dispatch outcome update",
                commit="committing initial mailbox dispatch outcome update",
            )
        finally:
            self.abandon_dispatch(message_id)

    def abandon_dispatch(self, message_id: str) -> None:
        """End a pending finalization without an outcome (waiting duplicates then read
        ``durableButNotWoken``, as after a restart)."""
        self._registered.discard(message_id)
        self._admission.finish(message_id)
        self._claims.release(message_id)

    async def mark_recovered_through(
        self, session_id: str, mailbox_id: str, sequence: int, boot: bool = False
    ) -> int:
        """Advance covered rows to ``recoveredWake`` (never-woken only, or every unread on boot)."""
        return await self._update_count(
            *lifecycle.recovered_update(session_id, mailbox_id, sequence, boot),
            admission=lifecycle.RECOVERY_ADMISSION,
        )

    async def mark_delivered_through(self, session_id: str, mailbox_id: str, sequence: int) -> int:
        """Runtime acceptance: every covered row becomes ``deliveredToIdleSession``."""
        return await self._update_count(
            *lifecycle.delivered_update(session_id, mailbox_id, sequence), admission=None
        )

    async def _update_count(self, sql: str, params: Any, *, admission: str | None) -> int:
        return await self._transaction(
            lambda db: db.execute(sql, params).rowcount,
            admission=admission,
            begin=lifecycle.LIFECYCLE_BEGIN,
            commit=lifecycle.LIFECYCLE_COMMIT,
        )

    async def wakeups_for_session(
        self, session_id: str, boot: bool = False, queued: bool = False
    ) -> list[UnreadWakeup]:
        """Mailboxes needing a wake (see :func:`lifecycle.wakeups_query`)."""
        sql, params = lifecycle.wakeups_query(session_id, boot, queued)
        return lifecycle.wakeups_from(
            await self._read(lambda db: db.execute(sql, params).fetchall())
        )

    # Reads as a participant. They take the same arguments in the same order as the
    # reader's (``session_id`` keyword-only everywhere), but the session is required:
    # the writer acts for an agent, and has no human view.

    async def list_mailboxes(self, *, session_id: str) -> list[MailboxSummary]:
        """The caller's own summaries (its ``processedThrough`` is the next CAS's expected value)."""
        return await self._read(lambda db: queries.summaries(db, session_id))

    async def processed_through(self, session_id: str, mailbox_id: str) -> int:
        """The caller's current cursor in one mailbox (0 if it is not a participant)."""
        row = await self._read(
            lambda db: _one(
                db,
                "SELECT processed_through FROM mailbox_participants "
                "WHERE mailbox_id = ? AND session_id = ?",
                (mailbox_id, session_id),
            )
        )
        return 0 if row is None else int(row[0])

    async def read_range(
        self,
        mailbox_id: str,
        after_sequence: int = 0,
        limit: int = READ_LIMIT_DEFAULT,
        *,
        session_id: str,
    ) -> list[MailboxMessage]:
        """TermAl's per-session read (ascending, limit clamped to 1..=200); never moves a cursor."""
        after = check_position("afterSequence", after_sequence)
        count = clamp_read_limit(check_count("limit", limit))
        return await self._read(
            lambda db: queries.fetch_range(db, mailbox_id, after, count, session_id, True)
        )

    async def read_message(self, message_id: str, *, session_id: str) -> MailboxMessage:
        """One exact message the caller may see (404 otherwise)."""
        return await self._read(lambda db: queries.fetch_message(db, message_id, session_id, True))

    async def notification_state(self, message_id: str) -> str | None:
        """A row's current wake lifecycle state (None if there is no such row)."""
        row = await self._read(
            lambda db: _one(
                db,
                "SELECT notification_disposition FROM mailbox_messages WHERE id = ?",
                (message_id,),
            )
        )
        return None if row is None else str(row[0])

    async def data_version(self) -> int:
        """SQLite's ``data_version``: changes whenever another connection commits."""
        return await self._call(
            lambda db: int(db.execute("PRAGMA data_version").fetchone()[0]), writing=False
        )

    def watch_mail(self, session_id: str, on_mail: Callable[[], None]) -> MailSubscription | None:
        """No signal across processes on a file: watchers poll :meth:`data_version` (and
        senders on this host nudge them). On PostgreSQL a subscription (LISTEN/NOTIFY)."""
        return None

    # --------------------------------------------------------- acknowledge

    async def acknowledge(
        self,
        session_id: str,
        mailbox_id: str,
        expected_processed_through: int,
        processed_through: int,
    ) -> MailboxSummary:
        """Forward-only compare-and-swap of the caller's cursor; summary built in the same tx."""
        rules.check_acknowledgement(expected_processed_through, processed_through)

        def work(db: sqlite3.Connection) -> MailboxSummary:
            queries.require_participant(db, mailbox_id, session_id)
            row = _one(db, "SELECT next_sequence - 1 FROM mailboxes WHERE id = ?", (mailbox_id,))
            if row is None:
                raise NotFoundError(rules.ACK_MAILBOX_NOT_FOUND)
            rules.check_within_latest(processed_through, row[0])
            cursor = db.execute(
                "UPDATE mailbox_participants SET processed_through = ? "
                "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL "
                "AND processed_through = ?",
                (processed_through, mailbox_id, session_id, expected_processed_through),
            )
            if cursor.rowcount == 0:
                current = _one(
                    db,
                    "SELECT processed_through FROM mailbox_participants "
                    "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL",
                    (mailbox_id, session_id),
                )
                rules.settle_failed_swap(
                    None if current is None else current[0],
                    expected_processed_through,
                    processed_through,
                )
            found = queries.summaries(db, session_id, mailbox_id)
            if not found:
                raise NotFoundError(rules.ACK_SUMMARY_NOT_FOUND)
            return found[0]

        return await self._transaction(
            work,
            admission="waiting to begin mailbox acknowledgement",
            begin="beginning mailbox acknowledgement",
            commit="committing mailbox acknowledgement",
        )

    # ----------------------------------------------------- participation

    async def mark_session_left(self, session_id: str) -> int:
        """Deliberate session deletion: set ``left_at`` once (a second delete keeps the first)."""
        return await self._transaction(
            lambda db: (
                db.execute(
                    "UPDATE mailbox_participants SET left_at = COALESCE(left_at, ?) "
                    "WHERE session_id = ?",
                    (self._now(), session_id),
                ).rowcount
            ),
            admission=None,
            begin="marking a session left",
            commit="marking a session left",
        )

    async def reactivate_session(self, session_id: str) -> list[tuple[str, str]]:
        """Clear stale ``left_at`` markers; returns exactly the (mailbox_id, left_at) cleared.

        As TermAl does, a read-only check comes first: with nothing departed it returns
        at once without asking for the writer slot (so it succeeds while another
        process holds the write lock).
        """
        departed_sql = (
            "SELECT mailbox_id, left_at FROM mailbox_participants "
            "WHERE session_id = ? AND left_at IS NOT NULL ORDER BY mailbox_id"
        )
        if not await self._read(lambda db: _one(db, departed_sql, (session_id,))):
            return []

        def work(db: sqlite3.Connection) -> list[tuple[str, str]]:
            rows = [(row[0], row[1]) for row in db.execute(departed_sql, (session_id,))]
            if rows:
                db.execute(
                    "UPDATE mailbox_participants SET left_at = NULL "
                    "WHERE session_id = ? AND left_at IS NOT NULL",
                    (session_id,),
                )
            return rows

        return await self._transaction(
            work,
            admission="reactivating a mailbox participant",
            begin="reactivating a mailbox participant",
            commit="reactivating a mailbox participant",
        )

    async def restore_session_markers(
        self, session_id: str, cleared: list[tuple[str, str]]
    ) -> None:
        """Put back only the markers one reactivation cleared (concurrent deletion wins)."""
        if not cleared:
            return

        def work(db: sqlite3.Connection) -> None:
            db.executemany(
                "UPDATE mailbox_participants SET left_at = ? "
                "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL",
                [(left_at, mailbox_id, session_id) for mailbox_id, left_at in cleared],
            )

        await self._transaction(
            work,
            admission="restoring mailbox participant markers",
            begin="restoring mailbox participant markers",
            commit="restoring mailbox participant markers",
        )

    # ------------------------------------------------------- review results

    async def append_review_result(
        self,
        *,
        delegation_id: str,
        attempt: int,
        child_session_id: str,
        child_name: str,
        coordinator_session_id: str,
        coordinator_name: str,
        result: ReviewResult | dict[str, Any],
    ) -> AppendReceipt:
        """Commit a structured review result as a control-plane row that never wakes anyone."""
        receipt = await self.append(
            **rules.review_request(
                delegation_id=delegation_id,
                attempt=attempt,
                child_session_id=child_session_id,
                child_name=child_name,
                coordinator_session_id=coordinator_session_id,
                coordinator_name=coordinator_name,
                result=result,
            )
        )
        if receipt.duplicate:
            return receipt
        outcome = await self.record_dispatch_outcome(receipt.message_id, DURABLE_BUT_NOT_WOKEN)
        return receipt.replace(notification_disposition=outcome)

    async def close(self) -> None:
        # No finalizer survives the writer: pending outcomes resolve as after a restart.
        for message_id in list(self._registered):
            self.abandon_dispatch(message_id)
        self._claims.release_all()
        await self._db.close()


@contextlib.asynccontextmanager
async def open_writer(
    path: str | os.PathLike[str],
    clock: Clock | None = None,
    new_id: IdSource | None = None,
    deadline: float = REQUEST_DEADLINE_SECONDS,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
) -> AsyncIterator[MailboxWriter]:
    """Open (creating if needed) a coordination database for writing, schema ensured.

    ``path`` is TermAl's SQLite file, or a ``postgresql://`` URL (the PostgreSQL engine,
    loaded only then: the SQLite path imports nothing of it). Any other URL is refused:
    it is never taken for a relative path."""
    if is_postgres_url(path):
        from termal_tui.store.postgres import require_driver

        require_driver()
        from termal_tui.store.postgres.writer import open_pg_writer

        async with open_pg_writer(
            str(path),
            clock=clock,
            new_id=new_id,
            deadline=deadline,
            busy_timeout_ms=busy_timeout_ms,
        ) as pg:
            yield pg  # type: ignore[misc]  # the same public API (PgMailboxWriter)
        return
    refuse_other_url(path)
    resolved = Path(path).expanduser()
    db = await connect_read_write(resolved, busy_timeout_ms)
    writer = MailboxWriter(db, resolved, clock=clock, new_id=new_id, deadline=deadline)
    try:
        await writer.ensure_schema()
        yield writer
    finally:
        await writer.close()
