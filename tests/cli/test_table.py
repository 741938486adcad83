"""The CLI's plain-text tables: terminal cells, ids whole, previews cut, bodies folded,
agent text inert."""

from __future__ import annotations

import uuid

import pytest

from termal_tui.cli.table import cell_width, cut, fold, render_table
from termal_tui.core.formats import new_uuid

HEADERS = ["with", "unread", "preview", "mailbox"]
ID = "mailbox-00000000-0000-4000-8000-000000000001"


def test_wide_characters_count_two_cells_and_combining_marks_none():
    assert cell_width("ab") == 2
    assert cell_width("日本") == 4
    assert cell_width("e\u0301") == 1
    assert cut("日本語のテキスト", 7) == "日本語…"
    assert cell_width(cut("日本語のテキスト", 7)) <= 7
    assert list(fold("日本語", 4)) == ["日本", "語"]


def test_every_line_fits_and_the_id_is_whole():
    rows = [["alice", "3", "x" * 300, ID]]
    for width in (60, 80, 120):
        text = render_table(HEADERS, rows, "none", width)
        assert ID in text
        assert all(cell_width(line) <= width for line in text.splitlines()), (width, text)
    assert "…" in render_table(HEADERS, rows, "none", 80)


def test_too_narrow_for_a_table_prints_blocks_with_ids_on_their_own_line():
    text = render_table(HEADERS, [["alice", "3", "hello", ID]], "none", 40)
    lines = text.splitlines()
    assert "  " + ID in lines
    assert lines[0].strip().startswith("with")


def test_a_body_keeps_its_lines_and_folds_them():
    text = render_table(["seq", "body"], [["#1", "first line\n" + "y" * 50]], "", 30)
    body_lines = [line[5:] for line in text.splitlines()[1:]]
    assert body_lines[0] == "first line"
    assert "".join(body_lines[1:]) == "y" * 50


def test_agent_text_is_inert_and_visible():
    hostile = "\x1b]52;c;cHduZWQ=\x07\u202egnp"
    text = render_table(HEADERS, [[hostile, "1", hostile, ID]], "", 120)
    assert "\x1b" not in text and "\u202e" not in text
    assert "⟨RLO⟩" in text


def test_no_rows_is_the_empty_sentence():
    assert render_table(HEADERS, [], "no mailboxes yet", 80) == "no mailboxes yet"


def test_ids_are_uuid4_text():
    for _ in range(500):
        text = new_uuid()
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == text


@pytest.mark.parametrize("width", range(8, 40))
def test_a_long_body_folds_between_words_and_loses_nothing_but_the_break(width: int):
    body = "This is a much longer message body that should wrap across the column; 雪が降る日"
    lines = list(fold(body, width))
    assert all(cell_width(line) <= width for line in lines), lines
    assert "".join(lines).replace(" ", "") == body.replace(" ", "")  # nothing else lost
    for word in body.split():  # a word that fits a line is never cut
        assert cell_width(word) > width or any(word in line.split() for line in lines), word
