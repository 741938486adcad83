"""What only the PostgreSQL engine has to prove: concurrency across connections, the
compare-and-swap under races, a reader that cannot write (and a role that can only
read), failures as the store's errors, and secrets kept out of every sentence. The
contract itself runs on both engines in the other tests of this directory."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from termal_tui.store import (
    ConflictError,
    RetryableError,
    StoreError,
    ValidationError,
    open_reader,
    open_writer,
)
from termal_tui.store.errors import StorageError, busy_message
from termal_tui.store.urls import redact, without_secrets
from tests.helpers import StepClock, counter_ids, rows, send


@pytest.fixture
def engine() -> str:
    return "postgres"


def _schema_of(url: str) -> str:
    options = parse_qs(urlsplit(url).query)["options"][0]
    return options.split("=", 1)[1]


async def test_appends_from_many_connections_keep_one_mailbox_dense(writer, db):
    async with open_writer(db) as second, open_writer(db) as third:
        writers = [writer, second, third]
        receipts = await asyncio.gather(
            *[
                writers[n % 3].append(
                    sender_session_id="session-a" if n % 2 else "session-b",
                    sender_name="x",
                    target_session_id="session-b" if n % 2 else "session-a",
                    target_name="y",
                    body=f"message {n}",
                    idempotency_key=f"key-{n}",
                )
                for n in range(60)
            ]
        )
    assert len({r.mailbox_id for r in receipts}) == 1
    assert sorted(r.sequence for r in receipts) == list(range(1, 61))
    stored = rows(db, "SELECT sequence FROM mailbox_messages ORDER BY sequence")
    assert [row[0] for row in stored] == list(range(1, 61))
    assert rows(db, "SELECT next_sequence FROM mailboxes") == [(61,)]


async def test_concurrent_first_appends_create_one_mailbox(db):
    async with open_writer(db) as one, open_writer(db) as two:
        receipts = await asyncio.gather(
            *[
                (one, two)[n % 2].append(
                    sender_session_id="session-a",
                    sender_name="a",
                    target_session_id="session-b",
                    target_name="b",
                    body="hi",
                    idempotency_key=f"k{n}",
                )
                for n in range(10)
            ]
        )
    assert len({r.mailbox_id for r in receipts}) == 1
    assert sorted(r.sequence for r in receipts) == list(range(1, 11))


async def test_concurrent_retries_of_one_key_store_one_row_with_one_receipt(writer, db):
    async with open_writer(db) as second:
        receipts = await asyncio.gather(
            *[send((writer, second)[n % 2], key="same", body="the one body") for n in range(12)]
        )
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(1,)]
    assert len({(r.message_id, r.sequence, r.mailbox_id) for r in receipts}) == 1
    assert sum(not r.duplicate for r in receipts) == 1


async def test_concurrent_reuse_of_a_key_for_other_content_conflicts(writer, db):
    async with open_writer(db) as second:
        results = await asyncio.gather(
            *[send((writer, second)[n % 2], key="k", body=f"body {n}") for n in range(6)],
            return_exceptions=True,
        )
    stored = [r for r in results if not isinstance(r, BaseException)]
    conflicts = [r for r in results if isinstance(r, ConflictError)]
    assert len(stored) == 1 and len(conflicts) == 5
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(1,)]


async def test_racing_acknowledgements_swap_once_and_replays_hold(writer, db):
    receipt = None
    for n in range(10):
        receipt = await send(writer, body=f"m{n}", key=f"k{n}")
    assert receipt is not None
    async with open_writer(db) as second:
        results = await asyncio.gather(
            *[
                (writer, second)[n % 2].acknowledge("session-b", receipt.mailbox_id, 0, n)
                for n in range(1, 11)
            ],
            return_exceptions=True,
        )
    ((cursor,),) = rows(
        db,
        "SELECT processed_through FROM mailbox_participants WHERE session_id = 'session-b'",
    )
    for through, result in zip(range(1, 11), results, strict=True):
        if through <= cursor:
            assert not isinstance(result, BaseException), result  # won, or a replay
        else:
            assert isinstance(result, ConflictError)
            assert str(result).endswith("processedThrough no longer equals 0")


async def test_the_reader_cannot_write_even_through_its_own_connection(writer, db):
    await send(writer)
    async with open_reader(db) as reader:
        with pytest.raises(StorageError, match="read-only"):
            await reader._db.run(
                lambda conn: conn.execute(b"UPDATE mailbox_participants SET processed_through = 9"),
                "trying to write",
            )
        assert len(await reader.list_mailboxes()) == 1
    assert {row[0] for row in rows(db, "SELECT processed_through FROM mailbox_participants")} == {
        0,
        1,
    }


async def test_a_role_with_only_select_reads_and_cannot_write(writer, db, pg_server):
    receipt = await send(writer)
    schema = _schema_of(db)
    role = f"reader_{schema}"
    for statement in (
        f"CREATE ROLE {role} LOGIN",
        f"GRANT USAGE ON SCHEMA {schema} TO {role}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
    ):
        pg_server.execute(statement, "tests")
    url = pg_server.url("tests", user=role) + f"?options=-csearch_path%3D{schema}"
    async with open_reader(url) as reader:
        (summary,) = await reader.list_mailboxes()
        assert summary.id == receipt.mailbox_id
        page = await reader.read_page(receipt.mailbox_id)
        assert [m.body for m in page.messages] == ["hello"]
    async with open_writer(url) as refused_writer:  # the schema is complete: only read
        with pytest.raises(StorageError, match="lacks a privilege") as refused:
            await send(refused_writer, key="never")
    assert "nothing was changed" in str(refused.value)
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(1,)]


async def test_a_role_that_may_write_rows_but_not_create_tables_uses_a_prepared_database(
    writer, db, pg_server
):
    await send(writer)
    schema = _schema_of(db)
    role = f"app_{schema}"
    for statement in (
        f"CREATE ROLE {role} LOGIN",
        f"GRANT USAGE ON SCHEMA {schema} TO {role}",
        f"GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA {schema} TO {role}",
    ):
        pg_server.execute(statement, "tests")
    url = pg_server.url("tests", user=role) + f"?options=-csearch_path%3D{schema}"
    async with open_writer(url) as app:
        receipt = await send(app, key="from the app role")
    assert receipt.sequence == 2


async def test_a_locked_mailbox_past_the_deadline_is_busy_with_nothing_committed(writer, db):
    first = await send(writer)
    async with (
        await psycopg.AsyncConnection.connect(db) as holder,
        open_writer(db, deadline=0.3) as impatient,
    ):
        async with holder.transaction():
            await holder.execute(
                b"SELECT 1 FROM mailboxes WHERE id = %s FOR UPDATE", (first.mailbox_id,)
            )
            with pytest.raises(RetryableError) as busy:
                await send(impatient, key="second")
        assert str(busy.value) == busy_message("beginning mailbox append")
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(1,)]
    retried = await send(writer, key="second")  # the same request, retried, goes through
    assert retried.sequence == 2


async def test_an_unreachable_server_is_busy_and_never_shows_the_password():
    for url in (
        "postgresql://alice:s3cr%40t-pw@127.0.0.1:1/db",
        "postgresql://alice@127.0.0.1:1/db?password=s3cr@t-pw&sslmode=disable",
    ):
        with pytest.raises(RetryableError) as busy:
            async with open_writer(url):
                pass
        text = str(busy.value)
        assert "s3cr" not in text and "***" in text
        assert text.startswith(busy_message("connecting to PostgreSQL at " + redact(url)))
        with pytest.raises(RetryableError) as again:
            async with open_reader(url):
                pass
        assert "s3cr" not in str(again.value)


def test_a_url_without_secrets_has_no_password_however_its_keyword_is_spelt():
    """What setup writes into a client's config: libpq decodes %-escapes in a query
    keyword, so ``pass%77ord`` is the password and must go like ``password``."""
    for url in (
        "postgresql://u:pw@h/d",
        "postgresql://u@h/d?password=pw",
        "postgresql://u@h/d?pass%77ord=pw&sslmode=require",
        "postgresql://u@h/d?%70assword=pw",
        "postgresql://u@h/d?sslpass%77ord=pw",
    ):
        kept = without_secrets(url)
        assert "pw" not in kept, (url, kept)
    assert without_secrets("postgresql://u@h/d?pass%77ord=pw&sslmode=require") == (
        "postgresql://u@h/d?sslmode=require"
    )


def test_redaction_hides_passwords_wherever_the_url_holds_them():
    assert redact("postgresql://u:pw@h:5/d") == "postgresql://u:***@h:5/d"
    assert redact("postgres://h/d?password=pw&sslmode=require") == (
        "postgres://h/d?password=***&sslmode=require"
    )
    assert redact("postgresql://u@h/d") == "postgresql://u@h/d"
    assert "pw" not in redact("postgresql://u:pw@[bad/d")


async def test_a_database_without_the_tables_is_not_ours_for_the_reader(pg_server):
    url = pg_server.fresh_database()
    with pytest.raises(StoreError, match="not a TermAl coordination database"):
        async with open_reader(url):
            pass


async def test_nul_characters_are_refused_before_anything_is_written(writer, db):
    with pytest.raises(ValidationError, match="NUL character"):
        await send(writer, body="x\x00y")
    assert rows(db, "SELECT COUNT(*) FROM mailbox_messages") == [(0,)]


# ------------------------------------------------------- the same errors on both engines


async def _failures(target: object) -> list[tuple[str, str]]:
    """Every refusal the contract names, as (class, sentence)."""
    seen: list[tuple[str, str]] = []

    async def attempt(call):
        try:
            await call()
        except StoreError as error:
            seen.append((type(error).__name__, str(error)))
        else:
            seen.append(("ok", ""))

    async with open_writer(target, clock=StepClock(), new_id=counter_ids()) as writer:
        first = await send(writer, key="k")
        await send(writer, "session-b", "session-c", key="kc")
        await send(writer, key="k-second")
        await attempt(lambda: send(writer, key="k", body="other"))
        await attempt(lambda: send(writer, key="k2", body=" \n"))
        await attempt(lambda: send(writer, "session-a", "session-a", key="k3"))
        await attempt(lambda: writer.acknowledge("session-b", first.mailbox_id, 1, 0))
        await attempt(lambda: writer.acknowledge("session-b", first.mailbox_id, 0, 9))
        await attempt(lambda: writer.acknowledge("session-b", first.mailbox_id, 0, 1))
        await attempt(lambda: writer.acknowledge("session-b", first.mailbox_id, 0, 1))
        await attempt(lambda: writer.acknowledge("session-b", first.mailbox_id, 0, 2))
        await attempt(lambda: writer.acknowledge("session-c", first.mailbox_id, 0, 1))
        await attempt(lambda: writer.acknowledge("session-b", "mailbox-nope", 0, 0))
        await attempt(lambda: writer.record_dispatch_outcome(first.message_id, "bogus"))
        await attempt(
            lambda: writer.record_dispatch_outcome("mailbox-message-nope", "deliveredToIdleSession")
        )
        await attempt(lambda: writer.read_range(first.mailbox_id, session_id="session-c"))
        await attempt(lambda: writer.read_message(first.message_id, session_id="session-c"))
        await attempt(lambda: writer.read_range(first.mailbox_id, -1, session_id="session-b"))
        await writer.mark_session_left("session-c")
        await attempt(lambda: send(writer, "session-b", "session-c", key="kd"))
    async with open_reader(target) as reader:
        await attempt(lambda: reader.get_mailbox("mailbox-nope"))
        await attempt(lambda: reader.read_message("mailbox-message-nope"))
        await attempt(lambda: reader.read_page(first.mailbox_id, limit=-1))
    return seen


async def test_error_texts_are_the_same_on_both_engines(db, db_path):
    on_postgres = await _failures(db)
    on_sqlite = await _failures(db_path)
    assert on_postgres == on_sqlite
    assert {kind for kind, _ in on_sqlite} >= {"ConflictError", "ValidationError", "NotFoundError"}


# ------------------------------------------------------------ the SQLite path stays lean

LEAN = """
import asyncio, sys, tempfile, pathlib
from termal_tui.store import open_reader, open_writer
from termal_tui.store.lifecycle import open_lifecycle_writer

async def main(path):
    async with open_writer(path) as writer:
        await writer.append(sender_session_id="a", sender_name="a", target_session_id="b",
            target_name="b", body="hi", idempotency_key="k")
    async with open_reader(path) as reader:
        await reader.list_mailboxes()

path = pathlib.Path(tempfile.mkdtemp()) / "coordination.sqlite"
asyncio.run(main(path))
with open_lifecycle_writer(path) as lifecycle:
    lifecycle.wakeups_for_session("b")
import termal_tui.store.writer, termal_tui.store.reader, termal_tui.store.queries
loaded = sorted(m for m in sys.modules if m.startswith(("psycopg", "termal_tui.store.postgres")))
print(loaded)
"""


def test_the_sqlite_path_imports_nothing_of_postgresql():
    done = subprocess.run(
        [sys.executable, "-c", LEAN], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_driver_a_url_is_one_sentence(monkeypatch):
    import termal_tui.store.postgres as engine

    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StorageError, match=r"pip install 'termal-tui\[postgres\]'"):
        engine.require_driver()


async def test_other_url_schemes_are_refused_not_created(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError, match="nothing was created"):
        async with open_writer("mysql://u:pw@h/d"):
            pass
    assert list(tmp_path.iterdir()) == []


async def test_the_reader_leaves_no_transaction_open_between_calls(writer, db, pg_server):
    receipt = await send(writer)
    async with open_reader(db) as reader:
        await reader.read_page(receipt.mailbox_id)
        await reader.list_mailboxes()
        states = rows(
            pg_server.url("postgres"),
            "SELECT state FROM pg_stat_activity WHERE application_name = 'termal-tui' "
            "AND backend_type = 'client backend'",
        )
        assert states and all(state == "idle" for (state,) in states)
        await send(writer, key="later")  # a commit between two reads is seen by the next
        page = await reader.read_page(receipt.mailbox_id)
    assert page.messages[0].sequence == 2


def test_missing_server_binaries_fail_with_one_sentence(tmp_path, monkeypatch):
    import shutil

    from tests import pg_server as server

    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setattr(server, "PACKAGED", tmp_path / "nowhere")
    with pytest.raises(RuntimeError) as missing:
        server.find_binaries()
    assert str(missing.value) == server.MISSING
    assert str(missing.value).count(".") <= 2 and "postgresql package" in str(missing.value)


# ------------------------------------- a finalizer on another host (here: another process)

FINALIZER = """
import asyncio, sys
from termal_tui.store import open_writer

async def main(url):
    async with open_writer(url) as writer:
        receipt = await writer.append(sender_session_id="session-a", sender_name="Alice",
            target_session_id="session-b", target_name="Bob", body="hello",
            idempotency_key="pending", finalizing=True)
        print(receipt.message_id, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await writer.record_dispatch_outcome(receipt.message_id, "deliveredToIdleSession")
        print("recorded", flush=True)

asyncio.run(main(sys.argv[1]))
"""


async def _finalizer(url: str) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        FINALIZER,
        url,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    message_id = (await process.stdout.readline()).decode().strip()
    assert message_id.startswith("mailbox-message-")
    return process, message_id


async def test_a_duplicate_waits_for_a_finalizer_in_another_process_through_the_database(db):
    process, message_id = await _finalizer(db)
    assert process.stdin is not None and process.stdout is not None
    async with open_writer(db, deadline=0.3) as impatient:
        # No local socket, no shared memory: only the claim in the database says so.
        with pytest.raises(RetryableError, match="still finalizing"):
            await send(impatient, key="pending")
    async with open_writer(db, deadline=30) as writer:
        waiting = asyncio.create_task(send(writer, key="pending"))
        process.stdin.write(b"go\n")
        await process.stdin.drain()
        duplicate = await waiting
        assert (await process.stdout.readline()).strip() == b"recorded"
    assert await process.wait() == 0
    assert duplicate.duplicate and duplicate.message_id == message_id
    assert duplicate.notification_disposition == "deliveredToIdleSession"


async def test_a_killed_finalizer_lets_the_duplicate_resolve_as_after_a_restart(db):
    process, message_id = await _finalizer(db)
    process.kill()  # SIGKILL: its session ends, and its claim with it
    await process.wait()
    async with open_writer(db, deadline=30) as writer:
        duplicate = await send(writer, key="pending")
    assert duplicate.message_id == message_id
    assert duplicate.notification_disposition == "durableButNotWoken"


async def test_a_server_restart_is_busy_then_recovers_by_itself(writer, db, pg_server):
    await send(writer, key="before")
    pg_server.restart()
    outcomes: list[str] = []
    receipt = None
    for _attempt in range(10):  # every agent retries its exact request
        try:
            receipt = await send(writer, key="after")
            break
        except RetryableError as error:
            outcomes.append(str(error))
    assert receipt is not None and receipt.sequence == 2
    # The connection the restart ended answers busy (nothing committed), then a new one works.
    assert outcomes and all(
        text.startswith("mailbox storage is temporarily busy") for text in outcomes
    )
    assert rows(db, "SELECT sequence FROM mailbox_messages ORDER BY sequence") == [(1,), (2,)]


async def test_data_version_moves_with_every_commit(writer, db):
    async with open_reader(db) as reader:
        first = await reader.data_version()
        await send(writer)
        second = await reader.data_version()
        assert second != first
        assert await writer.data_version() >= second


async def test_a_message_that_commits_after_a_later_one_still_reaches_the_activity_stream(
    writer, db
):
    from datetime import UTC, datetime

    from termal_tui.views.activity import ActivityModel

    first = await send(writer, body="first")
    late = await psycopg.AsyncConnection.connect(db)  # an append still in flight
    async with late:
        await late.execute(
            b"INSERT INTO mailbox_messages(id, mailbox_id, sequence, sender_session_id, "
            b"sender_name, target_session_id, target_name, created_at, class, body, "
            b"idempotency_key, unread_depth_at_append, notification_disposition) VALUES "
            b"('late', %s, 100, 'session-b', 'Bob', 'session-a', 'Alice', "
            b"'2026-07-30T12:00:01.500Z', 'routine', 'late', 'late', 0, 'durableButNotWoken')",
            (first.mailbox_id,),
        )
        # Another mailbox's append, numbered after the late row, commits first.
        await send(writer, sender="session-c", target="session-a", body="third")
        model = ActivityModel(lambda: datetime(2026, 7, 30, 12, 1, tzinfo=UTC))
        async with open_reader(db) as reader:
            snap = await reader.activity_snapshot(after_rowid=None, limit=100)
            model.load(snap.messages, snap.board, snap.participants)
            assert [e.detail for e in model.events() if e.kind == "message"] == [
                "third",
                "first",
            ]
            await late.commit()
            snap = await reader.activity_snapshot(after_rowid=model.message_top, limit=100)
            assert model.update(snap.messages, snap.board, snap.participants) == 1
            again = await reader.activity_snapshot(after_rowid=model.message_top, limit=100)
            assert model.update(again.messages, again.board, again.participants) == 0
    assert [e.detail for e in model.events() if e.kind == "message"] == [
        "third",
        "late",
        "first",
    ]


async def test_the_activity_reads_ask_for_insertion_order_once_per_reader(writer, db):
    await send(writer, body="one")
    async with open_reader(db) as reader:
        for _ in range(3):
            await reader.activity_snapshot(after_rowid=None, limit=10)
            await reader.activity_page(before_rowid=None, limit=10)
            await reader.sessions_overview()
        assert reader.insertion_order.present and reader.insertion_order.asked == 1


async def test_a_database_without_insertion_order_is_asked_again_until_it_has_it(db):
    from termal_tui.store.postgres.activity import NO_INSERTION_ORDER, InsertionOrder

    order = InsertionOrder()
    from termal_tui.store.postgres.activity import messages_before

    async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
        await conn.execute(b"CREATE TABLE mailbox_messages (id TEXT)")
        for _ in range(2):
            with pytest.raises(StorageError, match="no insertion_order"):
                await messages_before(conn, None, 10, order)
        assert (order.present, order.asked) == (False, 2)
        # What a writer adds (its unique index is what is looked for).
        await conn.execute(
            b"ALTER TABLE mailbox_messages ADD COLUMN insertion_order BIGINT "
            b"GENERATED ALWAYS AS IDENTITY"
        )
        await conn.execute(
            b"CREATE UNIQUE INDEX mailbox_messages_insertion_order "
            b"ON mailbox_messages(insertion_order)"
        )
        assert await order(conn) and await order(conn) and order.asked == 3
    assert "insertion_order" in NO_INSERTION_ORDER


async def test_a_read_on_a_pooled_connection_the_outage_killed_runs_again_on_a_sound_one(
    pg_server, pg_url
):
    """Connections idle in the pool when the server went away fail the first statement
    sent on them: a read (or a wake-state update) runs once more on a sound connection
    instead of failing its caller; an append is not run again by the store (its caller
    replays it with its idempotency key) and answers busy, nothing committed."""
    from tests.pg_gate import PgGate

    gate = PgGate(pg_server.port)
    gated = gate.url(pg_url, await gate.start())
    try:
        async with open_writer(gated) as writer:
            first = await send(writer, key="k1")
            # Several connections idle in the pool, all of them cut by the outage.
            await asyncio.gather(*(writer.list_mailboxes(session_id="session-a") for _ in range(4)))
            gate.shut()
            gate.reopen()
            listed = await writer.list_mailboxes(session_id="session-a")
            assert [m.id for m in listed] == [first.mailbox_id]
            assert writer._db.reconnects == 1  # type: ignore[attr-defined]
            assert await writer.mark_delivered_through("session-b", first.mailbox_id, 1) == 1

            gate.shut()
            gate.reopen()
            try:
                receipt = await send(writer, key="k2")
            except RetryableError:
                receipt = await send(writer, key="k2")  # the caller's replay
            assert receipt.sequence == 2 and not receipt.duplicate
    finally:
        await gate.close()
