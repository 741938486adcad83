"""The board's engine-independent rules: what a request must be, what each state answers
and with which sentence and ``detail``, how a stored row becomes a record, and the
receipt a write returns or a replay decodes.

Both engines (``store/board`` on SQLite, ``store/postgres/board`` on PostgreSQL) run
their SQL and hand the rows they read to these functions, so their answers agree word
for word. Pure functions, no I/O, no SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from termal_tui.store.board import formats
from termal_tui.store.board.records import (
    BoardGetResult,
    BoardHead,
    BoardListPage,
    BoardScope,
    BoardSetReceipt,
)
from termal_tui.store.errors import (
    ConflictError,
    NotFoundError,
    UnprocessableError,
    ValidationError,
)

# The largest revision and generation either engine stores (SQLite's INTEGER and
# PostgreSQL's BIGINT are both signed 64-bit).
MAX_STORED_INTEGER: Final = 2**63 - 1

# The head's columns, in the order :func:`head_from_row` reads them.
HEAD_COLUMNS: Final = (
    "key, revision, generation, value_json, author_session_id, author_name, updated_at, state_stamp"
)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()
"""``set(value=MISSING)``: no value (TermAl's absent ``value`` field); use ``delete=True``."""


# ------------------------------------------------------------------ errors with detail


def detail_of(current: BoardHead | None, generation: int | None) -> dict[str, Any]:
    detail: dict[str, Any] = {}
    if current is not None:
        detail["current"] = current.to_wire()
    if generation is not None:
        detail["currentGeneration"] = generation
    return detail


def not_found(message: str, current: BoardHead | None, generation: int | None) -> NotFoundError:
    detail = detail_of(current, generation)
    return NotFoundError(formats.with_detail(message, detail), detail=detail)


def conflict(message: str, current: BoardHead | None, generation: int | None) -> ConflictError:
    detail = detail_of(current, generation)
    return ConflictError(formats.with_detail(message, detail), detail=detail)


def key_not_found(
    key: str, scope_id: str, current: BoardHead | None, generation: int
) -> NotFoundError:
    return not_found(
        f"coordination board key `{key}` was not found in scope `{scope_id}`", current, generation
    )


def scope_deleted(scope_id: str) -> NotFoundError:
    """``ensure_coordination_board_scope_active``'s answer for a fenced scope."""
    return not_found(f"coordination board scope `{scope_id}` was deleted with its project", None, 0)


def pagination_conflict(expected: int, current: int) -> ConflictError:
    return conflict(
        "coordination board scope changed during pagination: expected generation "
        f"{expected}, current generation is {current}; restart the listing",
        None,
        current,
    )


# ------------------------------------------------------------------ rows to records


def checked_generation(value: Any) -> int:
    """A stored scope generation (0 for a scope without a row)."""
    if value is None:
        return 0
    if not isinstance(value, int) or value < 0:
        raise formats.internal_error(
            "failed to read coordination board generation",
            "coordination board generation must not be negative",
        )
    return value


def head_from_row(row: Sequence[Any], *, strict: bool = True) -> BoardHead:
    """``coordination_board_head_from_row`` over :data:`HEAD_COLUMNS`; ``strict=False``
    keeps a row whose stored value is not JSON (``invalid``) instead of failing the read
    as TermAl does."""
    value_json = row[3]
    value: Any = None
    invalid = False
    if value_json is not None:
        try:
            value = formats.loads(value_json)
        except (ValueError, TypeError) as error:
            if strict:
                raise formats.internal_error(
                    "failed to read coordination board entries", error
                ) from None
            value_json, invalid = str(value_json), True
    return BoardHead(
        key=row[0],
        revision=row[1],
        updated_at_generation=row[2],
        value=value,
        deleted=value_json is None,
        author_session_id=row[4],
        author_name=row[5],
        updated_at=row[6],
        state_stamp=row[7],
        value_json=value_json,
        invalid=invalid,
    )


def history_value_json(current: BoardHead) -> str | None:
    """The text a head leaves in the history when it is overwritten."""
    return None if current.deleted else formats.dumps(current.value, sort_keys=True)


# ------------------------------------------------------------------ get and list


def get_result(
    scope_id: str, key: str, current: BoardHead | None, generation: int
) -> BoardGetResult:
    """TermAl's ``get`` once the scope is known active: the live head, else 404 (with the
    tombstone in ``detail``)."""
    if current is None or current.deleted:
        raise key_not_found(key, scope_id, current, generation)
    return BoardGetResult(head=current, scope_generation=generation)


def validate_list_request(
    scope_id: str,
    after_key: str | None,
    limit: int | None,
    snapshot_generation: int | None,
    known_generation: int | None,
) -> int:
    """TermAl's list validation, in its order; returns the page size."""
    formats.validate_scope_id(scope_id)
    if after_key is not None:
        formats.validate_key(after_key)
        if snapshot_generation is None:
            raise ValidationError(
                "coordination board pagination requires `snapshotGeneration` after the first page"
            )
    if after_key is not None and known_generation is not None:
        raise ValidationError(
            "`knownGeneration` is valid only for the first coordination board page"
        )
    if snapshot_generation is not None:
        formats.check_u64("snapshotGeneration", snapshot_generation)
    if known_generation is not None:
        formats.check_u64("knownGeneration", known_generation)
    size = formats.DEFAULT_PAGE_SIZE if limit is None else limit
    if isinstance(size, bool) or not isinstance(size, int):
        raise ValidationError("coordination board page limit must be an integer")
    if not 1 <= size <= formats.MAX_PAGE_SIZE:
        raise ValidationError(
            f"coordination board page limit must be between 1 and {formats.MAX_PAGE_SIZE}"
        )
    return size


def unchanged_page(
    current: int,
    after_key: str | None,
    snapshot_generation: int | None,
    known_generation: int | None,
) -> BoardListPage | None:
    """Before reading any entry: a continuation bound to another generation is 409; a
    first page at the generation the caller knows is ``unchanged``; else None (read)."""
    if snapshot_generation is not None and snapshot_generation != current:
        raise pagination_conflict(snapshot_generation, current)
    if after_key is None and known_generation == current:
        return BoardListPage(generation=current, entries=(), next_after_key=None, unchanged=True)
    return None


def page_from(rows: Sequence[Sequence[Any]], limit: int, generation: int) -> BoardListPage:
    """A page from up to ``limit + 1`` live rows by key (the extra one says there is more)."""
    entries = [head_from_row(row) for row in rows]
    next_after_key = None
    if len(entries) > limit:
        entries = entries[:limit]
        next_after_key = entries[-1].key
    return BoardListPage(
        generation=generation,
        entries=tuple(entries),
        next_after_key=next_after_key,
        unchanged=False,
    )


def empty_board_page(
    after_key: str | None, snapshot_generation: int | None, known_generation: int | None
) -> BoardListPage:
    """A list on a database without board tables: generation 0, nothing in it."""
    page = unchanged_page(0, after_key, snapshot_generation, known_generation)
    if page is not None:
        return page
    return BoardListPage(generation=0, entries=(), next_after_key=None, unchanged=False)


# ------------------------------------------------------------------ set


class SetRequest(NamedTuple):
    """A validated ``set``: everything the transaction needs, computed before it."""

    scope_id: str
    key: str
    expected_revision: int
    author_session_id: str
    author_name: str
    idempotency_key: str
    state_stamp: str | None
    canonical: str | None  # None: a delete
    request_hash: str
    receipt_value: Any


def prepare_set(
    scope_id: str,
    key: str,
    *,
    expected_revision: int,
    author_session_id: str,
    author_name: str,
    idempotency_key: str,
    value: Any,
    delete: bool,
    state_stamp: str | None,
    raw_author_name: bool,
) -> SetRequest:
    """TermAl's validation of a set, in its order, and the request's canonical value and
    hash. Raises ValidationError (400) and UnprocessableError (422)."""
    formats.check_u64("expectedRevision", expected_revision, UnprocessableError)
    if value is not MISSING and delete:
        raise ValidationError(formats.VALUE_AND_DELETE_MESSAGE)
    if value is MISSING and not delete:
        raise ValidationError(formats.NEITHER_VALUE_NOR_DELETE_MESSAGE)
    if not raw_author_name:
        author_name = formats.normalize_author_name(author_name)
    formats.validate_scope_id(scope_id)
    formats.validate_key(key)
    formats.validate_text_field("author session id", author_session_id, formats.MAX_AUTHOR_ID_BYTES)
    formats.validate_text_field("author name", author_name, formats.MAX_AUTHOR_NAME_BYTES)
    formats.validate_text_field(
        "idempotency key", idempotency_key, formats.MAX_IDEMPOTENCY_KEY_BYTES
    )
    if state_stamp is not None:
        formats.validate_text_field("state stamp", state_stamp, formats.MAX_STATE_STAMP_BYTES)
    canonical = None if delete else formats.canonical_value(value)
    digest = formats.request_hash(scope_id, key, expected_revision, canonical, state_stamp)
    return SetRequest(
        scope_id=scope_id,
        key=key,
        expected_revision=expected_revision,
        author_session_id=author_session_id,
        author_name=author_name,
        idempotency_key=idempotency_key,
        state_stamp=state_stamp,
        canonical=canonical,
        request_hash=digest,
        receipt_value=None if canonical is None else formats.loads(canonical),
    )


def decode_receipt(text: str) -> BoardSetReceipt:
    """A stored ``receipt_json`` as serde would read it into the receipt struct."""
    context = "failed to decode stored coordination board receipt"
    try:
        data = formats.loads(text)
    except ValueError as error:
        raise formats.internal_error(context, error) from None
    if not isinstance(data, dict):
        raise formats.internal_error(context, "expected struct CoordinationBoardSetReceipt")
    fields = (
        ("key", str),
        ("revision", int),
        ("priorRevision", int),
        ("generation", int),
        ("value", object),
        ("deleted", bool),
        ("authorSessionId", str),
        ("authorName", str),
        ("updatedAt", str),
        ("duplicate", bool),
    )
    lines = text.split("\n")
    for name, kind in fields:
        if name not in data:  # serde_json reports a missing field where the object ends
            where = f"at line {len(lines)} column {len(lines[-1])}"
            raise formats.internal_error(context, f"missing field `{name}` {where}")
        item = data[name]
        is_int = isinstance(item, int) and not isinstance(item, bool)
        if not (is_int if kind is int else isinstance(item, kind)):
            raise formats.internal_error(context, f"invalid type for field `{name}`")
    stamp = data.get("stateStamp")
    if stamp is not None and not isinstance(stamp, str):
        raise formats.internal_error(context, "invalid type for field `stateStamp`")
    return BoardSetReceipt(
        key=data["key"],
        revision=data["revision"],
        prior_revision=data["priorRevision"],
        generation=data["generation"],
        value=data["value"],
        deleted=data["deleted"],
        author_session_id=data["authorSessionId"],
        author_name=data["authorName"],
        updated_at=data["updatedAt"],
        state_stamp=stamp,
        duplicate=True,
    )


def replay(
    request: SetRequest, stored_hash: str, stored_receipt: str, generation: int
) -> BoardSetReceipt:
    """An idempotency key still in the window: the original receipt for the same request,
    a 409 for another one under the same key."""
    if stored_hash != request.request_hash:
        raise conflict(
            f"coordination board idempotency key `{request.idempotency_key}` was already "
            "used for a different update",
            None,
            generation,
        )
    return decode_receipt(stored_receipt)


def check_compare_and_swap(request: SetRequest, current: BoardHead | None, generation: int) -> int:
    """TermAl's CAS and absent-delete checks, in its order; returns the current revision
    (0 for a key that never existed)."""
    current_revision = 0 if current is None else current.revision
    if current_revision != request.expected_revision:
        if current is None and request.expected_revision > 0:
            raise key_not_found(request.key, request.scope_id, None, generation)
        raise conflict(
            f"coordination board revision conflict for `{request.key}`: expected "
            f"{request.expected_revision}, current revision is {current_revision}",
            current,
            generation,
        )
    if request.canonical is None and (current is None or current.deleted):
        raise not_found(
            f"coordination board key `{request.key}` is already absent from scope "
            f"`{request.scope_id}`",
            current,
            generation,
        )
    return current_revision


def introduces_key(request: SetRequest, current: BoardHead | None) -> bool:
    """A value for a name the scope has never had: counts against the distinct-key cap."""
    return request.canonical is not None and current is None


def creates_live(request: SetRequest, current: BoardHead | None) -> bool:
    """A value where there is no live head (a new key or a restore): counts against the
    live-key cap."""
    return request.canonical is not None and (current is None or current.deleted)


def check_distinct_keys(scope_id: str, distinct: int) -> None:
    if distinct >= formats.MAX_DISTINCT_KEYS_PER_SCOPE:
        raise ValidationError(
            f"coordination board scope `{scope_id}` has reached the "
            f"{formats.MAX_DISTINCT_KEYS_PER_SCOPE}-distinct-key lifetime limit; "
            "reuse a retained tombstone or delete the project before introducing "
            "another key"
        )


def check_live_keys(scope_id: str, live: int) -> None:
    if live >= formats.MAX_LIVE_ENTRIES_PER_SCOPE:
        raise ValidationError(
            f"coordination board scope `{scope_id}` has reached the "
            f"{formats.MAX_LIVE_ENTRIES_PER_SCOPE}-live-key limit; delete or reuse "
            "a live key before creating or restoring another"
        )


def keeps_history(request: SetRequest, current: BoardHead | None) -> bool:
    """A value over an existing head moves that head into the history; a delete purges
    the key's history instead."""
    return request.canonical is not None and current is not None


def advance(current_revision: int, generation: int) -> tuple[int, int]:
    """The write's revision and generation (both within the stored integer range)."""
    revision, next_generation = current_revision + 1, generation + 1
    if revision > MAX_STORED_INTEGER or next_generation > MAX_STORED_INTEGER:
        raise formats.internal_error(
            "failed to advance the coordination board", "revision space exhausted"
        )
    return revision, next_generation


def receipt_for(
    request: SetRequest, revision: int, prior_revision: int, generation: int, updated_at: str
) -> BoardSetReceipt:
    return BoardSetReceipt(
        key=request.key,
        revision=revision,
        prior_revision=prior_revision,
        generation=generation,
        value=request.receipt_value,
        deleted=request.canonical is None,
        author_session_id=request.author_session_id,
        author_name=request.author_name,
        updated_at=updated_at,
        state_stamp=request.state_stamp,
        duplicate=False,
    )


def scope_from_row(row: Sequence[Any]) -> BoardScope:
    """A row of (scope_id, generation, live count, tombstone count, latest updated_at)."""
    return BoardScope(
        scope_id=row[0],
        generation=int(row[1]),
        live_count=int(row[2]),
        tombstone_count=int(row[3]),
        latest_updated_at=row[4],
    )
