"""Pure display rules for mailboxes: titles, previews, the processed rule,
lagging participants and the wake prompt (TermAl's rules). No textual/rich."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final

from termal_tui.core.formats import parse_timestamp, preview
from termal_tui.core.models import MailboxMessage, MailboxParticipant, MailboxSummary
from termal_tui.core.sanitize import cap, visible_line

__all__ = [
    "behind_words",
    "first_sentence",
    "format_time",
    "is_processed",
    "lagging_participants",
    "latest_shown",
    "preview",
    "row_title",
    "summary_title",
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


def lagging_participants(
    summary: MailboxSummary, latest: int | None = None
) -> list[MailboxParticipant]:
    """Participants whose cursor is below the latest sequence (by default the summary's
    latest visible one)."""
    top = summary.latest_sequence if latest is None else latest
    return [p for p in summary.participants if p.processed_through < top]


def behind_words(
    summary: MailboxSummary,
    names: int = 2,
    name_chars: int = 14,
    shorten: Callable[[str], str] | None = None,
) -> str:
    """Who is behind, most unread first: ``backend 22 · planner 10`` (at most ``names``
    named, then ``+N more``); "" when no participant's unread rows were counted (a
    session's view counts only its own). ``shorten``: how a visible name is cut (the
    viewer cuts to terminal cells); by default to ``name_chars`` characters."""
    behind = sorted(
        (p for p in summary.participants if p.unread_count > 0),
        key=lambda p: (-p.unread_count, p.display_name.casefold(), p.session_id),
    )
    if not behind:
        return ""
    cut = shorten or (lambda name: cap(name, name_chars))
    words = [f"{cut(visible_line(p.display_name))} {p.unread_count:,}" for p in behind[:names]]
    if len(behind) > names:
        words.append(f"+{len(behind) - names} more")
    return " · ".join(words)


def latest_shown(summary: MailboxSummary) -> int:
    """The one "latest #N" every view shows for a mailbox (card, tab header, palette):
    its latest visible row, or a cursor past it (a hidden control-plane row acknowledged)."""
    return max([summary.latest_sequence, *(p.processed_through for p in summary.participants)])


def format_time(created_at: str) -> str:
    """Local ``YYYY-MM-DD HH:MM:SS``; text that does not parse is shown as visible
    stand-ins (it comes from the database: an unparsable stamp may hide escapes)."""
    try:
        moment = parse_timestamp(created_at).astimezone()
    except (ValueError, OverflowError, TypeError):
        return visible_line(str(created_at), 40)
    return moment.strftime("%Y-%m-%d %H:%M:%S")
