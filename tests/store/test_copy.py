"""``db copy`` in the store: TermAl's files into PostgreSQL and back, row for row; a rerun
changes nothing; a destination with other data is refused and left alone; PostgreSQL's
NUL restriction is said, not papered over; the session registry moves with its database;
rows travel in batches; generated content survives both directions."""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from termal_tui.store.copy import TABLES, copy
from termal_tui.store.errors import ConflictError, ValidationError
from termal_tui.store.sqlite import read_only_uri
from termal_tui.store.writer import open_writer
from tests.helpers import StepClock, counter_ids, execute, is_url, rows

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TERMAL_FILES = ("termal_board", "termal_board_ours", "termal_legacy_import")


def dump(target: Path | str) -> dict[str, list[tuple[Any, ...]]]:
    """Every copied table's rows (receipts in insertion order, the rest sorted), read
    without changing anything."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    for table in TABLES:
        if is_url(target):
            if not rows(target, f"SELECT to_regclass('{table.name}') IS NOT NULL")[0][0]:
                found[table.name] = []
                continue
            got = rows(
                target,
                f"SELECT {table.column_list} FROM {table.name} ORDER BY {table.order}",
            )
        else:
            path = Path(target)
            if table.group == "registry":
                path = path.with_name("termal-tui-sessions.sqlite")
            if not path.exists():
                found[table.name] = []
                continue
            db = sqlite3.connect(read_only_uri(path, immutable=_no_wal(path)), uri=True)
            try:
                names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
                got = (
                    db.execute(
                        f"SELECT {table.column_list} FROM {table.name} ORDER BY rowid"
                    ).fetchall()
                    if table.name in names
                    else []
                )
            finally:
                db.close()
        found[table.name] = [tuple(r) for r in got] if table.ordered else sorted(got, key=repr)
    return found


def _no_wal(path: Path) -> bool:
    """Read a file with no -wal as immutable: a read-only open of a WAL file would add
    its -wal and -shm (and the tests check the source gains nothing)."""
    return not Path(f"{path}-wal").exists()


def fingerprint(path: Path) -> dict[str, tuple[str, int]]:
    """The bytes and mtime of a file and each sidecar that exists."""
    seen = {}
    for candidate in [path, *(Path(f"{path}{s}") for s in ("-wal", "-shm", "-journal"))]:
        if candidate.exists():
            data = candidate.read_bytes()
            seen[candidate.name] = (hashlib.sha256(data).hexdigest(), candidate.stat().st_mtime_ns)
    return seen


def termal_file(tmp_path: Path, name: str) -> Path:
    """A copy of a file TermAl's own code wrote (tests/fixtures), in its own directory."""
    directory = tmp_path / f"src-{name}"
    directory.mkdir(mode=0o700)
    target = directory / "coordination.sqlite"
    target.write_bytes((FIXTURES / name / "coordination.sqlite").read_bytes())
    return target


@pytest.mark.parametrize("name", TERMAL_FILES)
async def test_a_termal_file_goes_into_postgresql_and_back_row_for_row(tmp_path, pg_url, name):
    source = termal_file(tmp_path, name)
    before = fingerprint(source)
    into = await copy(source, pg_url)
    assert into.outcome == "copied"
    back = tmp_path / "back" / "coordination.sqlite"
    out = await copy(pg_url, back)
    assert out.outcome == "copied"
    original = dump(source)
    assert any(original[t] for t in original)
    assert dump(pg_url) == original
    assert dump(back) == original
    assert fingerprint(source) == before  # the source was only read
    assert into.rows == out.rows == sum(len(v) for v in original.values())


async def test_a_new_file_has_termals_schema_and_is_private(tmp_path, pg_url):
    await copy(termal_file(tmp_path, "termal_board"), pg_url)
    made = tmp_path / "new" / "deeper" / "coordination.sqlite"
    await copy(pg_url, made)

    def schema(path: Path) -> list[tuple[str, str]]:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return db.execute(
                "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"
            ).fetchall()
        finally:
            db.close()

    assert schema(made) == schema(FIXTURES / "termal_board" / "coordination.sqlite")
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert rows(made, "SELECT key, value FROM meta ORDER BY key") == [
        ("coordination_schema_version", "1"),
        ("legacy_coordination_import_v1", "no-legacy-state"),
        ("mailbox_dispatch_outcome_backfill_v1", "complete"),
    ]


async def test_running_it_again_finds_it_up_to_date_and_changes_nothing(tmp_path, pg_url):
    source = termal_file(tmp_path, "termal_board_ours")
    await copy(source, pg_url)
    in_pg = dump(pg_url)
    again = await copy(source, pg_url)
    assert again.outcome == "up to date"
    assert dump(pg_url) == in_pg
    assert again.rows == sum(len(v) for v in in_pg.values())

    back = tmp_path / "back" / "coordination.sqlite"
    await copy(pg_url, back)
    before = fingerprint(back)
    assert (await copy(pg_url, back)).outcome == "up to date"
    assert fingerprint(back) == before
    # SQLite to SQLite is the same command.
    twin = tmp_path / "twin" / "coordination.sqlite"
    assert (await copy(back, twin)).outcome == "copied"
    assert (await copy(back, twin)).outcome == "up to date"
    assert dump(twin) == dump(source)


async def _append(target: Path | str, key: str, body: str = "hello") -> None:
    async with open_writer(target, clock=StepClock(), new_id=counter_ids()) as writer:
        await writer.append(
            sender_session_id="session-x",
            sender_name="x",
            target_session_id="session-y",
            target_name="y",
            body=body,
            idempotency_key=key,
        )


async def test_a_destination_with_other_data_is_refused_and_left_alone(tmp_path, pg_url):
    source = termal_file(tmp_path, "termal_board")
    await _append(pg_url, "other")
    held = dump(pg_url)
    with pytest.raises(ConflictError) as refused:
        await copy(source, pg_url)
    assert "already holds other data (mailboxes: 1 row" in str(refused.value)
    assert str(refused.value).endswith("nothing was changed")
    assert dump(pg_url) == held

    other = tmp_path / "other" / "coordination.sqlite"
    await _append(other, "other")
    before = fingerprint(other)
    with pytest.raises(ConflictError):
        await copy(source, other)
    assert fingerprint(other) == before

    # A destination holding the source's rows and one more is other data too.
    fresh = tmp_path / "fresh" / "coordination.sqlite"
    await copy(source, fresh)
    await _append(fresh, "extra")
    with pytest.raises(ConflictError):
        await copy(source, fresh)


async def test_nul_text_is_refused_for_postgresql_in_one_sentence_and_nothing_is_written(
    tmp_path, pg_url
):
    """termal_basic holds a body with U+0000 (TermAl stores it): PostgreSQL cannot."""
    source = termal_file(tmp_path, "termal_basic")
    with pytest.raises(ValidationError) as refused:
        await copy(source, pg_url)
    sentence = str(refused.value)
    assert "mailbox_messages row 'mailbox-message-" in sentence
    assert "NUL character (U+0000) in body, which PostgreSQL text cannot store" in sentence
    assert sentence.endswith(f"nothing was copied to {pg_url}")
    assert "\n" not in sentence
    # One transaction: not even the tables were left behind.
    assert rows(pg_url, "SELECT to_regclass('mailboxes') IS NULL") == [(True,)]
    # A file keeps it.
    copied = tmp_path / "kept" / "coordination.sqlite"
    await copy(source, copied)
    assert dump(copied) == dump(source)
    assert any("\x00" in row[11] for row in dump(copied)["mailbox_messages"])


async def test_a_failed_copy_into_a_new_file_leaves_no_file(tmp_path, pg_url):
    await _append(pg_url, "k")
    target = tmp_path / "new" / "coordination.sqlite"
    execute(pg_url, "ALTER TABLE mailbox_messages DROP CONSTRAINT mailbox_messages_class_check")
    execute(pg_url, "UPDATE mailbox_messages SET class = 'urgent'")  # TermAl's CHECK refuses
    with pytest.raises(ValidationError, match="mailbox_messages cannot take a source row"):
        await copy(pg_url, target)
    assert not target.exists()
    assert not list(target.parent.glob("coordination.sqlite*"))


async def test_rows_travel_in_batches(tmp_path, pg_url):
    source = tmp_path / "many" / "coordination.sqlite"
    async with open_writer(source, clock=StepClock(), new_id=counter_ids()) as writer:
        for n in range(60):
            await writer.append(
                sender_session_id=f"session-{n % 3}",
                sender_name="s",
                target_session_id="session-t",
                target_name="t",
                body=f"message {n}",
                idempotency_key=f"k{n}",
            )
    report = await copy(source, pg_url, batch_rows=7)
    messages = next(t for t in report.tables if t.name == "mailbox_messages")
    assert (messages.rows, messages.batches, messages.largest_batch) == (60, math.ceil(60 / 7), 7)
    back = await copy(pg_url, tmp_path / "back" / "coordination.sqlite", batch_rows=7)
    assert next(t for t in back.tables if t.name == "mailbox_messages").largest_batch == 7
    assert dump(pg_url) == dump(source)


async def test_the_session_registry_moves_with_its_database(tmp_path, pg_url):
    from termal_tui.agents.registry import Registry

    source = tmp_path / "home" / "coordination.sqlite"
    registry = Registry.beside(source)
    alice = registry.add("alice", "Claude", "/work")
    registry.add("bob")
    _, token = registry.issue_token("alice")
    registry.mark_wake_pushed(alice.id, "mailbox-1", 3)
    listener = registry.register_listener(alice.id, pid=os.getpid())
    registry.close()
    await _append(source, "k")

    report = await copy(source, pg_url)
    assert report.groups == ("coordination", "registry")
    on_pg = Registry.beside(pg_url)
    try:
        assert [s.name for s in on_pg.sessions()] == ["alice", "bob"]
        assert on_pg.session_for_token(token).id == alice.id  # the hash moved
        assert on_pg.wake_marks(alice.id) == {"mailbox-1": (True, 3)}
        assert on_pg.listeners() == []  # a process attached to the source stays there
    finally:
        on_pg.close()
    assert listener

    back = tmp_path / "back" / "coordination.sqlite"
    await copy(pg_url, back)
    assert dump(back) == dump(pg_url) == dump(source)
    assert (await copy(pg_url, back)).outcome == "up to date"


async def test_a_termal_file_without_a_registry_leaves_the_registry_alone(tmp_path, pg_url):
    report = await copy(termal_file(tmp_path, "termal_board"), pg_url)
    assert report.groups == ("coordination",)
    assert rows(pg_url, "SELECT to_regclass('sessions') IS NULL") == [(True,)]


async def test_an_unreadable_source_is_one_sentence(tmp_path, pg_url):
    from termal_tui.store.errors import SchemaError, StoreError

    stranger = tmp_path / "other.sqlite"
    db = sqlite3.connect(stranger)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(SchemaError, match="not a TermAl coordination database"):
        await copy(stranger, pg_url)
    with pytest.raises(SchemaError, match="not a TermAl coordination database"):
        await copy(pg_url, tmp_path / "x" / "coordination.sqlite")
    odd = termal_file(tmp_path, "termal_board")
    execute(odd, "UPDATE coordination_board_entries SET revision = 'seven' WHERE rowid = 1")
    with pytest.raises(ValidationError, match="holds text in revision, where TermAl stores"):
        await copy(odd, pg_url)
    with pytest.raises(StoreError):
        await copy(tmp_path / "missing.sqlite", pg_url)


# ------------------------------------------------------------------ generated content

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_SOME = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)
_INT = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_MESSAGE = st.tuples(_SOME, _SOME, st.none() | _TEXT, st.none() | _TEXT, _SOME, _TEXT, _INT)


def _fill(path: Path, messages: list[tuple[Any, ...]], board: list[tuple[Any, ...]]) -> None:
    """A file with TermAl's schema holding generated rows (any text, any 64-bit integer)."""
    db = sqlite3.connect(path)
    try:
        db.execute("INSERT INTO mailboxes VALUES ('mailbox-g', '[\"a\",\"b\"]', 't', ?)", (99,))
        db.execute("INSERT INTO mailbox_participants VALUES ('mailbox-g', 'a', 'A', 0, 't', NULL)")
        for n, (sender, name, topic, stamp, body, key, depth) in enumerate(messages):
            db.execute(
                "INSERT INTO mailbox_messages VALUES (?, 'mailbox-g', ?, ?, ?, 'b', 'B', ?, "
                "'routine', ?, ?, ?, ?, ?, 'durableButNotWoken', NULL)",
                (
                    f"m{n}",
                    n + 1,
                    sender,
                    name,
                    name,  # created_at: the order both engines read in
                    topic,
                    stamp,
                    body,
                    f"{key}{n}",
                    depth,
                ),
            )
        db.execute("INSERT INTO coordination_board_scopes VALUES ('s', 1)")
        for n, (value, revision) in enumerate(board):
            db.execute(
                "INSERT INTO coordination_board_idempotency VALUES ('s', 'a', ?, ?, ?, 't')",
                (f"k{n}", f"h{revision}", value),
            )
        db.commit()
    finally:
        db.close()


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    messages=st.lists(_MESSAGE, max_size=6),
    board=st.lists(st.tuples(_TEXT, _INT), max_size=5),
)
async def test_generated_content_survives_both_directions_or_is_refused(pg_server, messages, board):
    with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        source = Path(scratch) / "src" / "coordination.sqlite"
        async with open_writer(source):
            pass
        _fill(source, messages, board)
        before = fingerprint(source)
        url = pg_server.fresh_database()
        nul = any(
            isinstance(value, str) and "\x00" in value for row in messages + board for value in row
        )
        if nul:
            with pytest.raises(ValidationError, match=r"NUL character \(U\+0000\)"):
                await copy(source, url)
            assert rows(url, "SELECT to_regclass('mailboxes') IS NULL") == [(True,)]
        else:
            await copy(source, url)
            back = Path(scratch) / "back" / "coordination.sqlite"
            await copy(url, back)
            assert dump(back) == dump(url) == dump(source)
        twin = Path(scratch) / "twin" / "coordination.sqlite"
        await copy(source, twin)  # a file carries everything, NUL included
        assert dump(twin) == dump(source)
        assert fingerprint(source) == before


async def test_a_copy_that_reads_back_otherwise_commits_nothing(tmp_path, pg_url):
    """A destination that changes what it is given (here a trigger) fails the read-back:
    one sentence, and the transaction is rolled back."""
    from termal_tui.store.errors import StorageError

    source = termal_file(tmp_path, "termal_dbcopy")
    await _append(pg_url, "k")  # the tables, then emptied, then a trigger on them
    execute(pg_url, "DELETE FROM mailbox_messages")
    execute(pg_url, "DELETE FROM mailbox_participants")
    execute(pg_url, "DELETE FROM mailboxes")
    execute(
        pg_url,
        "CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN NEW.body := NEW.body || '!'; RETURN NEW; END $$",
    )
    execute(
        pg_url,
        "CREATE TRIGGER bump BEFORE INSERT ON mailbox_messages "
        "FOR EACH ROW EXECUTE FUNCTION bump()",
    )
    with pytest.raises(StorageError) as failed:
        await copy(source, pg_url)
    assert str(failed.value).startswith(
        f"the copy in {pg_url} does not match its source: mailbox_messages has 5 rows"
    )
    assert rows(pg_url, "SELECT COUNT(*) FROM mailboxes") == [(0,)]
    # Not even the board's tables, which the copy's transaction would have made.
    assert rows(pg_url, "SELECT to_regclass('coordination_board_scopes') IS NULL") == [(True,)]


async def test_a_copy_whose_registry_did_not_land_is_completed_by_running_it_again(tmp_path):
    from termal_tui.agents.registry import Registry

    source = tmp_path / "home" / "coordination.sqlite"
    registry = Registry.beside(source)
    registry.add("alice")
    registry.close()
    await _append(source, "k")
    target = tmp_path / "there" / "coordination.sqlite"
    assert (await copy(source, target)).copied == ("coordination", "registry")
    beside = target.with_name("termal-tui-sessions.sqlite")
    beside.unlink()  # as if its transaction had failed after the first committed
    again = await copy(source, target)
    assert (again.outcome, again.copied) == ("copied", ("registry",))
    assert dump(target) == dump(source)
    assert (await copy(source, target)).outcome == "up to date"

    other = Registry.beside(tmp_path / "elsewhere" / "coordination.sqlite")
    other.add("zed")
    other.close()
    taken = tmp_path / "elsewhere" / "coordination.sqlite"
    with pytest.raises(ConflictError, match="already holds another session registry"):
        await copy(source, taken)
    assert not taken.exists()  # nothing was created either


async def test_a_role_with_only_select_can_be_the_source(tmp_path, pg_url, pg_server):
    await copy(termal_file(tmp_path, "termal_board_ours"), pg_url)
    schema = pg_url.rsplit("%3D", 1)[1]
    role = f"copier_{schema}"
    for statement in (
        f"CREATE ROLE {role} LOGIN",
        f"GRANT USAGE ON SCHEMA {schema} TO {role}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
    ):
        pg_server.execute(statement, "tests")
    url = pg_server.url("tests", user=role) + f"?options=-csearch_path%3D{schema}"
    out = tmp_path / "out" / "coordination.sqlite"
    assert (await copy(url, out)).outcome == "copied"
    assert dump(out) == dump(pg_url)


async def test_a_new_file_beside_termals_legacy_state_is_refused_and_removed(tmp_path, pg_url):
    """The writer's bootstrap imports a legacy termal.sqlite beside a new file (as TermAl's
    boot does): rows the copy did not bring are other data, and the new file goes again."""
    await copy(termal_file(tmp_path, "termal_board"), pg_url)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    legacy = FIXTURES / "termal_legacy_import" / "legacy-source.sqlite"
    (state / "termal.sqlite").write_bytes(legacy.read_bytes())
    with pytest.raises(ConflictError, match=r"legacy import from a termal\.sqlite"):
        await copy(pg_url, state / "coordination.sqlite")
    assert sorted(p.name for p in state.iterdir()) == ["termal.sqlite"]


async def test_an_empty_database_copied_again_is_up_to_date(tmp_path, pg_url):
    source = tmp_path / "empty" / "coordination.sqlite"
    async with open_writer(source):
        pass
    assert (await copy(source, pg_url)).outcome == "copied"
    assert (await copy(source, pg_url)).outcome == "up to date"
    back = tmp_path / "back" / "coordination.sqlite"
    assert (await copy(pg_url, back)).outcome == "copied"
    assert (await copy(pg_url, back)).outcome == "up to date"
