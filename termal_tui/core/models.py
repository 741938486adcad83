"""The mailbox records whose JSON is TermAl's mailbox wire JSON (termal-compat.md §2).

Plain frozen records, not pydantic (and not ``dataclasses``, whose import of ``inspect``
alone costs a hook ~30 ms): the viewer's first screen and every hook build these, and
importing pydantic would cost them ~70 ms at start-up. Serialization goes
through :meth:`WireModel.to_wire` / :meth:`WireModel.to_json`: camelCase keys in TermAl's
order, optional fields omitted when null, and store-only diagnostics (idempotency key,
unread depth, dispatch outcome) never serialized. :meth:`WireModel.from_wire` validates
JSON from outside (either spelling of a key); legacy or unknown notification-state
strings load verbatim.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Final, NamedTuple, Self, TypeVar

M = TypeVar("M", bound="WireModel")

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


def _camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part.title() for part in rest)


class Field(NamedTuple):
    """One declared field of a record: its name, its annotation (text), its default."""

    name: str
    type: str
    default: Any


_MISSING: Final = object()


class WireModel:
    """Base of the wire records: frozen, compared by value, camelCase JSON with nulls
    omitted and diagnostics excluded.

    Fields are the class's annotations, in order; a class attribute of the same name is
    the default. ``_EXCLUDED`` names fields that are never serialized, ``_NESTED``
    fields holding lists of another record, ``_NON_NEGATIVE`` integer fields that must
    be ≥ 0, and ``_ALIASES`` wire names that are not the camelCase of the field name.
    """

    _EXCLUDED: ClassVar[frozenset[str]] = frozenset()
    _NESTED: ClassVar[dict[str, str]] = {}
    _NON_NEGATIVE: ClassVar[frozenset[str]] = frozenset()
    _ALIASES: ClassVar[dict[str, str]] = {}
    _FIELDS: ClassVar[tuple[Field, ...]] = ()
    _NAMES: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Not inspect.get_annotations: importing inspect costs a hook ~10 ms.
        own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
        fields = [
            Field(name, str(kind), cls.__dict__.get(name, _MISSING))
            for name, kind in own.items()
            if not str(kind).startswith("ClassVar")
        ]
        for field in fields:  # defaults live in _FIELDS; attributes come from __dict__
            if field.default is not _MISSING:
                delattr(cls, field.name)
        cls._FIELDS = tuple(fields)
        cls._NAMES = tuple(field.name for field in fields)

    def __init__(self, **values: Any) -> None:
        data: dict[str, Any] = {}
        for field in self._FIELDS:
            if field.name in values:
                data[field.name] = values.pop(field.name)
            elif field.default is not _MISSING:
                data[field.name] = field.default
            else:
                raise TypeError(f"{type(self).__name__} needs {field.name}")
        if values:
            raise TypeError(f"{type(self).__name__} has no field {next(iter(values))}")
        _set_attribute(self, "__dict__", data)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(tuple(_hashable(self.__dict__[name]) for name in self._NAMES))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={self.__dict__[name]!r}" for name in self._NAMES)
        return f"{type(self).__name__}({inner})"

    @classmethod
    def fields(cls) -> tuple[Field, ...]:
        return cls._FIELDS

    @classmethod
    def wire_name(cls, field: str) -> str:
        return cls._ALIASES.get(field, _camel(field))

    def to_wire(self) -> dict[str, Any]:
        """The TermAl JSON object: wire names in declaration order, nulls omitted."""
        wire: dict[str, Any] = {}
        values = self.__dict__
        for name in self._NAMES:
            if name in self._EXCLUDED:
                continue
            value = values[name]
            if value is None:
                continue
            if name in self._NESTED:
                value = [item.to_wire() for item in value]
            wire[self.wire_name(name)] = value
        return wire

    def to_json(self) -> str:
        """Compact TermAl JSON text."""
        return json.dumps(self.to_wire(), ensure_ascii=False, separators=(",", ":"))

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied (the records are frozen)."""
        return type(self)(**(self.__dict__ | changes))

    @classmethod
    def from_wire(cls, data: Any) -> Self:
        """Validate a JSON object (wire or field names) into a record; ``ValueError`` says
        which field is missing or of the wrong type."""
        if not isinstance(data, dict):
            raise ValueError(f"{cls.__name__} must be a JSON object")
        values: dict[str, Any] = {}
        for field in cls._FIELDS:
            name = field.name
            wire = cls.wire_name(name)
            if wire in data:
                value = data[wire]
            elif name in data:
                value = data[name]
            elif field.default is not _MISSING:
                continue
            else:
                raise ValueError(f"{cls.__name__}.{wire} is required")
            values[name] = cls._check(name, wire, field.type, value)
        return cls(**values)

    @classmethod
    def _check(cls, name: str, wire: str, kind: str, value: Any) -> Any:
        where = f"{cls.__name__}.{wire}"
        if name in cls._NESTED:
            if not isinstance(value, list):
                raise ValueError(f"{where} must be a list")
            nested = _RECORDS[cls._NESTED[name]]
            return [nested.from_wire(item) for item in value]
        if value is None:
            if "None" in kind:
                return None
            raise ValueError(f"{where} must not be null")
        if kind.startswith("bool"):
            if not isinstance(value, bool):
                raise ValueError(f"{where} must be a boolean")
        elif kind.startswith("int"):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{where} must be an integer")
            if name in cls._NON_NEGATIVE and value < 0:
                raise ValueError(f"{where} must be ≥ 0")
        elif kind.startswith("str") and not isinstance(value, str):
            raise ValueError(f"{where} must be a string")
        return value


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def trusted(model: type[M], values: dict[str, Any]) -> M:
    """Build a record from values the store already knows are well-typed: no checks.

    ``values`` must name every field; the store builds tens of thousands of these per
    index read, so this skips the dataclass ``__init__`` (one ``object.__setattr__``
    per field when frozen).
    """
    instance = _new(model)
    _set_attribute(instance, "__dict__", values)
    return instance


_new = object.__new__
_set_attribute = object.__setattr__


class MailboxParticipant(WireModel):
    _NON_NEGATIVE = frozenset({"processed_through", "unread_count"})
    # The viewer's count of visible rows addressed to this participant above its
    # cursor (the human index's "who is behind"); never serialized, 0 where not counted.
    _EXCLUDED = frozenset({"unread_count"})

    session_id: str
    display_name: str
    processed_through: int
    left_at: str | None = None
    unread_count: int = 0

    @property
    def departed(self) -> bool:
        return self.left_at is not None


class MailboxSummary(WireModel):
    _NESTED = {"participants": "MailboxParticipant"}
    _NON_NEGATIVE = frozenset({"latest_sequence", "unread_count"})

    id: str
    participants: list[MailboxParticipant]
    latest_sequence: int
    unread_count: int
    latest_message_preview: str | None = None
    latest_message_at: str | None = None

    def participant(self, session_id: str) -> MailboxParticipant | None:
        for participant in self.participants:
            if participant.session_id == session_id:
                return participant
        return None


class MailboxMessage(WireModel):
    _ALIASES = {"class_": "class"}
    _NON_NEGATIVE = frozenset({"sequence", "unread_depth_at_append"})
    # Accepted on input (TermAl defaults the first two), never serialized; the dispatch
    # outcome is the viewer's diagnostic from the immutable receipt column, and
    # ``unreadable`` the store's reason when a row written by another program cannot be
    # shown as a message (e.g. a non-integer sequence).
    _EXCLUDED = frozenset(
        {"idempotency_key", "unread_depth_at_append", "dispatch_outcome", "unreadable"}
    )

    # Declared in TermAl's key order (class, topic and stateStamp before body); the
    # records take keyword arguments, so defaults need not come last.
    id: str
    mailbox_id: str
    sequence: int
    sender_session_id: str
    sender_name: str
    target_session_id: str
    target_name: str
    created_at: str
    class_: str = ROUTINE_CLASS
    topic: str | None = None
    state_stamp: str | None = None
    body: str
    idempotency_key: str = ""
    unread_depth_at_append: int = 0
    notification_state: str
    dispatch_outcome: str | None = None
    unreadable: str | None = None

    @property
    def is_control(self) -> bool:
        return self.topic == CONTROL_TOPIC


class AppendReceipt(WireModel):
    _NON_NEGATIVE = frozenset({"sequence", "unread_depth"})

    mailbox_id: str
    message_id: str
    sequence: int
    unread_depth: int
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

    _NESTED = {"messages": "MailboxMessage"}

    messages: list[MailboxMessage]
    has_older: bool

    @property
    def oldest_sequence(self) -> int | None:
        return self.messages[-1].sequence if self.messages else None


class ChangeToken(NamedTuple):
    """What a live view polls: it changes whenever a mailbox gains a row or a cursor or
    departure moves. Compare whole tokens; ``next_sequence`` is the sequence the next
    append will take (−1 when another program stored something that is not an integer)."""

    next_sequence: int
    cursors: str


_RECORDS: Final[dict[str, type[WireModel]]] = {
    "MailboxParticipant": MailboxParticipant,
    "MailboxMessage": MailboxMessage,
}
