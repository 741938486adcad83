"""TermAl's six peer-mailbox tools as plain async functions over the writer and the registry.

The MCP server and the CLI are thin shells over :class:`AgentTools`, so both behave
the same and the logic is tested without an MCP client. Semantics follow TermAl's
bridge (``src/delegation_mcp.rs``) and routes (``src/mailboxes.rs``): argument
trimming and validation, target resolution by exact id or case-insensitive name,
stale ``left_at`` repair with revalidation, bounded safe replay of retryable
failures, and the "outcome unknown" wording when a send or acknowledgement may or
may not have committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple, TypeVar

from termal_tui.agents.catalog import READ_RESULT_BUDGET
from termal_tui.agents.nudge import nudge
from termal_tui.agents.registry import Registry, Session, WouldWait
from termal_tui.core.errors import HTTP_REASONS, TABLE, ErrorKind, TermalError, error_document
from termal_tui.core.formats import (
    CLASS_NOT_SUPPORTED,
    MAX_IDEMPOTENCY_KEY_BYTES,
    READ_LIMIT_DEFAULT,
    READ_LIMIT_MAX,
    U64_MAX,
    clamp_read_limit,
    class_supported,
    idempotency_key_too_long,
)
from termal_tui.core.models import (
    DELIVERED_TO_IDLE_SESSION,
    DURABLE_BUT_NOT_WOKEN,
    QUEUED_BEHIND_ACTIVE_TURN,
    AppendReceipt,
    MailboxMessage,
    MailboxSummary,
)
from termal_tui.store.errors import (
    CommitOutcomeUnknownError,
    RetryableError,
    StoreError,
)
from termal_tui.store.writer import MailboxWriter

T = TypeVar("T")

# TermAl's six peer-mailbox tools, in TermAl's tools/list order.
TOOL_NAMES = (
    "termal_send_to_session",
    "termal_list_sessions",
    "termal_list_mailboxes",
    "termal_read_mailbox",
    "termal_read_mailbox_message",
    "termal_acknowledge_mailbox",
)

SEND_OUTCOME_UNKNOWN = (
    "mailbox send receipt was not received; the append outcome is unknown: retry the exact "
    "same intent and idempotencyKey (a committed first attempt returns its original receipt "
    "with duplicate=true)"
)
ACK_OUTCOME_UNKNOWN = (
    "mailbox acknowledgement response was not received; the cursor outcome is unknown. Call "
    "termal_list_mailboxes before retrying, then use its processedThrough as "
    "expectedProcessedThrough"
)

# Over a network (the contract: "all missing, self, and ineligible target failures must
# be normalized to one generic error"): nothing about which sessions exist.
GENERIC_TARGET_ERROR = (
    "no peer session can receive messages as `sessionId` names it — call "
    "termal_list_sessions for the exact ids of the peers you can reach"
)


class ToolError(TermalError):
    """A tool failure. ``str()`` is what the agent sees (TermAl's wording); ``kind``
    decides the rest through the one table in ``termal_tui/core/errors.py``, and
    :meth:`to_wire` is the machine-readable side: the code, whether a retry is safe,
    TermAl's ``detail`` where it has one, the ``state`` the agent needs next (the current
    cursor after a stale acknowledgement) and the exact ``nextCall``.

    ``bridge`` errors are the bridge's own argument checks, worded as TermAl's bridge words
    them; the others read as the route's answer, ``termal-tui mailbox store returned 409
    Conflict: ...`` (an unknown outcome and an unknown tool are their sentence alone)."""

    store = "mailbox"

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        bridge: bool = False,
        detail: dict[str, Any] | None = None,
        state: dict[str, Any] | None = None,
        next_call: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.bridge = bridge
        self.detail = detail
        self.state = state
        self.next_call = next_call

    @property
    def status(self) -> int:
        """TermAl's HTTP status for the kind (from the table)."""
        return self.http_status

    def __str__(self) -> str:
        if self.bridge or self.kind in (ErrorKind.UNKNOWN_OUTCOME, ErrorKind.UNKNOWN_TOOL):
            return self.message
        status = self.http_status
        reason = HTTP_REASONS.get(status, "Error")
        return f"termal-tui {self.store} store returned {status} {reason}: {self.message}"

    def to_wire(self) -> dict[str, Any]:
        """``{"error": {...}}``: a failed tool call's ``structuredContent``."""
        return error_document(self, detail=self.detail, state=self.state, next_call=self.next_call)


class ReplayPolicy(NamedTuple):
    """TermAl's safe-replay budget: one try plus four replays, 200 ms doubling, jittered."""

    attempts: int = 5
    base_delay: float = 0.2
    budget: float = 30.0
    min_replay_budget: float = 2.0


def jitter_percent(session_id: str, attempt: int) -> int:
    """Deterministic per-session jitter in 75..=125 (FNV-1a), so peers released together
    do not re-collide in lockstep."""
    value = 0xCBF29CE484222325
    for byte in f"{session_id}:{attempt}".encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return 75 + value % 51


def replay_delay(session_id: str, completed_attempts: int, base: float) -> float:
    return (
        base
        * (2 ** (completed_attempts - 1))
        * jitter_percent(session_id, completed_attempts)
        / 100
    )


# --------------------------------------------------------------------- arguments


def _optional_string(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = value.strip()
    return trimmed or None


def required_string(arguments: Mapping[str, Any], label: str) -> str:
    return _required(arguments.get(label), label)


def optional_string_argument(arguments: Mapping[str, Any], label: str) -> str | None:
    """An optional string argument: absent or null is None, a string is trimmed (blank is
    None, as TermAl's bridge drops it), anything else is refused by name (TermAl's bridge
    drops a number silently; an agent should learn its argument was not used)."""
    raw = arguments.get(label)
    if raw is not None and not isinstance(raw, str):
        raise ToolError(ErrorKind.VALIDATION, f"{label} must be a string")
    return _optional_string(raw)


def _required(raw: object, label: str) -> str:
    """TermAl's bridge: a string argument, trimmed, that must not be blank. A value that
    is there but not a string says so (``message: 123`` is not a missing message)."""
    if raw is not None and not isinstance(raw, str):
        raise ToolError(ErrorKind.VALIDATION, f"{label} must be a string")
    value = _optional_string(raw)
    if value is None:
        raise ToolError(ErrorKind.VALIDATION, f"{label} is required")
    return value


def required_identifier(arguments: Mapping[str, Any], label: str) -> str:
    return check_identifier(required_string(arguments, label), label)


def check_identifier(raw: str, label: str) -> str:
    """TermAl's path-identifier rule for ids handed to a tool (trimmed; 400 otherwise)."""
    value = raw.strip()
    if not value:
        raise ToolError(ErrorKind.VALIDATION, f"{label} is required")
    if any(ch in "/?#%\\" or ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in value):
        raise ToolError(
            ErrorKind.VALIDATION,
            f"{label} must not contain /, \\, ?, #, %, or control characters",
        )
    if value in (".", ".."):
        raise ToolError(ErrorKind.VALIDATION, f"{label} must not be . or ..")
    return value


def count_argument(arguments: Mapping[str, Any], label: str, default: int | None = None) -> int:
    value = arguments.get(label)
    if value is None and default is not None and label not in arguments:
        return default
    # As serde's ``as_u64``: a JSON integer only (not 3.0, not "3", not true), ≤ 2**64 - 1.
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= U64_MAX:
        raise ToolError(ErrorKind.VALIDATION, f"{label} must be a non-negative integer")
    return value


# --------------------------------------------------------------------- the tools


class WakeTiming(NamedTuple):
    """How long a send waits for the receiver's channel server to deliver its wake."""

    wait: float = 2.0
    step: float = 0.02


class SendReceipt(NamedTuple):
    """A send's answer: TermAl's append receipt, the peer it went to, and how it was named."""

    receipt: AppendReceipt
    target: Session
    resolved_from: str

    def to_wire(self) -> dict[str, Any]:
        return self.receipt.to_wire() | {
            "sessionId": self.target.id,
            "resolvedFrom": self.resolved_from,
        }


class AgentTools:
    """The six tools, serving one session: a typed API (the CLI calls it) and
    :meth:`call`, TermAl's JSON tool calls over it (the MCP server calls that).

    The registry is synchronous SQLite with a busy timeout and must never block the event
    loop: a registry read is answered at once on the loop when it can be without waiting
    (``Registry.at_once``: no lock to wait for; a worker thread's round trip costs more
    than the read), else in a worker thread (``asyncio.to_thread``), as every registry
    write is.

    ``clock`` and ``sleep`` time a call's waits (tests drive them): the replay budget and
    its backoffs, and a send's wait for the receiver's channel server to deliver its wake.
    """

    def __init__(
        self,
        writer: MailboxWriter,
        registry: Registry,
        session_id: str,
        *,
        replay: ReplayPolicy | None = None,
        wake: WakeTiming | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        generic_target_errors: bool = False,
    ) -> None:
        self.writer = writer
        self.registry = registry
        self.session_id = session_id
        self.replay = replay or ReplayPolicy()
        self.wake = wake or WakeTiming()
        self._sleep = sleep
        self._clock = clock
        # Remote exposure (``termal-tui serve``): the contract's rule inverts, and every
        # missing, self and ineligible target is one generic error.
        self.generic_target_errors = generic_target_errors
        # Set by a channel server: the agent engaged with (mailbox, through sequence).
        self.on_engaged: Callable[[str, int], Awaitable[None]] | None = None

    # ------------------------------------------------------------ plumbing

    async def _replayed(self, operation: Callable[[], Awaitable[T]]) -> T:
        """Replay retryable failures (all six tools are safe to replay) within the budget.

        An attempt starts only if it can finish inside the budget: the remaining time
        must cover the delay and the longest attempt so far (a busy attempt takes the
        whole busy timeout), so the 503 comes back within the budget, not after it."""
        clock = self._clock
        deadline = clock() + self.replay.budget
        longest = 0.0
        attempt = 0
        while True:
            attempt += 1
            started = clock()
            try:
                return await operation()
            except RetryableError:
                longest = max(longest, clock() - started)
                if attempt >= self.replay.attempts:
                    raise
                delay = replay_delay(self.session_id, attempt, self.replay.base_delay)
                needed = delay + max(self.replay.min_replay_budget, longest)
                if deadline - clock() < needed:
                    raise
                await self._sleep(delay)

    async def _run(self, operation: Callable[[], Awaitable[T]], unknown: str | None = None) -> T:
        """Replayed; every failure becomes a ToolError (see :func:`as_tool_error`)."""
        try:
            return await self._replayed(operation)
        except Exception as error:
            raise as_tool_error(error, unknown) from error

    async def _ask(self, read: Callable[[], T]) -> T:
        """A registry read (see the class's docstring): at once, or in a worker thread."""
        try:
            return self.registry.at_once(read)
        except WouldWait:
            return await asyncio.to_thread(read)

    async def ensure_active(
        self, session_id: str, known: Session | None = None, *, presence: bool = False
    ) -> Session:
        """TermAl's ``ensure_mailbox_session_active``: validate, clear stale ``left_at``
        markers, revalidate; if the session was removed meanwhile, put back exactly the
        markers this call cleared. ``known`` is the session as just looked up (its first
        validation), so a send resolves its peer once and revalidates once. ``presence``:
        the revalidation reads the session's turn and channel too (a hub's identity
        cache does not keep them: ``Registry.known``). A session a hub remembers to have
        no marker is not read for markers (every write of one is announced)."""
        registry = self.registry
        if known is None or not known.live:
            await self._live(session_id)
        cleared: list[tuple[str, str]] = []
        if not registry.markers_clear(session_id):
            generation = registry.markers_generation()
            cleared = await self.writer.reactivate_session(session_id)
            if not cleared:
                registry.remember_markers_clear(session_id, generation)
        try:
            # Markers cleared: the revalidation reads the registry itself (a removal
            # whose notification a hub's cache has not heard yet must still win).
            return await self._live(session_id, presence=presence or bool(cleared))
        except ToolError:
            await self.writer.restore_session_markers(session_id, cleared)
            raise

    async def _live(self, session_id: str, *, presence: bool = False) -> Session:
        read = self.registry.get if presence else self.registry.known
        session = await self._ask(lambda: read(session_id))
        if session is None or not session.live:
            if self.generic_target_errors and session_id != self.session_id:
                # a peer removed meanwhile
                raise ToolError(ErrorKind.NOT_FOUND, GENERIC_TARGET_ERROR)
            raise ToolError(ErrorKind.NOT_FOUND, "session not found")
        return session

    # ------------------------------------------------------------ peers

    async def sessions(self) -> list[Session]:
        """``termal_list_sessions``: every live session, this one included."""
        return await self._run(lambda: self._ask(self.registry.sessions))

    async def resolve_target(self, reference: str) -> Session:
        """A peer by exact ``session-`` id or case-insensitive name; self, unknown, removed
        and ambiguous references fail with distinct messages (one generic 404 with
        ``generic_target_errors``)."""
        if not self.generic_target_errors:
            return await self._ask(lambda: self._resolve_target(reference))
        try:
            return await self._ask(lambda: self._resolve_target(reference))
        except ToolError as error:
            if error.kind in (ErrorKind.VALIDATION, ErrorKind.NOT_FOUND):
                raise ToolError(ErrorKind.NOT_FOUND, GENERIC_TARGET_ERROR) from None
            raise

    def _resolve_target(self, reference: str) -> Session:
        self_message = (
            f"`{reference}` is this session — termal_send_to_session delivers to a PEER "
            "session, not to yourself"
        )
        unknown = (
            f"no root session has id or name `{reference}` — call termal_list_sessions to "
            "see the available sessions and their ids"
        )
        if reference.startswith("session-"):
            if reference == self.session_id:
                raise ToolError(ErrorKind.VALIDATION, self_message)
            found = self.registry.known(reference)
            if found is None:
                raise ToolError(ErrorKind.NOT_FOUND, unknown)
            if not found.live:
                raise ToolError(
                    ErrorKind.NOT_FOUND,
                    f"target session `{reference}` ({found.name}) was removed at "
                    f"{found.removed_at}; its mailbox history stays readable but it cannot "
                    "receive messages",
                )
            return found
        matches = self.registry.known_by_name(reference)
        live = [s for s in matches if s.live]
        if not live:
            removed = sorted(
                (s for s in matches if not s.live), key=lambda s: s.removed_at or "", reverse=True
            )
            if removed:
                raise ToolError(
                    ErrorKind.NOT_FOUND,
                    f"session `{reference}` was removed at {removed[0].removed_at} "
                    f"(it was {removed[0].id}); its mailbox history stays readable but it "
                    "cannot receive messages",
                )
            raise ToolError(ErrorKind.NOT_FOUND, unknown)
        if len(live) > 1:
            listed = ", ".join(f"{s.id} ({s.name})" for s in live)
            raise ToolError(
                ErrorKind.VALIDATION,
                f"session name `{reference}` is ambiguous — matches {listed}; pass the exact "
                "sessionId",
            )
        if live[0].id == self.session_id:
            raise ToolError(ErrorKind.VALIDATION, self_message)
        return live[0]

    async def send(
        self,
        target: str | Session,
        message: str,
        idempotency_key: str,
        *,
        topic: str | None = None,
        state_stamp: str | None = None,
        message_class: str | None = None,
    ) -> SendReceipt:
        """``termal_send_to_session``: ``target`` is a peer's id or name (trimmed here, as
        TermAl's bridge trims every argument), or the peer as :meth:`resolve_target`
        returned it. The contract's rules (class, key length, body) are the store's; the
        bridge's wording for them is kept here."""
        if isinstance(target, Session):
            reference = target.id
        else:
            reference = check_identifier(target, "sessionId")
        message = _required(message, "message")
        idempotency_key = _required(idempotency_key, "idempotencyKey")
        topic, state_stamp = _optional_string(topic), _optional_string(state_stamp)
        message_class = _optional_string(message_class)
        if idempotency_key_too_long(idempotency_key):
            raise ToolError(
                ErrorKind.VALIDATION, f"idempotencyKey exceeds {MAX_IDEMPOTENCY_KEY_BYTES} bytes"
            )
        if not class_supported(message_class):
            raise ToolError(ErrorKind.VALIDATION, CLASS_NOT_SUPPORTED)
        if isinstance(target, Session):
            peer = target
        else:
            peer = await self._run(lambda: self.resolve_target(reference))

        async def attempt() -> SendReceipt:
            sender = await self.ensure_active(self.session_id)
            receiver = await self.ensure_active(peer.id, known=peer, presence=True)
            # What the registry knows of the receiver (as revalidated by this send) decides
            # the receipt's outcome before the append when it can: in a turn, or no
            # channel. Then it commits with the row and there is nothing to finalize.
            connected = receiver.channel_connected(self.registry.clock())  # heartbeats' clock
            decided = self._decided_outcome(receiver, connected)
            receipt = await self.writer.append(
                sender_session_id=sender.id,
                sender_name=sender.name,
                target_session_id=receiver.id,
                target_name=receiver.name,
                body=message,
                idempotency_key=idempotency_key,
                topic=topic,
                state_stamp=state_stamp,
                message_class=message_class,
                finalizing=decided is None,
                dispatch_outcome=decided,
            )
            if not receipt.duplicate:
                if connected:
                    nudge(self.registry.path, receiver.id)
                if decided is None:
                    try:
                        outcome = await self._dispatch(receiver, receipt)
                        recorded = await self.writer.record_dispatch_outcome(
                            receipt.message_id, outcome
                        )
                    except StoreError:
                        # The append is durable; a lifecycle update that failed leaves the
                        # append-boundary receipt (as TermAl logs and carries on).
                        self.writer.abandon_dispatch(receipt.message_id)
                        recorded = DURABLE_BUT_NOT_WOKEN
                    receipt = receipt.replace(notification_disposition=recorded)
            return SendReceipt(receipt, receiver, reference)

        return await self._run(attempt, unknown=SEND_OUTCOME_UNKNOWN)

    @staticmethod
    def _decided_outcome(receiver: Session, connected: bool) -> str | None:
        """TermAl's receipt outcome when the receiver's state decides it without the
        append: queued behind its turn, or durable with no channel to wake it."""
        if receiver.in_turn:
            return QUEUED_BEHIND_ACTIVE_TURN
        if not connected:
            return DURABLE_BUT_NOT_WOKEN
        return None

    async def _dispatch(self, receiver: Session, receipt: AppendReceipt) -> str:
        """The outcome for an idle receiver whose channel is connected, told honestly:
        woken only if its channel server delivered the wake."""
        pending = await self._ask(
            lambda: self.registry.has_pending_wake(
                receiver.id, receipt.mailbox_id, receipt.sequence
            )
        )
        if pending:
            # One pending wake per mailbox: this message rides the one already pushed.
            return DURABLE_BUT_NOT_WOKEN
        # The receiver's channel server pushes the wake and marks the row delivered only
        # after the notification was written; wait a short while for that to happen.
        give_up = self._clock() + self.wake.wait
        while self._clock() < give_up:
            state = await self.writer.notification_state(receipt.message_id)
            if state == DELIVERED_TO_IDLE_SESSION:
                return DELIVERED_TO_IDLE_SESSION
            await self._sleep(self.wake.step)
        return DURABLE_BUT_NOT_WOKEN

    # ------------------------------------------------------------ mailboxes

    async def mailboxes(self) -> list[MailboxSummary]:
        """``termal_list_mailboxes``: this session's mailboxes with its cursor in each."""

        async def attempt() -> list[MailboxSummary]:
            await self.ensure_active(self.session_id)
            return await self.writer.list_mailboxes(session_id=self.session_id)

        return await self._run(attempt)

    async def read(
        self, mailbox_id: str, after_sequence: int = 0, limit: int = READ_LIMIT_DEFAULT
    ) -> list[MailboxMessage]:
        """``termal_read_mailbox``: ascending after ``after_sequence``; never moves a cursor."""
        mailbox_id = check_identifier(mailbox_id, "mailboxId")

        async def attempt() -> list[MailboxMessage]:
            await self.ensure_active(self.session_id)
            return await self.writer.read_range(
                mailbox_id, after_sequence, limit, session_id=self.session_id
            )

        messages = await self._run(attempt)
        await self._engaged(mailbox_id, max((m.sequence for m in messages), default=after_sequence))
        return messages

    async def read_page(
        self,
        mailbox_id: str,
        after_sequence: int = 0,
        limit: int = READ_LIMIT_DEFAULT,
        *,
        budget: int | None = READ_RESULT_BUDGET,
    ) -> ReadPage:
        """``termal_read_mailbox`` as an agent reads it: the messages after
        ``after_sequence`` (``limit`` clamped into 1..=200, as TermAl clamps it), whether
        more remain, and at most ``budget`` bytes of messages as JSON (a first message
        over it has its body cut; later ones wait for the next page)."""
        mailbox_id = check_identifier(mailbox_id, "mailboxId")
        applied = clamp_read_limit(limit)

        async def attempt() -> tuple[list[MailboxMessage], bool]:
            await self.ensure_active(self.session_id)
            fetched = await self.writer.read_range(
                mailbox_id,
                after_sequence,
                min(applied + 1, READ_LIMIT_MAX),
                session_id=self.session_id,
            )
            if len(fetched) > applied:
                return fetched[:applied], True
            if len(fetched) == applied == READ_LIMIT_MAX:  # one row more cannot be asked
                probe = await self.writer.read_range(
                    mailbox_id, fetched[-1].sequence, 1, session_id=self.session_id
                )
                return fetched, bool(probe)
            return fetched, False

        messages, more = await self._run(attempt)
        wires, cut_short = fit_messages(messages, budget)
        kept = messages[: len(wires)]
        await self._engaged(mailbox_id, max((m.sequence for m in kept), default=after_sequence))
        return ReadPage(mailbox_id, after_sequence, limit, applied, wires, more or cut_short)

    async def read_message(self, message_id: str) -> MailboxMessage:
        """``termal_read_mailbox_message``: one exact message this session may see."""
        message_id = check_identifier(message_id, "messageId")

        async def attempt() -> MailboxMessage:
            await self.ensure_active(self.session_id)
            return await self.writer.read_message(message_id, session_id=self.session_id)

        message = await self._run(attempt)
        await self._engaged(message.mailbox_id, message.sequence)
        return message

    async def acknowledge(
        self, mailbox_id: str, expected_processed_through: int, processed_through: int
    ) -> MailboxSummary:
        """``termal_acknowledge_mailbox``: compare-and-swap this session's cursor forward."""
        mailbox_id = check_identifier(mailbox_id, "mailboxId")

        async def attempt() -> MailboxSummary:
            await self.ensure_active(self.session_id)
            return await self.writer.acknowledge(
                self.session_id, mailbox_id, expected_processed_through, processed_through
            )

        try:
            summary = await self._run(attempt, unknown=ACK_OUTCOME_UNKNOWN)
        except ToolError as error:
            if error.kind is ErrorKind.CONFLICT:
                await self._current_cursor(error, mailbox_id, processed_through)
            raise
        await self._engaged(mailbox_id, processed_through)
        return summary

    async def _current_cursor(self, error: ToolError, mailbox_id: str, through: int) -> None:
        """A stale acknowledgement carries what the agent needs next: its durable cursor
        (and the mailbox's latest sequence), and the acknowledgement to send from it."""
        try:
            summaries = await self.writer.list_mailboxes(session_id=self.session_id)
        except StoreError:
            return  # the conflict stands without it
        for summary in summaries:
            if summary.id != mailbox_id:
                continue
            mine = summary.participant(self.session_id)
            cursor = mine.processed_through if mine else 0
            error.state = {
                "mailboxId": mailbox_id,
                "processedThrough": cursor,
                "latestSequence": summary.latest_sequence,
            }
            if through > cursor:
                error.next_call = {
                    "name": "termal_acknowledge_mailbox",
                    "arguments": {
                        "mailboxId": mailbox_id,
                        "expectedProcessedThrough": cursor,
                        "processedThrough": through,
                    },
                }
            return

    async def _engaged(self, mailbox_id: str, through: int) -> None:
        if self.on_engaged is not None:
            with contextlib.suppress(StoreError):  # wake bookkeeping; the result stands
                await self.on_engaged(mailbox_id, through)

    # ------------------------------------------------------------ TermAl's JSON calls

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> Any:
        """Run one tool by TermAl's name on its JSON arguments; returns its JSON result or
        raises ToolError. Arguments are parsed as TermAl's bridge does, then the typed
        method above runs."""
        handler = _JSON_CALLS.get(name)
        if handler is None:
            raise ToolError(ErrorKind.UNKNOWN_TOOL, unknown_tool_message(name))
        given = dict(arguments or {})
        try:
            return await handler(self, given)
        except ToolError as error:
            if error.next_call is None:
                error.next_call = next_call_after(name, given, error.kind)
            raise


async def _json_send(tools: AgentTools, arguments: Mapping[str, Any]) -> dict[str, Any]:
    target = required_string(arguments, "sessionId")
    message = required_string(arguments, "message")
    key = required_string(arguments, "idempotencyKey")
    sent = await tools.send(
        target,
        message,
        key,
        topic=optional_string_argument(arguments, "topic"),
        state_stamp=optional_string_argument(arguments, "stateStamp"),
        message_class=optional_string_argument(arguments, "class"),
    )
    return sent.to_wire()


async def _json_sessions(tools: AgentTools, _arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"sessions": [s.to_wire() for s in await tools.sessions()]}


async def _json_mailboxes(tools: AgentTools, _arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"mailboxes": [s.to_wire() for s in await tools.mailboxes()]}


async def _json_read(tools: AgentTools, arguments: Mapping[str, Any]) -> dict[str, Any]:
    mailbox_id = required_identifier(arguments, "mailboxId")
    after = count_argument(arguments, "afterSequence", 0)
    limit = count_argument(arguments, "limit", READ_LIMIT_DEFAULT)
    return (await tools.read_page(mailbox_id, after, limit)).to_wire()


async def _json_read_message(tools: AgentTools, arguments: Mapping[str, Any]) -> dict[str, Any]:
    message_id = required_identifier(arguments, "messageId")
    offset = count_argument(arguments, "bodyOffset", 0)
    message = await tools.read_message(message_id)
    return body_from(message.to_wire(), offset, READ_RESULT_BUDGET)


async def _json_acknowledge(tools: AgentTools, arguments: Mapping[str, Any]) -> dict[str, Any]:
    mailbox_id = required_identifier(arguments, "mailboxId")
    expected = count_argument(arguments, "expectedProcessedThrough")
    through = count_argument(arguments, "processedThrough")
    return (await tools.acknowledge(mailbox_id, expected, through)).to_wire()


_JSON_CALLS: dict[str, Callable[[AgentTools, Mapping[str, Any]], Awaitable[Any]]] = {
    "termal_send_to_session": _json_send,
    "termal_list_sessions": _json_sessions,
    "termal_list_mailboxes": _json_mailboxes,
    "termal_read_mailbox": _json_read,
    "termal_read_mailbox_message": _json_read_message,
    "termal_acknowledge_mailbox": _json_acknowledge,
}
assert tuple(_JSON_CALLS) == TOOL_NAMES


def unknown_tool_message(name: str) -> str:
    from termal_tui.agents.catalog import tool_names

    listed = ", ".join(sorted(tool_names()))
    return f"unknown tool `{name}`: this server's tools are {listed}"


# Where an agent goes after a failure it cannot fix by changing its arguments.
_LISTING_FOR: dict[str, str] = {
    "termal_send_to_session": "termal_list_sessions",
    "termal_read_mailbox": "termal_list_mailboxes",
    "termal_read_mailbox_message": "termal_list_mailboxes",
    "termal_acknowledge_mailbox": "termal_list_mailboxes",
}
_ECHO_LIMIT = 4 * 1024  # arguments larger than this are not echoed back in nextCall


def next_call_after(name: str, arguments: Mapping[str, Any], kind: ErrorKind) -> Any:
    """The exact call an agent makes after a failure of ``kind``, or None (fix the
    arguments): the same call for a busy store or an unknown outcome (the same
    idempotency key makes it safe), a listing first for an acknowledgement of unknown
    outcome (TermAl's sentence says so) or anything not found."""
    if kind is ErrorKind.UNKNOWN_OUTCOME and name == "termal_acknowledge_mailbox":
        return {"name": "termal_list_mailboxes", "arguments": {}}
    if TABLE[kind].retry_safe:
        echoed: Any = dict(arguments)
        if len(json.dumps(echoed, ensure_ascii=False, default=str)) > _ECHO_LIMIT:
            echoed = "the same arguments as this call, unchanged"
        return {"name": name, "arguments": echoed}
    if kind is ErrorKind.NOT_FOUND and name in _LISTING_FOR:
        return {"name": _LISTING_FOR[name], "arguments": {}}
    return None


# --------------------------------------------------------------------- result budget


class ReadPage(NamedTuple):
    """One ``termal_read_mailbox`` result: the messages (as JSON, bodies possibly cut),
    the limit asked and the one used, and whether more remain after the last one."""

    mailbox_id: str
    after_sequence: int
    requested_limit: int
    limit: int
    messages: list[dict[str, Any]]
    has_more: bool

    def to_wire(self) -> dict[str, Any]:
        """TermAl's ``{mailboxId, messages}`` and, beside it, ``limit`` (the one used),
        ``hasMore``, ``nextCall`` (the exact call for the rest, or null) and ``notes``
        (why the result is not what was asked, when it is not)."""
        last = self.messages[-1]["sequence"] if self.messages else self.after_sequence
        next_call = None
        if self.has_more:
            next_call = {
                "name": "termal_read_mailbox",
                "arguments": {
                    "mailboxId": self.mailbox_id,
                    "afterSequence": last,
                    "limit": self.limit,
                },
            }
        notes = []
        if self.requested_limit != self.limit:
            notes.append(
                f"limit {self.requested_limit} is outside 1..{READ_LIMIT_MAX}: "
                f"{self.limit} was used (TermAl clamps it)"
            )
        if self.has_more and len(self.messages) < self.limit:
            notes.append(
                f"this result stops at {READ_RESULT_BUDGET} bytes of messages; more remain "
                f"after #{last}: nextCall fetches them"
            )
        for message in self.messages:
            if "bodyCut" in message:
                cut = message["bodyCut"]
                notes.append(
                    f"the body of #{message['sequence']} is cut at character "
                    f"{cut['offset'] + cut['returnedChars']} of {cut['totalChars']}: its "
                    "bodyCut.nextCall fetches the rest"
                )
        wire: dict[str, Any] = {
            "mailboxId": self.mailbox_id,
            "messages": self.messages,
            "limit": self.limit,
            "hasMore": self.has_more,
            "nextCall": next_call,
        }
        if notes:
            wire["notes"] = notes
        return wire


def _json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def fit_messages(
    messages: list[MailboxMessage], budget: int | None
) -> tuple[list[dict[str, Any]], bool]:
    """The messages' JSON within ``budget`` bytes, and whether any was left out. A first
    message alone over the budget is kept with its body cut (see :func:`body_from`), so
    every page makes progress; a later one waits for the next page."""
    wires: list[dict[str, Any]] = []
    used = 0
    for message in messages:
        wire = message.to_wire()
        if budget is None:
            wires.append(wire)
            continue
        size = _json_size(wire)
        if used + size <= budget:
            wires.append(wire)
            used += size
            continue
        if not wires:
            wires.append(body_from(wire, 0, budget))
        return wires, True
    return wires, False


def body_from(wire: dict[str, Any], offset: int, budget: int) -> dict[str, Any]:
    """A message's JSON with its body from character ``offset`` on, cut so the whole
    message stays within ``budget`` bytes as JSON. A cut body ends with a marker naming
    the exact call for the rest, and ``bodyCut`` says the same in fields (the marker is
    inside text a peer wrote: ``bodyCut`` is the one to trust). A whole body from offset
    0 is TermAl's message, unchanged."""
    body = wire["body"]
    total = len(body)
    if offset > total:
        raise ToolError(
            ErrorKind.VALIDATION,
            f"bodyOffset {offset} is past the end of the body ({total} characters)",
            bridge=True,
        )
    rest = body[offset:]
    whole = wire | {"body": rest}
    if offset == 0 and _json_size(wire) <= budget:
        return wire
    if _json_size(whole) <= budget:
        return whole | {
            "bodyCut": {
                "offset": offset,
                "returnedChars": len(rest),
                "totalChars": total,
                "nextCall": None,
            }
        }
    message_id = wire["id"]
    # Room for the body: the budget less everything else (a marker's worth kept aside).
    room = budget - _json_size(wire | {"body": ""}) - 512
    low, high = 1, len(rest)  # at least one character: every call makes progress
    while low < high:
        middle = (low + high + 1) // 2
        if _json_size(rest[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    end = offset + low
    next_call = {
        "name": "termal_read_mailbox_message",
        "arguments": {"messageId": message_id, "bodyOffset": end},
    }
    marker = (
        f"\n[termal-tui: body cut at character {end} of {total}; the rest: "
        f"termal_read_mailbox_message {json.dumps(next_call['arguments'])}]"
    )
    return wire | {
        "body": rest[:low] + marker,
        "bodyCut": {
            "offset": offset,
            "returnedChars": low,
            "totalChars": total,
            "nextCall": next_call,
        },
    }


def as_tool_error(error: BaseException, unknown: str | None = None) -> ToolError:
    """Any failure as a ToolError: typed store errors keep their class and text (a
    storage failure — a full disk, an I/O error — raised before the commit or by a
    commit SQLite rolled back wrote nothing: a 500, not an unknown outcome). Where
    ``unknown`` is given (a write), a COMMIT that failed with an I/O error, or anything
    this process cannot account for, is that sentence."""
    if isinstance(error, ToolError):
        return error
    if isinstance(error, StoreError) and not (
        isinstance(error, CommitOutcomeUnknownError) and unknown is not None
    ):
        return ToolError(error.kind, str(error), detail=error.detail)
    if unknown is not None:
        return ToolError(ErrorKind.UNKNOWN_OUTCOME, f"{unknown}: {error}")
    return ToolError(ErrorKind.INTERNAL, f"mailbox operation failed: {error}")
