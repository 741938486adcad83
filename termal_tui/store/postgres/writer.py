"""PgMailboxWriter: the mailbox delivery contract on PostgreSQL, with the public API of
:class:`~termal_tui.store.writer.MailboxWriter`.

Each call is one READ COMMITTED transaction on a pooled connection; there is no
in-process writer slot (PostgreSQL locks rows, not the file):

- an append locks its mailbox row (``SELECT ... FOR UPDATE``; a new mailbox is inserted
  first) and takes ``next_sequence`` under that lock, so sequences are dense per mailbox
  whatever the concurrency, with no SEQUENCE object (whose values a rollback loses);
- the sender-scoped idempotency key is a unique index kept forever: a concurrent append
  with the same key that loses the race meets the unique violation, rolls back and is
  answered as a duplicate (the original receipt) or a conflict;
- an acknowledgement is ``UPDATE ... WHERE processed_through = expected``: a concurrent
  one blocks on the row, then re-checks the predicate against the committed value.

The rules, the records and the sentences are the SQLite writer's (``store/rules.py``,
``store/queries.py``, ``store/lifecycle.py``): only the SQL is this engine's.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import psycopg
import psycopg.errors

from termal_tui.core.formats import (
    NEVER_WOKEN_PASS_CAP,
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
    CONTROL_TOPIC,
    DELIVERED_TO_IDLE_SESSION,
    DURABLE_BUT_NOT_WOKEN,
    QUEUED_BEHIND_ACTIVE_TURN,
    AppendReceipt,
    MailboxMessage,
    MailboxSummary,
    UnreadWakeup,
)
from termal_tui.store import rules
from termal_tui.store.connection import WriterAdmission
from termal_tui.store.errors import (
    ConflictError,
    NotFoundError,
    RetryableError,
    ValidationError,
    busy_message,
)
from termal_tui.store.lifecycle import (
    LIFECYCLE_BEGIN,
    LIFECYCLE_COMMIT,
    wakeups_from,
)
from termal_tui.store.postgres import queries
from termal_tui.store.postgres.connection import PgDatabase, count, every, one
from termal_tui.store.postgres.finalizers import PgFinalizerClaims, finalizer_alive
from termal_tui.store.postgres.notify import (
    CHANNEL,
    NOTIFY_REGISTRY_SQL,
    MailListener,
    MailSubscription,
)
from termal_tui.store.postgres.schema import ensure_schema
from termal_tui.store.urls import redact

if TYPE_CHECKING:
    from termal_tui.core.review import ReviewResult

Conn = psycopg.AsyncConnection[Any]

# A same-key append that lost the race to a concurrent one is replayed this many times
# (the second attempt sees the winner's row); a lost race on a new mailbox likewise.
_RACE_RETRIES: Final = 3

_NUL: Final = "\x00"


def _refuse_nul(fields: dict[str, str | None]) -> None:
    """PostgreSQL's text cannot hold U+0000 (SQLite's can): refused, in one sentence,
    before anything is written."""
    for label, value in fields.items():
        if value is not None and _NUL in value:
            raise ValidationError(
                f"mailbox {label} contains a NUL character (U+0000), which PostgreSQL cannot store"
            )


_RECOVER_BOOT: Final = (
    "UPDATE mailbox_messages SET notification_disposition = 'recoveredWake' "
    "WHERE mailbox_id = %(mid)s AND target_session_id = %(sid)s AND EXISTS ("
    "  SELECT 1 FROM mailbox_participants participant"
    "  WHERE participant.mailbox_id = mailbox_messages.mailbox_id"
    "    AND participant.session_id = mailbox_messages.target_session_id"
    "    AND participant.left_at IS NULL"
    "    AND mailbox_messages.sequence > participant.processed_through)"
    " AND sequence <= %(seq)s AND notification_disposition <> 'recoveredWake'"
)
_RECOVER: Final = (
    "UPDATE mailbox_messages SET notification_disposition = 'recoveredWake' "
    "WHERE mailbox_id = %(mid)s AND target_session_id = %(sid)s AND sequence <= %(seq)s "
    "AND notification_disposition = 'durableButNotWoken'"
)
_DELIVER: Final = (
    "UPDATE mailbox_messages SET notification_disposition = %(state)s "
    "WHERE mailbox_id = %(mid)s AND target_session_id = %(sid)s AND sequence <= %(seq)s "
    "AND notification_disposition <> %(state)s"
)


def _wakeups_sql(boot: bool) -> str:
    unread = queries.UNREAD_FOR.format(
        mailbox="m.id", cursor="mine.processed_through", session="%(s)s"
    )
    limit = "" if boot else f"LIMIT {NEVER_WOKEN_PASS_CAP}"
    return f"""
        SELECT m.id, message.id, message.sequence, ({unread}),
          message.sender_session_id, message.sender_name
        FROM mailboxes m
        JOIN mailbox_participants mine
          ON mine.mailbox_id = m.id AND mine.session_id = %(s)s AND mine.left_at IS NULL
        JOIN mailbox_messages message
          ON message.mailbox_id = m.id AND message.sequence = (
            SELECT MAX(candidate.sequence) FROM mailbox_messages candidate
            WHERE candidate.mailbox_id = m.id
              AND candidate.sequence > mine.processed_through
              AND candidate.target_session_id = %(s)s
              AND {queries.NOT_CONTROL.format(t="candidate.")}
              AND (%(boot)s OR candidate.notification_disposition = '{DURABLE_BUT_NOT_WOKEN}'
                   OR (%(queued)s AND candidate.notification_disposition
                       = '{QUEUED_BEHIND_ACTIVE_TURN}')))
        ORDER BY message.created_at DESC, m.id
        {limit}
    """


# The sender's earlier message under the same key, if any, and the mailbox locked until
# COMMIT (the lock that keeps its sequences dense), with its next sequence: one trip.
# (Waiting for the lock, the duplicate check's snapshot may miss a same-key append that
# committed meanwhile: the insert then meets the unique index, and the append replays.)
_DUPLICATE_AND_LOCK: Final = f"""
SELECT d.*, m.id, m.next_sequence
FROM (SELECT 1) AS one
LEFT JOIN (SELECT {rules.DUPLICATE_COLUMNS} FROM mailbox_messages
  WHERE sender_session_id = %(s)s AND idempotency_key = %(key)s) AS d ON TRUE
LEFT JOIN (SELECT id, next_sequence FROM mailboxes WHERE participant_key = %(pk)s
  FOR UPDATE) AS m ON TRUE
"""
_DUPLICATE_WIDTH: Final = len(rules.DUPLICATE_COLUMNS.split(","))

# Everything else of an append, in one statement under the mailbox's lock (its snapshot
# is taken after the lock was granted, so it sees every earlier append of the mailbox):
# the target's departure and the new row's unread depth; both participants upserted
# (names refresh; cursors and left_at stay, except that the sender's cursor follows its
# own message only when it was caught up to the one before: no unread peer message is
# silently consumed by an unrelated send); the mailbox's next sequence; the row; and the
# notification every listening hub gets when (and only if) this transaction commits. A
# departed target is refused by the caller, which rolls all of it back.
_APPEND_ROW: Final = f"""
WITH target AS (
  SELECT processed_through, left_at FROM mailbox_participants
  WHERE mailbox_id = %(mid)s AND session_id = %(t)s
), depth AS (
  SELECT COUNT(*) + 1 AS n FROM mailbox_messages WHERE mailbox_id = %(mid)s
  AND target_session_id = %(t)s
  AND sequence > COALESCE((SELECT processed_through FROM target), 0)
), joined AS (
  INSERT INTO mailbox_participants(mailbox_id, session_id, display_name, processed_through,
    joined_at, left_at)
  VALUES (%(mid)s, %(s)s, %(sn)s, CASE WHEN %(seq)s = 1 THEN 1 ELSE 0 END, %(now)s, NULL),
    (%(mid)s, %(t)s, %(tn)s, 0, %(now)s, NULL)
  ON CONFLICT (mailbox_id, session_id) DO UPDATE SET display_name = excluded.display_name,
    processed_through = CASE WHEN mailbox_participants.session_id = %(s)s
      AND mailbox_participants.left_at IS NULL
      AND mailbox_participants.processed_through = %(seq)s - 1
      THEN %(seq)s ELSE mailbox_participants.processed_through END
), bumped AS (
  UPDATE mailboxes SET next_sequence = %(seq)s + 1 WHERE id = %(mid)s
), inserted AS (
  INSERT INTO mailbox_messages(id, mailbox_id, sequence, sender_session_id, sender_name,
    target_session_id, target_name, created_at, class, topic, state_stamp, body,
    idempotency_key, unread_depth_at_append, notification_disposition, dispatch_outcome)
  SELECT %(id)s, %(mid)s, %(seq)s, %(s)s, %(sn)s, %(t)s, %(tn)s, %(now)s, 'routine',
    %(topic)s, %(stamp)s, %(body)s, %(key)s, depth.n, %(state)s, %(outcome)s FROM depth
)
SELECT COALESCE((SELECT left_at IS NOT NULL FROM target), FALSE), (SELECT n FROM depth),
  pg_notify('{CHANNEL}', %(t)s)
"""


# The caller still takes part (else 404), the mailbox's latest sequence, and the
# compare-and-swap itself, done only when those checks pass (a failed check raises, which
# rolls back anyway): one trip. A swap that waits for a concurrent acknowledgement's row
# lock re-checks ``processed_through = expected`` against the committed value.
_ACK_SWAP: Final = """
WITH checks AS (
  SELECT (SELECT 1 FROM mailbox_participants WHERE mailbox_id = %(mid)s
    AND session_id = %(s)s AND left_at IS NULL) AS taking_part,
  (SELECT next_sequence - 1 FROM mailboxes WHERE id = %(mid)s) AS latest
), swapped AS (
  UPDATE mailbox_participants SET processed_through = %(through)s
  WHERE mailbox_id = %(mid)s AND session_id = %(s)s AND left_at IS NULL
    AND processed_through = %(expected)s
    AND %(through)s <= (SELECT latest FROM checks)
  RETURNING 1
)
SELECT taking_part, latest, (SELECT COUNT(*) FROM swapped) FROM checks
"""


def claims_key(url: str) -> Path:
    """The name this database's in-process admission (the pending finalizations one
    process waits for) goes by: one per database (the URL without its secrets), never a
    file."""
    digest = hashlib.sha256(redact(url).encode()).hexdigest()[:32]
    return Path("/postgresql") / digest


class PgMailboxWriter:
    """Writes the mailbox contract's rows to PostgreSQL. Construct with
    :func:`open_pg_writer` (or ``open_writer(url)``)."""

    def __init__(
        self,
        db: PgDatabase,
        url: str,
        clock: Clock | None = None,
        new_id: IdSource | None = None,
        deadline: float = REQUEST_DEADLINE_SECONDS,
    ) -> None:
        self._db = db
        self.url = url
        self.target = redact(url)
        self.path = claims_key(url)
        self._clock = clock or utc_now_ns
        self._new_id = new_id or new_uuid
        self._deadline = deadline
        self._admission = WriterAdmission.for_path(self.path)
        self._registered: set[str] = set()
        self._claims = PgFinalizerClaims(url)
        self._listener: MailListener | None = None

    def _now(self) -> str:
        return format_timestamp(self._clock())

    async def ensure_schema(self) -> None:
        await self._db.run(
            lambda conn: ensure_schema(conn, self.url),
            "ensuring the coordination schema",
            commit="committing the coordination schema",
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
        finalizing: bool = False,
        dispatch_outcome: str | None = None,
    ) -> AppendReceipt:
        """As :meth:`MailboxWriter.append`: the next dense sequence, or the original
        receipt of a duplicate (a conflict for other content under the same key); a
        ``dispatch_outcome`` known before the append is committed with the row."""
        if dispatch_outcome is not None:
            rules.check_outcome(dispatch_outcome)
            finalizing = False
        rules.validate_append(
            sender_session_id=sender_session_id,
            target_session_id=target_session_id,
            body=body,
            idempotency_key=idempotency_key,
            topic=topic,
            state_stamp=state_stamp,
            message_class=message_class,
        )
        _refuse_nul(
            {
                "sender": sender_session_id,
                "sender name": sender_name,
                "target": target_session_id,
                "target name": target_name,
                "body": body,
                "idempotency key": idempotency_key,
                "topic": topic,
                "state stamp": state_stamp,
            }
        )
        started = asyncio.get_running_loop().time()
        claimed: list[str] = []

        async def work(conn: Conn) -> AppendReceipt:
            now = self._now()
            pk = participant_key(sender_session_id, target_session_id)
            row = await one(
                conn,
                _DUPLICATE_AND_LOCK,
                {"s": sender_session_id, "key": idempotency_key, "pk": pk},
            )
            if row[1] is not None:  # the original's id: this key was used before
                return rules.duplicate_receipt(
                    row[:_DUPLICATE_WIDTH],
                    idempotency_key=idempotency_key,
                    target_session_id=target_session_id,
                    body=body,
                    topic=topic,
                    state_stamp=state_stamp,
                )
            locked = row[_DUPLICATE_WIDTH:]
            if locked[0] is None:
                locked = await self._create_mailbox(conn, pk, now)
            receipt = await self._insert_message(
                conn,
                mailbox_id=str(locked[0]),
                sequence=int(locked[1]),
                now=now,
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
            if finalizing:  # registered before COMMIT: no duplicate can miss it, in
                # this process (pending) or on any host (the advisory-lock claim).
                claimed.append(receipt.message_id)
                self._admission.pending.add(receipt.message_id)
                await self._claims.claim(receipt.message_id)
            return receipt

        receipt: AppendReceipt | None = None
        try:
            for attempt in range(_RACE_RETRIES):
                try:
                    receipt = await self._run_raw(work, "beginning mailbox append")
                    break
                except psycopg.errors.UniqueViolation:
                    # A concurrent append won the key (or created the mailbox): replay,
                    # which sees its committed row.
                    self._release(claimed)
                    if attempt == _RACE_RETRIES - 1:
                        raise RetryableError(busy_message("committing mailbox append")) from None
        except BaseException:
            self._release(claimed)
            raise
        assert receipt is not None
        if not receipt.duplicate:
            if finalizing:
                self._registered.add(receipt.message_id)
            return receipt
        if receipt.notification_disposition:
            return receipt
        remaining = self._deadline - (asyncio.get_running_loop().time() - started)
        outcome = await self._final_outcome(receipt.message_id, remaining)
        return receipt.replace(notification_disposition=outcome)

    def _release(self, claimed: list[str]) -> None:
        for message_id in claimed:
            self._admission.finish(message_id)
            self._claims.release(message_id)
        claimed.clear()

    async def _run_raw(self, work: Any, operation: str) -> Any:
        """One transaction where a unique violation reaches the caller as the driver's
        error (the append's race), and every other failure as a store error."""
        violation: list[psycopg.errors.UniqueViolation] = []

        async def guarded(conn: Conn) -> Any:
            try:
                return await work(conn)
            except psycopg.errors.UniqueViolation as error:
                violation.append(error)
                raise

        try:
            return await self._db.run(guarded, operation, commit="committing mailbox append")
        except Exception:
            if violation:
                raise violation[0] from None
            raise

    async def _final_outcome(self, message_id: str, remaining: float) -> str:
        """As the SQLite writer's: the original's outcome once its finalizer is done."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + max(0.0, remaining)
        if not await self._admission.wait_finalized(message_id, remaining):
            raise RetryableError(rules.FINALIZING_MESSAGE)
        while True:
            row = await self._read_one(
                "SELECT dispatch_outcome FROM mailbox_messages WHERE id = %s", (message_id,)
            )
            if row is None:
                raise NotFoundError(f"mailbox message `{message_id}` disappeared during dispatch")
            if row[0] is not None:
                return str(row[0])
            alive = await self._db.run(
                lambda conn: finalizer_alive(conn, message_id), "reading a mailbox row", single=True
            )
            if not alive:
                again = await self._read_one(
                    "SELECT dispatch_outcome FROM mailbox_messages WHERE id = %s", (message_id,)
                )
                return str(again[0]) if again and again[0] else DURABLE_BUT_NOT_WOKEN
            if loop.time() >= give_up:
                raise RetryableError(rules.FINALIZING_MESSAGE)
            await asyncio.sleep(min(rules.FINALIZER_POLL_SECONDS, max(0.0, give_up - loop.time())))

    async def _read_one(self, sql: str, params: Any) -> Any:
        return await self._db.run(
            lambda conn: one(conn, sql, params), "reading a mailbox row", single=True
        )

    async def _create_mailbox(self, conn: Conn, key: str, now: str) -> Any:
        """The mailbox of ``key`` did not exist: created, or (a concurrent append created
        it first) that one locked; its id and next sequence."""
        row = await one(
            conn,
            "INSERT INTO mailboxes(id, participant_key, created_at, next_sequence) "
            "VALUES(%s, %s, %s, 1) ON CONFLICT (participant_key) DO NOTHING "
            "RETURNING id, next_sequence",
            (mailbox_id_from(self._new_id()), key, now),
        )
        if row is None:
            row = await one(
                conn,
                "SELECT id, next_sequence FROM mailboxes WHERE participant_key = %s FOR UPDATE",
                (key,),
            )
        return row

    async def _insert_message(
        self,
        conn: Conn,
        *,
        mailbox_id: str,
        sequence: int,
        now: str,
        sender_session_id: str,
        sender_name: str,
        target_session_id: str,
        target_name: str,
        body: str,
        idempotency_key: str,
        topic: str | None,
        state_stamp: str | None,
        outcome: str | None,
    ) -> AppendReceipt:
        """The row at ``sequence`` of the locked mailbox (:data:`_APPEND_ROW`)."""
        message_id = message_id_from(self._new_id())
        state = outcome or DURABLE_BUT_NOT_WOKEN
        target = await one(
            conn,
            _APPEND_ROW,
            {
                "id": message_id,
                "mid": mailbox_id,
                "seq": sequence,
                "s": sender_session_id,
                "sn": sender_name,
                "t": target_session_id,
                "tn": target_name,
                "now": now,
                "topic": topic,
                "stamp": state_stamp,
                "body": body,
                "key": idempotency_key,
                "state": state,
                "outcome": outcome,
            },
        )
        if target[0]:
            raise ConflictError(rules.DEPARTED_TARGET)
        return AppendReceipt(
            mailbox_id=mailbox_id,
            message_id=message_id,
            sequence=sequence,
            unread_depth=int(target[1]),
            notification_disposition=state,
            duplicate=False,
        )

    # ------------------------------------------------------- wake lifecycle

    async def record_dispatch_outcome(self, message_id: str, outcome: str) -> str:
        """The immutable receipt outcome, once; the mutable state advances only from
        ``durableButNotWoken``. Ends the pending finalization duplicates wait for."""
        rules.check_outcome(outcome)

        async def work(conn: Conn) -> str:
            changed = await count(
                conn,
                "UPDATE mailbox_messages SET dispatch_outcome = %s "
                "WHERE id = %s AND dispatch_outcome IS NULL",
                (outcome, message_id),
            )
            if changed == 0:
                row = await one(
                    conn,
                    "SELECT dispatch_outcome FROM mailbox_messages WHERE id = %s",
                    (message_id,),
                )
                if row is None:
                    raise rules.missing_message(message_id)
                return str(row[0])
            await conn.execute(
                b"UPDATE mailbox_messages SET notification_disposition = %s "
                b"WHERE id = %s AND notification_disposition = %s",
                (outcome, message_id, DURABLE_BUT_NOT_WOKEN),
            )
            return outcome

        try:
            return await self._db.run(
                work,
                "beginning initial mailbox dispatch outcome update",
                commit="committing initial mailbox dispatch outcome update",
                idempotent=True,  # recorded once: a second run finds it recorded
            )
        finally:
            self.abandon_dispatch(message_id)

    def abandon_dispatch(self, message_id: str) -> None:
        self._registered.discard(message_id)
        self._admission.finish(message_id)
        self._claims.release(message_id)

    async def _update_count(self, sql: str, params: dict[str, Any]) -> int:
        # A wake state's update may run again (it only moves rows forward).
        return await self._db.run(
            lambda conn: count(conn, sql, params),
            LIFECYCLE_BEGIN,
            commit=LIFECYCLE_COMMIT,
            idempotent=True,
        )

    async def mark_recovered_through(
        self, session_id: str, mailbox_id: str, sequence: int, boot: bool = False
    ) -> int:
        return await self._update_count(
            _RECOVER_BOOT if boot else _RECOVER,
            {"mid": mailbox_id, "sid": session_id, "seq": sequence},
        )

    async def mark_delivered_through(self, session_id: str, mailbox_id: str, sequence: int) -> int:
        return await self._update_count(
            _DELIVER,
            {
                "mid": mailbox_id,
                "sid": session_id,
                "seq": sequence,
                "state": DELIVERED_TO_IDLE_SESSION,
            },
        )

    async def wakeups_for_session(
        self, session_id: str, boot: bool = False, queued: bool = False
    ) -> list[UnreadWakeup]:
        params = {"s": session_id, "ctl": CONTROL_TOPIC, "boot": boot, "queued": queued}
        rows = await self._db.run(
            lambda conn: every(conn, _wakeups_sql(boot), params),
            "reading mailbox wakeups",
            single=True,
        )
        return wakeups_from(rows)

    # ------------------------------------------------------------------- reads

    async def list_mailboxes(self, *, session_id: str) -> list[MailboxSummary]:
        # Reads only, each statement from what was committed when it began (as in the
        # READ COMMITTED transaction it would otherwise be): no BEGIN and COMMIT.
        return await self._db.run(
            lambda conn: queries.summaries(conn, session_id), "listing mailboxes", single=True
        )

    async def processed_through(self, session_id: str, mailbox_id: str) -> int:
        row = await self._read_one(
            "SELECT processed_through FROM mailbox_participants "
            "WHERE mailbox_id = %s AND session_id = %s",
            (mailbox_id, session_id),
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
        after = check_position("afterSequence", after_sequence)
        number = clamp_read_limit(check_count("limit", limit))
        return await self._db.run(
            lambda conn: queries.fetch_range(conn, mailbox_id, after, number, session_id),
            "reading mailbox messages",
        )

    async def read_message(self, message_id: str, *, session_id: str) -> MailboxMessage:
        return await self._db.run(
            lambda conn: queries.fetch_message(conn, message_id, session_id),
            "reading a mailbox message",
        )

    async def notification_state(self, message_id: str) -> str | None:
        row = await self._read_one(
            "SELECT notification_disposition FROM mailbox_messages WHERE id = %s", (message_id,)
        )
        return None if row is None else str(row[0])

    async def data_version(self) -> int:
        """Moves whenever anything commits (:func:`queries.data_version`)."""
        return await self._db.run(
            queries.data_version, "reading the database's version", single=True
        )

    def watch_mail(self, session_id: str, on_mail: Callable[[], None]) -> MailSubscription:
        """``on_mail()`` whenever a message to ``session_id`` commits, through any hub
        on this database (a notification sent in the committing transaction, read by
        this writer's one listening connection). The subscription is ``live`` while
        that connection listens; close it when done."""
        if self._listener is None:
            self._listener = MailListener(self.url)
        return self._listener.subscribe(session_id, on_mail)

    # --------------------------------------------------------- acknowledge

    async def acknowledge(
        self,
        session_id: str,
        mailbox_id: str,
        expected_processed_through: int,
        processed_through: int,
    ) -> MailboxSummary:
        """Forward-only compare-and-swap of the caller's cursor; summary in the same tx."""
        rules.check_acknowledgement(expected_processed_through, processed_through)

        async def work(conn: Conn) -> MailboxSummary:
            row = await one(
                conn,
                _ACK_SWAP,
                {
                    "mid": mailbox_id,
                    "s": session_id,
                    "through": processed_through,
                    "expected": expected_processed_through,
                },
            )
            if row[0] is None:
                raise NotFoundError(rules.NOT_PARTICIPANT)
            if row[1] is None:
                raise NotFoundError(rules.ACK_MAILBOX_NOT_FOUND)
            rules.check_within_latest(processed_through, row[1])
            swapped = int(row[2])
            if swapped == 0:
                current = await one(
                    conn,
                    "SELECT processed_through FROM mailbox_participants "
                    "WHERE mailbox_id = %s AND session_id = %s AND left_at IS NULL",
                    (mailbox_id, session_id),
                )
                rules.settle_failed_swap(
                    None if current is None else current[0],
                    expected_processed_through,
                    processed_through,
                )
            found = await queries.summaries(conn, session_id, mailbox_id)
            if not found:
                raise NotFoundError(rules.ACK_SUMMARY_NOT_FOUND)
            return found[0]

        return await self._db.run(
            work,
            "beginning mailbox acknowledgement",
            commit="committing mailbox acknowledgement",
        )

    # ----------------------------------------------------- participation

    async def mark_session_left(self, session_id: str) -> int:
        """Set ``left_at`` once (a second delete keeps the first)."""
        now = self._now()

        async def work(conn: Conn) -> int:
            changed = await count(
                conn,
                "UPDATE mailbox_participants SET left_at = COALESCE(left_at, %s) "
                "WHERE session_id = %s",
                (now, session_id),
            )
            # Hubs that remember "no marker" for this session forget it at COMMIT.
            await conn.execute(NOTIFY_REGISTRY_SQL)
            return changed

        return await self._db.run(work, "marking a session left", commit="marking a session left")

    async def reactivate_session(self, session_id: str) -> list[tuple[str, str]]:
        """Clear stale ``left_at`` markers; returns exactly the (mailbox_id, left_at)
        cleared (a read first: nothing departed, nothing written)."""
        departed_sql = (
            "SELECT mailbox_id, left_at FROM mailbox_participants "
            "WHERE session_id = %s AND left_at IS NOT NULL ORDER BY mailbox_id"
        )
        if not await self._read_one(departed_sql, (session_id,)):
            return []

        async def work(conn: Conn) -> list[tuple[str, str]]:
            rows = [
                (str(row[0]), str(row[1]))
                for row in await every(conn, departed_sql + " FOR UPDATE", (session_id,))
            ]
            if rows:
                await conn.execute(
                    b"UPDATE mailbox_participants SET left_at = NULL "
                    b"WHERE session_id = %s AND mailbox_id = ANY(%s)",
                    (session_id, [mailbox_id for mailbox_id, _ in rows]),
                )
            return rows

        return await self._db.run(
            work,
            "reactivating a mailbox participant",
            commit="reactivating a mailbox participant",
        )

    async def restore_session_markers(
        self, session_id: str, cleared: list[tuple[str, str]]
    ) -> None:
        """Put back only the markers one reactivation cleared (concurrent deletion wins)."""
        if not cleared:
            return

        async def work(conn: Conn) -> None:
            async with conn.cursor() as cursor:
                await cursor.executemany(
                    b"UPDATE mailbox_participants SET left_at = %s "
                    b"WHERE mailbox_id = %s AND session_id = %s AND left_at IS NULL",
                    [(left_at, mailbox_id, session_id) for mailbox_id, left_at in cleared],
                )
            await conn.execute(NOTIFY_REGISTRY_SQL)  # markers again: hubs forget "none"

        await self._db.run(
            work,
            "restoring mailbox participant markers",
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
        """A structured review result as a control-plane row that never wakes anyone."""
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
        for message_id in list(self._registered):
            self.abandon_dispatch(message_id)
        await self._claims.close()
        if self._listener is not None:
            await self._listener.close()
        await self._db.close()


@contextlib.asynccontextmanager
async def open_pg_writer(
    url: str,
    clock: Clock | None = None,
    new_id: IdSource | None = None,
    deadline: float = REQUEST_DEADLINE_SECONDS,
    busy_timeout_ms: int | None = None,
) -> AsyncIterator[PgMailboxWriter]:
    """Connect to a PostgreSQL database for writing, schema ensured (created if missing).
    ``busy_timeout_ms`` is the longest a statement waits for a row lock."""
    lock_ms = busy_timeout_ms if busy_timeout_ms is not None else int(deadline * 1000)
    db = PgDatabase(url, read_only=False, deadline=deadline, lock_timeout_ms=lock_ms)
    await db.open()
    writer = PgMailboxWriter(db, url, clock=clock, new_id=new_id, deadline=deadline)
    try:
        await writer.ensure_schema()
        yield writer
    finally:
        await writer.close()
