"""One vocabulary for the viewer (headless): plain words first, TermAl's value beside them
where a person may need to look it up, the same words on cards, rows, the health view
and the help screen; relative ages (``3 min ago``) and absolute times with their zone."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from termal_tui.core.formats import parse_timestamp
from termal_tui.core.sanitize import visible_line

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
    """TermAl's ``unread_depth_at_append``: the receiver's unread rows in the mailbox
    when this one was appended, this one included (the writer counts ``COUNT(*) + 1``)."""
    if depth <= 0:  # not a value TermAl writes: shown as stored
        return f"not counted ({depth:,})"
    if depth == 1:
        return "only this one was unread for the receiver when it was sent (1)"
    return f"{depth:,} unread for the receiver when it was sent, this one included ({depth:,})"


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


class Ages:
    """Which relative ages on screen are out of date (headless).

    A widget records the age text each row was drawn with (:meth:`shown`); on its age
    tick, :meth:`changed` names the rows whose text now differs, so only those are
    drawn again (each stamp is parsed once, however often it is checked).
    """

    def __init__(self) -> None:
        self._shown: dict[str, str] = {}
        self._moments: dict[str, tuple[str, datetime | None]] = {}

    def __len__(self) -> int:
        return len(self._shown)

    def words(self, key: str, stamp: str, now: datetime) -> str:
        """The age text for ``stamp`` now (what :func:`relative_age` says)."""
        known = self._moments.get(key)
        if known is not None and known[0] == stamp:
            moment = known[1]
        else:  # first seen, or the key's stamp moved on (a card's latest message)
            try:
                moment = parse_timestamp(stamp)
            except (ValueError, OverflowError, TypeError):
                moment = None
            self._moments[key] = (stamp, moment)
        if moment is None:
            return visible_line(str(stamp), 40)
        try:
            return age_words((now - moment).total_seconds())
        except (ValueError, OverflowError, TypeError):
            return visible_line(str(stamp), 40)

    def shown(self, key: str, stamp: str, now: datetime) -> str:
        """Record (and return) the age text ``key`` is drawn with now."""
        text = self.words(key, stamp, now)
        self._shown[key] = text
        return text

    def changed(self, stamps: dict[str, str], now: datetime) -> list[str]:
        """Keys of ``stamps`` (key → stored timestamp) drawn with an age that now reads
        differently; rows never drawn are left alone."""
        return [
            key
            for key, stamp in stamps.items()
            if key in self._shown and self.words(key, stamp, now) != self._shown[key]
        ]

    def forget(self, keep: set[str] | None = None) -> None:
        """Drop what is no longer on screen (everything, with no ``keep``)."""
        if keep is None:
            self._shown.clear()
            self._moments.clear()
            return
        self._shown = {key: text for key, text in self._shown.items() if key in keep}
        self._moments = {key: seen for key, seen in self._moments.items() if key in keep}


def absolute_time(stamp: str) -> str:
    """``2026-11-30 12:57:03 CET (UTC+01:00)``: local time with its zone."""
    try:
        moment = parse_timestamp(stamp).astimezone()
    except (ValueError, OverflowError, TypeError):
        return visible_line(str(stamp), 40)
    offset = moment.strftime("%z")
    offset = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    zone = moment.tzname() or ""
    if offset == "UTC+00:00" and zone in ("UTC", ""):
        shown = "UTC"  # not "UTC (UTC+00:00)"
    elif zone and zone != offset and zone[0] not in "+-":
        shown = f"{zone} ({offset})"
    else:
        shown = offset
    return f"{moment.strftime('%Y-%m-%d %H:%M:%S')} {shown}"


def counted(value: int, one: str, many: str | None = None) -> str:
    """``1 mailbox``, ``2,000 mailboxes``: a count with its noun, singular for one."""
    return f"{value:,} {one if value == 1 else (many or one + 's')}"


def number(value: int) -> str:
    """Every count and sequence the same way: ``1,221``."""
    return f"{value:,}"
