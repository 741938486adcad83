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
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple, TypeVar

from termal_tui.agents.nudge import nudge
from termal_tui.agents.registry import Registry, Session
from termal_tui.formats import (
    CLASS_NOT_SUPPORTED,
    MAX_IDEMPOTENCY_KEY_BYTES,
    READ_LIMIT_DEFAULT,
    U64_MAX,
    class_supported,
    idempotency_key_too_long,
)
from termal_tui.models import (
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

_REASONS = {
    400: "Bad Request",
    404: "Not Found",
    409: "Conflict",
    422: "Unprocessable Entity",
    500: "Internal Server Error",
    503: "Service Unavailable",
}

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


class ToolError(Exception):
    """A tool failure with TermAl's status class. ``str()`` is what the agent sees."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    @property
    def kind(self) -> str:
        return {
            400: "validation",
            404: "notFound",
            409: "conflict",
            422: "validation",
            503: "retryable",
        }.get(self.status, "unknownOutcome" if self.status == 0 else "internal")

    def __str__(self) -> str:
        if self.status == 0:
            return self.message
        return f"termal-tui mailbox store returned {self.status} {_REASONS.get(self.status, 'Error')}: {self.message}"


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


def _required(raw: object, label: str) -> str:
    """TermAl's bridge: a string argument, trimmed, that must not be blank."""
    value = _optional_string(raw)
    if value is None:
        raise ToolError(400, f"{label} is required")
    return value


def required_identifier(arguments: Mapping[str, Any], label: str) -> str:
    return check_identifier(required_string(arguments, label), label)


def check_identifier(raw: str, label: str) -> str:
    """TermAl's path-identifier rule for ids handed to a tool (trimmed; 400 otherwise)."""
    value = raw.strip()
    if not value:
        raise ToolError(400, f"{label} is required")
    if any(ch in "/?#%\\" or ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in value):
        raise ToolError(400, f"{label} must not contain /, \\, ?, #, %, or control characters")
    if value in (".", ".."):
        raise ToolError(400, f"{label} must not be . or ..")
    return value


def count_argument(arguments: Mapping[str, Any], label: str, default: int | None = None) -> int:
    value = arguments.get(label)
    if value is None and default is not None and label not in arguments:
        return default
    # As serde's ``as_u64``: a JSON integer only (not 3.0, not "3", not true), ≤ 2**64 - 1.
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= U64_MAX:
        raise ToolError(400, f"{label} must be a non-negative integer")
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

    Every registry call runs in a worker thread (``asyncio.to_thread``): the registry is
    synchronous SQLite with a busy timeout, and must never block the event loop.
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

    async def _session(self, session_id: str) -> Session | None:
        return await asyncio.to_thread(self.registry.get, session_id)

    async def ensure_active(self, session_id: str, known: Session | None = None) -> Session:
        """TermAl's ``ensure_mailbox_session_active``: validate, clear stale ``left_at``
        markers, revalidate; if the session was removed meanwhile, put back exactly the
        markers this call cleared. ``known`` is the session as just looked up (its first
        validation), so a send resolves its peer once and revalidates once."""
        if known is None or not known.live:
            await self._live(session_id)
        cleared = await self.writer.reactivate_session(session_id)
        try:
            return await self._live(session_id)
        except ToolError:
            await self.writer.restore_session_markers(session_id, cleared)
            raise

    async def _live(self, session_id: str) -> Session:
        session = await self._session(session_id)
        if session is None or not session.live:
            if self.generic_target_errors and session_id != self.session_id:
                raise ToolError(404, GENERIC_TARGET_ERROR)  # a peer removed meanwhile
            raise ToolError(404, "session not found")
        return session

    # ------------------------------------------------------------ peers

    async def sessions(self) -> list[Session]:
        """``termal_list_sessions``: every live session, this one included."""
        return await self._run(lambda: asyncio.to_thread(self.registry.sessions))

    async def resolve_target(self, reference: str) -> Session:
        """A peer by exact ``session-`` id or case-insensitive name; self, unknown, removed
        and ambiguous references fail with distinct messages (one generic 404 with
        ``generic_target_errors``)."""
        if not self.generic_target_errors:
            return await asyncio.to_thread(self._resolve_target, reference)
        try:
            return await asyncio.to_thread(self._resolve_target, reference)
        except ToolError as error:
            if error.status in (400, 404):
                raise ToolError(404, GENERIC_TARGET_ERROR) from None
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
                raise ToolError(400, self_message)
            found = self.registry.get(reference)
            if found is None:
                raise ToolError(404, unknown)
            if not found.live:
                raise ToolError(
                    404,
                    f"target session `{reference}` ({found.name}) was removed at "
                    f"{found.removed_at}; its mailbox history stays readable but it cannot "
                    "receive messages",
                )
            return found
        matches = self.registry.by_name(reference)
        live = [s for s in matches if s.live]
        if not live:
            removed = sorted(
                (s for s in matches if not s.live), key=lambda s: s.removed_at or "", reverse=True
            )
            if removed:
                raise ToolError(
                    404,
                    f"session `{reference}` was removed at {removed[0].removed_at} "
                    f"(it was {removed[0].id}); its mailbox history stays readable but it "
                    "cannot receive messages",
                )
            raise ToolError(404, unknown)
        if len(live) > 1:
            listed = ", ".join(f"{s.id} ({s.name})" for s in live)
            raise ToolError(
                400,
                f"session name `{reference}` is ambiguous — matches {listed}; pass the exact "
                "sessionId",
            )
        if live[0].id == self.session_id:
            raise ToolError(400, self_message)
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
            raise ToolError(400, f"idempotencyKey exceeds {MAX_IDEMPOTENCY_KEY_BYTES} bytes")
        if not class_supported(message_class):
            raise ToolError(400, CLASS_NOT_SUPPORTED)
        if isinstance(target, Session):
            peer = target
        else:
            peer = await self._run(lambda: self.resolve_target(reference))

        async def attempt() -> SendReceipt:
            sender = await self.ensure_active(self.session_id)
            receiver = await self.ensure_active(peer.id, known=peer)
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
                finalizing=True,
            )
            if not receipt.duplicate:
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

    async def _dispatch(self, receiver: Session, receipt: AppendReceipt) -> str:
        """TermAl's three receipt outcomes, told honestly from what the registry knows of
        the receiver (as revalidated by this send)."""
        connected = receiver.channel_connected()
        if connected:
            nudge(self.registry.path, receiver.id)
        if receiver.in_turn:
            return QUEUED_BEHIND_ACTIVE_TURN
        if not connected:
            return DURABLE_BUT_NOT_WOKEN
        pending = await asyncio.to_thread(
            self.registry.has_pending_wake, receiver.id, receipt.mailbox_id, receipt.sequence
        )
        if pending:
            # One pending wake per mailbox: this message rides the one already pushed.
            return DURABLE_BUT_NOT_WOKEN
        # The receiver's channel server pushes the wake and marks the row delivered only
        # after the notification was written; wait a short while for that to happen.
        give_up = time.monotonic() + self.wake.wait
        while time.monotonic() < give_up:
            state = await self.writer.notification_state(receipt.message_id)
            if state == DELIVERED_TO_IDLE_SESSION:
                return DELIVERED_TO_IDLE_SESSION
            await asyncio.sleep(self.wake.step)
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

        summary = await self._run(attempt, unknown=ACK_OUTCOME_UNKNOWN)
        await self._engaged(mailbox_id, processed_through)
        return summary

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
            raise ToolError(400, f"unknown tool `{name}`")
        return await handler(self, dict(arguments or {}))


async def _json_send(tools: AgentTools, arguments: Mapping[str, Any]) -> dict[str, Any]:
    target = required_string(arguments, "sessionId")
    message = required_string(arguments, "message")
    key = required_string(arguments, "idempotencyKey")
    sent = await tools.send(
        target,
        message,
        key,
        topic=_optional_string(arguments.get("topic")),
        state_stamp=_optional_string(arguments.get("stateStamp")),
        message_class=_optional_string(arguments.get("class")),
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
    messages = await tools.read(mailbox_id, after, limit)
    return {"mailboxId": mailbox_id, "messages": [m.to_wire() for m in messages]}


async def _json_read_message(tools: AgentTools, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return (await tools.read_message(required_identifier(arguments, "messageId"))).to_wire()


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
        return ToolError(error.http_status, str(error))
    if unknown is not None:
        return ToolError(0, f"{unknown}: {error}")
    return ToolError(500, f"mailbox operation failed: {error}")
