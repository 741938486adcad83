"""The session registry: ids, names, removal, turns, channel presence, wake marks, on
both engines (a registry file beside a SQLite database, or the tables of a PostgreSQL
one); tests about the file itself are ``sqlite_only``."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from termal_tui.agents.registry import Registry, WouldWait
from termal_tui.store.errors import (
    ConflictError,
    NotFoundError,
    SchemaError,
    StorageError,
    ValidationError,
)
from termal_tui.store.registry.database import RegistryDatabase
from termal_tui.views.notifiers import REGISTRY_FILENAME, registry_path_for
from tests.helpers import ENGINES, execute, is_url, sqlite_only


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def registry(db: Path | str) -> Registry:
    return Registry.beside(db)


def set_version(registry: Registry, version: int) -> None:
    """Stamp the registry with another version (a newer termal-tui wrote it)."""
    if is_url(registry.path):
        execute(
            registry.path,
            "UPDATE registry_meta SET value = ? WHERE key = 'version'",
            (str(version),),
        )
    else:
        execute(registry.path, f"PRAGMA user_version = {version}")


@sqlite_only
def test_registry_lives_beside_the_coordination_database(db_path: Path, registry: Registry):
    registry.add("alice")
    assert registry.path == db_path.with_name(REGISTRY_FILENAME) == registry_path_for(db_path)
    assert registry.path.exists()
    assert not db_path.exists()  # the coordination file is not touched by the registry
    assert stat.S_IMODE(os.stat(registry.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(registry.path.parent).st_mode) == 0o700


def test_ids_are_termal_shaped_and_stable_across_restarts(db: Path | str, registry: Registry):
    alice = registry.add("Alice", agent="Claude", workdir="/w")
    assert alice.id.startswith("session-") and len(alice.id) == len("session-") + 12
    registry.close()
    reopened = Registry.beside(db)
    assert reopened.resolve_own("alice") == alice
    assert reopened.resolve_own(alice.id) == alice
    assert reopened.ensure("ALICE").id == alice.id  # ensure finds, never re-mints


def test_names_are_unique_case_insensitively(registry: Registry):
    registry.add("Straße")
    with pytest.raises(ConflictError, match="already exists"):
        registry.add("STRASSE")  # full case folding, not ASCII only
    with pytest.raises(ConflictError):
        registry.add("  straße  ")


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("a/b", "must not contain"),
        ("a%b", "must not contain"),
        ("bell\x07", "must not contain"),
        ("session-7", "must not start"),
        ("x" * 65, "at most 64"),
    ],
)
def test_bad_names_are_refused_with_a_reason(registry: Registry, name: str, why: str):
    with pytest.raises(ValidationError, match=why):
        registry.add(name)
    assert registry.sessions() == []


def test_remove_keeps_a_tombstone_and_frees_the_name(registry: Registry):
    bob = registry.add("bob")
    removed = registry.remove("BOB")
    assert removed.id == bob.id and removed.removed_at is not None and removed.status == "removed"
    assert registry.sessions() == []
    assert [s.id for s in registry.sessions(include_removed=True)] == [bob.id]
    assert registry.find_removed_by_name("bob")[0].id == bob.id
    again = registry.add("bob")  # a new session, a new id
    assert again.id != bob.id
    with pytest.raises(NotFoundError):
        registry.resolve_own(bob.id)


def test_turns_and_channel_presence(registry: Registry):
    alice = registry.add("alice")
    registry.set_turn(alice.id, True)
    assert registry.get(alice.id).in_turn and registry.get(alice.id).status == "active"
    registry.set_turn(alice.id, False)
    assert not registry.get(alice.id).in_turn
    assert not registry.get(alice.id).channel_connected()
    registry.heartbeat(alice.id, os.getpid())
    assert registry.get(alice.id).channel_connected()
    assert not registry.get(alice.id).channel_connected(now=time.time() + 60)  # stale beat
    registry.heartbeat(alice.id, None)
    assert not registry.get(alice.id).channel_connected()


def test_a_dead_channel_process_is_not_connected(registry: Registry):
    alice = registry.add("alice")
    registry.heartbeat(alice.id, 2**22 + 12345)  # no such pid
    assert not registry.get(alice.id).channel_connected()


def test_wake_marks_keep_the_highest_seen_sequence(registry: Registry):
    alice = registry.add("alice")
    registry.mark_wake_pushed(alice.id, "mailbox-1", 4)
    assert registry.has_pending_wake(alice.id, "mailbox-1", before=5)  # #5 rides the wake
    assert not registry.has_pending_wake(alice.id, "mailbox-1", before=4)  # #4's own wake
    registry.mark_engaged(alice.id, "mailbox-1", 2)  # an older read does not lower it
    assert registry.wake_marks(alice.id) == {"mailbox-1": (False, 4)}
    registry.mark_engaged(alice.id, "mailbox-1", 9)
    assert registry.wake_marks(alice.id) == {"mailbox-1": (False, 9)}
    registry.clear_wake_marks(alice.id)
    assert registry.wake_marks(alice.id) == {}


def test_a_registry_without_the_unique_index_can_hold_ambiguous_names(registry: Registry):
    registry.add("carol")
    # e.g. written by hand or by another tool
    execute(registry.path, "DROP INDEX sessions_live_name")
    execute(
        registry.path,
        "INSERT INTO sessions(id, name, name_key, created_at) "
        "VALUES('session-other', 'Carol', 'carol', '2026-01-01T00:00:00Z')",
    )
    assert len(registry.find_live_by_name("CAROL")) == 2


def test_a_newer_registry_is_refused(registry: Registry):
    registry.add("alice")
    set_version(registry, 99)
    with pytest.raises(StorageError, match="version 99; this termal-tui understands up to 7"):
        Registry(registry.path).sessions()


def test_a_file_that_is_not_a_registry_is_refused(tmp_path: Path):
    path = tmp_path / REGISTRY_FILENAME
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(SchemaError, match="is not a SQLite database"):
        Registry(path).sessions()
    assert path.read_bytes() == b"this is not sqlite" * 100


def test_ensure_accepts_an_exact_id_but_never_mints_one(registry: Registry):
    alice = registry.add("alice")
    assert registry.ensure(alice.id) == alice
    with pytest.raises(NotFoundError):
        registry.ensure("session-000000000000")
    assert [s.name for s in registry.sessions()] == ["alice"]


# ------------------------------------------------------------------ reads at once (event loops)


def test_a_read_at_once_on_postgresql_is_asked_in_a_thread(pg_url: str):
    """A PostgreSQL answer is a network round trip: never on the event loop."""
    registry = Registry.beside(pg_url)
    alice = registry.add("alice")
    with pytest.raises(WouldWait):
        registry.at_once(lambda: registry.get(alice.id))
    assert registry.get(alice.id) == alice


def test_reads_at_once_answer_as_the_ordinary_reads_once_the_file_is_open(db_path: Path):
    Registry.beside(db_path).add("alice")
    registry = Registry.beside(db_path)
    with pytest.raises(WouldWait):  # not opened by an ordinary call yet: ask in a thread
        registry.at_once(lambda: registry.by_name("alice"))
    (alice,) = registry.by_name("alice")
    assert registry.at_once(lambda: registry.by_name("alice")) == [alice]
    assert registry.at_once(lambda: registry.get(alice.id)) == alice
    _, token = registry.issue_token("alice")
    assert registry.at_once(lambda: registry.session_for_token(token)) == alice


@sqlite_only
def test_a_read_at_once_does_not_wait_for_a_writer(registry: Registry):
    alice = registry.add("alice")
    holder = sqlite3.connect(registry.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    holder.execute("UPDATE sessions SET removed_at = 'x'")
    try:
        assert registry.at_once(lambda: registry.get(alice.id)) == alice  # WAL: the last commit
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@sqlite_only
def test_a_read_at_once_never_waits_for_another_threads_and_never_writes(registry: Registry):
    alice = registry.add("alice")
    database = RegistryDatabase(registry.path)
    with database.transaction(write=False):
        pass  # opened by an ordinary call

    def ask() -> None:
        with database.at_once(write=False):
            pass

    with database.at_once(write=False) as db, ThreadPoolExecutor(1) as pool:
        assert db.execute("SELECT COUNT(*) FROM sessions").fetchone() == (1,)
        with pytest.raises(WouldWait):  # one read at once at a time; the other asks in a thread
            pool.submit(ask).result()
    ask()  # free again
    with pytest.raises(RuntimeError, match="cannot write"):
        registry.at_once(lambda: registry.set_turn(alice.id, True))
    assert registry.get(alice.id) == alice and not alice.in_turn
    database.close()
