"""Untrusted text → safe visible text.

Everything an agent wrote (bodies, names, topics, stamps, ids) passes through
here before display. C0 controls (except newline and tab), DEL and C1 controls
become visible stand-ins, bidi overrides are neutralised visibly, and lengths are
capped. Nothing is silently dropped: a human should see an injection attempt.
Markup safety is the viewer's job (it never parses agent text as markup).
"""

from __future__ import annotations

import re
from typing import Final

_BIDI_NAMES: Final = {
    "\u061c": "ALM",
    "\u200e": "LRM",
    "\u200f": "RLM",
    "\u202a": "LRE",
    "\u202b": "RLE",
    "\u202c": "PDF",
    "\u202d": "LRO",
    "\u202e": "RLO",
    "\u2066": "LRI",
    "\u2067": "RLI",
    "\u2068": "FSI",
    "\u2069": "PDI",
    "\u2028": "LS",
    "\u2029": "PS",
    "\ufeff": "BOM",
}


def _stand_in(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (control pictures)
    if code == 0x7F:
        return "\u2421"  # ␡
    if 0x80 <= code <= 0x9F:
        return f"\u27e8C1:{code:02X}\u27e9"  # ⟨C1:9B⟩
    return f"\u27e8{_BIDI_NAMES[char]}\u27e9"  # ⟨RLO⟩


_UNSAFE_MULTILINE: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + "".join(_BIDI_NAMES) + "]")
_UNSAFE_ONE_LINE: Final = re.compile("[\x00-\x1f\x7f-\x9f" + "".join(_BIDI_NAMES) + "]")
_SPACES: Final = re.compile(r"[ \t\n]+")


def visible(text: str) -> str:
    """Keep ``\\n`` and ``\\t``; every other control or bidi character becomes a stand-in."""
    return _UNSAFE_MULTILINE.sub(lambda match: _stand_in(match.group()), text)


def visible_line(text: str, max_chars: int | None = None) -> str:
    """One display line: runs of space/tab/newline collapse to one space, then stand-ins."""
    collapsed = _SPACES.sub(" ", text).strip(" ")
    safe = _UNSAFE_ONE_LINE.sub(lambda match: _stand_in(match.group()), collapsed)
    return cap(safe, max_chars) if max_chars is not None else safe


def cap(text: str, max_chars: int) -> str:
    """Cut to at most ``max_chars`` characters, ending with ``…`` when cut."""
    if max_chars <= 0:
        return ""
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def cap_lines(text: str, max_lines: int) -> tuple[str, int]:
    """First ``max_lines`` lines and how many were left out."""
    lines = text.split("\n")
    if len(lines) <= max_lines:
        return text, 0
    return "\n".join(lines[:max_lines]), len(lines) - max_lines


def contains_terminal_escape(text: str) -> bool:
    """True if raw ESC/CSI/OSC or other C0/C1 controls (not newline/tab) remain."""
    return _UNSAFE_MULTILINE.search(text) is not None
