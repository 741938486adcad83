"""A file TermAl wrote, taken through ``db copy`` into PostgreSQL and back to a file, is
read and written on by TermAl's own code exactly as the original.

tests/fixtures/termal_dbcopy (made by tests/fixtures/make_dbcopy_fixture.py with
termal-oracle, TermAl's Rust store): ``coordination.sqlite`` is what TermAl wrote,
``copied.sqlite`` what ``db copy`` made of it through PostgreSQL, and the answers are
TermAl's to the same reads, replays and new writes on each file (its boot bootstrap
first). CI has no oracle: these tests check that TermAl's answers agree and that
``db copy`` still makes the very file TermAl was given. To ask TermAl again:
``python tests/fixtures/make_dbcopy_fixture.py ORACLE --check``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from termal_tui.store.copy import copy
from tests.store.test_copy import dump, fingerprint, termal_file

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "termal_dbcopy"
# What a new write mints: a message id, a time (TermAl's two timestamp forms).
_FRESH = re.compile(
    r"^(mailbox-message-[0-9a-f-]{36}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00))$"
)


def _jsonl(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURE / name).open(encoding="utf-8")]


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*map(_strings, value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*map(_strings, value)) if value else set()
    return set()


def comparable(ops: list[dict[str, Any]], answers: list[dict[str, Any]]) -> list[Any]:
    """The answers, with what the new writes minted (ids and times no earlier answer
    holds, which differ between two runs of TermAl) replaced by ``<fresh>``."""
    first_fresh = next(n for n, op in enumerate(ops) if op.get("fresh"))
    known = _strings(answers[: first_fresh + 1])  # answers[0] is the open line

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return "<fresh>" if value not in known and _FRESH.match(value) else value
        if isinstance(value, dict):
            return {key: scrub(item) for key, item in value.items()}
        if isinstance(value, list):
            return [scrub(item) for item in value]
        return value

    return answers[: first_fresh + 1] + [scrub(a) for a in answers[first_fresh + 1 :]]


def test_termal_answers_the_copy_as_it_answers_the_original():
    ops = _jsonl("read_ops.jsonl")
    original = _jsonl("answers_original.jsonl")
    copied = _jsonl("answers_copied.jsonl")
    assert original[0] == copied[0] == {"bootstrap": True, "ok": True, "op": "open"}
    assert len(original) == len(copied) == len(ops) + 1
    assert comparable(ops, copied) == comparable(ops, original)
    # What those answers cover: every mailbox and board read, the replays (TermAl took
    # each as a duplicate of the copied row: keys and request hashes moved exactly), and
    # new writes that continued the sequences and generations.
    by_op: dict[str, list[dict[str, Any]]] = {}
    for op, answer in zip(ops, copied[1:], strict=True):
        by_op.setdefault(op["op"], []).append(answer)
    assert all(a["ok"] for a in by_op["list"] + by_op["idem"])
    # session-c left (TermAl's store then hides its mailboxes from it); a and c share none
    assert sum(a["ok"] for a in by_op["get"]) == 3
    appends = [a["result"] for a in by_op["append"] if a["ok"]]
    assert [a["duplicate"] for a in appends] == [True, True, True, True, False]
    assert appends[-1]["sequence"] == 4  # m1, m2, m3 were 1..3 in that mailbox
    sets = [a for a in by_op["boardSet"] if a["ok"]]
    assert [a["result"]["duplicate"] for a in sets] == [True] * 6 + [False, False]
    assert by_op["boardSet"][6]["error"]["status"] == 404  # the deleted scope's fence
    listed = by_op["boardList"][-1]["result"]
    assert listed["generation"] == 8 and len(listed["entries"]) == 3


async def test_db_copy_still_makes_the_file_termal_was_given(tmp_path, pg_url):
    source = termal_file(tmp_path, "termal_dbcopy")
    before = fingerprint(source)
    await copy(source, pg_url)
    back = tmp_path / "back" / "coordination.sqlite"
    await copy(pg_url, back)
    assert dump(back) == dump(FIXTURE / "copied.sqlite") == dump(source)
    assert fingerprint(source) == before
