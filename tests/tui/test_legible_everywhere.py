"""Legible everywhere: in every built-in theme, light ones included, every glyph the
index and a tab draw — ⚠ markers and reasons (``never woken · …``), ``● Unread``,
processed rows, the highlighted card and row, ages and labels — reaches 4.5:1 against
the background it is drawn on, on the cursor and off it, focused and blurred; and
processed rows stay dimmer than unread ones.

What is measured is what the terminal gets: the screen's composed strips after the
app's line filters, each segment's colour against its own background (WCAG relative
luminance, :mod:`termal_tui.tui.contrast`). One app run switches through the themes.

The ANSI themes (``ansi-dark``, ``ansi-light``) are not measured: their colours are
the terminal's own palette (names such as ``ansi_red``, no RGB to measure), and the
viewer keeps the theme's colours there (``legible.ansi_variables``, tested below).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.style import Style
from textual.filter import DIM_FACTOR
from textual.pilot import Pilot
from textual.theme import BUILTIN_THEMES
from textual.widget import Widget

from termal_tui.tui.app import INDEX_PANE, MailboxApp
from termal_tui.tui.contrast import RGB, TEXT_MINIMUM, blend, contrast_ratio, hex_color
from termal_tui.tui.legible import NAMES, legible_variables
from termal_tui.tui.widgets.mailbox_view import MailboxView
from termal_tui.tui.widgets.tabs import TabStrip
from tests.viewer_support import app_for, mailbox_between, settle

pytestmark = pytest.mark.usefixtures("xdg")

MEASURED = [name for name, theme in BUILTIN_THEMES.items() if not theme.ansi]
PROCESSED_ROW = 120  # planner ⇄ backend: planner has processed through #120 (to planner)
UNREAD_ROW = 121  # planner → backend, above backend's cursor (#96)
OTHER_UNREAD_ROW = 119  # planner → backend too, below the processed row


@dataclass(frozen=True)
class Cell:
    """A run of text as drawn: its colours resolved as the terminal gets them."""

    y: int
    x: int
    text: str
    fg: RGB
    bg: RGB

    @property
    def ratio(self) -> float:
        return contrast_ratio(self.fg, self.bg)


def drawn(app: MailboxApp, *widgets: Widget) -> list[Cell]:
    """The runs of text inside ``widgets``' regions of the screen (within padding and
    scrollbars): the composed strips (what ``export_screenshot`` prints), after the
    app's line filters, with dim resolved as Textual's DimFilter does."""
    background = app.screen.styles.background
    strips = app.screen._compositor.render_strips()
    filters = app.get_line_filters()
    cells: list[Cell] = []
    for widget in widgets:
        region = widget.scrollable_content_region
        for y in range(region.y, region.bottom):
            strip = strips[y]
            for line_filter in filters:
                strip = strip.apply_filter(line_filter, background)
            x = 0
            for segment in strip:
                text, style = segment.text, segment.style
                start, x = x, x + segment.cell_length
                if text and region.x <= start < region.right:
                    assert style is not None, text
                    cells.append(cell(y, start, text, style))
    return cells


def cell(y: int, x: int, text: str, style: Style) -> Cell:
    assert style.bgcolor is not None, (text, style)
    bg = style.bgcolor.get_truecolor()
    bg_rgb = (bg.red, bg.green, bg.blue)
    if not text.strip():  # spaces: kept for the row's text, never measured
        return Cell(y, x, text, bg_rgb, bg_rgb)
    assert style.color is not None, (text, style)
    fg = style.color.get_truecolor()
    fg_rgb = (fg.red, fg.green, fg.blue)
    if style.reverse:
        fg_rgb, bg_rgb = bg_rgb, fg_rgb
    if style.dim:
        fg_rgb = blend(bg_rgb, fg_rgb, DIM_FACTOR)
    return Cell(y, x, text, fg_rgb, bg_rgb)


def row_cells(cells: list[Cell], marker: str) -> list[Cell]:
    """The cells of the two-line row (card or message) whose first line holds ``marker``."""
    rows = sorted({cell.y for cell in cells})
    for y in rows:
        if marker in "".join(cell.text for cell in cells if cell.y == y):
            return [cell for cell in cells if cell.y in (y, y + 1)]
    raise AssertionError(f"no row with {marker!r} on screen")


def is_text(text: str) -> bool:
    """Not only spaces, nor only box drawing or block elements (the tab row's underline,
    a scrollbar): decoration, not text to read."""
    return any(not char.isspace() and not 0x2500 <= ord(char) <= 0x259F for char in text)


def illegible(cells: list[Cell]) -> list[str]:
    return [
        f"{cell.text.strip()!r} {cell.ratio:.2f}:1 ({hex_color(cell.fg)} on {hex_color(cell.bg)})"
        for cell in cells
        if is_text(cell.text) and cell.ratio < TEXT_MINIMUM
    ]


def ink(cells: list[Cell]) -> list[Cell]:
    return [cell for cell in cells if cell.text.strip()]


def has(cells: list[Cell], text: str) -> bool:
    return text in "".join(cell.text for cell in cells)


async def index_and_tab(app: MailboxApp, pilot: Pilot[None], theme: str) -> dict[str, list[Cell]]:
    """Everything measured in one theme: the open tab with its processed row
    highlighted (and the tab labels), then an unread one, then blurred; the tab row
    focused (its active label on the cursor); the index (its first card, with
    ``⚠`` and ``never woken``, highlighted), focused and blurred. Nothing is read from
    the file here: a pause lets the theme's and the focus's styles apply."""
    app.theme = theme
    await pilot.pause()
    tab_row = app.query_one("#tabs", TabStrip)
    view = app.active_view()
    assert isinstance(view, MailboxView)
    thread = view.query_one("#thread")
    shown: dict[str, list[Cell]] = {}
    thread.focus()
    assert view.highlight_sequence(PROCESSED_ROW)
    await pilot.pause()
    header = view.query("ThreadHeader, #participants")
    shown["tab, processed row highlighted"] = drawn(app, thread, *header, tab_row)
    assert view.highlight_sequence(UNREAD_ROW)
    await pilot.pause()
    shown["tab, unread row highlighted"] = drawn(app, thread)
    app.set_focus(None)
    await pilot.pause()
    shown["tab, blurred"] = drawn(app, thread)
    tab_row.focus()
    await pilot.pause()
    shown["tab row focused"] = drawn(app, tab_row)

    pane = app.active_pane
    app.activate(INDEX_PANE)
    cards = app.query_one("#cards")
    cards.focus()
    await pilot.pause()
    shown["index"] = drawn(app, cards, app.query_one("#index-status"))
    highlighted = row_cells(shown["index"], "⚠")
    assert ink(highlighted)[0].bg != ink(row_cells(shown["index"], "release-bot"))[0].bg
    assert has(highlighted, "never woken"), "the first card is highlighted, with its reason"
    app.set_focus(None)
    await pilot.pause()
    shown["index, blurred"] = drawn(app, cards)
    app.activate(pane)
    await pilot.pause()
    return shown


async def test_every_theme_draws_warnings_unread_processed_and_the_highlight_legibly(
    demo: Path,
) -> None:
    app = app_for(demo)
    report: dict[str, list[str]] = {}
    dimmer: dict[str, str] = {}
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.open_mailbox(mailbox_between(app, "planner", "backend"))
        await settle(app, pilot)
        for theme in MEASURED:
            shown = await index_and_tab(app, pilot, theme)
            for where, cells in shown.items():
                if bad := illegible(cells):
                    report[f"{theme} · {where}"] = bad
            # The marks this is about are on screen (nothing is measured by its absence).
            index, tab = shown["index"], shown["tab, processed row highlighted"]
            assert has(index, "⚠") and has(index, "never woken"), theme
            assert has(index, "✓ all read") and has(tab, "● Unread"), theme
            assert has(tab, "✓ Processed"), theme
            # Dim stays dimmer than bright: a processed row's text against an unread
            # row's, off the cursor (surface) and on it (the processed row highlighted,
            # then the unread one).
            off = shown["tab, unread row highlighted"]
            processed = ink(row_cells(off, f"#{PROCESSED_ROW}  "))[-1]
            unread = ink(row_cells(off, f"#{OTHER_UNREAD_ROW}  "))[-1]
            on_processed = ink(row_cells(tab, f"#{PROCESSED_ROW}  "))[-1]
            on_unread = ink(row_cells(off, f"#{UNREAD_ROW}  "))[-1]
            assert processed.bg == unread.bg and on_processed.bg == on_unread.bg, theme
            for dim, bright in ((processed, unread), (on_processed, on_unread)):
                if not dim.ratio < bright.ratio:
                    dimmer[theme] = (
                        f"{dim.text!r} {dim.ratio:.2f} ≥ {bright.text!r} {bright.ratio:.2f}"
                    )
    assert not report, "\n".join(f"{where}: {', '.join(bad)}" for where, bad in report.items())
    assert not dimmer, dimmer


def test_ansi_themes_keep_the_terminals_own_colours() -> None:
    for name, theme in BUILTIN_THEMES.items():
        if not theme.ansi:
            continue
        variables = {**theme.to_color_system().generate(), **theme.variables}
        derived = legible_variables(variables)
        assert set(derived) == set(NAMES)
        assert derived["termal-error"] == variables["error"], name
        assert all(value.startswith("ansi_") for value in derived.values()), (name, derived)
