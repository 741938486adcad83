"""MailboxWriter: the store half of TermAl's mailbox delivery contract.

Every write is one ``BEGIN IMMEDIATE`` transaction behind the per-file FIFO
writer admission. Request-owned writes (append, acknowledge, reactivation,
recovery marking) fail retryable after 5 s; lifecycle writes wait.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from termal_tui.models import (
    CONTROL_TOPIC,
    DELIVERED_TO_IDLE_SESSION,
    DISPATCH_OUTCOMES,
    DURABLE_BUT_NOT_WOKEN,
    ROUTINE_CLASS,
    AppendReceipt,
    MailboxSummary,
    UnreadWakeup,
)
from termal_tui.review import (
    ReviewResult,
    build_envelope,
    parse_review_result,
    review_idempotency_key,
    review_state_stamp,
)
from termal_tui.store import queries
from termal_tui.store.connection import WriterAdmission, connect_read_write, is_busy
from termal_tui.store.errors import (
    ConflictError,
    NotFoundError,
    RetryableError,
    ValidationError,
    busy_message,
)
from termal_tui.store.formats import (
    MAX_BODY_BYTES,
    MAX_IDEMPOTENCY_KEY_BYTES,
    MAX_METADATA_BYTES,
    NEVER_WOKEN_PASS_CAP,
    REQUEST_DEADLINE_SECONDS,
    Clock,
    IdSource,
    format_timestamp,
    mailbox_id_from,
    message_id_from,
    new_uuid,
    participant_key,
    rust_trim,
    utc_now_ns,
)
from termal_tui.store.schema import ensure_schema

T = TypeVar("T")


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def validate_append(
    *,
    sender_session_id: str,
    target_session_id: str,
    body: str,
    idempotency_key: str,
    topic: str | None,
    state_stamp: str | None,
    message_class: str | None,
) -> None:
    """TermAl's append validation, in TermAl's order. Raises ValidationError."""
    if message_class is not None and message_class != ROUTINE_CLASS:
        raise ValidationError(
            "durable mailboxes currently support only class `routine`; "
            "STOP/urgent delivery is not active"
        )
    if sender_session_id == target_session_id:
        raise ValidationError("mailbox messages must target another session")
    if not (
        rust_trim(sender_session_id) and rust_trim(target_session_id) and rust_trim(idempotency_key)
    ):
        raise ValidationError("mailbox sender, target, and idempotency key are required")
    if not rust_trim(body):
        raise ValidationError("mailbox message cannot be empty")
    if _utf8_len(idempotency_key) > MAX_IDEMPOTENCY_KEY_BYTES:
        raise ValidationError("mailbox idempotency key exceeds 256 bytes")
    if _utf8_len(body) > MAX_BODY_BYTES:
        raise ValidationError(f"mailbox body exceeds {MAX_BODY_BYTES} bytes")
    if topic is not None and _utf8_len(topic) > MAX_METADATA_BYTES:
        raise ValidationError(f"mailbox topic exceeds {MAX_METADATA_BYTES} bytes")
    if state_stamp is not None and _utf8_len(state_stamp) > MAX_METADATA_BYTES:
        raise ValidationError(f"mailbox state stamp exceeds {MAX_METADATA_BYTES} bytes")


async def _one(db: aiosqlite.Connection, sql: str, params: Any = ()) -> Any:
    async with db.execute(sql, params) as cursor:
        return await cursor.fetchone()


class MailboxWriter:
    """Writes TermAl-compatible mailbox rows. Construct with :func:`open_writer`."""

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

    def _now(self) -> str:
        return format_timestamp(self._clock())

    async def _transaction(
        self,
        work: Callable[[aiosqlite.Connection], Awaitable[T]],
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
            try:
                await self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                if is_busy(error):
                    raise RetryableError(busy_message(begin)) from error
                raise
            try:
                result = await work(self._db)
            except BaseException:
                await self._rollback()
                raise
            try:
                await self._db.execute("COMMIT")
            except sqlite3.OperationalError as error:
                await self._rollback()
                if is_busy(error):
                    raise RetryableError(busy_message(commit)) from error
                raise
            return result

    async def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self._db.in_transaction:
                await self._db.execute("ROLLBACK")

    async def ensure_schema(self) -> None:
        await self._transaction(
            lambda db: ensure_schema(db, self.path),
            admission=None,
            begin="beginning coordination schema setup",
            commit="committing coordination schema setup",
        )

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
    ) -> AppendReceipt:
        """Commit one message with the next dense sequence, or return the original receipt."""
        validate_append(
            sender_session_id=sender_session_id,
            target_session_id=target_session_id,
            body=body,
            idempotency_key=idempotency_key,
            topic=topic,
            state_stamp=state_stamp,
            message_class=message_class,
        )

        async def work(db: aiosqlite.Connection) -> AppendReceipt:
            existing = await _one(
                db,
                "SELECT mailbox_id, id, sequence, target_session_id, body, topic, state_stamp, "
                "unread_depth_at_append, dispatch_outcome FROM mailbox_messages "
                "WHERE sender_session_id = ? AND idempotency_key = ?",
                (sender_session_id, idempotency_key),
            )
            if existing is not None:
                if tuple(existing[3:7]) != (target_session_id, body, topic, state_stamp):
                    raise ConflictError(
                        f"idempotency key `{idempotency_key}` was already used for a "
                        "different mailbox message"
                    )
                # No live finalizer survives a process: a NULL outcome resolves to the
                # append-boundary receipt.
                return AppendReceipt(
                    mailbox_id=existing[0],
                    message_id=existing[1],
                    sequence=existing[2],
                    unread_depth=existing[7],
                    notification_disposition=existing[8] or DURABLE_BUT_NOT_WOKEN,
                    duplicate=True,
                )
            return await self._insert_message(
                db,
                sender_session_id=sender_session_id,
                sender_name=sender_name,
                target_session_id=target_session_id,
                target_name=target_name,
                body=body,
                idempotency_key=idempotency_key,
                topic=topic,
                state_stamp=state_stamp,
            )

        return await self._transaction(
            work,
            admission="waiting to begin mailbox append",
            begin="beginning mailbox append",
            commit="committing mailbox append",
        )

    async def _insert_message(
        self,
        db: aiosqlite.Connection,
        *,
        sender_session_id: str,
        sender_name: str,
        target_session_id: str,
        target_name: str,
        body: str,
        idempotency_key: str,
        topic: str | None,
        state_stamp: str | None,
    ) -> AppendReceipt:
        now = self._now()
        key = participant_key(sender_session_id, target_session_id)
        row = await _one(db, "SELECT id FROM mailboxes WHERE participant_key = ?", (key,))
        if row is None:
            mailbox_id = mailbox_id_from(self._new_id())
            await db.execute(
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
            await db.execute(
                "INSERT INTO mailbox_participants(mailbox_id, session_id, display_name, "
                "processed_through, joined_at, left_at) VALUES(?, ?, ?, 0, ?, NULL) "
                "ON CONFLICT(mailbox_id, session_id) DO UPDATE SET display_name = "
                "excluded.display_name",
                (mailbox_id, session_id, name, now),
            )
        sequence = (
            await _one(
                db,
                "UPDATE mailboxes SET next_sequence = next_sequence + 1 WHERE id = ? "
                "RETURNING next_sequence - 1",
                (mailbox_id,),
            )
        )[0]
        cursor_row = await _one(
            db,
            "SELECT processed_through FROM mailbox_participants "
            "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL",
            (mailbox_id, target_session_id),
        )
        if cursor_row is None:
            raise ConflictError("target session is a departed mailbox participant")
        unread_depth = (
            await _one(
                db,
                "SELECT COUNT(*) + 1 FROM mailbox_messages WHERE mailbox_id = ? "
                "AND target_session_id = ? AND sequence > ?",
                (mailbox_id, target_session_id, cursor_row[0]),
            )
        )[0]
        message_id = message_id_from(self._new_id())
        await db.execute(
            "INSERT INTO mailbox_messages(id, mailbox_id, sequence, sender_session_id, "
            "sender_name, target_session_id, target_name, created_at, class, topic, "
            "state_stamp, body, idempotency_key, unread_depth_at_append, "
            "notification_disposition, dispatch_outcome) "
            "VALUES(?, ?, ?, ?, ?, ?, ?, ?, 'routine', ?, ?, ?, ?, ?, ?, NULL)",
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
                DURABLE_BUT_NOT_WOKEN,
            ),
        )
        # The sender's cursor follows its own message only when it was already
        # caught up to the message just before it, so no unread peer message is
        # silently consumed by an unrelated send.
        await db.execute(
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
            notification_disposition=DURABLE_BUT_NOT_WOKEN,
            duplicate=False,
        )

    # ------------------------------------------------------- wake lifecycle

    async def record_dispatch_outcome(self, message_id: str, outcome: str) -> str:
        """Record the immutable receipt outcome once; returns the authoritative outcome.

        The mutable state advances only while it is still ``durableButNotWoken``,
        so a recovery or delivery that already happened is never regressed.
        """
        if outcome not in DISPATCH_OUTCOMES:
            raise ValidationError(
                f"unknown dispatch outcome `{outcome}`; expected one of "
                + ", ".join(DISPATCH_OUTCOMES)
            )

        async def work(db: aiosqlite.Connection) -> str:
            cursor = await db.execute(
                "UPDATE mailbox_messages SET dispatch_outcome = ? "
                "WHERE id = ? AND dispatch_outcome IS NULL",
                (outcome, message_id),
            )
            if cursor.rowcount == 0:
                row = await _one(
                    db, "SELECT dispatch_outcome FROM mailbox_messages WHERE id = ?", (message_id,)
                )
                if row is None:
                    raise NotFoundError(f"mailbox message `{message_id}` does not exist")
                return str(row[0])
            await db.execute(
                "UPDATE mailbox_messages SET notification_disposition = ? "
                "WHERE id = ? AND notification_disposition = ?",
                (outcome, message_id, DURABLE_BUT_NOT_WOKEN),
            )
            return outcome

        return await self._transaction(
            work,
            admission=None,
            begin="beginning initial mailbox dispatch outcome update",
            commit="committing initial mailbox dispatch outcome update",
        )

    async def mark_recovered_through(
        self, session_id: str, mailbox_id: str, sequence: int, boot: bool = False
    ) -> int:
        """Advance covered rows to ``recoveredWake`` (never-woken only, or every unread on boot)."""
        if boot:
            sql = (
                "UPDATE mailbox_messages SET notification_disposition = 'recoveredWake' "
                "WHERE mailbox_id = ?1 AND target_session_id = ?2 AND EXISTS ("
                "  SELECT 1 FROM mailbox_participants participant"
                "  WHERE participant.mailbox_id = mailbox_messages.mailbox_id"
                "    AND participant.session_id = mailbox_messages.target_session_id"
                "    AND participant.left_at IS NULL"
                "    AND mailbox_messages.sequence > participant.processed_through)"
                " AND sequence <= ?3 AND notification_disposition != 'recoveredWake'"
            )
        else:
            sql = (
                "UPDATE mailbox_messages SET notification_disposition = 'recoveredWake' "
                "WHERE mailbox_id = ?1 AND target_session_id = ?2 AND sequence <= ?3 "
                "AND notification_disposition = 'durableButNotWoken'"
            )
        return await self._update_count(
            sql,
            (mailbox_id, session_id, sequence),
            admission="reactivating a mailbox participant",
        )

    async def mark_delivered_through(self, session_id: str, mailbox_id: str, sequence: int) -> int:
        """Runtime acceptance: every covered row becomes ``deliveredToIdleSession``."""
        return await self._update_count(
            "UPDATE mailbox_messages SET notification_disposition = ?4 "
            "WHERE mailbox_id = ?1 AND target_session_id = ?2 AND sequence <= ?3 "
            "AND notification_disposition != ?4",
            (mailbox_id, session_id, sequence, DELIVERED_TO_IDLE_SESSION),
            admission=None,
        )

    async def _update_count(self, sql: str, params: Any, *, admission: str | None) -> int:
        async def work(db: aiosqlite.Connection) -> int:
            cursor = await db.execute(sql, params)
            return cursor.rowcount

        return await self._transaction(
            work,
            admission=admission,
            begin="beginning a mailbox lifecycle update",
            commit="committing a mailbox lifecycle update",
        )

    async def wakeups_for_session(self, session_id: str, boot: bool = False) -> list[UnreadWakeup]:
        """Mailboxes needing a wake: never-woken pass capped at 16, boot pass unbounded."""
        sql = f"""
            SELECT m.id, message.id, message.sequence,
              (SELECT COUNT(*) FROM mailbox_messages unread
               WHERE unread.mailbox_id = m.id AND unread.target_session_id = :s
                 AND unread.sequence > mine.processed_through
                 AND COALESCE(unread.topic, '') != :ctl),
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
                  AND COALESCE(candidate.topic, '') != :ctl
                  AND (:boot = 1 OR candidate.notification_disposition = '{DURABLE_BUT_NOT_WOKEN}'))
            ORDER BY message.created_at DESC, m.id
            LIMIT CASE WHEN :boot = 1 THEN -1 ELSE {NEVER_WOKEN_PASS_CAP} END
        """
        params = {"s": session_id, "ctl": CONTROL_TOPIC, "boot": 1 if boot else 0}
        async with self._db.execute(sql, params) as cursor:
            rows = await cursor.fetchall()
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

    async def list_mailboxes(self, session_id: str) -> list[MailboxSummary]:
        """The caller's own summaries (its ``processedThrough`` is the next CAS's expected value)."""
        await self._db.execute("BEGIN")
        try:
            return await queries.summaries(self._db, session_id)
        finally:
            await self._db.execute("ROLLBACK")

    async def processed_through(self, session_id: str, mailbox_id: str) -> int:
        """The caller's current cursor in one mailbox (0 if it is not a participant)."""
        row = await _one(
            self._db,
            "SELECT processed_through FROM mailbox_participants "
            "WHERE mailbox_id = ? AND session_id = ?",
            (mailbox_id, session_id),
        )
        return 0 if row is None else int(row[0])

    # --------------------------------------------------------- acknowledge

    async def acknowledge(
        self,
        session_id: str,
        mailbox_id: str,
        expected_processed_through: int,
        processed_through: int,
    ) -> MailboxSummary:
        """Forward-only compare-and-swap of the caller's cursor; summary built in the same tx."""
        for label, value in (
            ("expectedProcessedThrough", expected_processed_through),
            ("processedThrough", processed_through),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValidationError(f"{label} must be a non-negative integer")
        if processed_through < expected_processed_through:
            raise ValidationError("mailbox acknowledgement cannot move backwards")

        async def work(db: aiosqlite.Connection) -> MailboxSummary:
            await queries.require_participant(db, mailbox_id, session_id)
            row = await _one(
                db, "SELECT next_sequence - 1 FROM mailboxes WHERE id = ?", (mailbox_id,)
            )
            if row is None:
                raise NotFoundError("mailbox not found")
            latest = row[0]
            if processed_through > latest:
                raise ValidationError(
                    f"mailbox acknowledgement {processed_through} exceeds latest sequence {latest}"
                )
            cursor = await db.execute(
                "UPDATE mailbox_participants SET processed_through = ? "
                "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL "
                "AND processed_through = ?",
                (processed_through, mailbox_id, session_id, expected_processed_through),
            )
            if cursor.rowcount == 0:
                current = await _one(
                    db,
                    "SELECT processed_through FROM mailbox_participants "
                    "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL",
                    (mailbox_id, session_id),
                )
                if current is None:
                    raise NotFoundError("mailbox participant not found")
                if current[0] < processed_through:
                    raise ConflictError(
                        "mailbox acknowledgement conflict: processedThrough no longer equals "
                        f"{expected_processed_through}"
                    )
            found = await queries.summaries(db, session_id, mailbox_id)
            if not found:
                raise NotFoundError("mailbox not found while acknowledging")
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

        async def work(db: aiosqlite.Connection) -> int:
            cursor = await db.execute(
                "UPDATE mailbox_participants SET left_at = COALESCE(left_at, ?) "
                "WHERE session_id = ?",
                (self._now(), session_id),
            )
            return cursor.rowcount

        return await self._transaction(
            work, admission=None, begin="marking a session left", commit="marking a session left"
        )

    async def reactivate_session(self, session_id: str) -> list[tuple[str, str]]:
        """Clear stale ``left_at`` markers; returns exactly the (mailbox_id, left_at) cleared."""

        async def work(db: aiosqlite.Connection) -> list[tuple[str, str]]:
            async with db.execute(
                "SELECT mailbox_id, left_at FROM mailbox_participants "
                "WHERE session_id = ? AND left_at IS NOT NULL ORDER BY mailbox_id",
                (session_id,),
            ) as cursor:
                rows = [(row[0], row[1]) for row in await cursor.fetchall()]
            if rows:
                await db.execute(
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

        async def work(db: aiosqlite.Connection) -> None:
            for mailbox_id, left_at in cleared:
                await db.execute(
                    "UPDATE mailbox_participants SET left_at = ? "
                    "WHERE mailbox_id = ? AND session_id = ? AND left_at IS NULL",
                    (left_at, mailbox_id, session_id),
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
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
            raise ValidationError("review-result submission attempt must be a positive integer")
        try:
            parsed = parse_review_result(result)
            body = build_envelope(
                parsed,
                delegation_id=delegation_id,
                child_session_id=child_session_id,
                attempt=attempt,
            )
        except ValueError as error:
            raise ValidationError(str(error)) from None
        receipt = await self.append(
            sender_session_id=child_session_id,
            sender_name=child_name,
            target_session_id=coordinator_session_id,
            target_name=coordinator_name,
            body=body,
            idempotency_key=review_idempotency_key(delegation_id, attempt),
            topic=CONTROL_TOPIC,
            state_stamp=review_state_stamp(delegation_id, attempt),
        )
        if receipt.duplicate:
            return receipt
        outcome = await self.record_dispatch_outcome(receipt.message_id, DURABLE_BUT_NOT_WOKEN)
        return receipt.model_copy(update={"notification_disposition": outcome})

    async def close(self) -> None:
        await self._db.close()


@contextlib.asynccontextmanager
async def open_writer(
    path: str | os.PathLike[str],
    clock: Clock | None = None,
    new_id: IdSource | None = None,
    deadline: float = REQUEST_DEADLINE_SECONDS,
) -> AsyncIterator[MailboxWriter]:
    """Open (creating if needed) a coordination database for writing, schema ensured."""
    resolved = Path(path).expanduser()
    db = await connect_read_write(resolved)
    writer = MailboxWriter(db, resolved, clock=clock, new_id=new_id, deadline=deadline)
    try:
        await writer.ensure_schema()
        yield writer
    finally:
        await db.close()
