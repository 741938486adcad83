"""Tables for people, in plain text (no rich: ``ls`` and ``read`` start faster for it).

Every cell is untrusted text made visible first (``sanitize``); widths are terminal
cells (East Asian wide characters count two, combining marks none). Ids are never cut
(they are what you copy); a ``body`` column keeps its lines and folds them; the
``preview`` column is what gives way, cut with ``…``. When even that cannot make the
table fit the terminal, each row is printed as a small block of ``header  value``
lines instead of a squeezed table. Headers are bold on a terminal unless ``NO_COLOR``.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Iterator

FLEXIBLE = ("preview", "body")
GAP = 2


def terminal_width() -> int:
    """``COLUMNS`` if set, else the terminal's width, else 80."""
    try:
        return max(20, int(os.environ["COLUMNS"]))
    except (KeyError, ValueError):
        pass
    try:
        return max(20, os.get_terminal_size(sys.stdout.fileno()).columns)
    except (OSError, ValueError, AttributeError):
        return 80


def char_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_width(text: str) -> int:
    return sum(char_width(char) for char in text)


def cut(text: str, width: int) -> str:
    """At most ``width`` cells, ending with ``…`` when cut."""
    if cell_width(text) <= width:
        return text
    out, used = [], 0
    for char in text:
        if used + char_width(char) > width - 1:
            break
        out.append(char)
        used += char_width(char)
    return "".join(out) + "…"


def fold(text: str, width: int) -> Iterator[str]:
    """Lines of at most ``width`` cells (each source line folded on its own), broken at a
    space where the line has one (the space goes), else between characters."""
    for line in text.split("\n"):
        out: list[str] = []
        used = 0
        space = -1  # where in ``out`` the last space is
        for char in line:
            if used + char_width(char) > width and out:
                if space > 0:  # the words before the space; the rest starts the next line
                    yield "".join(out[:space])
                    out = out[space + 1 :]
                else:
                    yield "".join(out)
                    out = []
                used = cell_width("".join(out))
                space = -1
                if char == " " and not out:
                    continue  # a line never starts with the space it broke at
                if used + char_width(char) > width and out:
                    yield "".join(out)
                    out, used = [], 0
            if char == " ":
                space = len(out)
            out.append(char)
            used += char_width(char)
        yield "".join(out)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - cell_width(text))


def _bold(text: str) -> str:
    stream = sys.stdout
    if os.environ.get("NO_COLOR") or not (hasattr(stream, "isatty") and stream.isatty()):
        return text
    return f"\x1b[1m{text}\x1b[0m"


def render_table(headers: list[str], rows: list[list[str]], empty: str, width: int) -> str:
    from termal_tui.core.sanitize import visible, visible_line

    if not rows:
        return empty
    cells = [
        [
            visible(cell) if header == "body" else visible_line(cell, 400)
            for header, cell in zip(headers, row, strict=True)
        ]
        for row in rows
    ]
    widths = [
        max(cell_width(header), *(cell_width(row[i].split("\n")[0]) for row in cells))
        if header != "body"
        else max(
            cell_width(header), *(cell_width(line) for row in cells for line in row[i].split("\n"))
        )
        for i, header in enumerate(headers)
    ]
    fixed = sum(w for w, h in zip(widths, headers, strict=True) if h not in FLEXIBLE)
    flexible = [i for i, h in enumerate(headers) if h in FLEXIBLE]
    gaps = GAP * (len(headers) - 1)
    if fixed + gaps + 10 * len(flexible) > width:
        return _blocks(headers, cells, width)
    room = width - fixed - gaps
    for i in flexible:
        widths[i] = max(cell_width(headers[i]), min(widths[i], room // len(flexible)))
    lines = ["  ".join(_bold(_pad(h, w)) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in cells:
        columns: list[list[str]] = []
        for header, cell, w in zip(headers, row, widths, strict=True):
            if header == "body":
                columns.append(list(fold(cell, w)))
            elif header == "preview":
                columns.append([cut(cell, w)])
            else:
                columns.append([cell])
        for depth in range(max(len(column) for column in columns)):
            parts = [
                _pad(column[depth] if depth < len(column) else "", w)
                for column, w in zip(columns, widths, strict=True)
            ]
            lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _blocks(headers: list[str], cells: list[list[str]], width: int) -> str:
    label = max(cell_width(header) for header in headers)
    room = max(10, width - label - GAP)
    out: list[str] = []
    for number, row in enumerate(cells):
        if number:
            out.append("")
        for header, cell in zip(headers, row, strict=True):
            name = _bold(f"{header:>{label}}")
            if header not in FLEXIBLE and cell_width(cell) > room:
                # Never cut an id: on a line of its own, whole.
                out.extend([name, "  " + cell])
                continue
            folded = list(fold(cell, room))
            out.append(name + "  " + folded[0])
            out.extend(" " * (label + GAP) + line for line in folded[1:])
    return "\n".join(out)


def print_table(headers: list[str], rows: list[list[str]], empty: str) -> None:
    print(render_table(headers, rows, empty, terminal_width()))
