"""Terminal cells: how wide text is on screen, and text cut to a width in cells.

The one measure for the viewer and the command line, through ``rich.cells`` (East Asian
wide characters take two cells, combining marks and joined emoji sequences are measured
as the terminal draws them). It lives on the viewer's side because the headless core
imports no rich (``.importlinter``): headless code decides *what* is shown and counts
characters (:func:`termal_tui.sanitize.cap`); the widget that draws it cuts to cells.
Measure text after it is made visible (``sanitize.visible_line``): a control character
measures 0 cells here, its stand-in is what is drawn.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size

ELLIPSIS = "…"


def cells(text: str) -> int:
    """How many terminal cells ``text`` takes on one line."""
    return cell_len(text)


def cap_cells(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, ending with ``…`` when cut (a wide character
    that would straddle the cut becomes a space)."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + ELLIPSIS


def pad_cells(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` cells (cut with ``…`` if wider): a column
    that lines up whatever script the text is in, where ``f"{text:<{width}}"`` counts
    characters."""
    return cap_cells(text, width) + " " * max(0, width - cell_len(text))
