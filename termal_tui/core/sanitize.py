"""Untrusted text → safe visible text.

Everything read from a coordination database (bodies, names, topics, stamps,
ids, timestamps, diagnostics, error values) passes through here before display.

- C0 controls (except newline and tab in multi-line text), DEL and C1 controls
  become visible stand-ins (``␛``, ``␡``, ``⟨C1:9B⟩``).
- Bidi controls and line/paragraph separators become named stand-ins (``⟨RLO⟩``).
- Every other invisible or format character (Unicode category Cf, e.g. U+200B,
  U+00AD, U+2060, the tag characters U+E0000–U+E007F), surrogates, the Hangul
  fillers and variation selectors that do not decorate a visible character
  become ``⟨U+XXXX⟩``, so a person reads exactly what an agent read.
- Kept as they are: ordinary combining marks, one variation selector right after
  a visible character (``❤️``, ideographic variants), and a ZERO WIDTH JOINER
  between two pictographic characters (emoji sequences such as ``👩‍💻``). A ZWJ
  anywhere else is shown.

Nothing is silently dropped: a human should see an injection attempt. Markup
safety is the viewer's job (it never parses agent text as markup).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

_NAMED: Final = {
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
ZWJ: Final = "\u200d"
_HANGUL_FILLERS: Final = "\u115f\u1160\u3164\uffa0"
# Invisible (default-ignorable) characters that are not Cf: always shown.
_ALWAYS: Final = "\u034f\u17b4\u17b5\u180b\u180c\u180d\u2065"


def _is_variation_selector(char: str) -> bool:
    code = ord(char)
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def _is_pictographic(char: str) -> bool:
    """Rough Extended_Pictographic: symbols (So) and the emoji planes, plus skin tones."""
    code = ord(char)
    return unicodedata.category(char) == "So" or 0x1F000 <= code <= 0x1FAFF


def _pictographic_before(text: str, index: int) -> bool:
    """The character before ``index`` (skipping one variation selector / skin tone) is emoji."""
    position = index - 1
    if position >= 0 and (
        _is_variation_selector(text[position]) or 0x1F3FB <= ord(text[position]) <= 0x1F3FF
    ):
        position -= 1
    return position >= 0 and _is_pictographic(text[position])


# Every character that may need a stand-in (each match is decided by _replacement):
# C0/C1/DEL, the named ones, Hangul fillers, variation selectors, the BMP's format
# characters and surrogates (Unicode 14 Cf/Cs, hard-coded: scanning the BMP at import
# costs 60 ms), other default-ignorable invisibles, and the supplementary planes
# (their rare format characters such as the tags U+E0000–U+E007F are checked per match).
_CANDIDATE_CLASS: Final = (
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"
    + "".join(_NAMED)
    + _HANGUL_FILLERS
    + _ALWAYS
    + "\ufe00-\ufe0f\u00ad\u0600-\u0605\u06dd\u070f\u0890-\u0891\u08e2\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U00010000-\U0010ffff]"
)


_CANDIDATES: Final = re.compile(_CANDIDATE_CLASS)


def _code(char: str) -> str:
    return f"\u27e8U+{ord(char):04X}\u27e9"


def _replacement(text: str, index: int, keep_newline_tab: bool) -> str | None:
    """The stand-in for ``text[index]``, or None to keep it."""
    char = text[index]
    code = ord(char)
    if code < 0x20:
        if keep_newline_tab and char in "\n\t":
            return None
        return chr(0x2400 + code)  # ␀ … ␟ (control pictures)
    if code == 0x7F:
        return "\u2421"  # ␡
    if 0x80 <= code <= 0x9F:
        return f"\u27e8C1:{code:02X}\u27e9"  # ⟨C1:9B⟩
    if char in _NAMED:
        return f"\u27e8{_NAMED[char]}\u27e9"
    if char == ZWJ:
        following = text[index + 1] if index + 1 < len(text) else ""
        if following and _is_pictographic(following) and _pictographic_before(text, index):
            return None
        return _code(char)
    if _is_variation_selector(char):
        previous = text[index - 1] if index > 0 else ""
        decorates = (
            previous != ""
            and not _is_variation_selector(previous)
            and unicodedata.category(previous)[0] in "LNSP"
        )
        return None if decorates else _code(char)
    if char in _HANGUL_FILLERS or char in _ALWAYS:
        return _code(char)
    category = unicodedata.category(char)
    if category in ("Cf", "Cs", "Cc"):
        return _code(char)
    return None


def _sanitize(text: str, keep_newline_tab: bool) -> str:
    out: list[str] = []
    last = 0
    for match in _CANDIDATES.finditer(text):
        index = match.start()
        stand_in = _replacement(text, index, keep_newline_tab)
        if stand_in is None:
            continue
        out.append(text[last:index])
        out.append(stand_in)
        last = index + 1
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


_SPACES: Final = re.compile(r"[ \t\n]+")


def visible(text: str) -> str:
    """Keep ``\\n`` and ``\\t``; every other control or invisible character becomes a stand-in."""
    return _sanitize(text, keep_newline_tab=True)


def visible_line(text: str, max_chars: int | None = None) -> str:
    """One display line: runs of space/tab/newline collapse to one space, then stand-ins."""
    collapsed = _SPACES.sub(" ", text).strip(" ")
    safe = _sanitize(collapsed, keep_newline_tab=False)
    return cap(safe, max_chars) if max_chars is not None else safe


def quote(value: object, max_chars: int = 80) -> str:
    """An untrusted value quoted inside an error sentence: visible, one line, capped."""
    return "`" + visible_line(str(value), max_chars) + "`"


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


def is_invisible(char: str) -> bool:
    """True for a character that shows nothing by itself: a control, a format or bidi
    character, a line or paragraph separator, a joiner, a variation selector, a filler."""
    return (
        _replacement(char, 0, keep_newline_tab=False) is not None
        or char == ZWJ
        or _is_variation_selector(char)
    )


def contains_terminal_escape(text: str) -> bool:
    """True if any C0/C1 control (other than newline/tab) or invisible character remains."""
    return _sanitize(text, keep_newline_tab=True) != text
