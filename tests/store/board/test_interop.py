"""A board termal-tui wrote, read and written by TermAl's own code.

tests/fixtures/termal_board_ours/coordination.sqlite is what our writer makes of
OURS_WRITE_OPS on a fixed clock; answers.jsonl is what TermAl answered to
OURS_READ_OPS on a copy of it (termal-oracle --no-bootstrap): its reads of our heads,
tombstones and pages, its replays of our writes (our receipts and request hashes are
its duplicates), and its own writes on top of ours.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from termal_tui.store.board import open_board_reader
from termal_tui.store.board.writer import open_board_writer
from tests import board_cases
from tests.board_harness import (
    SqlSteps,
    board_dump,
    comparable,
    read_answers,
    read_jsonl,
    resolve,
    run_op,
    run_ours,
    write_jsonl,
)
from tests.store.board.test_golden import mapped, timestamp_map

OURS = Path(__file__).resolve().parents[2] / "fixtures" / "termal_board_ours"


def _copy(tmp_path: Path) -> Path:
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir(mode=0o700)
    shutil.copy(OURS / "coordination.sqlite", path)
    return path


async def test_our_writer_still_writes_the_file_termal_read(tmp_path):
    """Same ops, same clock: the same rows TermAl was given (so its answers below are
    answers about what we write today)."""
    path = tmp_path / "state" / "coordination.sqlite"
    async with open_board_writer(path, clock=board_cases.fixed_clock()) as writer:
        answers = await run_ours(writer, board_cases.OURS_WRITE_OPS)
    assert board_dump(path) == board_dump(OURS / "coordination.sqlite")
    scratch = tmp_path / "ops.jsonl"
    write_jsonl(scratch, board_cases.OURS_WRITE_OPS)
    assert read_jsonl(scratch) == read_jsonl(OURS / "ops.jsonl")  # the fixture is current
    assert sum(1 for a in answers if a.get("ok") and a["result"].get("duplicate") is False) == 14


def test_termal_accepted_every_replay_of_our_writes_as_a_duplicate():
    ops = read_jsonl(OURS / "read_ops.jsonl")
    theirs = read_answers(OURS / "answers.jsonl")
    written = read_jsonl(OURS / "ops.jsonl")
    replays = [
        (op, answer)
        for op, answer in zip(ops, theirs, strict=True)
        if op["case"].startswith("termal replays")
    ]
    assert len(replays) == sum(1 for op in written if op["op"] == "boardSet")
    duplicates = [a for _, a in replays if a.get("ok") and a["result"]["duplicate"]]
    # Every write that committed came back as TermAl's duplicate (our hash is its hash);
    # the deleted scope's answers its fence, the conflict its conflict.
    assert len(duplicates) == 13
    assert {a["error"]["status"] for _, a in replays if not a["ok"]} == {404, 409}


async def test_termals_reads_of_our_file_are_what_our_reader_reads(tmp_path):
    path = _copy(tmp_path)
    ops = read_jsonl(OURS / "read_ops.jsonl")
    theirs = read_answers(OURS / "answers.jsonl")
    first_write = next(n for n, op in enumerate(ops) if op["op"] == "boardSet")
    steps = SqlSteps(path)
    try:
        async with open_board_reader(path) as reader:
            for n in range(first_write):
                answer = await run_op(reader, resolve(ops[n], steps))
                assert comparable(answer) == comparable(theirs[n]), ops[n]["case"]
    finally:
        steps.close()


async def test_every_termal_answer_on_our_file_is_ours_too(tmp_path):
    """All of OURS_READ_OPS through our writer on a copy of our file: TermAl's answers,
    exactly (its own new writes compared with their timestamps mapped)."""
    path = _copy(tmp_path)
    ops = read_jsonl(OURS / "read_ops.jsonl")
    theirs = read_answers(OURS / "answers.jsonl")
    later = board_cases.fixed_clock(1_900_000_000_000_000_000)  # apart from the file's
    async with open_board_writer(path, clock=later) as writer:
        ours = await run_ours(writer, ops)
    mapping = timestamp_map(ours, theirs)
    assert len(mapping) == 2  # TermAl's restore of our tombstone and its update of our head
    for op, mine, recorded in zip(ops, ours, theirs, strict=True):
        assert mapped(comparable(mine), mapping) == comparable(recorded), op["case"]
