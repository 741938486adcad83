"""The contrast arithmetic (WCAG 2.x) and the colours the viewer derives from a theme."""

from __future__ import annotations

import pytest
from textual.theme import BUILTIN_THEMES

from termal_tui.tui.contrast import (
    BLACK,
    TEXT_MINIMUM,
    WHITE,
    blend,
    contrast_ratio,
    dimmed,
    hex_color,
    legible,
    parse_hex,
    relative_luminance,
    worst_contrast,
)
from termal_tui.tui.legible import (
    CURSOR_STRENGTH,
    FOCUS_TINT,
    MINIMUM,
    NAMES,
    fade_alpha,
    legible_variables,
)


def test_luminance_and_ratio_match_the_wcag_reference_values() -> None:
    assert relative_luminance(BLACK) == 0
    assert relative_luminance(WHITE) == pytest.approx(1)
    assert contrast_ratio(BLACK, WHITE) == pytest.approx(21)
    assert contrast_ratio(WHITE, BLACK) == contrast_ratio(BLACK, WHITE)
    assert contrast_ratio((119, 119, 119), WHITE) == pytest.approx(4.48, abs=0.01)  # #777
    assert contrast_ratio((118, 118, 118), WHITE) == pytest.approx(4.54, abs=0.01)  # #767676
    # The defect measured in the issue: Textual's $error on its cursor ($primary).
    assert contrast_ratio(parse_hex("#b93c5b"), parse_hex("#0178d4")) == pytest.approx(
        1.2, abs=0.05
    )


def test_blend_draws_a_colour_with_an_alpha_on_its_background() -> None:
    assert blend(BLACK, WHITE, 0) == BLACK
    assert blend(BLACK, WHITE, 1) == WHITE
    assert blend((0, 0, 0), (200, 100, 50), 0.5) == (100, 50, 25)
    assert hex_color((1, 120, 212)) == "#0178d4" and parse_hex("#0178D4") == (1, 120, 212)
    with pytest.raises(ValueError):
        parse_hex("#fff")


def test_legible_keeps_a_colour_that_reads_and_moves_one_that_does_not_the_least() -> None:
    dark, light = parse_hex("#1e1e1e"), parse_hex("#e0e0e0")
    amber = parse_hex("#ffa62b")
    assert legible(amber, [dark]) == amber  # 8.8:1 already
    on_light = legible(amber, [light])
    assert worst_contrast(on_light, [light]) >= TEXT_MINIMUM
    assert on_light[0] > on_light[1] > on_light[2]  # still amber, darkened
    assert worst_contrast(legible(amber, [light], 7), [light]) >= 7
    # Backgrounds on both sides of every colour: the mix that comes closest.
    mid = parse_hex("#777777")
    best = legible(amber, [BLACK, WHITE, mid])
    assert worst_contrast(best, [BLACK, WHITE, mid]) >= worst_contrast(amber, [BLACK, WHITE, mid])


def test_dimmed_fades_as_far_as_still_reads() -> None:
    surface, text = parse_hex("#1e1e1e"), parse_hex("#e0e0e0")
    dim = dimmed(text, surface, [surface], 4.8)
    assert 4.8 <= contrast_ratio(dim, surface) < contrast_ratio(text, surface)
    assert contrast_ratio(blend(dim, surface, 0.1), surface) < 4.8  # no further
    assert dimmed(parse_hex("#333333"), surface, [surface], 4.8) == parse_hex("#333333")
    alpha = fade_alpha(text, [surface], 4.8, 0.5)
    assert 0.5 <= alpha < 1
    assert contrast_ratio(blend(surface, text, alpha), surface) >= 4.8
    assert contrast_ratio(blend(surface, text, alpha - 0.02), surface) < 4.8
    assert fade_alpha(parse_hex("#333333"), [surface], 4.8, 0.5) == 1.0


@pytest.mark.parametrize("name", [n for n, t in BUILTIN_THEMES.items() if not t.ansi])
def test_every_colour_derived_from_a_theme_reads_on_every_background_it_meets(name: str) -> None:
    theme = BUILTIN_THEMES[name]
    variables = {**theme.to_color_system().generate(), **theme.variables}
    derived = legible_variables(variables)
    assert set(derived) == set(NAMES)
    background = parse_hex(variables["background"][:7])
    surface, cursor = parse_hex(variables["surface"][:7]), parse_hex(derived["termal-cursor"])
    blurred = parse_hex(derived["termal-cursor-blurred"])
    grounds = [background, surface, cursor, blurred]
    for role in ("text", "error", "warning", "success", "accent"):
        assert worst_contrast(parse_hex(derived[f"termal-{role}"]), grounds) >= MINIMUM, role
    text = parse_hex(derived["termal-text"])
    for faded in ("termal-dim", "termal-muted"):
        value = derived[faded]
        alpha = int(value[7:9], 16) / 255 if len(value) == 9 else 1.0
        for ground in grounds:
            drawn = blend(ground, text, alpha)
            assert MINIMUM <= contrast_ratio(drawn, ground) <= contrast_ratio(text, ground)
    # The cursor stands out from the focused list it moves on, without washing colours
    # out: away from the text's side where there is room (darker under light text).
    foreground = parse_hex(variables["foreground"][:7])
    focused = blend(surface, foreground, FOCUS_TINT)
    assert contrast_ratio(cursor, focused) == pytest.approx(CURSOR_STRENGTH, abs=0.08), name
    light_text = relative_luminance(foreground) > relative_luminance(focused)
    darker = relative_luminance(cursor) < relative_luminance(focused)
    room = contrast_ratio(BLACK if light_text else WHITE, focused) >= CURSOR_STRENGTH
    assert darker == light_text or not room, name  # rose-pine-dawn, solarized-light: too light
