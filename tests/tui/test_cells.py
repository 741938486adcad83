"""The viewer's one measure of text on screen, in terminal cells (rich.cells)."""

from __future__ import annotations

import pytest

from termal_tui.core.sanitize import cap, visible_line
from termal_tui.tui.cells import cap_cells, cells, pad_cells, wrap_cells


@pytest.mark.parametrize(
    ("text", "width"),
    [
        ("plain", 5),
        ("日本語", 6),  # wide: two cells each
        ("e\u0301te\u0301", 3),  # combining acute accents take no cell
        ("👩\u200d💻 dev", 6),  # one joined emoji: two cells
        ("", 0),
    ],
)
def test_cells_counts_what_the_terminal_draws(text, width):
    assert cells(text) == width


def test_cap_cells_cuts_to_the_width_in_cells_not_characters():
    assert cap_cells("日本語テキスト", 7) == "日本語…"
    assert cells(cap_cells("日本語テキスト", 7)) == 7
    assert cap_cells("日本語テキスト", 6) == "日本…"  # 語 would straddle the cut: left out
    assert cap_cells("short", 10) == "short" and cap_cells("anything", 0) == ""
    # sanitize.cap counts characters: the same cut is 13 cells wide on screen.
    assert cap("日本語のテキストです", 7) == "日本語のテキ…"
    assert cells(cap("日本語のテキストです", 7)) == 13


def test_pad_cells_lines_columns_up_in_any_script():
    rows = [pad_cells(name, 8) + "|" for name in ("planner", "計画者", "a-very-long-name")]
    assert [cells(row) for row in rows] == [9, 9, 9]
    assert rows[1] == "計画者  |" and rows[2] == "a-very-…|"


def test_stand_ins_are_measured_as_drawn():
    shown = visible_line("bell\x07 and \u202e")
    assert "␇" in shown and "⟨RLO⟩" in shown
    assert cells(shown) == len(shown)  # every stand-in is one narrow cell per character
    assert cells("bell\x07") == 4  # the raw control would measure 0: measure after visible_line


def test_fit_cuts_content_by_cells_and_keeps_its_styles():
    from textual.content import Content

    from termal_tui.tui.cells import fit

    styled = Content.assemble(Content.styled("計画担当", "bold"), " agent")
    cut = fit(styled, 7)
    assert cut.plain == "計画担…" and cells(cut) == 7
    assert fit(styled, 20) is styled and fit("plain", 3).plain == "pl…"


def test_first_fit_gives_way_to_a_shorter_form_before_cutting():
    from termal_tui.tui.cells import first_fit

    forms = ("#2 · 335 d ago · 3fcb1a2e", "#2 · 335 d ago", "#2")
    assert first_fit(30, *forms).plain == forms[0]
    assert first_fit(16, *forms).plain == "#2 · 335 d ago"  # never "#2 · 335 d" / "ago"
    assert first_fit(13, *forms).plain == "#2"
    assert first_fit(1, *forms).plain == "…"  # none fits: the last, cut


def test_wrap_cells_breaks_at_spaces_by_cells_and_splits_only_what_cannot_fit():
    from termal_tui.tui.cells import wrap_cells

    assert wrap_cells("one two three", 7) == ["one two", "three"]
    wrapped = wrap_cells("計画担当エージェント is here", 8)
    assert all(cells(line) <= 8 for line in wrapped)
    assert wrapped == ["計画担当", "エージェ", "ント is", "here"]
    assert wrap_cells("", 5) == [""] and wrap_cells("short", 10) == ["short"]


def test_center_and_pad_measure_cells():
    from termal_tui.tui.cells import center_cells

    assert center_cells("計画", 8) == "  計画  " and cells(center_cells("── x ──", 20)) == 20


def test_a_path_wider_than_a_line_breaks_between_its_folders():
    path = "/tmp/termal-tui-demo-0lgxu6m2/coordination.sqlite"
    assert wrap_cells(path, 32, "/") == ["/tmp/termal-tui-demo-0lgxu6m2/", "coordination.sqlite"]
    # a folder's name wider than the line is cut at the width, then the path goes on
    assert wrap_cells(path, 20, "/") == [
        "/tmp/",
        "termal-tui-demo-0lgx",
        "u6m2/",
        "coordination.sqlite",
    ]
    assert wrap_cells(path, 32) == ["/tmp/termal-tui-demo-0lgxu6m2/co", "ordination.sqlite"]


@pytest.mark.parametrize("screen", range(40, 201, 7))
def test_the_demo_greeting_fits_its_toast_and_keeps_every_name_whole(screen: int):
    from termal_tui.tui.app import TOAST_CELLS, greeting_lines

    folder = "/tmp/termal-tui-demo-0lgxu6m2"
    greeting = (
        f"Demo database: {folder}/coordination.sqlite (removed when you quit). Send into it "
        f"from another terminal: termal-tui send --db {folder}/coordination.sqlite --as "
        "planner backend 'hello'"
    )
    lines = greeting_lines(greeting, screen).split("\n")
    room = min(TOAST_CELLS, screen // 2) - 4
    assert all(cells(line) <= max(16, room) for line in lines), lines
    for name in ("tmp/", "termal-tui-demo-0lgxu6m2/", "coordination.sqlite"):
        if len(name) <= max(16, room):  # a name that fits a line is never cut
            assert any(name in line for line in lines), (name, lines)
    assert "".join(lines).replace(" ", "") == greeting.replace(" ", "")  # nothing lost
