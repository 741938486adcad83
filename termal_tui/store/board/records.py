"""The board's results as small immutable records; ``to_wire()`` is the JSON TermAl's
routes answer (camelCase, struct field order, ``stateStamp`` omitted when absent).

NamedTuples rather than dataclasses, as the mailbox records are: ``dataclasses``
imports ``inspect``, which a command's start-up should not pay for.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class BoardHead(NamedTuple):
    """One key's current head (``CoordinationBoardHead``), or a retained history row.

    ``deleted`` heads are tombstones: ``value`` is None and ``value_json`` is None.
    ``value_json`` is the stored text; ``invalid`` is set (by the tolerant viewer reads
    only) when that text is not JSON, and ``value`` is then None.
    """

    key: str
    revision: int
    updated_at_generation: int
    value: Any
    deleted: bool
    author_session_id: str
    author_name: str
    updated_at: str
    state_stamp: str | None
    value_json: str | None = None
    invalid: bool = False

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "key": self.key,
            "revision": self.revision,
            "updatedAtGeneration": self.updated_at_generation,
            "value": self.value,
            "deleted": self.deleted,
            "authorSessionId": self.author_session_id,
            "authorName": self.author_name,
            "updatedAt": self.updated_at,
        }
        if self.state_stamp is not None:
            wire["stateStamp"] = self.state_stamp
        return wire


class BoardGetResult(NamedTuple):
    """``CoordinationBoardGetResponse``: the live head plus the scope's generation."""

    head: BoardHead
    scope_generation: int

    def to_wire(self) -> dict[str, Any]:
        return self.head.to_wire() | {"scopeGeneration": self.scope_generation}


class BoardListPage(NamedTuple):
    """``CoordinationBoardListPage``: one generation-bound page of live heads by key."""

    generation: int
    entries: tuple[BoardHead, ...]
    next_after_key: str | None
    unchanged: bool

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "generation": self.generation,
            "entries": [entry.to_wire() for entry in self.entries],
        }
        if self.next_after_key is not None:
            wire["nextAfterKey"] = self.next_after_key
        wire["unchanged"] = self.unchanged
        return wire


class BoardSetReceipt(NamedTuple):
    """``CoordinationBoardSetReceipt``; ``http_status`` is the route's 201 or 200."""

    key: str
    revision: int
    prior_revision: int
    generation: int
    value: Any
    deleted: bool
    author_session_id: str
    author_name: str
    updated_at: str
    state_stamp: str | None
    duplicate: bool

    @property
    def http_status(self) -> int:
        return 201 if self.prior_revision == 0 and not self.duplicate else 200

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "key": self.key,
            "revision": self.revision,
            "priorRevision": self.prior_revision,
            "generation": self.generation,
            "value": self.value,
            "deleted": self.deleted,
            "authorSessionId": self.author_session_id,
            "authorName": self.author_name,
            "updatedAt": self.updated_at,
        }
        if self.state_stamp is not None:
            wire["stateStamp"] = self.state_stamp
        wire["duplicate"] = self.duplicate
        return wire


class BoardScope(NamedTuple):
    """A scope as the viewer lists it (not a TermAl wire type)."""

    scope_id: str
    generation: int
    live_count: int
    tombstone_count: int
    latest_updated_at: str | None
