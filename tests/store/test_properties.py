"""Property tests for the delivery invariants, plus two OS processes appending at once."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from termal_tui.store import ConflictError, ValidationError, open_reader, open_writer
from tests.helpers import StepClock, counter_ids, cursors, rows, state_of

SESSIONS = ["session-a", "session-b", "session-c"]

operation = st.one_of(
    st.tuples(
        st.just("send"),
        st.sampled_from(SESSIONS),
        st.sampled_from(SESSIONS),
        st.sampled_from(["k1", "k2", "k3", "k4", "k5"]),
        st.sampled_from(["body one", "body two"]),
    ),
    st.tuples(
        st.just("ack"),
        st.sampled_from(SESSIONS),
        st.sampled_from(SESSIONS),
        st.integers(0, 6),
        st.integers(0, 6),
    ),
)


async def _run(ops, fresh):
    with tempfile.TemporaryDirectory() as directory:
        path = fresh() or Path(directory) / "coordination.sqlite"
        history: dict[tuple, int] = {}
        inserted = 0
        async with open_writer(path, clock=StepClock(), new_id=counter_ids()) as writer:
            for op in ops:
                before_cursors = {(c[0], c[1]): c[2] for c in cursors(path)}
                count_before = rows(path, "SELECT COUNT(*) FROM mailbox_messages")[0][0]
                if op[0] == "send":
                    _, sender, target, key, body = op
                    try:
                        receipt = await writer.append(
                            sender_session_id=sender,
                            sender_name=sender,
                            target_session_id=target,
                            target_name=target,
                            body=body,
                            idempotency_key=key,
                        )
                    except (ValidationError, ConflictError):
                        receipt = None
                    count_after = rows(path, "SELECT COUNT(*) FROM mailbox_messages")[0][0]
                    if receipt is not None and receipt.duplicate:
                        assert count_after == count_before  # a duplicate never inserts
                        assert history[(sender, key)] == receipt.sequence
                    elif receipt is not None:
                        inserted += 1
                        history[(sender, key)] = receipt.sequence
                else:
                    _, session, _peer, expected, through = op
                    key = None
                    for mailbox_id, session_id, *_ in cursors(path):
                        if session_id == session:
                            key = mailbox_id
                    if key is not None:
                        with contextlib.suppress(ValidationError, ConflictError):
                            await writer.acknowledge(session, key, expected, through)
                after_cursors = {(c[0], c[1]): c[2] for c in cursors(path)}
                for pair, value in before_cursors.items():
                    assert after_cursors[pair] >= value  # cursors never move backwards
        for mailbox_id, next_sequence in rows(path, "SELECT id, next_sequence FROM mailboxes"):
            sequences = [
                r[0]
                for r in rows(
                    path,
                    "SELECT sequence FROM mailbox_messages WHERE mailbox_id=? ORDER BY sequence",
                    (mailbox_id,),
                )
            ]
            assert sequences == list(range(1, next_sequence))  # dense per mailbox
        assert rows(path, "SELECT COUNT(*) FROM mailbox_messages")[0][0] == inserted
        # The reader never changes the database.
        before = state_of(path)
        async with open_reader(path) as reader:
            for summary in await reader.list_mailboxes():
                await reader.read_page(summary.id)
                for participant in summary.participants:
                    await reader.list_mailboxes(session_id=participant.session_id)
        assert state_of(path) == before


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(operation, min_size=1, max_size=25))
def test_delivery_invariants_hold_for_any_operation_sequence(engine, request, ops):
    # A fresh database per example: a new file, or a new schema on the test server.
    server = request.getfixturevalue("pg_server") if engine == "postgres" else None
    asyncio.run(_run(ops, lambda: server.fresh_database() if server else None))


WORKER = """
import asyncio, sys
from termal_tui.store import open_writer, RetryableError

async def main(path, sender, target, count):
    async with open_writer(path) as writer:
        for index in range(count):
            while True:
                try:
                    await writer.append(sender_session_id=sender, sender_name=sender,
                        target_session_id=target, target_name=target,
                        body=f"{sender} {index}", idempotency_key=f"{sender}-{index}")
                    break
                except RetryableError:
                    await asyncio.sleep(0.01)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


def test_two_processes_appending_concurrently_lose_nothing(tmp_path):
    path = tmp_path / "coordination.sqlite"
    asyncio.run(_create(path))
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(path), sender, "session-shared", "150"])
        for sender in ("session-x", "session-y")
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0]
    for sender in ("session-x", "session-y"):
        (mailbox_id,) = {
            r[0]
            for r in rows(
                path, "SELECT mailbox_id FROM mailbox_messages WHERE sender_session_id=?", (sender,)
            )
        }
        sequences = [
            r[0]
            for r in rows(
                path,
                "SELECT sequence FROM mailbox_messages WHERE mailbox_id=? ORDER BY sequence",
                (mailbox_id,),
            )
        ]
        assert sequences == list(range(1, 151))
    assert rows(path, "SELECT COUNT(*) FROM mailbox_messages") == [(300,)]


def test_two_processes_appending_to_one_mailbox_keep_it_dense(tmp_path):
    path = tmp_path / "coordination.sqlite"
    asyncio.run(_create(path))
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(path), sender, target, "100"])
        for sender, target in (("session-p", "session-q"), ("session-q", "session-p"))
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0]
    (_mailbox_id,) = {r[0] for r in rows(path, "SELECT id FROM mailboxes")}
    sequences = [
        r[0] for r in rows(path, "SELECT sequence FROM mailbox_messages ORDER BY sequence")
    ]
    assert sequences == list(range(1, 201))
    assert rows(path, "SELECT next_sequence FROM mailboxes") == [(201,)]


async def _create(path: Path) -> None:
    async with open_writer(path):
        pass
