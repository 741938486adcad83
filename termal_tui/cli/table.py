"""Tables for people: rich, every cell plain text (agent-written content is never markup)."""

from __future__ import annotations


def print_table(headers: list[str], rows: list[list[str]], empty: str) -> None:
    """Ids are never cut (they are what you copy); a ``body`` column keeps its lines with
    control characters made visible; the ``preview`` column is what gives way. When even
    that cannot make the table fit the terminal, each row is printed as a small block of
    ``header: value`` lines instead of a squeezed table.
    """
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from termal_tui.sanitize import visible, visible_line

    console = Console()
    if not rows:
        console.print(Text(empty, style="dim"))
        return
    cells = [
        [
            visible(cell) if header == "body" else visible_line(cell, 400)
            for header, cell in zip(headers, row, strict=True)
        ]
        for row in rows
    ]
    flexible = {"preview", "body"}
    fixed = sum(
        max(len(header), *(len(row[i]) for row in cells))
        for i, header in enumerate(headers)
        if header not in flexible
    )
    if fixed + 2 * (len(headers) - 1) + 10 * len(flexible & set(headers)) > console.width:
        width = max(len(header) for header in headers)
        for number, row in enumerate(cells):
            if number:
                console.print()
            for header, cell in zip(headers, row, strict=True):
                line = Text(f"{header:>{width}}  ", style="bold")
                line.append(cell.replace("\n", "\n" + " " * (width + 2)))
                console.print(line, overflow="fold")
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    room = console.width - fixed - 2 * (len(headers) - 1)  # what the flexible column gets
    for index, header in enumerate(headers):
        widest = max(len(header), *(len(row[index]) for row in cells))
        table.add_column(
            header,
            overflow="fold" if header == "body" else "ellipsis",
            no_wrap=header != "body",
            width=None if header in flexible else widest,
            max_width=max(len(header), room) if header in flexible else None,
        )
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
