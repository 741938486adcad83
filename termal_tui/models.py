"""Pydantic models whose JSON is TermAl's mailbox wire JSON (termal-compat.md §2).

Serialization goes through :meth:`WireModel.to_wire` / :meth:`WireModel.to_json`:
camelCase keys in TermAl's order, optional fields omitted when null, and
store-only diagnostics (idempotency key, unread depth, dispatch outcome) never
serialized. Legacy or unknown notification-state strings load verbatim.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

M = TypeVar("M", bound=BaseModel)

CONTROL_TOPIC: Final = "delegation-review-result/v1"
ROUTINE_CLASS: Final = "routine"

# Mutable per-row wake lifecycle (column notification_disposition, JSON notificationState).
DURABLE_BUT_NOT_WOKEN: Final = "durableButNotWoken"
QUEUED_BEHIND_ACTIVE_TURN: Final = "queuedBehindActiveTurn"
RECOVERED_WAKE: Final = "recoveredWake"
DELIVERED_TO_IDLE_SESSION: Final = "deliveredToIdleSession"

NOTIFICATION_STATES: Final = (
    DURABLE_BUT_NOT_WOKEN,
    QUEUED_BEHIND_ACTIVE_TURN,
    RECOVERED_WAKE,
    DELIVERED_TO_IDLE_SESSION,
)
# Immutable receipt outcomes (column dispatch_outcome, receipt notificationDisposition).
DISPATCH_OUTCOMES: Final = (
    DURABLE_BUT_NOT_WOKEN,
    QUEUED_BEHIND_ACTIVE_TURN,
    DELIVERED_TO_IDLE_SESSION,
)


class WireModel(BaseModel):
    """Base: camelCase aliases, accept either spelling on input, frozen values."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        # Schemas are built on first validation or serialization, not at import: the
        # viewer builds its rows without validation and starts faster for it.
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The TermAl JSON object: aliases, nulls omitted, diagnostics excluded."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json(self) -> str:
        """Compact TermAl JSON text."""
        return self.model_dump_json(by_alias=True, exclude_none=True)


def trusted(model: type[M], values: dict[str, Any]) -> M:
    """Build a model from values the store already knows are well-typed: no validation.

    What pydantic's ``model_construct`` does, without its per-field default and alias
    handling (``values`` must name every field), at a fraction of the cost; the store
    builds tens of thousands of these per index read.
    """
    instance = _new(model)
    _set_attribute(instance, "__dict__", values)
    _set_attribute(instance, "__pydantic_fields_set__", set(values))
    _set_attribute(instance, "__pydantic_extra__", None)
    _set_attribute(instance, "__pydantic_private__", None)
    return instance


_new = object.__new__


_set_attribute = object.__setattr__


class MailboxParticipant(WireModel):
    session_id: str
    display_name: str
    processed_through: int = Field(ge=0)
    left_at: str | None = None

    @property
    def departed(self) -> bool:
        return self.left_at is not None


class MailboxSummary(WireModel):
    id: str
    participants: list[MailboxParticipant]
    latest_sequence: int = Field(ge=0)
    unread_count: int = Field(ge=0)
    latest_message_preview: str | None = None
    latest_message_at: str | None = None

    def participant(self, session_id: str) -> MailboxParticipant | None:
        for participant in self.participants:
            if participant.session_id == session_id:
                return participant
        return None


class MailboxMessage(WireModel):
    id: str
    mailbox_id: str
    sequence: int = Field(ge=0)
    sender_session_id: str
    sender_name: str
    target_session_id: str
    target_name: str
    created_at: str
    class_: str = Field(default=ROUTINE_CLASS, alias="class")
    topic: str | None = None
    state_stamp: str | None = None
    body: str
    # Accepted on input (TermAl defaults them), never serialized.
    idempotency_key: str = Field(default="", exclude=True)
    unread_depth_at_append: int = Field(default=0, exclude=True)
    notification_state: str
    # Viewer diagnostics from the immutable receipt column; never serialized.
    dispatch_outcome: str | None = Field(default=None, exclude=True)
    # Set by the store when a row written by another program cannot be shown as a
    # message (e.g. a non-integer sequence); the reason, never serialized.
    unreadable: str | None = Field(default=None, exclude=True)

    @property
    def is_control(self) -> bool:
        return self.topic == CONTROL_TOPIC


class AppendReceipt(WireModel):
    mailbox_id: str
    message_id: str
    sequence: int = Field(ge=0)
    unread_depth: int = Field(ge=0)
    notification_disposition: str
    duplicate: bool


class UnreadWakeup(WireModel):
    """One mailbox that needs a (re)wake for a session: its newest candidate row."""

    mailbox_id: str
    message_id: str
    sequence: int
    unread_count: int
    sender_session_id: str
    sender_name: str


class MessagePage(WireModel):
    """A newest-first page of a mailbox thread.

    ``has_older`` comes from an actual probe for one more visible row below the
    page, never from arithmetic on sequence numbers.
    """

    messages: list[MailboxMessage]
    has_older: bool

    @property
    def oldest_sequence(self) -> int | None:
        return self.messages[-1].sequence if self.messages else None
