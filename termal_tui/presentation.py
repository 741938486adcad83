"""Pure display rules for mailboxes: titles, previews, the processed rule,
lagging participants, cursor dividers and newest-first merging. No textual/rich."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from termal_tui.models import MailboxMessage, MailboxParticipant, MailboxSummary, UnreadWakeup
from termal_tui.sanitize import visible_line
from termal_tui.store.formats import parse_timestamp, preview

__all__ = [
    "Divider",
    "divider_positions",
    "first_sentence",
    "format_time",
    "is_processed",
    "lagging_participants",
    "merge_newest_first",
    "preview",
    "row_title",
    "summary_title",
    "wake_prompt",
]

# JavaScript's \s (what TermAl's UI uses): Unicode White_Space plus U+FEFF.
_JS_SPACE: Final = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_SPACES: Final = re.compile(f"[{_JS_SPACE}]+")
_SENTENCE_BOUNDARY: Final = re.compile(f"[.!?](?:[{_JS_SPACE}]|$)")


def js_trim(text: str) -> str:
    """JavaScript's ``String.prototype.trim``."""
    return text.strip(_JS_SPACE.replace("\u2000-\u200a", "".join(map(chr, range(0x2000, 0x200B)))))


def first_sentence(body: str | None) -> str:
    """TermAl's ``firstSentence``: collapse all whitespace, trim, then cut after the first
    ``.``, ``!`` or ``?`` that is followed by whitespace or the end."""
    normalized = js_trim(_JS_SPACES.sub(" ", body or ""))
    if not normalized:
        return ""
    boundary = _SENTENCE_BOUNDARY.search(normalized)
    return normalized[: boundary.start() + 1] if boundary else normalized


def row_title(message: MailboxMessage) -> str:
    """TermAl's ``mailboxMessageTopic``: topic trimmed, else the first sentence, else
    ``Message #N``."""
    return (
        js_trim(message.topic or "")
        or first_sentence(message.body)
        or f"Message #{message.sequence}"
    )


def summary_title(summary: MailboxSummary) -> str:
    """Participants as ``A ⇄ B`` in TermAl's participant order."""
    names = [participant.display_name for participant in summary.participants]
    return " ⇄ ".join(names) if names else summary.id


def is_processed(message: MailboxMessage, participants: Iterable[MailboxParticipant]) -> bool:
    """Processed iff the message's target participant's cursor has reached it."""
    for participant in participants:
        if participant.session_id == message.target_session_id:
            return message.sequence <= participant.processed_through
    return False


def lagging_participants(summary: MailboxSummary) -> list[MailboxParticipant]:
    """Participants whose cursor is below the mailbox's latest visible sequence."""
    return [p for p in summary.participants if p.processed_through < summary.latest_sequence]


@dataclass(frozen=True)
class Divider:
    participant: MailboxParticipant

    @property
    def label(self) -> str:
        departed = " (departed)" if self.participant.departed else ""
        return (
            f"{self.participant.display_name}{departed} has processed to here "
            f"(#{self.participant.processed_through})"
        )


def divider_positions(
    messages: Sequence[MailboxMessage], summary: MailboxSummary
) -> dict[int, list[Divider]]:
    """Row index → dividers to draw just above it, for newest-first ``messages``.

    A lagging participant's divider goes before the first row at or below its
    cursor. A cursor below every loaded row draws nothing until that row loads.
    """
    placed: dict[int, list[Divider]] = {}
    for participant in lagging_participants(summary):
        for index, message in enumerate(messages):
            if message.sequence <= participant.processed_through:
                placed.setdefault(index, []).append(Divider(participant))
                break
    return placed


def merge_newest_first(
    existing: Sequence[MailboxMessage], incoming: Iterable[MailboxMessage]
) -> list[MailboxMessage]:
    """Union by message id (incoming wins), sorted newest first by sequence."""
    by_id = {message.id: message for message in existing}
    for message in incoming:
        by_id[message.id] = message
    return sorted(by_id.values(), key=lambda message: message.sequence, reverse=True)


def wake_prompt(wake: UnreadWakeup) -> str:
    """TermAl's compact wake-up prompt: metadata only, never the body (compat §1.8)."""
    return (
        "[TermAl mailbox notification]\n"
        f"Mailbox `{wake.mailbox_id}` has {wake.unread_count} unread message(s). "
        f"Latest inbound: #{wake.sequence} from {wake.sender_name}.\n"
        "First use `termal_list_mailboxes` to obtain your current `processedThrough` cursor, "
        "then use `termal_read_mailbox` with this mailbox id to fetch durable message bodies. "
        "After processing, call `termal_acknowledge_mailbox` with that cursor as "
        "`expectedProcessedThrough`."
    )


def format_time(created_at: str) -> str:
    """Local ``YYYY-MM-DD HH:MM:SS``; text that does not parse is shown as visible
    stand-ins (it comes from the database: an unparsable stamp may hide escapes)."""
    try:
        moment = parse_timestamp(created_at).astimezone()
    except (ValueError, OverflowError, TypeError):
        return visible_line(str(created_at), 40)
    return moment.strftime("%Y-%m-%d %H:%M:%S")
