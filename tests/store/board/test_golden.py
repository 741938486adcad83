"""TermAl's board behaviours, case by case: every op of tests/board_cases.py as TermAl's
own store code answered it (recorded by tests/fixtures/make_board_fixtures.py through
termal-oracle) must be answered the same by our board store, and leave the same rows.

TermAl stamps writes with its own clock, so our writer runs on a fixed clock and each
of our timestamps is mapped to the one TermAl gave the same write before comparing:
everything else (messages, ``detail``, hashes, receipt texts, history) is exact.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from termal_tui.store.board import dumps, loads, open_board_reader
from termal_tui.store.board.writer import open_board_writer
from tests import board_cases
from tests.board_harness import (
    BOARD_TIMESTAMP,
    SqlSteps,
    board_dump,
    comparable,
    oracle_answer,
    read_answers,
    read_jsonl,
    resolve,
    run_op,
    run_ours,
)
from tests.helpers import ENGINES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _recorded(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    ops = read_jsonl(FIXTURES / name / "ops.jsonl")
    answers = read_answers(FIXTURES / name / "answers.jsonl")
    assert len(ops) == len(answers)
    return ops, answers


def _is_write(answer: dict[str, Any]) -> bool:
    result = answer.get("result")
    return bool(answer.get("ok") and isinstance(result, dict) and result.get("duplicate") is False)


def timestamp_map(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> dict[str, str]:
    """Our timestamp of each committed write → TermAl's for the same write."""
    mapping: dict[str, str] = {}
    for mine, recorded in zip(ours, theirs, strict=True):
        if _is_write(mine) and _is_write(recorded):
            mapping[mine["result"]["updatedAt"]] = recorded["result"]["updatedAt"]
    return mapping


def mapped(text: str, mapping: dict[str, str]) -> str:
    return BOARD_TIMESTAMP.sub(lambda match: mapping.get(match[0], match[0]), text)


async def _replay(target: Path | str, ops: list[dict[str, Any]]):
    async with open_board_writer(target, clock=board_cases.fixed_clock()) as writer:
        answers = await run_ours(writer, ops)
    return answers, target


def _database(request: pytest.FixtureRequest, directory: Path) -> Path | str:
    """A new database on the fixture's engine: a SQLite file or a PostgreSQL database."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_server").fresh_database())
    return directory / "state" / "coordination.sqlite"


@pytest.fixture(scope="module", params=ENGINES)
def main_run(request, tmp_path_factory):
    ops, theirs = _recorded("termal_board")
    target = _database(request, tmp_path_factory.mktemp("main"))
    ours, path = asyncio.run(_replay(target, ops))
    return ops, theirs, ours, path, timestamp_map(ours, theirs)


@pytest.fixture(scope="module", params=ENGINES)
def limits_run(request, tmp_path_factory):
    ops, theirs = _recorded("termal_board_limits")
    target = _database(request, tmp_path_factory.mktemp("limits"))
    ours, path = asyncio.run(_replay(target, ops))
    return ops, theirs, ours, path, timestamp_map(ours, theirs)


def _ids(ops: list[dict[str, Any]]) -> list[str]:
    return [f"{n:03d} {op['case']}" for n, op in enumerate(ops)]


MAIN_IDS = _ids(board_cases.MAIN_OPS)
LIMIT_IDS = _ids(board_cases.LIMIT_OPS)


@pytest.mark.parametrize("index", range(len(MAIN_IDS)), ids=MAIN_IDS)
def test_case_answers_as_termal_did(main_run, index):
    ops, theirs, ours, _, mapping = main_run
    assert ops[index]["case"] == board_cases.MAIN_OPS[index]["case"]  # fixtures are current
    assert mapped(comparable(ours[index]), mapping) == comparable(theirs[index])


@pytest.mark.parametrize("index", range(len(LIMIT_IDS)), ids=LIMIT_IDS)
def test_limit_case_answers_as_termal_did(limits_run, index):
    ops, theirs, ours, _, mapping = limits_run
    assert ops[index]["case"] == board_cases.LIMIT_OPS[index]["case"]
    assert mapped(comparable(ours[index]), mapping) == comparable(theirs[index])


def _mapped_dump(path: Path | str, mapping: dict[str, str]) -> dict[str, list[tuple[Any, ...]]]:
    return {
        table: [
            tuple(mapped(cell, mapping) if isinstance(cell, str) else cell for cell in row)
            for row in rows
        ]
        for table, rows in board_dump(path).items()
    }


def test_the_cases_leave_the_rows_termal_left(main_run):
    """Heads, tombstones, history (trimmed to 100, purged on delete), receipts with
    TermAl's request hashes and receipt JSON, generations and the deletion fences."""
    *_, path, mapping = main_run
    termal = board_dump(FIXTURES / "termal_board" / "coordination.sqlite")
    ours = _mapped_dump(path, mapping)
    fences = ours.pop("coordination_board_deleted_scopes")
    theirs_fences = termal.pop("coordination_board_deleted_scopes")
    assert ours == termal
    # deleted_at is the deletion's own clock reading, not a write's.
    assert [row[0] for row in fences] == [row[0] for row in theirs_fences]
    assert all(BOARD_TIMESTAMP.fullmatch(row[1]) for row in fences)
    history = [row for row in ours["coordination_board_history"] if row[1] == "gate.round"]
    assert [row[2] for row in history] == list(range(4, 104))  # the last 100 revisions


def test_the_stored_canonical_json_is_termals_byte_for_byte(main_run):
    *_, path, _ = main_run
    termal = board_dump(FIXTURES / "termal_board" / "coordination.sqlite")
    (theirs,) = [r[4] for r in termal["coordination_board_entries"] if r[1] == "json.tricky"]
    (ours,) = [
        r[4] for r in board_dump(path)["coordination_board_entries"] if r[1] == "json.tricky"
    ]
    assert ours == theirs
    assert "1e16" in theirs and "0.00001" in theirs and "1e-7" in theirs  # ryu's forms


def test_limit_cases_leave_the_rows_termal_left(limits_run):
    *_, path, _ = limits_run
    # The limits file is not committed (it holds thousands of seeded rows): the recorded
    # answers pin it, and the retention counts are checked here.
    dump = board_dump(path)
    receipts = [r for r in dump["coordination_board_idempotency"] if r[0] == "project-receipts"]
    assert len(receipts) == 4096
    assert not any(r[2] == "original" for r in receipts)  # oldest by insertion, not by clock
    assert any(r[2] == "synthetic-0" for r in receipts)


async def test_a_termal_written_board_reads_the_same_through_our_reader(tmp_path):
    """The read-back cases (every key, live and tombstoned, and every page) on the file
    TermAl wrote, through our read-only reader: exactly TermAl's answers."""
    ops, theirs = _recorded("termal_board")
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir(mode=0o700)
    shutil.copy(FIXTURES / "termal_board" / "coordination.sqlite", path)
    read_back = [n for n, op in enumerate(ops) if op["case"].startswith("read back")]
    assert len(read_back) == len(board_cases.read_back_ops())
    steps = SqlSteps(path)
    try:
        async with open_board_reader(path) as reader:
            for n in read_back:
                answer = await run_op(reader, resolve(ops[n], steps))
                assert comparable(answer) == comparable(theirs[n]), ops[n]["case"]
    finally:
        steps.close()


async def test_our_writer_replays_termals_receipts_exactly(tmp_path):
    """Every write TermAl committed, replayed through our writer on TermAl's file: the
    original receipt (TermAl's own timestamps) with ``duplicate: true`` and 200; in the
    deleted scope, TermAl's fence answer instead."""
    ops, theirs = _recorded("termal_board")
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir(mode=0o700)
    shutil.copy(FIXTURES / "termal_board" / "coordination.sqlite", path)
    replayed = 0
    async with open_board_writer(path) as writer:
        for op, answer in zip(ops, theirs, strict=True):
            if op["op"] != "boardSet" or not _is_write(answer):
                continue
            again = await run_op(writer, op)
            if op["scope"] == board_cases.OTHER:
                assert again["error"]["message"] == (
                    "coordination board scope `project-other` was deleted with its project; "
                    'detail: {"currentGeneration":0}'
                )
                continue
            expected = oracle_answer(answer)
            # TermAl reads the stored receipt back with serde_json's parser, so a
            # duplicate holds the receipt's floats as that parser reads them.
            expected["result"] = loads(dumps(expected["result"])) | {"duplicate": True}
            expected["status"] = 200
            assert dumps(again, sort_keys=True) == dumps(expected, sort_keys=True)
            replayed += 1
    assert replayed > 120
    assert board_dump(path) == board_dump(FIXTURES / "termal_board" / "coordination.sqlite")
