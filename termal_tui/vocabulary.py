"""One vocabulary for the viewer (headless): plain words first, TermAl's value beside them
where a person may need to look it up, the same words on cards, rows, the health view
and the help screen; relative ages (``3 min ago``) and absolute times with their zone."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from termal_tui.formats import parse_timestamp
from termal_tui.sanitize import visible_line

# The mutable wake state of a row (TermAl's notificationState).
WAKE_WORDS: Final = {
    "durableButNotWoken": "never woken",
    "queuedBehindActiveTurn": "queued behind a turn",
    "recoveredWake": "woken on recovery",
    "deliveredToIdleSession": "woken",
}
WAKE_MEANING: Final = {
    "durableButNotWoken": "stored, but no wake-up reached the receiver yet",
    "queuedBehindActiveTurn": "the receiver was busy; the wake waits for its turn",
    "recoveredWake": "a later check (restart or recovery) woke the receiver",
    "deliveredToIdleSession": "the wake-up prompt reached an idle receiver",
}
# Health findings: the same words on cards, in the health view and in help.
FINDING_WORDS: Final = {
    "receiver-gone": "receiver gone",
    "no-notifier": "nobody listening",
    "never-woken": "never woken",
    "woken-unprocessed": "woken, not processed",
    "lagging": "lagging",
}
FINDING_MEANING: Final = {
    "receiver-gone": "unread mail for a participant who has left the mailbox",
    "no-notifier": "unread mail for a session with no channel server and no recent hook run",
    "never-woken": "unread, and no wake-up went out past the threshold",
    "woken-unprocessed": "woken, but the receiver has not processed it past the threshold",
    "lagging": "the oldest unprocessed row is older than the threshold",
}


def wake_words(state: str) -> str:
    """``never woken (durableButNotWoken)``; an unknown state is shown as it is."""
    word = WAKE_WORDS.get(state)
    safe = visible_line(state, 60)
    return f"{word} ({safe})" if word else safe


def outcome_words(outcome: str | None) -> str:
    """The immutable dispatch outcome of the append receipt."""
    if outcome is None:
        return "not decided yet (NULL: still finalizing, or its writer stopped)"
    return wake_words(outcome)


def unread_at_append_words(depth: int) -> str:
    if depth <= 0:
        return "nothing else was unread for the receiver when it was sent (0)"
    noun = "message" if depth == 1 else "messages"
    return f"{depth:,} other {noun} unread for the receiver when it was sent ({depth:,})"


def age_words(seconds: float) -> str:
    """``just now``, ``45 s ago``, ``3 min ago``, ``5 h ago``, ``2 d ago``."""
    seconds = int(seconds)
    if seconds < 0:
        return "in the future"
    if seconds < 5:
        return "just now"
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 172_800:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86_400:,} d ago"


def relative_age(stamp: str, now: datetime) -> str:
    """``3 min ago`` for a stored timestamp; a stamp that does not parse is shown as it
    is (visible stand-ins)."""
    try:
        moment = parse_timestamp(stamp)
        return age_words((now - moment).total_seconds())
    except (ValueError, OverflowError, TypeError):
        return visible_line(str(stamp), 40)


def absolute_time(stamp: str) -> str:
    """``2026-11-30 12:57:03 CET (UTC+01:00)``: local time with its zone."""
    try:
        moment = parse_timestamp(stamp).astimezone()
    except (ValueError, OverflowError, TypeError):
        return visible_line(str(stamp), 40)
    offset = moment.strftime("%z")
    offset = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    zone = moment.tzname() or ""
    shown = f"{zone} ({offset})" if zone and zone != offset and zone[0] not in "+-" else offset
    return f"{moment.strftime('%Y-%m-%d %H:%M:%S')} {shown}"


def number(value: int) -> str:
    """Every count and sequence the same way: ``1,221``."""
    return f"{value:,}"
