"""The versioned delegation review-result object and its stored mailbox envelope.

Request and envelope reject unknown fields at every level; limits follow
termal-compat.md §1.7. No textual or rich here: this is headless core.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

REVIEW_SCHEMA_VERSION: Final = 1
REVIEW_KIND: Final = "delegationReviewResult"
MAX_TEXT_CHARS: Final = 16_384
MAX_LIST_ITEMS: Final = 200
MAX_FINDINGS: Final = 100
MAX_ENVELOPE_BYTES: Final = 262_144
MAX_LINE: Final = 2**32 - 1

Text = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)]
TextList = Annotated[list[Text], Field(max_length=MAX_LIST_ITEMS)]


class _Strict(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True, frozen=True
    )


class ReviewFinding(_Strict):
    severity: Literal["Critical", "High", "Medium", "Low", "Note"]
    file: Text | None = None
    line: Annotated[int, Field(ge=1, le=MAX_LINE)] | None = None
    message: Text


class ReviewCommand(_Strict):
    command: Text
    status: Literal["success", "error"]


class ReviewResult(_Strict):
    """``termal_submit_review_result``'s request: all eight fields required, no defaults."""

    schema_version: Literal[1]
    status: Literal["completed", "failed"]
    summary: Text
    findings: Annotated[list[ReviewFinding], Field(max_length=MAX_FINDINGS)]
    commands_run: Annotated[list[ReviewCommand], Field(max_length=MAX_LIST_ITEMS)]
    files_inspected: TextList
    notes: TextList
    suggested_tracker_updates: TextList


class ReviewEnvelope(_Strict):
    """The stored body. List fields default to ``[]`` when parsed."""

    schema_version: Literal[1]
    kind: Literal["delegationReviewResult"]
    delegation_id: str
    child_session_id: str
    submission_attempt: Annotated[int, Field(ge=1)]
    status: Literal["completed", "failed"]
    summary: str
    findings: list[ReviewFinding] = []
    commands_run: list[ReviewCommand] = []
    files_inspected: list[str] = []
    notes: list[str] = []
    suggested_tracker_updates: list[str] = []


def review_state_stamp(delegation_id: str, attempt: int) -> str:
    return f"{delegation_id}:{attempt}"


def review_idempotency_key(delegation_id: str, attempt: int) -> str:
    return f"delegation-review-result-v1-{delegation_id}-{attempt}"


def parse_review_result(value: ReviewResult | dict[str, Any]) -> ReviewResult:
    """Validate a request object; raises ``ValueError`` with a one-line reason."""
    if isinstance(value, ReviewResult):
        return value
    try:
        return ReviewResult.model_validate(value, by_alias=True, by_name=False)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "result"
        raise ValueError(f"invalid delegation review result: {where}: {first['msg']}") from None


def build_envelope(
    result: ReviewResult, *, delegation_id: str, child_session_id: str, attempt: int
) -> str:
    """Compact JSON in TermAl's key order; raises ``ValueError`` when too large or blank."""
    summary = result.summary.strip()
    if not summary:
        raise ValueError("invalid delegation review result: summary must not be blank")
    envelope: dict[str, Any] = {
        "schemaVersion": REVIEW_SCHEMA_VERSION,
        "kind": REVIEW_KIND,
        "delegationId": delegation_id,
        "childSessionId": child_session_id,
        "submissionAttempt": attempt,
        "status": result.status,
        "summary": summary,
        "findings": [
            finding.model_dump(by_alias=True, exclude_none=True) for finding in result.findings
        ],
        "commandsRun": [command.model_dump(by_alias=True) for command in result.commands_run],
        "filesInspected": list(result.files_inspected),
        "notes": list(result.notes),
        "suggestedTrackerUpdates": list(result.suggested_tracker_updates),
    }
    text = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode("utf-8")) > MAX_ENVELOPE_BYTES:
        raise ValueError(
            f"invalid delegation review result: envelope exceeds {MAX_ENVELOPE_BYTES} bytes"
        )
    return text


def parse_envelope(body: str) -> ReviewEnvelope:
    """Parse a stored envelope strictly (unknown fields rejected)."""
    return ReviewEnvelope.model_validate_json(body, by_alias=True, by_name=False)
