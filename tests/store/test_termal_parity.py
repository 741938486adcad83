"""Parity with TermAl's own store code.

Expected texts and files come from TermAl's Rust store run through termal-oracle
(tests/fixtures/make_termal_fixtures.py regenerates the fixtures); CI only reads them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from termal_tui.store import open_reader, open_writer
from termal_tui.store.connection import WriterAdmission
from termal_tui.store.errors import (
    RetryableError,
    SchemaError,
    StorageError,
    UnprocessableError,
    ValidationError,
)
from termal_tui.store.schema import COPY_ORDER
from tests.helpers import ENGINES, StepClock, counter_ids, execute, rows, send

both_engines = pytest.mark.parametrize("engine", ENGINES)
"""This module checks TermAl's own file: its tests run on SQLite (the ``engine`` fixture
below), except the contract rules marked ``@both_engines``."""


@pytest.fixture
def engine() -> str:
    return "sqlite"


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BASE_RESULT = {
    "schemaVersion": 1,
    "status": "completed",
    "summary": "ok",
    "findings": [],
    "commandsRun": [],
    "filesInspected": [],
    "notes": [],
    "suggestedTrackerUpdates": [],
}

# (overrides, TermAl's status, TermAl's message), as the oracle answered.
REVIEW_CASES = [
    ({"notes": [" "]}, 400, "delegation review result note cannot be empty"),
    ({"filesInspected": [""]}, 400, "delegation review result file inspected cannot be empty"),
    (
        {"suggestedTrackerUpdates": ["\t"]},
        400,
        "delegation review result suggested tracker update cannot be empty",
    ),
    (
        {"commandsRun": [{"command": " ", "status": "success"}]},
        400,
        "delegation review result command cannot be empty",
    ),
    (
        {"findings": [{"severity": "Low", "file": " ", "message": "m"}]},
        400,
        "delegation review result finding file cannot be empty",
    ),
    (
        {"findings": [{"severity": "Low", "message": "  "}]},
        400,
        "delegation review result finding message cannot be empty",
    ),
    (
        {"commandsRun": [{"command": "x", "status": "done"}]},
        422,
        "invalid delegation review result JSON: unknown variant `done`, expected `success` or `error`",
    ),
    (
        {"status": "done"},
        422,
        "invalid delegation review result JSON: unknown variant `done`, expected one of "
        "`queued`, `running`, `completed`, `failed`, `canceled`",
    ),
    ({"status": "running"}, 400, "delegation review result status must be `completed` or `failed`"),
    ({"schemaVersion": 2}, 400, "unsupported delegation review result schemaVersion 2; expected 1"),
    (
        {"extra": 1},
        422,
        "invalid delegation review result JSON: unknown field `extra`, expected one of "
        "`schemaVersion`, `status`, `summary`, `findings`, `commandsRun`, `filesInspected`, "
        "`notes`, `suggestedTrackerUpdates`",
    ),
    (
        {"findings": [{"severity": "Severe", "message": "m"}]},
        400,
        "unsupported review finding severity `Severe`",
    ),
    (
        {"findings": [{"severity": "Low", "message": "m", "line": 0}]},
        400,
        "delegation review result finding line must be at least 1",
    ),
    (
        {"findings": [{"severity": "Low", "message": "m", "line": 4294967296}]},
        422,
        "invalid delegation review result JSON: invalid value: integer `4294967296`, expected u32",
    ),
    ({"summary": "   "}, 400, "delegation review result summary cannot be empty"),
    (
        {"summary": "x" * 16385},
        400,
        "delegation review result summary exceeds 16384 characters",
    ),
    ({"notes": ["n"] * 201}, 400, "delegation review result `notes` exceeds 200 items"),
    (
        {"findings": [{"severity": "Low", "message": "m"}] * 101},
        400,
        "delegation review result exceeds 100 findings",
    ),
    (
        {"findings": [{"severity": "High", "message": "m", "column": 2}]},
        422,
        "invalid delegation review result JSON: unknown field `column`, expected one of "
        "`severity`, `file`, `line`, `message`",
    ),
    (
        {"schemaVersion": -1},
        422,
        "invalid delegation review result JSON: invalid value: integer `-1`, expected u32",
    ),
    (
        {"schemaVersion": True},
        422,
        "invalid delegation review result JSON: invalid type: boolean `true`, expected u32",
    ),
    (
        {"summary": 5},
        422,
        "invalid delegation review result JSON: invalid type: integer `5`, expected a string",
    ),
]


async def _review(writer, result, attempt=1):
    return await writer.append_review_result(
        delegation_id="d1",
        attempt=attempt,
        child_session_id="session-c",
        child_name="C",
        coordinator_session_id="session-p",
        coordinator_name="P",
        result=result,
    )


@both_engines
@pytest.mark.parametrize(("overrides", "status", "message"), REVIEW_CASES)
async def test_review_result_errors_are_termals_sentences_and_classes(
    writer, db, overrides, status, message
):
    with pytest.raises(ValidationError) as raised:
        await _review(writer, BASE_RESULT | overrides)
    assert str(raised.value) == message
    assert raised.value.http_status == status
    assert isinstance(raised.value, UnprocessableError) == (status == 422)
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(0,)]


@both_engines
async def test_missing_review_field_is_unprocessable(writer):
    result = dict(BASE_RESULT)
    del result["notes"]
    with pytest.raises(UnprocessableError, match=r"missing field `notes`$"):
        await _review(writer, result)


@both_engines
async def test_review_summary_is_trimmed_like_rust_not_python(writer, db):
    await _review(writer, BASE_RESULT | {"summary": "\x1f summary "})
    ((body,),) = rows(db, "SELECT body FROM mailbox_messages")
    assert json.loads(body)["summary"] == "\x1f summary"
    assert '"summary":"\\u001f summary"' in body  # byte-identical to serde_json's escaping


async def test_preview_uses_the_whole_body_past_a_nul(writer, db_path):
    await send(writer, body="x\x00 tail and more")
    async with open_reader(db_path) as reader:
        (summary,) = await reader.list_mailboxes()
    assert summary.latest_message_preview == "x\x00 tail and more"  # TermAl's preview
    (own,) = await writer.list_mailboxes(session_id="session-b")
    assert own.latest_message_preview == "x\x00 tail and more"


async def test_long_preview_cut_at_160_after_a_nul_near_the_end_of_the_prefix(writer, db_path):
    body = "é" * 500 + "\x00" + "z" * 3000
    await send(writer, body=body)
    async with open_reader(db_path) as reader:
        (summary,) = await reader.list_mailboxes()
    assert summary.latest_message_preview == "é" * 160 + "…"


# ------------------------------------------------------------------ board tables


def _table_sql(path: Path, table: str) -> str:
    ((sql,),) = rows(path, "SELECT sql FROM sqlite_master WHERE name = ?", (table,))
    return sql


async def test_board_tables_match_termals_ddl(db_path):
    async with open_writer(db_path):
        pass
    for table in ("coordination_board_entries", "coordination_board_history"):
        info = rows(db_path, f"PRAGMA table_info({table})")
        assert [row[3] for row in info if row[1] == "value_json"] == [0]  # nullable
    foreign = rows(db_path, "PRAGMA foreign_key_list(coordination_board_idempotency)")
    assert [(row[2], row[3], row[4], row[6]) for row in foreign] == [
        ("coordination_board_scopes", "scope_id", "scope_id", "CASCADE")
    ]
    # TermAl's board writes store NULL tombstones: they must work on our file.
    execute(db_path, "INSERT INTO coordination_board_scopes VALUES ('s', 1)")
    execute(
        db_path,
        "INSERT INTO coordination_board_entries VALUES ('s','k',1,1,NULL,'a','A','t',NULL)",
    )


async def test_board_tables_from_older_termal_tui_are_repaired_with_rows_kept(db_path):
    async with open_writer(db_path):
        pass
    db = sqlite3.connect(db_path)
    for table in (
        "coordination_board_idempotency",
        "coordination_board_history",
        "coordination_board_entries",
    ):
        db.execute(f"DROP TABLE {table}")
    db.executescript(
        """
        CREATE TABLE coordination_board_entries (scope_id TEXT NOT NULL, key TEXT NOT NULL,
          revision INTEGER NOT NULL CHECK (revision > 0), generation INTEGER NOT NULL
          CHECK (generation > 0), value_json TEXT NOT NULL, author_session_id TEXT NOT NULL,
          author_name TEXT NOT NULL, updated_at TEXT NOT NULL, state_stamp TEXT,
          PRIMARY KEY (scope_id, key), FOREIGN KEY (scope_id)
          REFERENCES coordination_board_scopes(scope_id) ON DELETE CASCADE);
        CREATE TABLE coordination_board_history (scope_id TEXT NOT NULL, key TEXT NOT NULL,
          revision INTEGER NOT NULL CHECK (revision > 0), generation INTEGER NOT NULL
          CHECK (generation > 0), value_json TEXT NOT NULL, author_session_id TEXT NOT NULL,
          author_name TEXT NOT NULL, updated_at TEXT NOT NULL, state_stamp TEXT,
          PRIMARY KEY (scope_id, key, revision), FOREIGN KEY (scope_id)
          REFERENCES coordination_board_scopes(scope_id) ON DELETE CASCADE);
        CREATE TABLE coordination_board_idempotency (scope_id TEXT NOT NULL,
          author_session_id TEXT NOT NULL, idempotency_key TEXT NOT NULL,
          request_hash TEXT NOT NULL, receipt_json TEXT NOT NULL, created_at TEXT NOT NULL,
          PRIMARY KEY (scope_id, author_session_id, idempotency_key));
        INSERT INTO coordination_board_scopes VALUES ('s', 1);
        INSERT INTO coordination_board_entries VALUES ('s','k',1,1,'{"v":1}','a','A','t',NULL);
        INSERT INTO coordination_board_history VALUES ('s','k',1,1,'{"v":1}','a','A','t',NULL);
        INSERT INTO coordination_board_idempotency VALUES ('s','a','key','h','{}','t');
        """
    )
    db.commit()
    db.close()
    async with open_writer(db_path):
        pass
    assert "value_json TEXT," in _table_sql(db_path, "coordination_board_entries")
    assert "value_json TEXT," in _table_sql(db_path, "coordination_board_history")
    assert "FOREIGN KEY" in _table_sql(db_path, "coordination_board_idempotency")
    assert rows(db_path, "SELECT key, value_json FROM coordination_board_entries") == [
        ("k", '{"v":1}')
    ]
    assert rows(db_path, "SELECT COUNT(*) FROM coordination_board_history") == [(1,)]
    assert rows(db_path, "SELECT idempotency_key FROM coordination_board_idempotency") == [("key",)]
    leftovers = rows(db_path, "SELECT name FROM sqlite_master WHERE name LIKE '%old%'")
    assert leftovers == []


# ---------------------------------------------------------- migration and import


async def test_backfill_normalises_every_value_outside_the_receipt_outcomes(db_path):
    async with open_writer(db_path, clock=StepClock(), new_id=counter_ids()) as writer:
        for n in range(4):
            await send(writer, body=f"m{n}", key=f"k{n}")
    db = sqlite3.connect(db_path)
    db.execute("DELETE FROM meta WHERE key = 'mailbox_dispatch_outcome_backfill_v1'")
    for sequence, state, outcome in (
        (1, "deliveredToIdleSession", "bogus"),
        (2, "recoveredWake", "recoveredWake"),
        (3, "queuedBehindActiveTurn", None),
        (4, "durableButNotWoken", "deliveredToIdleSession"),
    ):
        db.execute(
            "UPDATE mailbox_messages SET notification_disposition = ?, dispatch_outcome = ? "
            "WHERE sequence = ?",
            (state, outcome, sequence),
        )
    db.commit()
    db.close()
    async with open_writer(db_path):
        pass
    assert rows(db_path, "SELECT dispatch_outcome FROM mailbox_messages ORDER BY sequence") == [
        ("deliveredToIdleSession",),
        ("durableButNotWoken",),
        ("queuedBehindActiveTurn",),
        ("deliveredToIdleSession",),
    ]


def _legacy_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    shutil.copy(
        FIXTURES / "termal_legacy_import" / "legacy-source.sqlite", directory / "termal.sqlite"
    )
    return directory


def _dump(path: Path) -> dict[str, list[tuple]]:
    return {table: sorted(rows(path, f"SELECT * FROM {table}"), key=repr) for table in COPY_ORDER}


async def test_legacy_import_matches_what_termal_imported(tmp_path):
    directory = _legacy_dir(tmp_path)
    ours = directory / "coordination.sqlite"
    async with open_writer(ours):
        pass
    termal = FIXTURES / "termal_legacy_import" / "coordination.sqlite"
    assert _dump(ours) == _dump(termal)  # tombstone, normalised outcomes, cursors: all equal
    assert rows(ours, "SELECT value FROM meta WHERE key = 'legacy_coordination_import_v1'") == [
        (str(directory / "termal.sqlite"),)
    ]


async def test_partial_legacy_mailbox_schema_is_refused_with_nothing_written(tmp_path):
    directory = _legacy_dir(tmp_path)
    legacy = sqlite3.connect(directory / "termal.sqlite")
    legacy.execute("DROP TABLE mailbox_messages")
    legacy.commit()
    legacy.close()
    ours = directory / "coordination.sqlite"
    with pytest.raises(
        SchemaError, match="legacy mailbox schema is incomplete; refusing a partial"
    ):
        async with open_writer(ours):
            pass
    assert rows(ours, "SELECT COUNT(*) FROM mailboxes") == [(0,)]
    assert rows(ours, "SELECT key FROM meta WHERE key = 'legacy_coordination_import_v1'") == []


# ------------------------------------------------------------ a file TermAl wrote


def _answers(name: str) -> list[dict]:
    text = (FIXTURES / name / "answers.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


async def test_a_file_termal_wrote_reads_exactly_as_termal_answered(tmp_path):
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir(mode=0o700)
    shutil.copy(FIXTURES / "termal_basic" / "coordination.sqlite", path)
    answers = _answers("termal_basic")
    by_op = [answer for answer in answers[1:]]
    list_a, list_b = by_op[12]["result"], by_op[13]["result"]
    range_b, range_a = by_op[14]["result"], by_op[15]["result"]
    async with open_reader(path) as reader:
        assert [s.to_wire() for s in await reader.list_mailboxes(session_id="session-a")] == list_a
        assert [s.to_wire() for s in await reader.list_mailboxes(session_id="session-b")] == list_b
        mailbox = by_op[0]["result"]["mailboxId"]
        strip = lambda items: [  # noqa: E731 - the oracle adds store-only diagnostics
            {k: v for k, v in item.items() if not k.startswith("_")} for item in items
        ]
        assert [
            m.to_wire() for m in await reader.read_range(mailbox, 0, 50, session_id="session-b")
        ] == (strip(range_b))
        assert [
            m.to_wire() for m in await reader.read_range(mailbox, 0, 50, session_id="session-a")
        ] == (strip(range_a))
    # Our writer opens TermAl's file without changing its schema and appends densely.
    schema_before = rows(path, "SELECT sql FROM sqlite_master ORDER BY name")
    async with open_writer(path) as writer:
        receipt = await send(writer, sender="session-b", target="session-a", body="Done.", key="z")
        assert receipt.sequence == 4 and not receipt.duplicate
        again = await writer.append(
            sender_session_id="session-a",
            sender_name="planner",
            target_session_id="session-b",
            target_name="backend",
            body="Also lint.",
            idempotency_key="k2",
            state_stamp="rev-2",
        )
        assert again.duplicate and again.notification_disposition == "durableButNotWoken"
    assert rows(path, "SELECT sql FROM sqlite_master ORDER BY name") == schema_before


# --------------------------------------------------------------- concurrency


async def test_reactivation_with_nothing_departed_needs_no_write_lock(writer, db_path):
    await send(writer)
    blocker = sqlite3.connect(db_path, timeout=0)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds SQLite's write lock
    try:
        assert await asyncio.wait_for(writer.reactivate_session("session-b"), 1.0) == []
    finally:
        blocker.rollback()
        blocker.close()


@both_engines
async def test_writer_reads_during_appends_never_nest_or_see_uncommitted_rows(writer):
    await send(writer)

    async def append(n: int):
        return await send(writer, body=f"n{n}", key=f"concurrent-{n}")

    for trial in range(50):
        results = await asyncio.gather(
            append(trial),
            writer.list_mailboxes(session_id="session-b"),
            writer.wakeups_for_session("session-b"),
            writer.processed_through(
                "session-b", (await writer.list_mailboxes(session_id="session-a"))[0].id
            ),
        )
        summaries = results[1]
        assert summaries[0].latest_sequence in (trial + 1, trial + 2)


@both_engines
async def test_duplicate_waits_for_a_pending_finalization_outside_the_writer_slot(db):
    async with open_writer(db, deadline=2.0) as writer:
        original = await send(writer, key="pending", finalizing=True)

        async def finalize_later():
            await asyncio.wait_for(WriterAdmission.for_path(writer.path).waiting.wait(), 10)
            # Another append proves the writer slot is free while the duplicate waits.
            await send(writer, body="meanwhile", key="other")
            assert not duplicating.done()
            await writer.record_dispatch_outcome(original.message_id, "deliveredToIdleSession")

        duplicating = asyncio.ensure_future(send(writer, key="pending"))
        duplicate, _ = await asyncio.gather(duplicating, finalize_later())
        assert duplicate.duplicate and duplicate.message_id == original.message_id
        assert duplicate.notification_disposition == "deliveredToIdleSession"


@both_engines
async def test_duplicate_of_a_stuck_finalization_fails_retryable_then_resolves(db):
    async with open_writer(db, deadline=0.3) as writer:
        await send(writer, key="stuck", finalizing=True)
        with pytest.raises(RetryableError, match=r"still finalizing.*replaying the same"):
            await send(writer, key="stuck")
    # After a restart there is no live finalizer: the append-boundary receipt.
    async with open_writer(db) as writer:
        again = await send(writer, key="stuck")
        assert again.duplicate and again.notification_disposition == "durableButNotWoken"


async def test_an_existing_state_directory_is_restricted_on_every_open(tmp_path):
    directory = tmp_path / ".termal"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    async with open_writer(directory / "coordination.sqlite"):
        pass
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    directory.chmod(0o750)
    async with open_writer(directory / "coordination.sqlite"):
        pass
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


async def test_termal_home_is_a_state_directory_too(tmp_path, monkeypatch):
    directory = tmp_path / "home"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    monkeypatch.setenv("TERMAL_HOME", str(directory))
    async with open_writer(directory / "coordination.sqlite"):
        pass
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


async def test_any_other_existing_directory_is_left_as_it_is(tmp_path, monkeypatch):
    monkeypatch.delenv("TERMAL_HOME", raising=False)
    directory = tmp_path / "shared"
    directory.mkdir()
    directory.chmod(0o755)
    async with open_writer(directory / "coordination.sqlite"):
        pass
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755
    assert stat.S_IMODE((directory / "coordination.sqlite").stat().st_mode) == 0o600  # ours


@pytest.mark.parametrize("kind", ["text file", "foreign SQLite database"])
async def test_a_file_that_is_not_a_coordination_database_is_refused_untouched(
    tmp_path, monkeypatch, kind
):
    monkeypatch.delenv("TERMAL_HOME", raising=False)
    directory = tmp_path / "etc"
    directory.mkdir()
    directory.chmod(0o755)
    path = directory / "passwd"
    if kind == "text file":
        path.write_text("root:x:0:0:root:/root:/bin/bash\n" * 20)
    else:
        with contextlib.closing(sqlite3.connect(path)) as other, other:
            other.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT)")
            other.execute("INSERT INTO notes(text) VALUES ('keep me')")
        other.close()
    path.chmod(0o644)
    before = path.read_bytes()
    with pytest.raises(SchemaError, match=r"not a SQLite database|not a TermAl coordination"):
        async with open_writer(path):
            pass
    assert path.read_bytes() == before
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755
    assert sorted(p.name for p in directory.iterdir()) == ["passwd"]  # no -wal, no -shm


async def test_a_full_disk_is_a_typed_error_and_the_file_stays_intact(writer, db_path):
    await send(writer, body="first")
    pages = rows(db_path, "PRAGMA page_count")[0][0]
    await writer._db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is now full
    with pytest.raises(StorageError, match="is full; nothing was written, free space and retry"):
        await send(writer, body="x" * 200_000)
    await writer._db.execute("PRAGMA max_page_count = 1073741823")
    assert rows(db_path, "SELECT sequence FROM mailbox_messages") == [(1,)]
    assert (await send(writer, body="after")).sequence == 2


# ------------------------------------------- the cheaper unread count, same numbers

# The human view's unread count as the earlier correlated query computed it.
REFERENCE_UNREAD = """
SELECT m.id, (SELECT COALESCE(SUM((
   SELECT COUNT(*) FROM mailbox_messages unread
   WHERE unread.mailbox_id = p.mailbox_id AND unread.sequence > p.processed_through
     AND unread.target_session_id = p.session_id AND COALESCE(unread.topic, '') != ?
 )), 0) FROM mailbox_participants p WHERE p.mailbox_id = m.id)
FROM mailboxes m
"""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mailboxes=st.lists(
        st.tuples(
            st.lists(st.integers(0, 12), min_size=1, max_size=3),  # cursors
            st.lists(
                st.tuples(st.integers(0, 3), st.booleans()),  # target index, control row
                min_size=1,
                max_size=12,
            ),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_grouped_unread_counts_equal_the_correlated_reference(tmp_path_factory, mailboxes):
    path = tmp_path_factory.mktemp("unread") / "coordination.sqlite"
    asyncio.run(_empty_store(path))
    db = sqlite3.connect(path)
    for m, (cursors, messages) in enumerate(mailboxes):
        mid = f"mailbox-{m}"
        db.execute("INSERT INTO mailboxes VALUES (?, ?, 't', ?)", (mid, mid, len(messages) + 1))
        for s, cursor in enumerate(cursors):
            db.execute(
                "INSERT INTO mailbox_participants VALUES (?, ?, ?, ?, 't', NULL)",
                (mid, f"s{s}", f"n{s}", cursor),
            )
        for seq, (target, control) in enumerate(messages, start=1):
            db.execute(
                "INSERT INTO mailbox_messages VALUES (?,?,?,?,?,?,?,'t','routine',?,NULL,'b',?,1,"
                "'durableButNotWoken',NULL)",
                (
                    f"{mid}-{seq}",
                    mid,
                    seq,
                    "s9",
                    "x",
                    f"s{target}",
                    "y",
                    "delegation-review-result/v1" if control else None,
                    f"{mid}-{seq}",
                ),
            )
    db.commit()
    reference = dict(db.execute(REFERENCE_UNREAD, ("delegation-review-result/v1",)).fetchall())
    db.close()

    async def ours() -> dict[str, int]:
        async with open_reader(path) as reader:
            return {s.id: s.unread_count for s in await reader.list_mailboxes()}

    for mailbox_id, count in asyncio.run(ours()).items():
        assert count == reference[mailbox_id]


async def _empty_store(path: Path) -> None:
    async with open_writer(path):
        pass
