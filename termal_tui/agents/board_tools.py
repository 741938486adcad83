"""TermAl's three coordination-board tools over the board writer, for one session.

``termal_board_list``, ``termal_board_get`` and ``termal_board_set`` as TermAl's bridge
(``src/delegation_mcp.rs``) and routes (``src/board_routes.rs``) serve them: the bridge's
argument checks and wording (the URL-safe key shape, ``must be a non-negative integer``,
``stateStamp`` kept exactly as given), the route's scope resolution (the caller's
project, see ``agents/projects.py``) and its value/delete rules, safe replay of exactly
the busy rejections that carry TermAl's no-commit or read-safe clause, and the receipt
checks (a set's receipt must correlate with the request, field by field) with the
"write outcome is unknown" sentence when it does not or the commit's outcome is unknown.

The CLI (``termal-tui board``) calls the typed methods; the MCP server calls :meth:`call`.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from termal_tui.agents.catalog import READ_RESULT_BUDGET
from termal_tui.agents.projects import Project, ProjectResolver
from termal_tui.agents.registry import Registry, Session
from termal_tui.agents.tools import ReplayPolicy, ToolError, replay_delay
from termal_tui.core.errors import TABLE, ErrorKind
from termal_tui.core.formats import U64_MAX
from termal_tui.store.board import (
    BoardGetResult,
    BoardHead,
    BoardListPage,
    BoardSetReceipt,
    loads,
    normalize_author_name,
)
from termal_tui.store.board.formats import MAX_KEY_BYTES
from termal_tui.store.errors import CommitOutcomeUnknownError, RetryableError, StoreError

if TYPE_CHECKING:  # the writer is loaded only when a set runs
    from termal_tui.store.board.writer import BoardWriter

T = TypeVar("T")

# TermAl's three board tools, in TermAl's tools/list order (after the six mailbox tools).
BOARD_TOOL_NAMES = ("termal_board_list", "termal_board_get", "termal_board_set")

# delegation_mcp.rs board_set_bridge_error, verbatim (its ": {err}" follows).
BOARD_SET_OUTCOME_UNKNOWN = (
    "board update receipt was not received; the write outcome is unknown. Retry the exact "
    "same request with the SAME idempotencyKey: a committed write replays as duplicate=true, "
    "an uncommitted one applies cleanly"
)

# delegation_mcp.rs: the clauses that make a 503 safe to replay (and nothing else is).
NO_COMMIT_CLAUSE_PREFIX = "no "
NO_COMMIT_CLAUSE_SUFFIX = " write was committed by this operation, so retry the same request"
SAFE_READ_RETRY_CLAUSE = (
    "no mutation was attempted by this read operation, so retry the same request"
)
DURABLE_APPEND_RETRY_CLAUSE = (
    "the original mailbox append is durable and replaying the same idempotency key is safe"
)

_MISSING: Any = object()


def carries_safe_replay_clause(message: str) -> bool:
    """TermAl's ``message_carries_safe_replay_clause``: one ``;``-separated clause, trimmed,
    is the read-safe or durable-append clause, or starts with ``no `` and ends with the
    no-commit suffix."""
    for clause in message.split(";"):
        clause = clause.strip()
        if clause in (SAFE_READ_RETRY_CLAUSE, DURABLE_APPEND_RETRY_CLAUSE) or (
            clause.startswith(NO_COMMIT_CLAUSE_PREFIX) and clause.endswith(NO_COMMIT_CLAUSE_SUFFIX)
        ):
            return True
    return False


class BoardToolError(ToolError):
    """A board tool failure. ``bridge`` failures (the bridge's own argument checks) read
    as TermAl's bridge sentences; the others as the route's answer, ``termal-tui board
    store returned 409 Conflict: ...``. ``detail`` is the 404/409 detail object."""

    store = "board"


def _bridge(message: str) -> BoardToolError:
    return BoardToolError(ErrorKind.VALIDATION, message, bridge=True)


def board_error(error: BaseException, unknown: bool = False) -> BoardToolError:
    """Any failure as a BoardToolError. Typed store errors keep their kind, text and
    ``detail``; for a set (``unknown``), a commit whose outcome is unknown, or anything
    this process cannot account for, is TermAl's unknown-outcome sentence."""
    if isinstance(error, BoardToolError):
        return error
    if isinstance(error, ToolError):
        return BoardToolError(error.kind, error.message, detail=error.detail)
    if isinstance(error, StoreError) and not (
        unknown and isinstance(error, CommitOutcomeUnknownError)
    ):
        return BoardToolError(error.kind, str(error), detail=error.detail)
    if unknown:
        return BoardToolError(ErrorKind.UNKNOWN_OUTCOME, f"{BOARD_SET_OUTCOME_UNKNOWN}: {error}")
    return BoardToolError(ErrorKind.INTERNAL, f"coordination board operation failed: {error}")


# --------------------------------------------------------------------- arguments


def _trimmed(value: object) -> str | None:
    """The bridge's ``optional_string``: a string, trimmed, not empty."""
    if not isinstance(value, str):
        return None
    return value.strip() or None


def required_string(value: object, label: str) -> str:
    if value is not None and not isinstance(value, str):
        raise _bridge(f"{label} must be a string")
    found = _trimmed(value)
    if found is None:
        raise _bridge(f"{label} is required")
    return found


def required_u64(value: object, label: str) -> int:
    """The bridge's ``required_u64``: a JSON integer in 0..=u64::MAX (not 3.0, not "3")."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= U64_MAX:
        raise _bridge(f"{label} must be a non-negative integer")
    return value


def required_board_key_shaped(value: object, label: str) -> str:
    """The bridge's transport-safety shape check (looser than the store's grammar)."""
    key = required_string(value, label)
    if (
        key in (".", "..")
        or len(key.encode()) > MAX_KEY_BYTES
        or not all(ch.isascii() and (ch.islower() or ch.isdigit() or ch in "._-") for ch in key)
    ):
        raise _bridge(
            f"{label} must be 1-{MAX_KEY_BYTES} bytes of lowercase alphanumerics, `.`, `_`, "
            "or `-`, and must not be `.` or `..`"
        )
    return key


def optional_nonempty_string(arguments: Mapping[str, Any], label: str) -> str | None:
    """The bridge's ``optional_nonempty_string``: absent, or a string that is not blank,
    kept EXACTLY as given (the store hashes ``stateStamp``)."""
    if label not in arguments:
        return None
    value = arguments[label]
    if not isinstance(value, str) or not value.strip():
        raise _bridge(f"{label} must be a non-empty string")
    return value


def serde_value(value: Any) -> Any:
    """A JSON value that arrived already parsed (the MCP SDK parses the request) as
    serde_json holds it: numbers re-read by the board's parser (an integer beyond u64
    becomes a float, as it would in TermAl)."""
    return loads(json.dumps(value, ensure_ascii=False))


def json_equal(left: Any, right: Any) -> bool:
    """serde_json ``Value`` equality: integers and floats differ (``1`` is not ``1.0``),
    booleans are not numbers, objects compare as maps."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int) and isinstance(right, int):
        return left == right
    if isinstance(left, float) and isinstance(right, float):
        return left == right
    if isinstance(left, (int, float)) or isinstance(right, (int, float)):
        return False
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return type(left) is type(right) and left == right


def correlate_receipt(
    receipt: BoardSetReceipt,
    *,
    key: str,
    expected_revision: int,
    author_session_id: str,
    value: Any,
    delete: bool,
    state_stamp: str | None,
) -> str | None:
    """TermAl's ``correlate_board_receipt``: the first mismatch between a receipt and the
    request it answers, as TermAl words it, or None when every field lines up."""
    if receipt.key != key:
        return f"receipt key `{receipt.key}` != requested `{key}`"
    if receipt.author_session_id != author_session_id:
        return f"receipt author `{receipt.author_session_id}` != caller `{author_session_id}`"
    if receipt.prior_revision != expected_revision:
        return (
            f"receipt priorRevision {receipt.prior_revision} != expectedRevision "
            f"{expected_revision}"
        )
    if receipt.prior_revision >= U64_MAX or receipt.revision != receipt.prior_revision + 1:
        return (
            f"receipt revision {receipt.revision} is not priorRevision {receipt.prior_revision} + 1"
        )
    if receipt.deleted != delete:
        return (
            f"receipt deleted={str(receipt.deleted).lower()} != requested "
            f"delete={str(delete).lower()}"
        )
    if delete:
        if receipt.value is not None:
            return "receipt claims deletion but carries a non-null value"
    elif not json_equal(receipt.value, None if value is _MISSING else value):
        return "receipt value differs from the requested value"
    if receipt.state_stamp != state_stamp:
        return (
            f"receipt stateStamp {_rust_option(receipt.state_stamp)} != requested "
            f"{_rust_option(state_stamp)}"
        )
    return None


def _rust_option(value: str | None) -> str:
    return "None" if value is None else f"Some({json.dumps(value, ensure_ascii=False)})"


# --------------------------------------------------------------------- the tools


async def pause(seconds: float) -> None:
    """The pause between replays when none is given (a seam: a test run through the CLI
    counts the pauses instead of sleeping them)."""
    await asyncio.sleep(seconds)


class BoardTools:
    """The board tools serving one session: typed methods (the CLI's) and :meth:`call`
    (TermAl's JSON tool calls, the MCP server's). The session and its project are
    resolved on every call, as TermAl's routes resolve them per request (a removed
    session is a 404, a session without a project TermAl's 400)."""

    def __init__(
        self,
        writer: BoardWriter,
        registry: Registry,
        session_id: str,
        *,
        db_path: Path | str | None = None,
        project: str | None = None,
        replay: ReplayPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.writer = writer
        self.registry = registry
        self.session_id = session_id
        self.projects = ProjectResolver(db_path or writer.path, registry)
        self.project_reference = project
        self.replay = replay or ReplayPolicy()
        self._sleep = sleep if sleep is not None else pause
        self._clock = clock

    # ------------------------------------------------------------ plumbing

    async def scope(self) -> tuple[Project, str]:
        """The caller's project and its author name (TermAl's bounded display snapshot)."""
        return await asyncio.to_thread(self._scope)

    def _scope(self) -> tuple[Project, str]:
        session: Session | None = self.registry.get(self.session_id)
        project = self.projects.for_session(session, self.project_reference)
        if self.project_reference is not None:
            self.project_reference = None  # bound now: later calls find it in the registry
        assert session is not None
        return project, normalize_author_name(session.name)

    async def _replayed(self, operation: Callable[[], Awaitable[T]]) -> T:
        """TermAl's ``request_json_with_safe_replay_retry``: replay only a 503 carrying a
        safe-replay clause, at most five attempts, jittered doubling delays, and no replay
        the remaining budget cannot fund (its delay plus the longer of two seconds and the
        slowest attempt so far)."""
        deadline = self._clock() + self.replay.budget
        longest = 0.0
        attempt = 0
        while True:
            attempt += 1
            started = self._clock()
            try:
                return await operation()
            except RetryableError as error:
                longest = max(longest, self._clock() - started)
                if attempt >= self.replay.attempts or not carries_safe_replay_clause(str(error)):
                    raise
                delay = replay_delay(self.session_id, attempt, self.replay.base_delay)
                if deadline - self._clock() < delay + max(self.replay.min_replay_budget, longest):
                    raise
                await self._sleep(delay)

    async def _run(self, operation: Callable[[], Awaitable[T]], *, unknown: bool = False) -> T:
        try:
            return await self._replayed(operation)
        except Exception as error:
            raise board_error(error, unknown) from error

    # ------------------------------------------------------------ the typed API

    async def project(self) -> Project:
        """The project (board scope) this session's calls go to."""

        async def attempt() -> Project:
            return (await self.scope())[0]

        return await self._run(attempt)

    async def list(
        self,
        after_key: str | None = None,
        limit: int | None = None,
        snapshot_generation: int | None = None,
        known_generation: int | None = None,
    ) -> BoardListPage:
        """``termal_board_list``: one page of live heads by key."""

        async def attempt() -> BoardListPage:
            project, _author = await self.scope()
            return await self.writer.list(
                project.id, after_key, limit, snapshot_generation, known_generation
            )

        return await self._run(attempt)

    async def list_all(self) -> tuple[int, builtins.list[BoardHead]]:
        """Every live head, page by page on one snapshot generation (a write between two
        pages is TermAl's 409: the listing restarts, up to three times)."""
        for _restart in range(3):
            page = await self.list()
            entries = list(page.entries)
            try:
                while page.next_after_key is not None:
                    page = await self.list(page.next_after_key, snapshot_generation=page.generation)
                    entries.extend(page.entries)
            except BoardToolError as error:
                if error.kind is ErrorKind.CONFLICT:
                    continue
                raise
            return page.generation, entries
        return page.generation, entries  # pragma: no cover - three writes mid-listing

    async def get(self, key: str) -> BoardGetResult:
        """``termal_board_get``: the live head and the scope generation (404 otherwise)."""

        async def attempt() -> BoardGetResult:
            project, _author = await self.scope()
            return await self.writer.get(project.id, key)

        return await self._run(attempt)

    async def set(
        self,
        key: str,
        *,
        expected_revision: int,
        idempotency_key: str,
        value: Any = _MISSING,
        delete: bool = False,
        state_stamp: str | None = None,
    ) -> BoardSetReceipt:
        """``termal_board_set``: create (``expected_revision`` 0), update, restore or
        delete (``delete=True``, no ``value``) one key by compare-and-swap. ``value`` is
        any JSON value as Python objects (``None`` is JSON null, a value). The receipt
        is checked against the request before it is returned."""
        from termal_tui.store.board.writer import MISSING

        async def attempt() -> BoardSetReceipt:
            project, author = await self.scope()
            return await self.writer.set(
                project.id,
                key,
                expected_revision=expected_revision,
                author_session_id=self.session_id,
                author_name=author,
                idempotency_key=idempotency_key,
                value=MISSING if value is _MISSING else value,
                delete=delete,
                state_stamp=state_stamp,
            )

        receipt = await self._run(attempt, unknown=True)
        mismatch = correlate_receipt(
            receipt,
            key=key,
            expected_revision=expected_revision,
            author_session_id=self.session_id,
            value=value,
            delete=delete,
            state_stamp=state_stamp,
        )
        if mismatch is not None:
            raise BoardToolError(
                ErrorKind.UNKNOWN_OUTCOME,
                f"{BOARD_SET_OUTCOME_UNKNOWN}: coordination board receipt does not correlate "
                f"with the request ({mismatch})",
            )
        return receipt

    # ------------------------------------------------------------ TermAl's JSON calls

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> Any:
        """Run one board tool by TermAl's name on its JSON arguments; returns the JSON
        TermAl's tool returns, or raises BoardToolError."""
        handler = _JSON_CALLS.get(name)
        if handler is None:
            raise BoardToolError(
                ErrorKind.UNKNOWN_TOOL, f"unknown TermAl delegation MCP tool `{name}`"
            )
        given = dict(arguments or {})
        try:
            return await handler(self, given)
        except BoardToolError as error:
            if error.next_call is None:
                error.next_call = board_next_call(name, given, error.kind)
            raise


def board_next_call(name: str, arguments: Mapping[str, Any], kind: ErrorKind) -> Any:
    """The exact call after a board failure, or None (fix the arguments): the same call
    when the table says a retry is safe (a set keeps its idempotencyKey), the key's head
    after a set's conflict, and the first page after a listing's conflict (the board
    changed between pages)."""
    if TABLE[kind].retry_safe:
        return {"name": name, "arguments": dict(arguments)}
    if kind is ErrorKind.CONFLICT and name == "termal_board_set" and "key" in arguments:
        return {"name": "termal_board_get", "arguments": {"key": arguments["key"]}}
    if kind is ErrorKind.CONFLICT and name == "termal_board_list":
        return {"name": "termal_board_list", "arguments": {}}
    return None


async def _json_list(tools: BoardTools, arguments: Mapping[str, Any]) -> dict[str, Any]:
    after_key = None
    if "afterKey" in arguments:
        after_key = required_board_key_shaped(arguments["afterKey"], "afterKey")
    numbers: dict[str, int | None] = {}
    for field in ("limit", "snapshotGeneration", "knownGeneration"):
        numbers[field] = required_u64(arguments[field], field) if field in arguments else None
    page = await tools.list(
        after_key, numbers["limit"], numbers["snapshotGeneration"], numbers["knownGeneration"]
    )
    return fit_page(page.to_wire(), numbers["limit"], READ_RESULT_BUDGET)


def fit_page(wire: dict[str, Any], limit: int | None, budget: int) -> dict[str, Any]:
    """TermAl's page, and beside it ``nextCall`` (the exact call for the next page)
    when there is one. A page over ``budget`` bytes of JSON ends early (at least one entry), with
    TermAl's own continuation: ``nextAfterKey`` is its last key, on the same snapshot
    generation, and ``notes`` says why."""
    entries = wire["entries"]
    notes = []
    if len(entries) > 1 and len(json.dumps(wire, ensure_ascii=False).encode()) > budget:
        kept: list[dict[str, Any]] = []
        used = 0
        for entry in entries:
            size = len(json.dumps(entry, ensure_ascii=False).encode())
            if kept and used + size > budget - 256:
                break
            kept.append(entry)
            used += size
        wire = wire | {"entries": kept, "nextAfterKey": kept[-1]["key"]}
        notes.append(
            f"this page stops at {budget} bytes of entries after {len(kept)} of "
            f"{len(entries)}; nextCall continues on the same generation"
        )
    if wire.get("nextAfterKey") is not None:
        arguments: dict[str, Any] = {
            "afterKey": wire["nextAfterKey"],
            "snapshotGeneration": wire["generation"],
        }
        if limit is not None:
            arguments["limit"] = limit
        wire = wire | {"nextCall": {"name": "termal_board_list", "arguments": arguments}}
    if notes:
        wire["notes"] = notes
    return wire


async def _json_get(tools: BoardTools, arguments: Mapping[str, Any]) -> dict[str, Any]:
    key = required_board_key_shaped(arguments.get("key"), "key")
    return (await tools.get(key)).to_wire()


async def _json_set(tools: BoardTools, arguments: Mapping[str, Any]) -> dict[str, Any]:
    key = required_board_key_shaped(arguments.get("key"), "key")
    expected = required_u64(arguments.get("expectedRevision"), "expectedRevision")
    idempotency_key = required_string(arguments.get("idempotencyKey"), "idempotencyKey")
    state_stamp = optional_nonempty_string(arguments, "stateStamp")
    delete = arguments.get("delete", False)
    if not isinstance(delete, bool):
        # The route's body type has `delete: bool`: axum's JSON rejection (422).
        shown = json.dumps(delete, ensure_ascii=False)
        raise BoardToolError(
            ErrorKind.UNPROCESSABLE,
            "invalid coordination board set JSON: Failed to deserialize the JSON body into "
            f"the target type: delete: invalid type: {_serde_kind(delete)} {shown}, expected "
            "a boolean",
        )
    value = serde_value(arguments["value"]) if "value" in arguments else _MISSING
    receipt = await tools.set(
        key,
        expected_revision=expected,
        idempotency_key=idempotency_key,
        value=value,
        delete=delete,
        state_stamp=state_stamp,
    )
    return receipt.to_wire()


def _serde_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "integer" if isinstance(value, int) else "floating point"
    return "sequence" if isinstance(value, list) else "map"


_JSON_CALLS: dict[str, Callable[[BoardTools, Mapping[str, Any]], Awaitable[Any]]] = {
    "termal_board_list": _json_list,
    "termal_board_get": _json_get,
    "termal_board_set": _json_set,
}
assert tuple(_JSON_CALLS) == BOARD_TOOL_NAMES
