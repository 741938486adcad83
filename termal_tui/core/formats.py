"""Byte-exact TermAl formats: timestamps, ids, participant keys, limits, previews."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

from termal_tui.store.errors import ValidationError

MAX_BODY_BYTES: Final = 256 * 1024
MAX_METADATA_BYTES: Final = 4 * 1024
MAX_IDEMPOTENCY_KEY_BYTES: Final = 256
READ_LIMIT_DEFAULT: Final = 50
READ_LIMIT_MAX: Final = 200
PREVIEW_CHARS: Final = 160
NEVER_WOKEN_PASS_CAP: Final = 16
REQUEST_DEADLINE_SECONDS: Final = 5.0
BUSY_TIMEOUT_MS: Final = 5000

CLASS_NOT_SUPPORTED: Final = (
    "durable mailboxes currently support only class `routine`; STOP/urgent delivery is not active"
)


def utf8_len(text: str) -> int:
    """Bytes as TermAl counts them (a lone surrogate counts, as it would reach Rust)."""
    return len(text.encode("utf-8", "surrogatepass"))


def idempotency_key_too_long(key: str) -> bool:
    """The contract's key limit (256 UTF-8 bytes), for the store and the tools alike."""
    return utf8_len(key) > MAX_IDEMPOTENCY_KEY_BYTES


def class_supported(message_class: str | None) -> bool:
    """Only ``routine`` (or no class) is deliverable today."""
    return message_class is None or message_class == "routine"


# Rust's char::is_whitespace is the Unicode White_Space property. Python's
# str.split() additionally splits on U+001C..U+001F, which Rust does not.
UNICODE_WHITE_SPACE: Final = frozenset(
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

Clock = Callable[[], "datetime | int"]
"""Returns an aware/naive-UTC datetime, or integer nanoseconds since the epoch."""

IdSource = Callable[[], str]
"""Returns the UUID part of a new id (lowercase, hyphenated)."""


def utc_now_ns() -> int:
    return time.time_ns()


def format_timestamp(value: datetime | int) -> str:
    """chrono's ``to_rfc3339()``: ``+00:00`` offset and AutoSi fractional digits."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        whole = value.replace(microsecond=0)
        nanos = value.microsecond * 1000
    else:
        seconds, nanos = divmod(value, 1_000_000_000)
        whole = datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
    text = whole.strftime("%Y-%m-%dT%H:%M:%S")
    if nanos == 0:
        fraction = ""
    elif nanos % 1_000_000 == 0:
        fraction = f".{nanos // 1_000_000:03d}"
    elif nanos % 1_000 == 0:
        fraction = f".{nanos // 1_000:06d}"
    else:
        fraction = f".{nanos:09d}"
    return f"{text}{fraction}+00:00"


def parse_timestamp(text: str) -> datetime:
    """Parse ``Z`` or ``+00:00`` with 0, 3, 6 or 9 fractional digits into an aware UTC datetime."""
    try:  # the common case, TermAl's own stamps, in one C call
        parsed = datetime.fromisoformat(text)
    except (ValueError, TypeError):
        pass
    else:
        offset = parsed.utcoffset()
        if offset is not None:
            return parsed if not offset else parsed.astimezone(UTC)
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    main, sep, rest = value.partition(".")
    if sep:
        digits = ""
        for index, char in enumerate(rest):
            if not char.isdigit():
                suffix = rest[index:]
                break
            digits += char
        else:
            suffix = ""
        value = f"{main}.{(digits + '000000')[:6]}{suffix}"
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def new_uuid() -> str:
    # uuid4's text from os.urandom (the uuid module costs every send ~3 ms to import).
    value = int.from_bytes(os.urandom(16), "big")
    value = (value & ~(0xF000 << 64)) | (4 << 76)  # version 4
    value = (value & ~(0xC000 << 48)) | (0x8000 << 48)  # RFC 4122 variant
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def mailbox_id_from(uuid_text: str) -> str:
    return f"mailbox-{uuid_text}"


def message_id_from(uuid_text: str) -> str:
    return f"mailbox-message-{uuid_text}"


def participant_key(left: str, right: str) -> str:
    """serde_json of the two ids sorted by code point, compact, non-ASCII raw."""
    return json.dumps(sorted([left, right]), separators=(",", ":"), ensure_ascii=False)


def rust_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] in UNICODE_WHITE_SPACE:
        start += 1
    while end > start and text[end - 1] in UNICODE_WHITE_SPACE:
        end -= 1
    return text[start:end]


_WHITE_SPACE_RUN: Final = re.compile("[" + "".join(sorted(UNICODE_WHITE_SPACE)) + "]+")


def split_whitespace(text: str) -> list[str]:
    """Rust ``str::split_whitespace``: split on Unicode White_Space, drop empties."""
    return [word for word in _WHITE_SPACE_RUN.split(text) if word]


# Python's \s is a superset of Unicode White_Space: text with no whitespace but
# single inner spaces has nothing for split_whitespace to collapse (``preview``'s fast path).
_OTHER_WHITESPACE: Final = re.compile(r"[^\S ]")


def preview(body: str) -> str:
    """TermAl's ``mailbox_preview``: collapse whitespace, keep 160 chars, then ``…``."""
    needs_collapse = (
        body.startswith(" ")
        or body.endswith(" ")
        or "  " in body
        or _OTHER_WHITESPACE.search(body) is not None
    )
    single_line = " ".join(split_whitespace(body)) if needs_collapse else body
    if len(single_line) > PREVIEW_CHARS:
        return single_line[:PREVIEW_CHARS] + "…"
    return single_line


U64_MAX: Final = 2**64 - 1
I64_MAX: Final = 2**63 - 1


def check_count(label: str, value: object) -> int:
    """A request's non-negative integer as serde's ``as_u64`` takes it (bools are not
    integers, nor is anything above 2**64 - 1), else TermAl's 400."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= U64_MAX:
        raise ValidationError(f"{label} must be a non-negative integer")
    return value


def check_position(label: str, value: object) -> int:
    """A sequence to read from: a ``check_count`` that SQLite can also hold. TermAl binds
    a u64 above 2**63 - 1 and fails with a 500 ("out of range integral type conversion");
    here it is the request's fault, so a 400."""
    number = check_count(label, value)
    if number > I64_MAX:
        raise ValidationError(f"{label} must be at most {I64_MAX} (the largest sequence)")
    return number


def clamp_read_limit(limit: int) -> int:
    return max(1, min(READ_LIMIT_MAX, limit))
