"""Schema ensure, migration, legacy import (compat §1.3, §3.18) and review results (§1.9, §2.8)."""

from __future__ import annotations

import json
import sqlite3
import stat

import pytest

from termal_tui.core.review import parse_envelope
from termal_tui.store import ConflictError, SchemaError, ValidationError, open_reader, open_writer
from tests.helpers import execute, rows, send, sqlite_only

CONTROL = "delegation-review-result/v1"
LEGACY_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE mailboxes (id TEXT PRIMARY KEY, participant_key TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL, next_sequence INTEGER NOT NULL);
CREATE TABLE mailbox_participants (mailbox_id TEXT NOT NULL, session_id TEXT NOT NULL,
  display_name TEXT NOT NULL, processed_through INTEGER NOT NULL DEFAULT 0,
  joined_at TEXT NOT NULL, left_at TEXT, PRIMARY KEY (mailbox_id, session_id));
CREATE TABLE mailbox_messages (id TEXT PRIMARY KEY, mailbox_id TEXT NOT NULL,
  sequence INTEGER NOT NULL, sender_session_id TEXT NOT NULL, sender_name TEXT NOT NULL,
  target_session_id TEXT NOT NULL, target_name TEXT NOT NULL, created_at TEXT NOT NULL,
  class TEXT NOT NULL CHECK (class = 'routine'), topic TEXT, state_stamp TEXT, body TEXT NOT NULL,
  idempotency_key TEXT NOT NULL, unread_depth_at_append INTEGER NOT NULL,
  notification_disposition TEXT NOT NULL, UNIQUE (mailbox_id, sequence),
  UNIQUE (sender_session_id, idempotency_key));
INSERT INTO mailboxes VALUES ('mailbox-1', '["session-a","session-b"]', '2026-07-26T00:00:00Z', 4);
INSERT INTO mailbox_participants VALUES
  ('mailbox-1', 'session-a', 'A', 0, '2026-07-26T00:00:00Z', NULL),
  ('mailbox-1', 'session-b', 'B', 0, '2026-07-26T00:00:00Z', NULL);
INSERT INTO mailbox_messages VALUES
  ('m1', 'mailbox-1', 1, 'session-a', 'A', 'session-b', 'B', '2026-07-26T00:00:00Z', 'routine',
   NULL, NULL, 'one', 'k1', 1, 'recoveredWake'),
  ('m2', 'mailbox-1', 2, 'session-a', 'A', 'session-b', 'B', '2026-07-26T00:00:01Z', 'routine',
   NULL, NULL, 'two', 'k2', 2, 'queuedBehindActiveTurn'),
  ('m3', 'mailbox-1', 3, 'session-a', 'A', 'session-b', 'B', '2026-07-26T00:00:02Z', 'routine',
   NULL, NULL, 'three', 'k3', 3, 'legacyUnknownState');
"""


def _make_legacy(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.executescript(LEGACY_SCHEMA)
    db.close()


async def test_fresh_database_gets_the_meta_markers(writer, db):
    meta = dict(rows(db, "SELECT key, value FROM meta"))
    assert meta == {
        "coordination_schema_version": "1",
        "mailbox_dispatch_outcome_backfill_v1": "complete",
        "legacy_coordination_import_v1": "no-legacy-state",
    }


@sqlite_only
async def test_fresh_file_gets_board_tables_pragmas_and_modes(writer, db):
    tables = {r[0] for r in rows(db, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"coordination_board_scopes", "coordination_board_idempotency"} <= tables
    assert rows(db, "PRAGMA journal_mode") == [("wal",)]
    columns = [r[1] for r in rows(db, "PRAGMA table_info(mailbox_messages)")]
    assert columns[-1] == "dispatch_outcome" and len(columns) == 16
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700


async def test_writer_refuses_an_unsupported_schema_version(writer, db):
    execute(db, "UPDATE meta SET value = '7' WHERE key = 'coordination_schema_version'")
    with pytest.raises(SchemaError, match="unsupported SQLite coordination schema version `7`"):
        async with open_writer(db):
            pass
    assert rows(db, "SELECT value FROM meta WHERE key='coordination_schema_version'") == [("7",)]


async def test_reader_reads_a_pre_migration_file_without_changing_it(tmp_path):
    path = tmp_path / "coordination.sqlite"
    _make_legacy(path)
    before = path.read_bytes()
    async with open_reader(path) as reader:
        assert reader.schema.has_dispatch_outcome is False
        messages = await reader.read_range("mailbox-1")
    assert [m.dispatch_outcome for m in messages] == [None, None, None]
    assert path.read_bytes() == before


async def test_writer_migrates_and_backfills_the_immutable_outcome_once(tmp_path):
    path = tmp_path / "coordination.sqlite"
    _make_legacy(path)
    async with open_writer(path) as writer:
        retry = await send(writer, "session-a", "session-b", body="two", key="k2")
        assert retry.duplicate and retry.notification_disposition == "queuedBehindActiveTurn"
    assert rows(path, "SELECT dispatch_outcome FROM mailbox_messages ORDER BY sequence") == [
        ("durableButNotWoken",),
        ("queuedBehindActiveTurn",),
        ("durableButNotWoken",),
    ]
    # The mutable lifecycle column keeps its legacy value.
    assert rows(path, "SELECT notification_disposition FROM mailbox_messages WHERE id='m3'") == [
        ("legacyUnknownState",)
    ]
    execute(path, "UPDATE mailbox_messages SET dispatch_outcome = NULL WHERE id = 'm1'")
    async with open_writer(path):
        pass  # guarded by the marker: no second backfill
    assert rows(path, "SELECT dispatch_outcome FROM mailbox_messages WHERE id='m1'") == [(None,)]


async def test_legacy_termal_sqlite_rows_are_imported_with_the_marker(tmp_path):
    legacy = tmp_path / "termal.sqlite"
    _make_legacy(legacy)
    path = tmp_path / "coordination.sqlite"
    async with open_writer(path) as writer:
        receipt = await send(writer, "session-b", "session-a", body="after import")
    assert receipt.sequence == 4
    assert rows(path, "SELECT value FROM meta WHERE key='legacy_coordination_import_v1'") == [
        (str(legacy),)
    ]
    assert rows(path, "SELECT COUNT(*) FROM mailbox_messages") == [(4,)]


async def test_legacy_import_refuses_a_non_empty_pre_marker_destination(tmp_path):
    path = tmp_path / "coordination.sqlite"
    _make_legacy(path)  # destination already holds rows, and no marker
    _make_legacy(tmp_path / "termal.sqlite")
    with pytest.raises(SchemaError, match="requires an empty pre-marker destination"):
        async with open_writer(path):
            pass


async def test_writer_refuses_symlinked_database(tmp_path):
    real = tmp_path / "real.sqlite"
    async with open_writer(real):
        pass
    link = tmp_path / "link.sqlite"
    link.symlink_to(real)
    with pytest.raises(SchemaError, match="symlink"):
        async with open_writer(link):
            pass


def _result(**overrides):
    result = {
        "schemaVersion": 1,
        "status": "completed",
        "summary": "  Looks good.  ",
        "findings": [{"severity": "High", "file": "a.py", "line": 3, "message": "bug"}],
        "commandsRun": [{"command": "pytest", "status": "success"}],
        "filesInspected": ["a.py"],
        "notes": [],
        "suggestedTrackerUpdates": [],
    }
    result.update(overrides)
    return result


async def _submit(writer, attempt=1, **overrides):
    return await writer.append_review_result(
        delegation_id="delegation-1",
        attempt=attempt,
        child_session_id="session-child",
        child_name="Child",
        coordinator_session_id="session-parent",
        coordinator_name="Parent",
        result=_result(**overrides),
    )


async def test_review_result_is_a_control_row_that_never_wakes(writer, db):
    receipt = await _submit(writer)
    assert receipt.notification_disposition == "durableButNotWoken"
    ((topic, stamp, key, state, outcome, body),) = rows(
        db,
        "SELECT topic, state_stamp, idempotency_key, notification_disposition, dispatch_outcome, "
        "body FROM mailbox_messages",
    )
    assert (topic, stamp, key) == (
        CONTROL,
        "delegation-1:1",
        "delegation-review-result-v1-delegation-1-1",
    )
    assert (state, outcome) == ("durableButNotWoken", "durableButNotWoken")
    envelope = json.loads(body)
    assert list(envelope)[:7] == [
        "schemaVersion",
        "kind",
        "delegationId",
        "childSessionId",
        "submissionAttempt",
        "status",
        "summary",
    ]
    assert envelope["summary"] == "Looks good." and " " not in body.split('"summary"')[0]
    assert parse_envelope(body).findings[0].line == 3
    assert await writer.wakeups_for_session("session-parent", boot=True) == []


async def test_exact_review_retry_returns_the_original_and_a_different_result_conflicts(writer):
    first = await _submit(writer)
    again = await _submit(writer)
    assert again.duplicate and again.message_id == first.message_id
    with pytest.raises(ConflictError):
        await _submit(writer, summary="Something else")
    follow_up = await _submit(writer, attempt=2, summary="Second look")
    assert follow_up.sequence == first.sequence + 1 and follow_up.mailbox_id == first.mailbox_id


@pytest.mark.parametrize(
    "overrides",
    [
        {"extra": 1},
        {"findings": [{"severity": "High", "message": "m", "column": 2}]},
        {"findings": [{"severity": "Severe", "message": "m"}]},
        {"findings": [{"severity": "Low", "message": "m", "line": 0}]},
        {"commandsRun": [{"command": "x", "status": "ok"}]},
        {"status": "done"},
        {"schemaVersion": 2},
        {"notes": ["n"] * 201},
        {"findings": [{"severity": "Low", "message": "m"}] * 101},
        {"summary": "x" * 16385},
        {"summary": "   "},
    ],
)
async def test_invalid_review_results_are_rejected_before_append(writer, db, overrides):
    # Exact texts and classes are pinned against TermAl in test_store_parity.py.
    with pytest.raises(ValidationError, match=r"review result|review finding severity"):
        await _submit(writer, **overrides)
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(0,)]


async def test_review_result_requires_all_eight_fields(writer):
    result = _result()
    del result["notes"]
    with pytest.raises(ValidationError, match="notes"):
        await writer.append_review_result(
            delegation_id="d",
            attempt=1,
            child_session_id="c",
            child_name="C",
            coordinator_session_id="p",
            coordinator_name="P",
            result=result,
        )
