"""Session names: what a name may be, and when two names are one name.

Pure rules, no I/O. A name is stored as given (NFC); it is found and kept unique by its
*key*: compatibility-normalised (fullwidth ``ａ`` is ``a``), case-folded, with every
character that shows nothing removed, and every character that Unicode's confusables
data (UTS #39) says looks like another mapped to that other (Cyrillic ``а``, Greek ``ο``
and Armenian ``օ`` are Latin ``a`` and ``o``). So ``аlice`` and ``ＡＬＩＣＥ`` are the
name ``alice``: registered beside it they are refused, looked up they find it.

Registration also refuses a name whose *skeleton* is a live name's: the full UTS #39
skeleton, taken before case folding, so the ASCII look-alikes ``I``/``l``/``1``/``|``,
``0``/``O`` and ``m``/``rn`` count there too (``Ivan`` and ``lvan`` cannot both be
registered). The key leaves ASCII alone (an ASCII name's key is its lower case, as it
always was), so a registry written before keys knew about look-alikes keeps finding
its ASCII names.

The table is generated from ``confusables.txt`` by ``scripts/gen_confusables.py`` into
``termal_tui/core/_confusables.py`` and imported only for a name that is not plain ASCII:
the hook path, whose names are ASCII, never loads it.
"""

from __future__ import annotations

import unicodedata

from termal_tui.core.sanitize import contains_terminal_escape, visible_line
from termal_tui.store.errors import ValidationError

NAME_MAX_CHARS = 64
_FORBIDDEN_IN_NAMES = frozenset("/\\?#%")


def _fold(name: str) -> str:
    """Compatibility-normalised and case-folded (NFKC_Casefold, near enough), without
    the characters that show nothing: the part of a key that needs no table."""
    from termal_tui.core.sanitize import is_invisible

    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return "".join(ch for ch in text if not is_invisible(ch))


def _plain(name: str) -> bool:
    """ASCII with nothing invisible: its key is its lower case, no table needed."""
    return name.isascii() and name.isprintable()


def name_key(name: str) -> str:
    """The key two names share when a reader cannot tell them apart: case, width,
    compatibility forms, invisible characters and mixed-script look-alikes aside.
    Idempotent: ``name_key(name_key(x)) == name_key(x)``."""
    if _plain(name):
        return name.lower()
    from termal_tui.core._confusables import KEY

    decomposed = unicodedata.normalize("NFD", _fold(name))
    return unicodedata.normalize("NFC", decomposed.translate(KEY))


def name_skeleton(name: str) -> str:
    """What a name looks like to a reader, case included: the UTS #39 skeleton (every
    confusable mapped to its prototype, ASCII ones too: ``I`` and ``1`` are ``l``, ``0``
    is ``O``, ``m`` is ``rn``), then keyed. Two live names must not share one."""
    from termal_tui.core._confusables import SKELETON
    from termal_tui.core.sanitize import is_invisible

    shown = "".join(ch for ch in unicodedata.normalize("NFKC", name) if not is_invisible(ch))
    for _ in range(4):  # case folding can make a prototype (``M``) a source (``m``)
        mapped = name_key(unicodedata.normalize("NFD", shown).translate(SKELETON))
        if mapped == shown:
            break
        shown = mapped
    return shown


def same_name(a: str, b: str) -> bool:
    """Whether two names are one name to a reader (the registration rule)."""
    return name_key(a) == name_key(b) or name_skeleton(a) == name_skeleton(b)


def validate_name(raw: str) -> str:
    """One rule for names, at registration: TermAl's path-identifier rule (what its tools
    can address by name), and nothing an agent or a person could be fooled by — no
    control, bidi, invisible or format character (anything ``sanitize`` would have to
    show as a stand-in), NFC-normalised. Returns the name as it will be stored.
    (Look-alikes of a live name are refused by the registry, which knows the live
    names: ``name_key`` and ``name_skeleton``.)"""
    name = unicodedata.normalize("NFC", raw.strip())
    if not name:
        raise ValidationError("a session name must not be empty")
    if len(name) > NAME_MAX_CHARS:
        raise ValidationError(f"a session name is at most {NAME_MAX_CHARS} characters")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name) or _FORBIDDEN_IN_NAMES & set(name):
        raise ValidationError(
            "a session name must not contain /, \\, ?, #, %, or control characters "
            "(TermAl's tools could not address it by name)"
        )
    if contains_terminal_escape(name):
        raise ValidationError(
            f"a session name must not contain control, bidi, invisible or format "
            f"characters: {visible_line(name, 80)} is not what it shows"
        )
    if name in (".", ".."):
        raise ValidationError("a session name must not be . or ..")
    if name.casefold().startswith("session-"):
        raise ValidationError("a session name must not start with `session-` (that is an id)")
    return name


__all__ = [
    "NAME_MAX_CHARS",
    "name_key",
    "name_skeleton",
    "same_name",
    "validate_name",
]
