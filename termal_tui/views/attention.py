"""Telling a person who is not looking (headless): what changed between two index reads,
rate-limited, as terminal bytes (bell, OSC 9 and OSC 777 desktop notifications, the
OSC 2 window title). Agent text in a notification is sanitised and stripped of every
character that could end or start an escape sequence."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from termal_tui.core.sanitize import visible_line

BELL: Final = "\a"
NOTIFY_CHARS: Final = 120


def _terminal_safe(text: str, limit: int = NOTIFY_CHARS) -> str:
    """One visible line with no ESC, BEL, ST or ``;`` (OSC 777 separates fields with it)."""
    safe = visible_line(text, limit)
    return "".join("␛" if ch in "\x1b\x07\x9c" else "," if ch == ";" else ch for ch in safe)


def desktop_notification(title: str, body: str) -> str:
    """OSC 777 (urxvt, foot, WezTerm, …) and OSC 9 (iTerm2, Windows Terminal, kitty, …)."""
    title, body = _terminal_safe(title, 60), _terminal_safe(body)
    return f"\x1b]777;notify;{title};{body}\x07\x1b]9;{title}: {body}\x07"


def window_title(unread: int, stuck: int, name: str = "termal-tui", *, more: bool = False) -> str:
    """``\\x1b]2;termal-tui · 12 unread · 2 mailboxes stuck\\x07`` (the terminal's title);
    ``more``: only the loaded cards were checked (``100+ mailboxes stuck``)."""
    parts = [_terminal_safe(name, 60), f"{unread:,} unread"]
    if stuck:
        noun = "mailbox" if stuck == 1 and not more else "mailboxes"
        parts.append(f"{stuck:,}{'+' if more else ''} {noun} stuck")
    return f"\x1b]2;{' · '.join(parts)}\x07"


@dataclass
class Watch:
    """What the last index read showed, and when the last signal went out."""

    mailboxes: tuple[str, ...] = ()  # empty: every mailbox
    every: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _latest: dict[str, int] | None = None
    _stuck: set[tuple[str, str]] = field(default_factory=set)
    _last_signal: float | None = None

    def changes(
        self,
        latest: Mapping[str, tuple[int, str]],
        stuck: Iterable[tuple[str, str]] = (),
    ) -> list[str]:
        """Sentences for what is new since the last call (``latest``: mailbox id →
        (latest sequence, participants); ``stuck``: (mailbox id, problem) pairs). The
        first call only records what is there."""
        watched = {k: v for k, v in latest.items() if not self.mailboxes or k in self.mailboxes}
        stuck_now = {pair for pair in stuck if not self.mailboxes or pair[0] in self.mailboxes}
        news: list[str] = []
        if self._latest is not None:
            for mailbox_id, (sequence, names) in watched.items():
                before = self._latest.get(mailbox_id, 0)
                if sequence > before:
                    count = sequence - before
                    noun = "message" if count == 1 else "messages"
                    news.append(f"{count:,} new {noun} in {names}")
            for mailbox_id, problem in sorted(stuck_now - self._stuck):
                names = watched.get(mailbox_id, (0, mailbox_id))[1]
                news.append(f"stuck hand-off in {names}: {problem}")
        self._latest = {k: v[0] for k, v in watched.items()}
        self._stuck = stuck_now
        return news

    def due(self) -> bool:
        """True (and the clock starts again) when a signal may go out now."""
        now = self.clock()
        if self._last_signal is not None and now - self._last_signal < self.every:
            return False
        self._last_signal = now
        return True


def signal_bytes(news: list[str], *, bell: bool, desktop: bool) -> str:
    if not news:
        return ""
    out = BELL if bell else ""
    if desktop:
        more = f" (+{len(news) - 1:,} more)" if len(news) > 1 else ""
        out += desktop_notification("termal-tui", news[0] + more)
    return out
