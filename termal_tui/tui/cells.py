"""Terminal cells: how wide text is on screen, and text fitted to a width in cells.

The one measure for the viewer and the command line, through ``rich.cells`` (East Asian
wide characters take two cells, combining marks and joined emoji sequences are measured
as the terminal draws them). It lives on the viewer's side because the headless core
imports no rich (``.importlinter``): headless code decides *what* is shown and counts
characters (:func:`termal_tui.core.sanitize.cap`); the widget that draws it fits it to cells
here. Measure text after it is made visible (``sanitize.visible_line``): a control
character measures 0 cells here, its stand-in is what is drawn.

Every width the viewer computes goes through this module: :func:`cells` measures,
:func:`cap_cells` / :func:`fit` cut one line, :func:`first_fit` picks the fullest form of
a line that fits (a shorter form before a cut: ``335 d ago`` is dropped whole, never
split), :func:`wrap_cells` breaks text into lines, and :func:`option_room` is the room
an option list's rows really have.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len, chop_cells
from textual.content import Content

if TYPE_CHECKING:
    from textual.widget import Widget
    from textual.widgets import OptionList

ELLIPSIS = "…"


def cells(text: str | Content) -> int:
    """How many terminal cells ``text`` takes on one line."""
    return text.cell_length if isinstance(text, Content) else cell_len(text)


def _kept(text: str, width: int) -> int:
    """How many characters of ``text`` fit in ``width`` cells, whole characters only
    (a wide character or a joined emoji is never split)."""
    if width <= 0 or not text:
        return 0
    return len(chop_cells(text, width)[0])


def cap_cells(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, ending with ``…`` when cut (a wide character
    that would straddle the cut is left out: the line may end a cell short)."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return text
    return text[: _kept(text, width - 1)] + ELLIPSIS


def pad_cells(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` cells (cut with ``…`` if wider): a column
    that lines up whatever script the text is in, where ``f"{text:<{width}}"`` counts
    characters."""
    return cap_cells(text, width) + " " * max(0, width - cell_len(text))


def center_cells(text: str, width: int, fill: str = " ") -> str:
    """``text`` centred in ``width`` cells (``str.center`` counts characters)."""
    text = cap_cells(text, width)
    spare = max(0, width - cell_len(text))
    return fill * (spare // 2) + text + fill * (spare - spare // 2)


def fit(content: Content | str, width: int, style: str = "") -> Content:
    """One line in at most ``width`` cells, cut with ``…`` when wider (styles kept)."""
    if isinstance(content, str):
        content = Content.styled(content, style) if style else Content(content)
    if content.cell_length <= width:
        return content
    if width <= 0:
        return Content("")
    kept = content[: _kept(content.plain, width - 1)]
    # the ellipsis takes the style of the last character kept
    at = max(0, len(kept.plain) - 1)
    styles = [span.style for span in content.spans if span.start <= at < span.end]
    return kept + (Content(ELLIPSIS).stylize(styles[-1]) if styles else Content(ELLIPSIS))


def first_fit(width: int, *forms: Content | str) -> Content:
    """The first of ``forms`` (fullest first) that fits in ``width`` cells; when none
    does, the last one cut with ``…``. A line that has a shorter form gives way to it
    instead of being cut or wrapped."""
    assert forms, "at least one form"
    for form in forms:
        if cells(form) <= width:
            return form if isinstance(form, Content) else Content(form)
    return fit(forms[-1], width)


def wrap_cells(text: str, width: int, breaks: str = "") -> list[str]:
    """``text`` (one paragraph) in lines of at most ``width`` cells, broken at spaces
    where it can; a word wider than a line is broken after one of ``breaks`` where it can
    (``"/"``: a path goes to the next line between two of its folders, never inside a
    name), else between characters (by cells: a wide character is never split)."""
    width = max(1, width)
    if cell_len(text) <= width:
        return [text]
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if not word:
            continue
        joined = f"{line} {word}" if line else word
        if cell_len(joined) <= width:
            line = joined
            continue
        if line:
            lines.append(line)
        if cell_len(word) <= width:
            line = word
        else:  # longer than a line: in pieces of the width
            *pieces, line = _pieces(word, width, breaks)
            lines.extend(pieces)
    if line or not lines:
        lines.append(line)
    return lines


def _pieces(word: str, width: int, breaks: str) -> list[str]:
    """``word`` in pieces of at most ``width`` cells, each ending after one of
    ``breaks`` where one falls within the width, else cut at the width."""
    pieces: list[str] = []
    rest = word
    while cell_len(rest) > width:
        head = chop_cells(rest, width)[0]
        cut = max((head.rfind(mark) for mark in breaks), default=-1)
        if cut > 0:
            head = head[: cut + 1]
        pieces.append(head)
        rest = rest[len(head) :]
    pieces.append(rest)
    return pieces


def option_room(options: OptionList, fallback: Widget | None = None) -> int:
    """The cells one row of ``options`` may use: its width less the option padding, the
    gutter and the vertical scrollbar (counted whether or not it shows yet, so a row
    never re-wraps when the rows that follow bring the scrollbar). Before the list is
    laid out: ``fallback``'s width (or 80) less the same. Never below 10."""
    padding = options.get_component_styles("option-list--option").padding.width
    scrollbar = options.styles.scrollbar_size_vertical
    # ``size`` is the content area: the list's own padding and border are outside it
    inner = options.size.width
    if not inner:
        outer = (fallback.size.width if fallback is not None else 0) or 80
        inner = outer - options.styles.gutter.width
    return max(10, inner - scrollbar - padding)
