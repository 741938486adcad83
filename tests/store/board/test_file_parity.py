"""Byte-level parity with files and texts TermAl's code produced: the CREATE statements
``sqlite3 FILE .schema`` prints, numbers as TermAl stores them (its route's serde_json
parsing, then ryu), and the review-result envelope limit's sentence."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from termal_tui.store import open_writer
from termal_tui.store.board import canonical_value, loads
from termal_tui.store.board.formats import ryu_float, serde_number
from termal_tui.store.errors import ValidationError
from tests.helpers import rows, sqlite_only

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TERMAL_FILES = [
    FIXTURES / "termal_basic" / "coordination.sqlite",
    FIXTURES / "termal_board" / "coordination.sqlite",
]


def _schema(path: Path) -> list[tuple]:
    """What ``.schema`` prints, in its order: sqlite_master's statements by rowid."""
    return rows(path, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid")


@pytest.mark.parametrize("termal", TERMAL_FILES, ids=["termal_basic", "termal_board"])
async def test_a_file_we_create_has_termals_create_statements_byte_for_byte(db_path, termal):
    async with open_writer(db_path):
        pass
    ours = _schema(db_path)
    assert ours == _schema(termal)
    text = "".join(f"{sql};\n" for *_, sql in ours if sql)
    assert len(text) == 3860  # what `sqlite3 FILE .schema` prints for either file
    assert "CREATE TABLE meta (\n              key TEXT PRIMARY KEY," in text


async def test_sqlite3_schema_output_is_identical_when_the_cli_is_there(db_path, tmp_path):
    cli = shutil.which("sqlite3")
    if cli is None:
        pytest.skip("no sqlite3 command line shell here")
    async with open_writer(db_path):
        pass
    copy = tmp_path / "termal.sqlite"
    shutil.copy(TERMAL_FILES[1], copy)
    ours = subprocess.run([cli, db_path, ".schema"], capture_output=True, check=True).stdout
    theirs = subprocess.run([cli, copy, ".schema"], capture_output=True, check=True).stdout
    assert ours == theirs
    assert len(theirs) == 3860


async def test_older_termal_tui_board_tables_are_rebuilt_with_termals_text(db_path):
    async with open_writer(db_path):
        pass
    db = sqlite3.connect(db_path)
    db.execute("DROP TABLE coordination_board_idempotency")
    db.execute(
        "CREATE TABLE coordination_board_idempotency (scope_id TEXT NOT NULL, "
        "author_session_id TEXT NOT NULL, idempotency_key TEXT NOT NULL, request_hash TEXT "
        "NOT NULL, receipt_json TEXT NOT NULL, created_at TEXT NOT NULL, "
        "PRIMARY KEY (scope_id, author_session_id, idempotency_key))"
    )
    db.commit()
    db.close()
    async with open_writer(db_path):
        pass
    repaired = dict((name, sql) for _, name, _, sql in _schema(db_path))
    termal = dict((name, sql) for _, name, _, sql in _schema(TERMAL_FILES[1]))
    assert repaired["coordination_board_idempotency"] == termal["coordination_board_idempotency"]


# ------------------------------------------------------------------ numbers


FLOATS = json.loads((FIXTURES / "termal_board_floats.json").read_text())


@pytest.mark.parametrize("chunk", range(len(FLOATS["inputs"])))
def test_numbers_canonicalise_to_the_text_termal_stored(chunk):
    """1,200 floats sent as Python's shortest text: TermAl's route parses them with
    serde_json's fast (not always nearest) algorithm, then prints ryu's shortest text;
    parsed with our ``loads`` and canonicalised, ours is the same text."""
    literal = "[" + ",".join(FLOATS["inputs"][chunk]) + "]"
    assert canonical_value(loads(literal)) == FLOATS["termal"][chunk]


@pytest.mark.parametrize(("literal", "stored", "accepted"), FLOATS["literals"])
def test_number_literals_parse_as_termals_route_parses_them(literal, stored, accepted):
    if not accepted:
        with pytest.raises(ValueError, match="number out of range"):
            loads(literal)
        return
    assert canonical_value(loads(literal)) == stored


def test_the_float_text_is_ryus_and_round_trips():
    assert [ryu_float(x) for x in (1e15, 1e16, 1e-5, 1e-6, 0.1, 100.0, -0.0, 5e-324)] == [
        "1000000000000000.0",
        "1e16",
        "0.00001",
        "1e-6",
        "0.1",
        "100.0",
        "-0.0",
        "5e-324",
    ]
    assert serde_number("-0") == 0 and str(serde_number("-0")) == "-0.0"
    assert serde_number("18446744073709551615") == 2**64 - 1
    assert isinstance(serde_number("18446744073709551616"), float)


# ------------------------------------------------------------------ review results


@sqlite_only
async def test_an_oversized_review_envelope_is_refused_with_termals_sentence(writer, db_path):
    """termal-oracle's `review` op answered this for 17 findings of 16,384 characters."""
    result = {
        "schemaVersion": 1,
        "status": "completed",
        "summary": "ok",
        "findings": [{"severity": "Low", "message": "m" * 16384}] * 17,
        "commandsRun": [],
        "filesInspected": [],
        "notes": [],
        "suggestedTrackerUpdates": [],
    }
    with pytest.raises(ValidationError) as raised:
        await writer.append_review_result(
            delegation_id="delegation-1",
            attempt=1,
            child_session_id="session-c",
            child_name="reviewer",
            coordinator_session_id="session-a",
            coordinator_name="planner",
            result=result,
        )
    assert str(raised.value) == (
        "delegation review result exceeds the 262144-byte aggregate envelope limit; reduce "
        "findings, commands, files, notes, or suggested tracker updates and retry"
    )
    assert raised.value.http_status == 400
    assert rows(db_path, "SELECT COUNT(*) FROM mailbox_messages") == [(0,)]
    # 15 such findings fit, as TermAl accepted them.
    result["findings"] = result["findings"][:15]
    receipt = await writer.append_review_result(
        delegation_id="delegation-1",
        attempt=1,
        child_session_id="session-c",
        child_name="reviewer",
        coordinator_session_id="session-a",
        coordinator_name="planner",
        result=result,
    )
    assert receipt.sequence == 1
