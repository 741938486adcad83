"""The viewer's own colours, derived from each theme so that they read everywhere.

A theme's ``$error``, ``$warning`` or ``$foreground 50%`` can be illegible on its own
surfaces (``$warning`` on textual-light's grey is 1.03:1), and Textual's cursor
(``$primary`` under ``$text``) lets no coloured mark through. The app adds these CSS
variables to every theme (:meth:`MailboxApp.get_css_variables`), each chosen against
every background the lists and headers draw on, the cursor included:

``$termal-cursor`` / ``$termal-cursor-blurred``
    The highlighted card or row: the surface tinted toward ``$primary`` and moved away
    from the text's side (a darker band under light text, a lighter one under dark
    text), so that the colours below read on it as they do on the list.
``$termal-text`` / ``$termal-cursor-text``
    Bright text (unread rows, names): ``$foreground``, made legible where it is not.
``$termal-error`` / ``$termal-warning`` / ``$termal-success`` / ``$termal-accent``
    ⚠ markers and reasons, ● Unread marks, ✓ marks, dividers: the theme's colour, moved
    toward white or black (hue kept) only as far as it must.
``$termal-muted`` / ``$termal-dim``
    Ages and labels; processed rows: ``$termal-text`` with an alpha, so Textual blends
    them on whatever background they are drawn on (dimmer than bright text on each),
    the alpha as low as still reads.

Themes in ANSI colours (``ansi-dark``, ``ansi-light``) leave the colours to the
terminal's palette: the variables are the theme's own.
"""

from __future__ import annotations

import math
from typing import Final

from textual.color import Color

from termal_tui.tui.contrast import (
    BLACK,
    RGB,
    STEPS,
    TEXT_MINIMUM,
    WHITE,
    blend,
    contrast_ratio,
    hex_color,
    legible,
    relative_luminance,
)

# Text on the cursor and off it is held to WCAG AA with some room (a terminal's own
# rounding, 256-colour approximations); bright text to AAA where the theme allows.
MINIMUM: Final = TEXT_MINIMUM + 0.3
BRIGHT_MINIMUM: Final = 7.0
# How far processed rows and labels are faded at most (Textual's $foreground 50% / 65%).
DIM_ALPHA: Final = 0.5
MUTED_ALPHA: Final = 0.65
MUTED_MINIMUM: Final = 5.5  # labels and ages a little brighter than processed rows
# The cursor: the list's surface tinted toward $primary, then moved away from the text's
# side (darker under light text, lighter under dark text) until it stands this far from
# the surface: what reads on the list reads on the cursor too, and a light primary on a
# dark theme does not wash every colour out. Blurred: the same, fainter.
CURSOR_TINT: Final = 0.3
CURSOR_STRENGTH: Final = 1.3
BLURRED_STRENGTH: Final = 1.15
FOCUS_TINT: Final = 0.05  # Textual's OptionList:focus { background-tint: $foreground 5% }
ROLES: Final = ("error", "warning", "success", "accent")
NAMES: Final = (
    "termal-cursor",
    "termal-cursor-blurred",
    "termal-cursor-text",
    "termal-text",
    "termal-muted",
    "termal-dim",
    *(f"termal-{role}" for role in ROLES),
)


def _rgb(value: str, under: RGB | None = None) -> RGB:
    color = Color.parse(value)
    if color.ansi is not None or color.auto:
        raise ValueError(f"not a fixed colour: {value!r}")
    own = (color.r, color.g, color.b)
    return blend(under, own, color.a) if under is not None and color.a < 1 else own


def fade_alpha(text: RGB, backgrounds: list[RGB], minimum: float, least: float) -> float:
    """The lowest alpha, ``least`` or more, at which ``text`` blended on each of
    ``backgrounds`` still reaches ``minimum`` against it; 1.0 when even the full colour
    does not."""
    for percent in range(round(least * 100), 101):
        alpha = percent / 100
        if all(contrast_ratio(blend(b, text, alpha), b) >= minimum for b in backgrounds):
            return alpha
    return 1.0


def cursor_tint(surface: RGB, primary: RGB, text: RGB, strength: float) -> RGB:
    """``surface`` tinted toward ``primary`` (CURSOR_TINT), then darkened (light text)
    or lightened (dark text) until it stands ``strength`` from ``surface``. Where that
    side has no room (a white list under dark text), the tint alone, toward the text's
    side, no stronger than ``strength``."""
    tinted = blend(surface, primary, CURSOR_TINT)
    light_text = relative_luminance(text) > relative_luminance(surface)
    away = BLACK if light_text else WHITE
    for step in range(STEPS + 1):
        candidate = blend(tinted, away, step / STEPS)
        darker = relative_luminance(candidate) < relative_luminance(surface)
        if darker == light_text and contrast_ratio(candidate, surface) >= strength:
            return candidate
    for percent in range(round(CURSOR_TINT * 100), 4, -1):
        tinted = blend(surface, primary, percent / 100)
        if contrast_ratio(tinted, surface) <= strength:
            return tinted
    return blend(surface, primary, 0.05)


def legible_variables(variables: dict[str, str]) -> dict[str, str]:
    """The ``termal-*`` variables for a theme's generated ``variables`` (Textual's
    ``ColorSystem.generate()`` with the theme's own ``variables``)."""
    try:
        background = _rgb(variables["background"])
        surface = _rgb(variables["surface"], background)
        panel = _rgb(variables["panel"], background)
        foreground = _rgb(variables["foreground"], background)
        primary = _rgb(variables["primary"], background)
        roles = {role: _rgb(variables[role], background) for role in ROLES}
    except (KeyError, ValueError):  # ANSI colours (the terminal's palette) or unknown
        return ansi_variables(variables)
    focused = blend(surface, foreground, FOCUS_TINT)
    cursor = cursor_tint(focused, primary, foreground, CURSOR_STRENGTH)
    blurred = cursor_tint(surface, primary, foreground, BLURRED_STRENGTH)
    backgrounds = [background, surface, focused, panel, cursor, blurred]
    # 7:1 where it can be had; else the closest (white or black, in effect).
    text = legible(foreground, backgrounds, BRIGHT_MINIMUM)
    out = {
        "termal-cursor": hex_color(cursor),
        "termal-cursor-blurred": hex_color(blurred),
        "termal-cursor-text": hex_color(text),
        "termal-text": hex_color(text),
        "termal-muted": _faded(text, backgrounds, MUTED_MINIMUM, MUTED_ALPHA),
        "termal-dim": _faded(text, backgrounds, MINIMUM, DIM_ALPHA),
    }
    for role, color in roles.items():
        out[f"termal-{role}"] = hex_color(legible(color, backgrounds, MINIMUM))
    return out


def _faded(text: RGB, backgrounds: list[RGB], minimum: float, least: float) -> str:
    """``#rrggbbaa``: one token, which Textual's markup keeps whole when it substitutes a
    variable (``#rrggbb 60%`` would lose its alpha there)."""
    alpha = fade_alpha(text, backgrounds, minimum, least)
    return hex_color(text) if alpha >= 1 else f"{hex_color(text)}{math.ceil(alpha * 255):02x}"


def ansi_variables(variables: dict[str, str]) -> dict[str, str]:
    """For themes in ANSI colours: the theme's own colours and cursor."""
    return {
        "termal-cursor": variables.get("block-cursor-background", "ansi_blue"),
        "termal-cursor-blurred": variables.get("block-cursor-blurred-background", "ansi_default"),
        "termal-cursor-text": variables.get("block-cursor-foreground", "ansi_default"),
        "termal-text": variables.get("foreground", "ansi_default"),
        "termal-muted": variables.get("text-muted", "ansi_default"),
        "termal-dim": variables.get("text-muted", "ansi_default"),
        **{f"termal-{role}": variables.get(role, "ansi_default") for role in ROLES},
    }
