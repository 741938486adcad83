"""The versioned delegation review-result object and its stored mailbox envelope.

Request and envelope reject unknown fields at every level; limits follow
termal-compat.md §1.7. No textual or rich here: this is headless core.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

from termal_tui.core.formats import rust_trim

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
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        strict=True,
        frozen=True,
        defer_build=True,
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


class ReviewResultJSONError(ValueError):
    """The request is not the JSON TermAl's serde accepts (TermAl answers 422)."""


_REQUEST_FIELDS: Final = (
    "schemaVersion",
    "status",
    "summary",
    "findings",
    "commandsRun",
    "filesInspected",
    "notes",
    "suggestedTrackerUpdates",
)
_FINDING_FIELDS: Final = ("severity", "file", "line", "message")
_COMMAND_FIELDS: Final = ("command", "status")
_DELEGATION_STATUSES: Final = ("queued", "running", "completed", "failed", "canceled")
_SEVERITIES: Final = ("Critical", "High", "Medium", "Low", "Note")
_U32_MAX: Final = 2**32 - 1


def _json_error(detail: str) -> ReviewResultJSONError:
    return ReviewResultJSONError(f"invalid delegation review result JSON: {detail}")


def _serde_value(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f"string {json.dumps(value, ensure_ascii=False)}"
    if value is None:
        return "null"
    return "sequence" if isinstance(value, list) else "map"


def _expect_object(value: Any, fields: tuple[str, ...], name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _json_error(f"invalid type: {_serde_value(value)}, expected struct {name}")
    for key in value:
        if key not in fields:
            expected = ", ".join(f"`{field}`" for field in fields)
            raise _json_error(f"unknown field `{key}`, expected one of {expected}")
    return value


def _required(value: dict[str, Any], field: str) -> Any:
    if field not in value:
        raise _json_error(f"missing field `{field}`")
    return value[field]


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _json_error(f"invalid type: {_serde_value(value)}, expected a string")
    return value


def _u32(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _json_error(f"invalid type: {_serde_value(value)}, expected u32")
    if not 0 <= value <= _U32_MAX:
        raise _json_error(f"invalid value: integer `{value}`, expected u32")
    return value


def _sequence(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _json_error(f"invalid type: {_serde_value(value)}, expected a sequence")
    return value


def _variant(value: Any, variants: tuple[str, ...]) -> str:
    text = _string(value)
    if text not in variants:
        if len(variants) == 2:
            expected = f"`{variants[0]}` or `{variants[1]}`"
        else:
            expected = "one of " + ", ".join(f"`{variant}`" for variant in variants)
        raise _json_error(f"unknown variant `{text}`, expected {expected}")
    return text


def _decode_request(value: Any) -> dict[str, Any]:
    """TermAl's serde step: exact field set, types, u32 ranges, enum variants (422)."""
    request = _expect_object(value, _REQUEST_FIELDS, "SubmitDelegationReviewResultRequest")
    out: dict[str, Any] = {
        "schemaVersion": _u32(_required(request, "schemaVersion")),
        "status": _variant(_required(request, "status"), _DELEGATION_STATUSES),
        "summary": _string(_required(request, "summary")),
    }
    findings = []
    for item in _sequence(_required(request, "findings")):
        finding = _expect_object(item, _FINDING_FIELDS, "SubmitDelegationReviewFinding")
        file = finding.get("file")
        line = finding.get("line")
        findings.append(
            {
                "severity": _string(_required(finding, "severity")),
                "file": None if file is None else _string(file),
                "line": None if line is None else _u32(line),
                "message": _string(_required(finding, "message")),
            }
        )
    out["findings"] = findings
    commands = []
    for item in _sequence(_required(request, "commandsRun")):
        command = _expect_object(item, _COMMAND_FIELDS, "SubmitDelegationReviewCommand")
        commands.append(
            {
                "command": _string(_required(command, "command")),
                "status": _variant(_required(command, "status"), ("success", "error")),
            }
        )
    out["commandsRun"] = commands
    for field in ("filesInspected", "notes", "suggestedTrackerUpdates"):
        out[field] = [_string(item) for item in _sequence(_required(request, field))]
    return out


def _check_text(label: str, value: str) -> None:
    """TermAl's ``validate_delegation_review_text``: Rust ``trim()`` then a char cap."""
    if not rust_trim(value):
        raise ValueError(f"delegation review result {label} cannot be empty")
    if len(value) > MAX_TEXT_CHARS:
        raise ValueError(f"delegation review result {label} exceeds {MAX_TEXT_CHARS} characters")


def _validate_request(request: dict[str, Any]) -> None:
    """TermAl's ``validate_delegation_review_result_request``, in its order (400)."""
    if request["schemaVersion"] != REVIEW_SCHEMA_VERSION:
        raise ValueError(
            f"unsupported delegation review result schemaVersion {request['schemaVersion']}; "
            f"expected {REVIEW_SCHEMA_VERSION}"
        )
    if request["status"] not in ("completed", "failed"):
        raise ValueError("delegation review result status must be `completed` or `failed`")
    _check_text("summary", request["summary"])
    if len(request["findings"]) > MAX_FINDINGS:
        raise ValueError(f"delegation review result exceeds {MAX_FINDINGS} findings")
    for finding in request["findings"]:
        if finding["severity"] not in _SEVERITIES:
            raise ValueError(f"unsupported review finding severity `{finding['severity']}`")
        _check_text("finding message", finding["message"])
        if finding["file"] is not None:
            _check_text("finding file", finding["file"])
        if finding["line"] == 0:
            raise ValueError("delegation review result finding line must be at least 1")
    for field in ("commandsRun", "filesInspected", "notes", "suggestedTrackerUpdates"):
        if len(request[field]) > MAX_LIST_ITEMS:
            raise ValueError(f"delegation review result `{field}` exceeds {MAX_LIST_ITEMS} items")
    for command in request["commandsRun"]:
        _check_text("command", command["command"])
    for label, field in (
        ("file inspected", "filesInspected"),
        ("note", "notes"),
        ("suggested tracker update", "suggestedTrackerUpdates"),
    ):
        for value in request[field]:
            _check_text(label, value)


def parse_review_result(value: ReviewResult | dict[str, Any]) -> ReviewResult:
    """Validate a request object exactly as TermAl does.

    Raises :class:`ReviewResultJSONError` where TermAl's JSON decoding fails (422) and
    ``ValueError`` with TermAl's sentence where its validation fails (400).
    """
    if isinstance(value, ReviewResult):
        value = value.model_dump(by_alias=True)
    request = _decode_request(value)
    _validate_request(request)
    return ReviewResult.model_construct(
        schema_version=request["schemaVersion"],
        status=request["status"],
        summary=request["summary"],
        findings=[
            ReviewFinding.model_construct(
                severity=item["severity"],
                file=item["file"],
                line=item["line"],
                message=item["message"],
            )
            for item in request["findings"]
        ],
        commands_run=[
            ReviewCommand.model_construct(command=item["command"], status=item["status"])
            for item in request["commandsRun"]
        ],
        files_inspected=request["filesInspected"],
        notes=request["notes"],
        suggested_tracker_updates=request["suggestedTrackerUpdates"],
    )


def build_envelope(
    result: ReviewResult, *, delegation_id: str, child_session_id: str, attempt: int
) -> str:
    """Compact JSON in TermAl's key order; raises ``ValueError`` when too large or blank."""
    summary = rust_trim(result.summary)  # Rust trim(): Unicode White_Space only
    if not summary:
        raise ValueError("delegation review result summary cannot be empty")
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
            f"delegation review result exceeds the {MAX_ENVELOPE_BYTES}-byte aggregate envelope "
            "limit; reduce findings, commands, files, notes, or suggested tracker updates and retry"
        )
    return text


def parse_envelope(body: str) -> ReviewEnvelope:
    """Parse a stored envelope strictly (unknown fields rejected)."""
    return ReviewEnvelope.model_validate_json(body, by_alias=True, by_name=False)
