"""The contract's rules that do not depend on the engine: what an append, an
acknowledgement or an outcome must be before any SQL runs, what a stored duplicate
answers, and every sentence those rules fail with. Both engines (the SQLite writer in
``store/writer.py`` and ``store/postgres``) call these, so their errors agree word for
word.

Imports nothing of SQLite or PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from termal_tui.core.formats import (
    CLASS_NOT_SUPPORTED,
    MAX_BODY_BYTES,
    MAX_METADATA_BYTES,
    check_count,
    class_supported,
    idempotency_key_too_long,
    rust_trim,
    utf8_len,
)
from termal_tui.core.models import CONTROL_TOPIC, DISPATCH_OUTCOMES, AppendReceipt
from termal_tui.store.errors import (
    ConflictError,
    NotFoundError,
    UnprocessableError,
    ValidationError,
)

if TYPE_CHECKING:
    from termal_tui.core.review import ReviewResult

FINALIZING_MESSAGE: Final = (
    "mailbox dispatch outcome is still finalizing; the original mailbox append is durable "
    "and replaying the same idempotency key is safe"
)
FINALIZER_POLL_SECONDS: Final = 0.02
NOT_PARTICIPANT: Final = "mailbox not found for this session"
DEPARTED_TARGET: Final = "target session is a departed mailbox participant"
ACK_MAILBOX_NOT_FOUND: Final = "mailbox not found"
ACK_PARTICIPANT_NOT_FOUND: Final = "mailbox participant not found"
ACK_SUMMARY_NOT_FOUND: Final = "mailbox not found while acknowledging"

# The columns a duplicate check selects, in this order, on both engines.
DUPLICATE_COLUMNS: Final = (
    "mailbox_id, id, sequence, target_session_id, body, topic, state_stamp, "
    "unread_depth_at_append, dispatch_outcome"
)


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
    if not class_supported(message_class):
        raise ValidationError(CLASS_NOT_SUPPORTED)
    if sender_session_id == target_session_id:
        raise ValidationError("mailbox messages must target another session")
    if not (
        rust_trim(sender_session_id) and rust_trim(target_session_id) and rust_trim(idempotency_key)
    ):
        raise ValidationError("mailbox sender, target, and idempotency key are required")
    if not rust_trim(body):
        raise ValidationError("mailbox message cannot be empty")
    if idempotency_key_too_long(idempotency_key):
        raise ValidationError("mailbox idempotency key exceeds 256 bytes")
    if utf8_len(body) > MAX_BODY_BYTES:
        raise ValidationError(f"mailbox body exceeds {MAX_BODY_BYTES} bytes")
    if topic is not None and utf8_len(topic) > MAX_METADATA_BYTES:
        raise ValidationError(f"mailbox topic exceeds {MAX_METADATA_BYTES} bytes")
    if state_stamp is not None and utf8_len(state_stamp) > MAX_METADATA_BYTES:
        raise ValidationError(f"mailbox state stamp exceeds {MAX_METADATA_BYTES} bytes")


def duplicate_receipt(
    existing: Sequence[Any],
    *,
    idempotency_key: str,
    target_session_id: str,
    body: str,
    topic: str | None,
    state_stamp: str | None,
) -> AppendReceipt:
    """The answer to a key the sender used before (``existing``: the stored row's
    :data:`DUPLICATE_COLUMNS`): the original immutable receipt for the same content, a
    conflict for any other."""
    if tuple(existing[3:7]) != (target_session_id, body, topic, state_stamp):
        raise ConflictError(
            f"idempotency key `{idempotency_key}` was already used for a different mailbox message"
        )
    return AppendReceipt(
        mailbox_id=existing[0],
        message_id=existing[1],
        sequence=existing[2],
        unread_depth=existing[7],
        notification_disposition=existing[8] or "",
        duplicate=True,
    )


def check_outcome(outcome: str) -> None:
    if outcome not in DISPATCH_OUTCOMES:
        raise ValidationError(
            f"unknown dispatch outcome `{outcome}`; expected one of " + ", ".join(DISPATCH_OUTCOMES)
        )


def missing_message(message_id: str) -> NotFoundError:
    return NotFoundError(f"mailbox message `{message_id}` does not exist")


def check_acknowledgement(expected_processed_through: int, processed_through: int) -> None:
    """What an acknowledgement must be before it reads anything."""
    check_count("expectedProcessedThrough", expected_processed_through)
    check_count("processedThrough", processed_through)
    if processed_through < expected_processed_through:
        raise ValidationError("mailbox acknowledgement cannot move backwards")


def check_within_latest(processed_through: int, latest: int) -> None:
    if processed_through > latest:
        raise ValidationError(
            f"mailbox acknowledgement {processed_through} exceeds latest sequence {latest}"
        )


def settle_failed_swap(
    current: int | None, expected_processed_through: int, processed_through: int
) -> None:
    """The compare-and-swap matched no row: a replay of an acknowledgement that already
    holds (the cursor is at or past it) succeeds; a cursor behind it moved meanwhile."""
    if current is None:
        raise NotFoundError(ACK_PARTICIPANT_NOT_FOUND)
    if current < processed_through:
        raise ConflictError(
            "mailbox acknowledgement conflict: processedThrough no longer equals "
            f"{expected_processed_through}"
        )


def review_request(
    *,
    delegation_id: str,
    attempt: int,
    child_session_id: str,
    child_name: str,
    coordinator_session_id: str,
    coordinator_name: str,
    result: ReviewResult | dict[str, Any],
) -> dict[str, Any]:
    """A structured review result as the append that carries it (a control-plane row);
    validation failures are the request's 400/422."""
    # Imported here: review results are validated with pydantic, which costs every
    # other command (hooks, send) ~70 ms of start-up.
    from termal_tui.core.review import (
        ReviewResultJSONError,
        build_envelope,
        parse_review_result,
        review_idempotency_key,
        review_state_stamp,
    )

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
    except ReviewResultJSONError as error:
        raise UnprocessableError(str(error)) from None
    except ValueError as error:
        raise ValidationError(str(error)) from None
    return {
        "sender_session_id": child_session_id,
        "sender_name": child_name,
        "target_session_id": coordinator_session_id,
        "target_name": coordinator_name,
        "body": body,
        "idempotency_key": review_idempotency_key(delegation_id, attempt),
        "topic": CONTROL_TOPIC,
        "state_stamp": review_state_stamp(delegation_id, attempt),
        "finalizing": True,
    }
