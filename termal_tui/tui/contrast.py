"""Contrast arithmetic (WCAG 2.x) on plain ``(red, green, blue)`` triplets, 0–255.

The viewer derives the colours of its warnings, unread marks, processed rows and cursor
from each theme (:mod:`termal_tui.tui.legible`) with these, and the tests measure what
is drawn with them. Nothing here knows Textual.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

RGB = tuple[int, int, int]

WHITE: Final[RGB] = (255, 255, 255)
BLACK: Final[RGB] = (0, 0, 0)
# WCAG 2.x, 1.4.3 (AA): the minimum contrast of normal-size text against its background.
TEXT_MINIMUM: Final = 4.5


def _channel(value: int) -> float:
    scaled = value / 255
    return scaled / 12.92 if scaled <= 0.04045 else ((scaled + 0.055) / 1.055) ** 2.4


def relative_luminance(color: RGB) -> float:
    """WCAG relative luminance: 0 for black, 1 for white."""
    red, green, blue = color
    return 0.2126 * _channel(red) + 0.7152 * _channel(green) + 0.0722 * _channel(blue)


def contrast_ratio(first: RGB, second: RGB) -> float:
    """``(L1 + 0.05) / (L2 + 0.05)`` with L1 the lighter: 1 (same) to 21 (black on white)."""
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)))[::-1]
    return (lighter + 0.05) / (darker + 0.05)


def worst_contrast(color: RGB, backgrounds: Iterable[RGB]) -> float:
    """The lowest contrast of ``color`` against any of ``backgrounds``."""
    return min(contrast_ratio(color, background) for background in backgrounds)


def blend(under: RGB, over: RGB, alpha: float) -> RGB:
    """``over`` drawn with opacity ``alpha`` on ``under`` (as Textual blends a colour
    with an alpha on the background it is drawn on)."""
    return (
        round(under[0] + (over[0] - under[0]) * alpha),
        round(under[1] + (over[1] - under[1]) * alpha),
        round(under[2] + (over[2] - under[2]) * alpha),
    )


def hex_color(color: RGB) -> str:
    return "#{:02x}{:02x}{:02x}".format(*color)


def parse_hex(text: str) -> RGB:
    """``#rrggbb`` (or ``rrggbb``) → ``(r, g, b)``."""
    digits = text.strip().lstrip("#")
    if len(digits) != 6:
        raise ValueError(f"not a #rrggbb colour: {text!r}")
    return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))


STEPS: Final = 50  # how finely a colour is moved toward white or black


def legible(color: RGB, backgrounds: Sequence[RGB], minimum: float = TEXT_MINIMUM) -> RGB:
    """``color`` itself when it reaches ``minimum`` against every one of ``backgrounds``;
    else the least change of it that does: mixed toward white or toward black (its hue
    kept), whichever needs the smaller step. When neither can (backgrounds on both sides
    of it), the mix that comes closest."""
    if worst_contrast(color, backgrounds) >= minimum:
        return color
    best, best_worst = color, worst_contrast(color, backgrounds)
    for step in range(1, STEPS + 1):
        alpha = step / STEPS
        for target in (WHITE, BLACK):
            candidate = blend(color, target, alpha)
            score = worst_contrast(candidate, backgrounds)
            if score >= minimum:
                return candidate
            if score > best_worst:
                best, best_worst = candidate, score
    return best


def dimmed(color: RGB, toward: RGB, backgrounds: Sequence[RGB], minimum: float) -> RGB:
    """``color`` faded toward ``toward`` (the background it mostly sits on) as far as it
    goes while it still reaches ``minimum`` against every one of ``backgrounds``: the
    dimmest legible version of it. ``color`` itself when even it does not reach it."""
    chosen = color
    for step in range(1, STEPS + 1):
        candidate = blend(color, toward, step / STEPS)
        if worst_contrast(candidate, backgrounds) < minimum:
            break
        chosen = candidate
    return chosen
