"""AgentTools: TermAl's six mailbox tools over the writer and the registry (no MCP needed)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3

import pytest

from termal_tui.agents.registry import Registry, WouldWait
from termal_tui.agents.tools import (
    SEND_OUTCOME_UNKNOWN,
    AgentTools,
    ReplayPolicy,
    ToolError,
    WakeTiming,
    as_tool_error,
    jitter_percent,
    replay_delay,
)
from termal_tui.agents.wake import ChannelWatcher
from termal_tui.core.errors import ErrorKind
from termal_tui.store.errors import CommitOutcomeUnknownError, RetryableError, StorageError
from termal_tui.store.writer import open_writer
from tests.agents.conftest import Peers, send
from tests.helpers import DrivenClock, rows

_send = send


async def test_registry_reads_are_answered_at_once_else_in_a_worker_thread(
    peers: Peers, monkeypatch: pytest.MonkeyPatch
):
    """On the event loop a registry read costs less than a worker thread's round trip:
    a send asks none when the registry answers at once, and every read moves to a thread
    when it cannot (a lock to wait for), with the same answers."""
    hops: list[str] = []
    real_to_thread = asyncio.to_thread

    async def counted(function, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        hops.append(getattr(function, "__qualname__", repr(function)))
        return await real_to_thread(function, *args, **kwargs)

    monkeypatch.setattr("termal_tui.agents.tools.asyncio.to_thread", counted)
    await _send(peers.alice, "bob", "warm", "k0")  # the registry's file is open from here
    hops.clear()
    first = await _send(peers.alice, "bob", "at once", "k1")
    listed = await peers.alice.call("termal_list_sessions", {})
    assert hops == []

    def must_wait(_read: object) -> None:
        raise WouldWait

    monkeypatch.setattr(peers.registry, "at_once", must_wait)
    second = await _send(peers.alice, "bob", "in a thread", "k2")
    assert await peers.alice.call("termal_list_sessions", {}) == listed
    assert len(hops) >= 4  # the target, the sender twice, the receiver; then the list
    assert (second["mailboxId"], second["sequence"]) == (first["mailboxId"], 3)


async def test_list_sessions_has_termal_shape(peers: Peers):
    listed = await peers.alice.call("termal_list_sessions", {})
    assert [s["name"] for s in listed["sessions"]] == ["Alice", "bob"]
    assert set(listed["sessions"][0]) == {
        "sessionId",
        "name",
        "agent",
        "status",
        "workdir",
        "preview",
    }
    assert listed["sessions"][1]["agent"] == "Codex"


async def test_send_by_name_and_by_id_land_in_one_mailbox(peers: Peers):
    first = await _send(peers.alice, "BOB", "  hello  ", "k1")
    assert first["resolvedFrom"] == "BOB" and first["sessionId"] == peers.bob.session_id
    assert first["sequence"] == 1 and first["duplicate"] is False
    assert first["notificationDisposition"] == "durableButNotWoken"  # no wake path for bob
    second = await _send(peers.alice, peers.bob.session_id, "again", "k2", topic=" t ")
    assert second["mailboxId"] == first["mailboxId"] and second["sequence"] == 2
    stored = rows(peers.writer.path, "SELECT body, topic, dispatch_outcome FROM mailbox_messages")
    # The bridge trims message and topic; the outcome is recorded once.
    assert stored == [("hello", None, "durableButNotWoken"), ("again", "t", "durableButNotWoken")]


async def test_duplicate_and_conflicting_keys(peers: Peers):
    original = await _send(peers.alice, "bob", "body", "same")
    again = await _send(peers.alice, "bob", "body", "same")
    assert again["duplicate"] is True
    assert {k: again[k] for k in ("messageId", "sequence", "mailboxId")} == {
        k: original[k] for k in ("messageId", "sequence", "mailboxId")
    }
    with pytest.raises(ToolError) as conflict:
        await _send(peers.alice, "bob", "different body", "same")
    assert conflict.value.status == 409 and "already used" in str(conflict.value)
    assert rows(peers.writer.path, "SELECT COUNT(*) FROM mailbox_messages") == [(1,)]


@pytest.mark.parametrize(
    ("arguments", "status", "text"),
    [
        ({"sessionId": "alice"}, 400, "is this session"),
        ({"sessionId": "session-nobody"}, 404, "no root session has id or name `session-nobody`"),
        ({"sessionId": "carol"}, 404, "no root session has id or name `carol`"),
        ({"sessionId": "bob", "class": "urgent"}, 400, "only class `routine`"),
        ({"sessionId": "bob", "idempotencyKey": "k" * 257}, 400, "exceeds 256 bytes"),
        ({"sessionId": "bob", "idempotencyKey": "é" * 129}, 400, "exceeds 256 bytes"),
        ({"sessionId": "bob", "message": "   "}, 400, "message is required"),
        ({"sessionId": "bob", "idempotencyKey": 7}, 400, "idempotencyKey must be a string"),
        ({"sessionId": "bob", "message": 123}, 400, "message must be a string"),
        ({"sessionId": "bob", "topic": 5}, 400, "topic must be a string"),
        ({"sessionId": "a/b"}, 400, "must not contain /"),
        ({"sessionId": ".."}, 400, "must not be . or .."),
    ],
)
async def test_send_rejections_are_distinct(peers: Peers, arguments: dict, status: int, text: str):
    request = {"message": "m", "idempotencyKey": "k"} | arguments
    with pytest.raises(ToolError) as failure:
        await peers.alice.call("termal_send_to_session", request)
    assert failure.value.status == status
    assert text in str(failure.value)
    assert not peers.writer.path.exists() or rows(
        peers.writer.path, "SELECT COUNT(*) FROM mailbox_messages"
    ) == [(0,)]


async def test_sending_to_yourself_by_id_is_rejected(peers: Peers):
    with pytest.raises(ToolError, match="is this session"):
        await _send(peers.alice, peers.alice.session_id, "m", "k")


async def test_removed_and_ambiguous_targets(peers: Peers):
    await _send(peers.alice, "bob", "before", "k0")
    peers.registry.remove("bob")
    await peers.writer.mark_session_left(peers.bob.session_id)
    for reference in ("bob", peers.bob.session_id):
        with pytest.raises(ToolError) as removed:
            await _send(peers.alice, reference, "after", f"k-{reference}")
        assert removed.value.status == 404 and "was removed" in str(removed.value)
    peers.registry.add("Carol")
    with contextlib.closing(sqlite3.connect(peers.registry.path)) as db, db:
        db.execute("DROP INDEX sessions_live_name")
        db.execute(
            "INSERT INTO sessions(id, name, name_key, created_at) "
            "VALUES('session-c2', 'CAROL', 'carol', '2026-01-01T00:00:00Z')"
        )
    with pytest.raises(ToolError) as ambiguous:
        await _send(peers.alice, "carol", "m", "k9")
    assert ambiguous.value.status == 400 and "is ambiguous" in str(ambiguous.value)
    assert "session-c2 (CAROL)" in str(ambiguous.value)


async def test_read_exact_read_and_acknowledge(peers: Peers):
    for n in range(1, 4):
        await _send(peers.alice, "bob", f"m{n}", f"k{n}")
    (mailbox,) = (await peers.bob.call("termal_list_mailboxes", {}))["mailboxes"]
    assert mailbox["unreadCount"] == 3
    read = await peers.bob.call("termal_read_mailbox", {"mailboxId": mailbox["id"]})
    assert read["mailboxId"] == mailbox["id"]
    assert [m["body"] for m in read["messages"]] == ["m1", "m2", "m3"]
    page = await peers.bob.call(
        "termal_read_mailbox", {"mailboxId": mailbox["id"], "afterSequence": 1, "limit": 1}
    )
    assert [m["sequence"] for m in page["messages"]] == [2]
    clamped = await peers.bob.call("termal_read_mailbox", {"mailboxId": mailbox["id"], "limit": 0})
    assert len(clamped["messages"]) == 1  # TermAl clamps limit to 1..=200
    exact = await peers.bob.call(
        "termal_read_mailbox_message", {"messageId": read["messages"][1]["id"]}
    )
    assert exact["body"] == "m2"

    ack = {"mailboxId": mailbox["id"], "expectedProcessedThrough": 0, "processedThrough": 2}
    summary = await peers.bob.call("termal_acknowledge_mailbox", ack)
    assert summary["unreadCount"] == 1
    replay = await peers.bob.call("termal_acknowledge_mailbox", ack)  # lost-response replay
    assert replay == summary
    with pytest.raises(ToolError) as stale:
        await peers.bob.call(
            "termal_acknowledge_mailbox",
            {"mailboxId": mailbox["id"], "expectedProcessedThrough": 0, "processedThrough": 3},
        )
    assert stale.value.status == 409 and "conflict" in str(stale.value)
    forward = await peers.bob.call(
        "termal_acknowledge_mailbox",
        {"mailboxId": mailbox["id"], "expectedProcessedThrough": 2, "processedThrough": 3},
    )
    assert forward["unreadCount"] == 0
    with pytest.raises(ToolError) as negative:
        await peers.bob.call(
            "termal_acknowledge_mailbox",
            {"mailboxId": mailbox["id"], "expectedProcessedThrough": -1, "processedThrough": 3},
        )
    assert negative.value.status == 400
    assert "expectedProcessedThrough must be a non-negative integer" in str(negative.value)


@pytest.mark.parametrize("bad", [-1, 1.0, "1", True, None])
async def test_counts_are_json_integers_as_termals_bridge_reads_them(peers: Peers, bad: object):
    await _send(peers.alice, "bob", "m", "k")
    (mailbox,) = (await peers.bob.call("termal_list_mailboxes", {}))["mailboxes"]
    with pytest.raises(ToolError) as failure:
        await peers.bob.call(
            "termal_read_mailbox", {"mailboxId": mailbox["id"], "afterSequence": bad}
        )
    assert failure.value.status == 400
    assert "afterSequence must be a non-negative integer" in str(failure.value)


async def test_reading_never_moves_a_cursor(peers: Peers):
    await _send(peers.alice, "bob", "m", "k")
    (mailbox,) = (await peers.bob.call("termal_list_mailboxes", {}))["mailboxes"]
    before = rows(
        peers.writer.path, "SELECT session_id, processed_through FROM mailbox_participants"
    )
    await peers.bob.call("termal_read_mailbox", {"mailboxId": mailbox["id"]})
    assert (
        rows(peers.writer.path, "SELECT session_id, processed_through FROM mailbox_participants")
        == before
    )


async def test_strangers_cannot_read(peers: Peers):
    await _send(peers.alice, "bob", "secret", "k")
    carol = peers.registry.add("carol")
    tools = AgentTools(peers.writer, peers.registry, carol.id)
    (mailbox,) = (await peers.bob.call("termal_list_mailboxes", {}))["mailboxes"]
    with pytest.raises(ToolError) as failure:
        await tools.call("termal_read_mailbox", {"mailboxId": mailbox["id"]})
    assert failure.value.status == 404


async def test_stale_left_markers_are_repaired_then_revalidated(peers: Peers):
    await _send(peers.alice, "bob", "m", "k")
    # An older build evicted bob although his session is live.
    await peers.writer.mark_session_left(peers.bob.session_id)
    listed = await peers.bob.call("termal_list_mailboxes", {})
    assert len(listed["mailboxes"]) == 1
    assert rows(
        peers.writer.path,
        "SELECT left_at FROM mailbox_participants WHERE session_id = ?",
        (peers.bob.session_id,),
    ) == [(None,)]


async def test_a_deletion_during_repair_wins_and_restores_exactly_the_cleared_markers(
    peers: Peers, monkeypatch: pytest.MonkeyPatch
):
    await _send(peers.alice, "bob", "m", "k")
    await peers.writer.mark_session_left(peers.bob.session_id)
    left = rows(
        peers.writer.path, "SELECT mailbox_id, session_id, left_at FROM mailbox_participants"
    )
    real_get = peers.registry.get
    calls = {"n": 0}

    def deleted_after_first_check(session_id: str):
        calls["n"] += 1
        session = real_get(session_id)
        if calls["n"] >= 2:  # the revalidation sees the concurrent deletion
            return session._replace(removed_at="2026-12-01T00:00:00Z")
        return session

    monkeypatch.setattr(peers.registry, "get", deleted_after_first_check)
    with pytest.raises(ToolError) as failure:
        await peers.bob.call("termal_list_mailboxes", {})
    assert failure.value.status == 404 and "session not found" in str(failure.value)
    assert (
        rows(peers.writer.path, "SELECT mailbox_id, session_id, left_at FROM mailbox_participants")
        == left
    )


async def test_a_removal_not_yet_heard_by_the_identity_cache_still_wins_the_repair(
    peers: Peers,
):
    """A hub on PostgreSQL remembers identities until a notification says otherwise.
    When bob was removed (and marked left) elsewhere and that notification has not
    arrived yet, the repair's revalidation must still see the removal: it reads the
    registry itself once it has cleared markers, so exactly those are put back."""
    await _send(peers.alice, "bob", "m", "k")
    cache = peers.registry.enable_cache()
    cache.reset(live=True)  # as when the hub's registry feed listens
    bob = peers.bob.session_id
    assert peers.registry.known(bob) is not None  # remembered
    elsewhere = Registry.beside(peers.writer.path)  # the CLI, or another hub
    elsewhere.remove("bob")
    elsewhere.close()
    await peers.writer.mark_session_left(bob)
    left = rows(
        peers.writer.path, "SELECT mailbox_id, session_id, left_at FROM mailbox_participants"
    )
    with pytest.raises(ToolError) as failure:
        await peers.bob.call("termal_list_mailboxes", {})
    assert failure.value.status == 404
    assert (
        rows(peers.writer.path, "SELECT mailbox_id, session_id, left_at FROM mailbox_participants")
        == left
    )


async def test_a_retryable_failure_is_replayed_to_success_once_the_lock_is_released(peers: Peers):
    """Another writer holds the lock: the first attempt is refused (busy), and while the
    replay backs off that writer lets go; the replay commits. No lock is waited out:
    the busy timeout is zero and the backoff is where time passes."""
    await _send(peers.alice, "bob", "first", "k1")  # the file exists and has its schema
    holder = sqlite3.connect(peers.writer.path, isolation_level=None)
    backoffs: list[float] = []

    async def backoff(delay: float) -> None:
        backoffs.append(delay)
        if holder.in_transaction:
            holder.execute("ROLLBACK")  # the other writer is done meanwhile

    async with open_writer(peers.writer.path, busy_timeout_ms=0) as writer:
        tools = AgentTools(
            writer, peers.registry, peers.alice.session_id, replay=peers.alice.replay, sleep=backoff
        )
        holder.execute("BEGIN IMMEDIATE")
        try:
            receipt = await _send(tools, "bob", "second", "k2")
        finally:
            holder.close()
    assert backoffs == [replay_delay(peers.alice.session_id, 1, peers.alice.replay.base_delay)]
    assert receipt["sequence"] == 2 and receipt["duplicate"] is False


async def test_replays_are_bounded_and_keep_termals_busy_text(peers: Peers):
    await _send(peers.alice, "bob", "first", "k1")
    holder = sqlite3.connect(peers.writer.path, isolation_level=None)
    sleeps: list[float] = []

    async def record(delay: float) -> None:
        sleeps.append(delay)

    async with open_writer(peers.writer.path, busy_timeout_ms=0) as writer:
        tools = AgentTools(
            writer,
            peers.registry,
            peers.alice.session_id,
            replay=ReplayPolicy(attempts=3, base_delay=0.2, min_replay_budget=0.0),
            sleep=record,
        )
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(ToolError) as failure:
                await _send(tools, "bob", "second", "k2")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
    assert failure.value.status == 503
    assert "no mailbox write was committed by this operation, so retry the same request" in str(
        failure.value
    )
    assert len(sleeps) == 2  # three attempts, two backoffs
    assert sleeps == [replay_delay(peers.alice.session_id, n, 0.2) for n in (1, 2)]
    assert rows(peers.writer.path, "SELECT COUNT(*) FROM mailbox_messages") == [(1,)]


def test_jitter_is_deterministic_and_within_a_quarter():
    values = {jitter_percent(f"session-{n}", 1) for n in range(200)}
    assert min(values) >= 75 and max(values) <= 125 and len(values) > 20
    assert jitter_percent("session-a", 3) == jitter_percent("session-a", 3)
    assert 0.2 * 0.75 <= replay_delay("session-a", 1, 0.2) <= 0.2 * 1.25
    assert 0.8 * 0.75 <= replay_delay("session-a", 3, 0.2) <= 0.8 * 1.25


async def test_a_lost_send_outcome_says_retry_the_same_intent(
    peers: Peers, monkeypatch: pytest.MonkeyPatch
):
    async def fails(**_kwargs: object):
        raise CommitOutcomeUnknownError("I/O error while committing mailbox append")

    monkeypatch.setattr(peers.writer, "append", fails)
    with pytest.raises(ToolError) as failure:
        await _send(peers.alice, "bob", "m", "k")
    assert failure.value.kind is ErrorKind.UNKNOWN_OUTCOME
    assert "append outcome is unknown: retry the exact same intent and idempotencyKey" in str(
        failure.value
    )


async def test_a_lost_acknowledgement_says_relist_first(
    peers: Peers, monkeypatch: pytest.MonkeyPatch
):
    await _send(peers.alice, "bob", "m", "k")
    (mailbox,) = (await peers.bob.call("termal_list_mailboxes", {}))["mailboxes"]

    async def fails(*_args: object):
        raise CommitOutcomeUnknownError("I/O error while committing")

    monkeypatch.setattr(peers.writer, "acknowledge", fails)
    with pytest.raises(ToolError, match="Call termal_list_mailboxes before retrying"):
        await peers.bob.call(
            "termal_acknowledge_mailbox",
            {"mailboxId": mailbox["id"], "expectedProcessedThrough": 0, "processedThrough": 1},
        )


async def test_receipt_is_queued_behind_an_active_turn_only_when_the_registry_knows(peers: Peers):
    peers.registry.set_turn(peers.bob.session_id, True)
    receipt = await _send(peers.alice, "bob", "m", "k")
    assert receipt["notificationDisposition"] == "queuedBehindActiveTurn"
    assert rows(peers.writer.path, "SELECT notification_disposition FROM mailbox_messages") == [
        ("queuedBehindActiveTurn",)
    ]


async def test_receipt_is_delivered_only_when_a_channel_actually_delivered(peers: Peers):
    pushed: list[str] = []

    async def push(_wake: object, prompt: str) -> None:
        pushed.append(prompt)

    # Bob's server is another process: its own connection (data_version sees others' commits).
    async with open_writer(peers.writer.path) as bobs_writer:
        await _delivered_only_when_pushed(peers, bobs_writer, push, pushed)


async def _delivered_only_when_pushed(peers: Peers, bobs_writer, push, pushed: list[str]) -> None:
    """Bob's channel watcher, ticked by the test: once when it starts (its boot pass),
    then once the sender's nudge reached it, while the send waits for the delivery."""
    waits: list[float] = []

    async def wait(delay: float) -> None:  # the sender polls the row's state meanwhile
        waits.append(delay)
        await asyncio.sleep(delay)

    alice = AgentTools(
        peers.writer, peers.registry, peers.alice.session_id, replay=peers.alice.replay, sleep=wait
    )
    # Heartbeats stamped and judged on a clock that stands still: bob's channel stays live
    # between the test's ticks, however slow the machine.
    clock = DrivenClock()
    peers.registry.clock = clock
    watcher = ChannelWatcher(bobs_writer, peers.registry, peers.bob.session_id, push, clock=clock)
    await watcher.start()
    await watcher.tick()
    assert watcher.holding and pushed == []
    sending = asyncio.create_task(_send(alice, "bob", "first", "k1"))
    await asyncio.wait_for(watcher._dirty.wait(), 30)  # the nudge
    await watcher.tick()
    receipt = await sending
    assert receipt["notificationDisposition"] == "deliveredToIdleSession"
    assert len(pushed) == 1 and "first" not in pushed[0]
    # A second send while that wake is pending rides it: no second push, not "delivered",
    # and it does not wait for a delivery that will not come.
    waited = len(waits)
    receipt = await _send(alice, "bob", "second", "k2")
    assert receipt["notificationDisposition"] == "durableButNotWoken" and len(waits) == waited
    await watcher.tick()  # the pass that second commit (and its nudge) gets
    assert len(pushed) == 1
    peers.registry.release_listener(watcher.listener.id)  # type: ignore[union-attr]
    assert not peers.registry.get(peers.bob.session_id).channel_connected(clock())


async def test_a_wake_pushed_before_the_sender_looks_is_still_its_own(
    peers: Peers, monkeypatch: pytest.MonkeyPatch
):
    """On a loaded machine the receiver's channel server can push the wake (and record it
    as pending) between the sender's nudge and its check for an earlier pending wake.
    That wake is this message's own: the receipt says delivered, as the row does."""
    bob = peers.bob.session_id
    peers.registry.heartbeat(bob, __import__("os").getpid())

    def quick_server(_registry_path: object, session_id: str) -> None:
        # What bob's server does on the nudge, done before the sender runs another line.
        with contextlib.closing(sqlite3.connect(peers.writer.path)) as db, db:
            mailbox_id, sequence = db.execute(
                "SELECT mailbox_id, MAX(sequence) FROM mailbox_messages"
            ).fetchone()
            db.execute(
                "UPDATE mailbox_messages SET notification_disposition = 'deliveredToIdleSession'"
            )
        peers.registry.mark_wake_pushed(session_id, mailbox_id, sequence)

    monkeypatch.setattr("termal_tui.agents.tools.nudge", quick_server)
    first = await _send(peers.alice, "bob", "first", "k1")
    assert first["notificationDisposition"] == "deliveredToIdleSession"
    # The next one rides that pending wake: not woken on its own.
    monkeypatch.setattr("termal_tui.agents.tools.nudge", lambda *_: None)
    second = await _send(peers.alice, "bob", "second", "k2")
    assert second["notificationDisposition"] == "durableButNotWoken"


async def test_a_channel_that_never_delivers_leaves_the_receipt_durable(peers: Peers):
    peers.registry.heartbeat(
        peers.bob.session_id, __import__("os").getpid()
    )  # claims, never pushes
    clock = DrivenClock()
    polls: list[float] = []

    async def poll_later(delay: float) -> None:
        polls.append(delay)
        clock.advance(delay)

    tools = AgentTools(
        peers.writer,
        peers.registry,
        peers.alice.session_id,
        wake=WakeTiming(wait=0.2, step=0.02),
        sleep=poll_later,
        clock=clock,
    )
    receipt = await _send(tools, "bob", "m", "k")
    assert receipt["notificationDisposition"] == "durableButNotWoken"
    assert sum(polls) == pytest.approx(0.2) and set(polls) == {0.02}  # it waited it out


async def test_unknown_tool_is_a_validation_error(peers: Peers):
    with pytest.raises(ToolError) as failure:
        await peers.alice.call("termal_spawn_session", {})
    assert failure.value.status == 400


async def test_concurrent_tool_calls_share_one_writer_safely(peers: Peers):
    """An agent may issue tool calls in parallel; the server serves them on one writer."""
    sends = [_send(peers.alice, "bob", f"m{n % 20}", f"k{n % 20}") for n in range(40)]
    reads = [peers.bob.call("termal_list_mailboxes", {}) for _ in range(10)]
    results = await asyncio.gather(*sends, *reads)
    receipts = results[:40]
    assert sorted({r["sequence"] for r in receipts}) == list(range(1, 21))  # dense, no gaps
    by_key = {}
    for n, receipt in enumerate(receipts):
        by_key.setdefault(n % 20, set()).add(receipt["messageId"])
    assert all(len(ids) == 1 for ids in by_key.values())  # a retried key is one message
    assert sum(not r["duplicate"] for r in receipts) == 20
    assert rows(peers.writer.path, "SELECT COUNT(*) FROM mailbox_messages") == [(20,)]


async def test_replays_never_start_an_attempt_that_would_end_past_the_budget(peers: Peers):
    """With a lock held for longer than the budget, the 503 comes back within it: each
    attempt here takes 4 s of (fake) time, so after 30 s no fifth attempt is started."""
    await _send(peers.alice, "bob", "first", "k1")
    now = [0.0]

    def clock() -> float:
        return now[0]

    async def slow_sleep(delay: float) -> None:
        now[0] += delay

    class Busy(AgentTools):
        async def ensure_active(self, session_id, known=None):  # type: ignore[override]
            now[0] += 9.0  # the busy timeout running out
            raise RetryableError("busy")

    tools = Busy(
        peers.writer,
        peers.registry,
        peers.alice.session_id,
        replay=ReplayPolicy(),
        sleep=slow_sleep,
        clock=clock,
    )
    with pytest.raises(ToolError) as failure:
        await _send(tools, "bob", "second", "k2")
    assert failure.value.status == 503
    assert now[0] <= ReplayPolicy().budget  # 3 attempts (27 s + backoff), not a 4th (36 s)


async def test_a_full_disk_is_a_storage_failure_that_wrote_nothing_not_an_unknown_outcome(
    peers: Peers, monkeypatch: pytest.MonkeyPatch
):
    full = StorageError("the disk holding x is full; nothing was written, free space and retry")

    async def refuse(**_kwargs: object) -> None:
        raise full

    monkeypatch.setattr(peers.writer, "append", refuse)
    with pytest.raises(ToolError) as failure:
        await _send(peers.alice, "bob", "m", "k")
    assert failure.value.status == 500
    assert "outcome is unknown" not in str(failure.value)
    assert "is full; nothing was written" in str(failure.value)
    # ... while a failure this process cannot account for stays "unknown".
    assert (
        as_tool_error(RuntimeError("boom"), SEND_OUTCOME_UNKNOWN).kind is ErrorKind.UNKNOWN_OUTCOME
    )


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("termal_read_mailbox", {"afterSequence": 2**64}, "afterSequence must be a non-negative"),
        ("termal_read_mailbox", {"limit": 2**64}, "limit must be a non-negative integer"),
        ("termal_read_mailbox", {"afterSequence": 2**63}, "afterSequence must be at most"),
        (
            "termal_acknowledge_mailbox",
            {"expectedProcessedThrough": 0, "processedThrough": 2**64},
            "processedThrough must be a non-negative integer",
        ),
        (
            "termal_acknowledge_mailbox",
            {"expectedProcessedThrough": 0, "processedThrough": 2**63},
            # TermAl's own answer (the oracle): 400, not an overflow.
            f"mailbox acknowledgement {2**63} exceeds latest sequence 1",
        ),
    ],
)
async def test_integers_beyond_sqlite_are_a_400_in_termals_wording(
    peers: Peers, tool: str, arguments: dict, message: str
):
    sent = await _send(peers.alice, "bob", "m", "k")
    with pytest.raises(ToolError) as failure:
        await peers.bob.call(tool, {"mailboxId": sent["mailboxId"], **arguments})
    assert failure.value.status == 400 and message in str(failure.value)


async def test_the_largest_limit_as_u64_takes_is_clamped_as_termal_does(peers: Peers):
    sent = await _send(peers.alice, "bob", "m", "k")
    read = await peers.bob.call(
        "termal_read_mailbox",
        {"mailboxId": sent["mailboxId"], "afterSequence": 2**63 - 1, "limit": 2**64 - 1},
    )
    assert read["messages"] == []
