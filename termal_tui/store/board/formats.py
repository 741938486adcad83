"""Byte-exact formats of TermAl's coordination board (src/coordination_board.rs,
src/board_routes.rs): limits, messages, validation, canonical JSON, the request
hash, the board's own timestamps and the route's author-name snapshot.

Pure functions, no I/O. JSON is serialised as serde_json does (compact, non-ASCII
raw, floats in ryu's shortest form such as ``1e16`` and ``0.00001``), so the
texts stored in the file, hashed, and appended to error messages match TermAl's.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

# Rust's str::trim, UTF-8 lengths, the clock and its type: shared with the mailboxes.
from termal_tui.core.formats import Clock as Clock
from termal_tui.core.formats import rust_trim, utc_now_ns, utf8_len
from termal_tui.store.errors import StoreError, ValidationError

MAX_KEY_BYTES: Final = 128
MAX_KEY_SEGMENTS: Final = 8
MAX_VALUE_BYTES: Final = 4 * 1024
MAX_VALUE_DEPTH: Final = 32
MAX_IDEMPOTENCY_KEY_BYTES: Final = 256
MAX_STATE_STAMP_BYTES: Final = 256
MAX_SCOPE_ID_BYTES: Final = 256
MAX_AUTHOR_ID_BYTES: Final = 256
MAX_AUTHOR_NAME_BYTES: Final = 256
DEFAULT_PAGE_SIZE: Final = 100
MAX_PAGE_SIZE: Final = 200
MAX_LIVE_ENTRIES_PER_SCOPE: Final = 512
MAX_DISTINCT_KEYS_PER_SCOPE: Final = 4_096
HISTORY_REVISIONS_PER_KEY: Final = 100
IDEMPOTENCY_RECEIPTS_PER_SCOPE: Final = 4_096
WRITE_DEADLINE_SECONDS: Final = 5.0
LIFECYCLE_CLEANUP_SECONDS: Final = 0.1
BUSY_TIMEOUT_MS: Final = 5000
MAX_U64: Final = 2**64 - 1
UNNAMED_AUTHOR: Final = "Unnamed session"
TOMBSTONE_HASH_FIELD: Final = "<tombstone>"

READ_SAFE_RETRY_CLAUSE: Final = (
    "no mutation was attempted by this read operation, so retry the same request"
)
WRITE_SAFE_RETRY_CLAUSE: Final = (
    "no coordination board write was committed by this operation, so retry the same request"
)

# Operation names in TermAl's busy sentences.
OP_CONNECTION: Final = "waiting for the coordination board connection"
OP_BEGIN_UPDATE: Final = "beginning coordination board update"
OP_COMMIT_UPDATE: Final = "committing coordination board update"
OP_WAIT_DELETE_SCOPE: Final = "waiting to delete the coordination board scope"
OP_ADMIT_DELETE_SCOPE: Final = "deleting coordination board scope"
OP_BEGIN_DELETE_SCOPE: Final = "beginning coordination board scope deletion"
OP_COMMIT_DELETE_SCOPE: Final = "committing coordination board scope deletion"

KEY_GRAMMAR_MESSAGE: Final = (
    "coordination board keys must use 1 to 8 lowercase alphanumeric segments separated by "
    "dots; `_` and `-` are allowed after the first character of a segment"
)
VALUE_AND_DELETE_MESSAGE: Final = (
    "`value` and `delete: true` are mutually exclusive; omit `value` to delete"
)
NEITHER_VALUE_NOR_DELETE_MESSAGE: Final = (
    "provide `value` to set (JSON null is a value) or `delete: true` to delete"
)

# Rust's char::is_control: general category Cc.
_CONTROL: Final = re.compile("[\u0000-\u001f\u007f-\u009f]")
_SEGMENT: Final = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")

# ------------------------------------------------------------------ errors and busy text


def busy_message(operation: str, *, read: bool = False) -> str:
    clause = READ_SAFE_RETRY_CLAUSE if read else WRITE_SAFE_RETRY_CLAUSE
    return f"coordination board storage is temporarily busy while {operation}; {clause}"


def with_detail(message: str, detail: dict[str, Any] | None) -> str:
    """board_api_error: the store message plus ``; detail: {json}`` (sorted keys, compact)."""
    if not detail:
        return message
    return f"{message}; detail: {dumps(detail, sort_keys=True)}"


def internal_error(context: str, error: BaseException | str) -> StoreError:
    """TermAl's catch-all 500 text for a failure that is not a typed board error."""
    return StoreError(f"coordination board operation failed: {context}: {error}")


# ------------------------------------------------------------------ text, keys, names


def validate_text_field(field: str, value: object, maximum_bytes: int) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"coordination board {field} must be a string")
    if not rust_trim(value):
        raise ValidationError(f"coordination board {field} must not be empty")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(f"coordination board {field} is not valid UTF-8") from None
    if size > maximum_bytes:
        raise ValidationError(f"coordination board {field} exceeds the {maximum_bytes}-byte limit")
    if _CONTROL.search(value):
        raise ValidationError(f"coordination board {field} must not contain control characters")
    return value


def validate_scope_id(scope_id: object) -> str:
    return validate_text_field("scope project id", scope_id, MAX_SCOPE_ID_BYTES)


def validate_key(key: object) -> str:
    if not isinstance(key, str):
        raise ValidationError("coordination board key must be a string")
    if not key or utf8_len(key) > MAX_KEY_BYTES:
        raise ValidationError(f"coordination board key must contain 1 to {MAX_KEY_BYTES} bytes")
    segments = key.split(".")
    if len(segments) > MAX_KEY_SEGMENTS or not all(_SEGMENT.match(s) for s in segments):
        raise ValidationError(KEY_GRAMMAR_MESSAGE)
    return key


def normalize_author_name(session_name: str) -> str:
    """The route's ``coordination_board_author_name``: trim, control characters to spaces,
    at most 256 UTF-8 bytes (whole characters), trim again, ``Unnamed session`` if empty."""
    out: list[str] = []
    size = 0
    for char in rust_trim(session_name):
        if _CONTROL.match(char):
            char = " "
        width = utf8_len(char)
        if size + width > MAX_AUTHOR_NAME_BYTES:
            break
        out.append(char)
        size += width
    normalized = rust_trim("".join(out))
    return normalized or UNNAMED_AUTHOR


def check_u64(label: str, value: object, error: type[ValidationError] = ValidationError) -> int:
    """A request's u64 (bools are not integers here). TermAl's typed routes refuse
    anything else while deserializing, so the sentence is ours."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_U64:
        raise error(f"`{label}` must be an integer between 0 and {MAX_U64}")
    return value


# ------------------------------------------------------------------ timestamps


now_ns: Final = utc_now_ns  # the mailboxes' clock: one definition in termal_tui.core.formats


def format_board_timestamp(value: datetime | int) -> str:
    """chrono's ``to_rfc3339_opts(SecondsFormat::Millis, true)``: always three fractional
    digits (truncated) and ``Z``, e.g. ``2026-07-30T12:34:56.123Z``. The mailboxes'
    timestamps differ (``+00:00`` and a variable fraction)."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        millis = value.microsecond // 1000
        whole = value.replace(microsecond=0)
    else:
        seconds, nanos = divmod(value, 1_000_000_000)
        millis = nanos // 1_000_000
        whole = datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
    return f"{whole.strftime('%Y-%m-%dT%H:%M:%S')}.{millis:03d}Z"


# ------------------------------------------------------------------ JSON as serde_json


_I64_MIN: Final = -(2**63)


def _is_serde_int(value: int) -> bool:
    return _I64_MIN <= value <= MAX_U64


def ryu_float(value: float) -> str:
    """serde_json's float text (ryu ``format_finite``): shortest digits, ``1e16``,
    ``1e-7``, ``0.00001``, ``100.0``, ``-0.0``."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    text = repr(abs(value))
    mantissa, _, exponent_text = text.partition("e")
    integer, _, fraction = mantissa.partition(".")
    digits = (integer + fraction).lstrip("0")
    exponent = int(exponent_text or 0) - len(fraction)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    length = len(digits)
    kk = length + exponent  # 10^(kk-1) <= value < 10^kk
    if exponent >= 0 and kk <= 16:
        body = digits + "0" * exponent + ".0"
    elif 0 < kk <= 16:
        body = digits[:kk] + "." + digits[kk:]
    elif -5 < kk <= 0:
        body = "0." + "0" * (-kk) + digits
    elif length == 1:
        body = f"{digits}e{kk - 1}"
    else:
        body = f"{digits[0]}.{digits[1:]}e{kk - 1}"
    return sign + body


_encode_string: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]


def _encode(value: Any, sort_keys: bool, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_encode_string(value))
    elif isinstance(value, int):
        out.append(str(value) if _is_serde_int(value) else ryu_float(_int_as_float(value)))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("NaN and infinite numbers are not JSON")
        out.append(ryu_float(value))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, sort_keys, out)
        out.append("]")
    elif isinstance(value, dict):
        items = list(value.items())
        for name, _ in items:
            if not isinstance(name, str):
                raise ValueError(f"object keys must be strings, not {type(name).__name__}")
        if sort_keys:
            items.sort(key=lambda item: item[0])
        out.append("{")
        for index, (name, item) in enumerate(items):
            if index:
                out.append(",")
            out.append(_encode_string(name))
            out.append(":")
            _encode(item, sort_keys, out)
        out.append("}")
    else:
        raise ValueError(f"{type(value).__name__} is not a JSON value")


def _int_as_float(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        raise ValueError("number out of range") from None


def dumps(value: Any, *, sort_keys: bool = False) -> str:
    """serde_json ``to_string`` of a JSON value held as Python objects (dict order kept
    unless ``sort_keys``: serde_json's own maps are sorted). Raises ``ValueError``."""
    out: list[str] = []
    _encode(value, sort_keys, out)
    return "".join(out)


_POW10: Final = tuple(float(f"1e{n}") for n in range(309))
_I32_MAX: Final = 2**31 - 1


def _f64_from_parts(positive: bool, significand: int, exponent: int) -> float:
    """serde_json's ``f64_from_parts`` without ``float_roundtrip`` (TermAl's build): the
    significand times or divided by one power of ten, so some decimals land one unit in
    the last place away from the nearest double, exactly as TermAl stores them."""
    value = float(significand)
    while True:
        if abs(exponent) < len(_POW10):
            if exponent >= 0:
                value *= _POW10[exponent]
                if math.isinf(value):
                    raise ValueError("number out of range")
            else:
                value /= _POW10[-exponent]
            break
        if value == 0.0:
            break
        if exponent >= 0:
            raise ValueError("number out of range")
        value /= 1e308
        exponent += 308
    return value if positive else -value


def serde_number(text: str) -> int | float:
    """A JSON number literal as serde_json 1.0 parses it into a ``Value``: integers that
    fit u64 (or i64 when negative) stay integers, ``-0`` is ``-0.0``; everything else is
    an f64 built from the leading digits that fit a u64 (later digits are dropped, not
    rounded) and a power of ten. Raises ``ValueError`` (out of range)."""
    positive = not text.startswith("-")
    digits = text if positive else text[1:]
    mantissa, _, exponent_text = digits.replace("E", "e").partition("e")
    integer, dot, fraction = mantissa.partition(".")
    significand = 0
    exponent = 0
    overflowed = False
    for char in integer:
        if overflowed:
            exponent += 1  # parse_long_integer: the digit is dropped, its place kept
            continue
        grown = significand * 10 + int(char)
        if grown > MAX_U64:
            overflowed = True
            exponent += 1
            continue
        significand = grown
    if not dot and not exponent_text and not overflowed:
        if positive:
            return significand
        if significand <= 2**63 and significand != 0:
            return -significand
        return -float(significand)  # -0 and below i64::MIN are floats
    for char in fraction:  # (even after dropped integer digits, as serde_json does)
        grown = significand * 10 + int(char)
        if grown > MAX_U64:
            break  # parse_decimal_overflow: the remaining digits are dropped
        significand = grown
        exponent -= 1
    if exponent_text:
        exponent_positive = not exponent_text.startswith("-")
        magnitude = exponent_text.lstrip("+-")
        value = 0
        for char in magnitude:
            value = value * 10 + int(char)
            if value > _I32_MAX:  # parse_exponent_overflow
                if significand != 0 and exponent_positive:
                    raise ValueError("number out of range")
                return 0.0 if positive else -0.0
        exponent += value if exponent_positive else -value
        exponent = max(-(2**31), min(_I32_MAX, exponent))  # i32 saturating arithmetic
    return _f64_from_parts(positive, significand, exponent)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _sorted_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """serde_json's default map: sorted by key, the last duplicate wins."""
    return dict(sorted(pairs, key=lambda pair: pair[0]))


def loads(text: str) -> Any:
    """Parse JSON text as serde_json parses it into a ``Value`` (TermAl's routes): numbers
    as :func:`serde_number`, objects key-sorted (the last duplicate wins), NaN/Infinity
    refused. Values parsed here canonicalise, hash and store exactly as TermAl's would.
    Raises ``ValueError``."""
    return json.loads(
        text,
        parse_int=serde_number,
        parse_float=serde_number,
        parse_constant=_reject_constant,
        object_pairs_hook=_sorted_object,
    )


def value_depth(value: Any) -> int:
    """Nesting depth of arrays/objects (a scalar is 0, ``[]`` is 1), without recursion."""
    maximum = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, parent = pending.pop()
        depth = parent + 1
        if isinstance(item, (list, tuple)):
            maximum = max(maximum, depth)
            pending.extend((child, depth) for child in item)
        elif isinstance(item, dict):
            maximum = max(maximum, depth)
            pending.extend((child, depth) for child in item.values())
    return maximum


def canonical_value(value: Any) -> str:
    """TermAl's ``canonical_coordination_board_value``: depth ≤ 32, object keys sorted at
    every level, compact serde_json text of at most 4096 bytes."""
    if value_depth(value) > MAX_VALUE_DEPTH:
        raise ValidationError(
            f"coordination board value exceeds the maximum JSON depth of {MAX_VALUE_DEPTH}"
        )
    try:
        encoded = dumps(value, sort_keys=True)
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(
            "coordination board value is not JSON: a string holds a lone surrogate"
        ) from None
    except ValueError as error:
        raise ValidationError(f"coordination board value is not JSON: {error}") from None
    if size > MAX_VALUE_BYTES:
        raise ValidationError(
            f"coordination board value exceeds the {MAX_VALUE_BYTES}-byte canonical JSON limit"
        )
    return encoded


def request_hash(
    scope_id: str,
    key: str,
    expected_revision: int,
    canonical: str | None,
    state_stamp: str | None,
) -> str:
    """``coordination_board_request_hash``: SHA-256 over length-prefixed (u64 big-endian)
    scope, key, expected revision, canonical value (or ``<tombstone>``) and state stamp."""
    hasher = hashlib.sha256()
    for field in (
        scope_id,
        key,
        str(expected_revision),
        TOMBSTONE_HASH_FIELD if canonical is None else canonical,
        state_stamp or "",
    ):
        data = field.encode("utf-8")
        hasher.update(len(data).to_bytes(8, "big"))
        hasher.update(data)
    return hasher.hexdigest()
