"""Byte-exact formats (termal-compat §1.4–1.7) and wire JSON shapes (§2)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from termal_tui.core.formats import (
    clamp_read_limit,
    format_timestamp,
    parse_timestamp,
    participant_key,
    preview,
)
from termal_tui.core.models import AppendReceipt, MailboxMessage, MailboxParticipant, MailboxSummary


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(2026, 7, 30, 12, 34, 56, tzinfo=UTC), "2026-07-30T12:34:56+00:00"),
        (datetime(2026, 7, 30, 12, 34, 56, 123000, tzinfo=UTC), "2026-07-30T12:34:56.123+00:00"),
        (
            datetime(2026, 7, 30, 12, 34, 56, 123456, tzinfo=UTC),
            "2026-07-30T12:34:56.123456+00:00",
        ),
        (1_785_414_896_123_456_789, "2026-07-30T12:34:56.123456789+00:00"),
        (1_785_414_896_000_000_000, "2026-07-30T12:34:56+00:00"),
    ],
)
def test_timestamps_follow_chrono_autosi_with_plus_zero_offset(value, expected):
    assert format_timestamp(value) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2026-07-26T00:00:00Z",
        "2026-07-26T00:00:00+00:00",
        "2026-07-26T00:00:00.500+00:00",
        "2026-07-26T00:00:00.500000+00:00",
        "2026-07-26T00:00:00.500000000+00:00",
    ],
)
def test_readers_parse_z_and_offset_with_any_fraction(text):
    parsed = parse_timestamp(text)
    assert parsed.tzinfo is not None
    assert parsed.replace(microsecond=0) == datetime(2026, 7, 26, tzinfo=UTC)


def test_mixed_timestamp_formats_mis_sort_as_text_like_termal():
    # Edge case 5: plain TEXT order puts the earlier Z form after the later fraction form.
    z_form, fraction_form = "2026-07-26T00:00:00Z", "2026-07-26T00:00:00.5+00:00"
    assert sorted([z_form, fraction_form]) == [fraction_form, z_form]
    assert parse_timestamp(z_form) < parse_timestamp(fraction_form)


def test_participant_key_is_compact_sorted_and_keeps_non_ascii_raw():
    assert participant_key("session-target", "session-sender") == (
        '["session-sender","session-target"]'
    )
    assert participant_key("session-é", "session-a") == '["session-a","session-é"]'
    assert participant_key("session-9", "session-10") == '["session-10","session-9"]'
    assert participant_key('a"b', "a/b") == '["a\\"b","a/b"]'


def test_preview_keeps_160_chars_and_adds_ellipsis_only_when_cut():
    assert preview("x" * 160) == "x" * 160
    assert preview("x" * 161) == "x" * 160 + "…"
    assert preview("é" * 161) == "é" * 160 + "…"  # characters, not bytes
    assert preview("  a \n\t b  ") == "a b"
    assert preview("") == ""


def test_preview_splits_on_unicode_white_space_but_not_information_separators():
    assert preview("a\u3000b\u00a0c") == "a b c"
    assert preview("a\u001cb") == "a\u001cb"  # Python's str.split would split here; Rust doesn't


@pytest.mark.parametrize(("limit", "expected"), [(0, 1), (1, 1), (50, 50), (201, 200), (1000, 200)])
def test_read_limit_clamps(limit, expected):
    assert clamp_read_limit(limit) == expected


def test_participant_json_omits_left_at_when_null():
    active = MailboxParticipant(session_id="s", display_name="S", processed_through=0)
    left = active.replace(left_at="2026-07-26T00:00:00Z")
    assert active.to_json() == '{"sessionId":"s","displayName":"S","processedThrough":0}'
    assert list(left.to_wire()) == ["sessionId", "displayName", "processedThrough", "leftAt"]


def test_summary_json_key_order_and_required_fields():
    summary = MailboxSummary(id="mailbox-1", participants=[], latest_sequence=2, unread_count=1)
    assert summary.to_json() == (
        '{"id":"mailbox-1","participants":[],"latestSequence":2,"unreadCount":1}'
    )
    with pytest.raises(ValueError):
        MailboxSummary.from_wire({"id": "mailbox-1", "participants": []})


def _message(**overrides):
    fields = {
        "id": "mailbox-message-1",
        "mailboxId": "mailbox-1",
        "sequence": 1,
        "senderSessionId": "a",
        "senderName": "A",
        "targetSessionId": "b",
        "targetName": "B",
        "createdAt": "2026-07-26T00:00:00Z",
        "class": "routine",
        "body": "hi",
        "notificationState": "legacyUnknownState",
    }
    fields.update(overrides)
    return MailboxMessage.from_wire(fields)


def test_message_json_never_serializes_store_only_fields():
    message = _message(idempotencyKey="k", unreadDepthAtAppend=3, topic="t")
    wire = message.to_wire()
    assert list(wire) == [
        "id",
        "mailboxId",
        "sequence",
        "senderSessionId",
        "senderName",
        "targetSessionId",
        "targetName",
        "createdAt",
        "class",
        "topic",
        "body",
        "notificationState",
    ]
    assert message.idempotency_key == "k" and message.unread_depth_at_append == 3
    assert "notificationDisposition" not in json.loads(message.to_json())
    assert wire["notificationState"] == "legacyUnknownState"  # unknown states load verbatim


def test_message_input_defaults_key_and_depth():
    message = _message()
    assert (message.idempotency_key, message.unread_depth_at_append) == ("", 0)


def test_receipt_requires_all_six_fields():
    with pytest.raises(ValueError):
        AppendReceipt.from_wire({"mailboxId": "mailbox-1", "messageId": "mailbox-message-1"})
    receipt = AppendReceipt(
        mailbox_id="m",
        message_id="x",
        sequence=1,
        unread_depth=1,
        notification_disposition="durableButNotWoken",
        duplicate=False,
    )
    assert list(receipt.to_wire()) == [
        "mailboxId",
        "messageId",
        "sequence",
        "unreadDepth",
        "notificationDisposition",
        "duplicate",
    ]
