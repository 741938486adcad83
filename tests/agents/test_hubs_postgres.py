"""Several hubs on one PostgreSQL database, in process: each "hub" is its own writer
(its own pool, its own listening connection) over the same URL, as two ``termal-tui
serve`` processes are. A message sent through one wakes a channel watcher on the other
by the notification its committing transaction sent (no local nudge, no poll); a
duplicate that reaches the other hub while the first is finalizing waits for it; a token
issued through one works on the other; with the server unreachable a call answers the
retryable busy error with nothing committed, and everything recovers by itself."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from termal_tui.agents import tools as tools_module
from termal_tui.agents.hub import HubOptions, RegistryTokenVerifier
from termal_tui.agents.hub_http import RegistryBusy
from termal_tui.agents.registry import Registry
from termal_tui.agents.tools import AgentTools, ReplayPolicy, ToolError, WakeTiming
from termal_tui.agents.wake import ChannelWatcher
from termal_tui.core.models import DELIVERED_TO_IDLE_SESSION, UnreadWakeup
from termal_tui.store.postgres import writer as pg_writer
from termal_tui.store.postgres.writer import PgMailboxWriter
from termal_tui.store.writer import MailboxWriter, open_writer
from tests.pg_gate import PgGate

pytest.importorskip("uvicorn")

# Long enough never to be what a test relies on: the watchers under test never tick by
# the clock, so a wake they push came from a notification.
NEVER = 3600.0


@pytest.fixture
def no_nudges(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Senders' local nudges (abstract sockets, this host only) switched off and counted:
    what reaches another hub must come through the database."""
    sent: list[str] = []
    monkeypatch.setattr(tools_module, "nudge", lambda _path, session_id: sent.append(session_id))
    return sent


def hub_url(url: str, number: int) -> str:
    """The same database under a URL of its own per hub (a libpq option that changes
    nothing): what one process shares in memory with others on the same URL (the
    pending finalizations it waits for) is then not shared, as between two processes."""
    return f"{url}&application_name=hub{number}"


@contextlib.asynccontextmanager
async def hubs(url: str, count: int = 2, **options: Any) -> AsyncIterator[list[MailboxWriter]]:
    async with contextlib.AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(open_writer(hub_url(url, n), **options))
            for n in range(count)
        ]


class Pushes:
    """What a channel watcher pushed, with an event per push."""

    def __init__(self) -> None:
        self.wakes: list[UnreadWakeup] = []
        self.changed = asyncio.Event()

    async def push(self, wake: UnreadWakeup, _prompt: str) -> None:
        self.wakes.append(wake)
        self.changed.set()

    async def wait_for(self, count: int) -> None:
        while len(self.wakes) < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 60)


@contextlib.asynccontextmanager
async def watching(watcher: ChannelWatcher) -> AsyncIterator[ChannelWatcher]:
    task = asyncio.create_task(watcher.run())
    try:
        yield watcher
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def until(check: Any) -> None:
    """Until ``check()`` holds (each look yields to the loop; bounded, never timed)."""
    for _ in range(200_000):
        if check():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("never happened")


async def test_a_send_through_one_hub_wakes_a_watcher_on_another(pg_url: str, no_nudges):
    registry = Registry.beside(pg_url)
    alice, bob = registry.add("alice"), registry.add("bob")
    async with hubs(pg_url) as (hub_a, hub_b):
        pushes = Pushes()
        watcher = ChannelWatcher(
            hub_b, registry, bob.id, pushes.push, interval=NEVER, rescan=NEVER, kind="remote"
        )
        async with watching(watcher):
            await until(lambda: watcher.holding and watcher._feed and watcher._feed.live)
            # The boot pass found nothing; only a notification can wake the watcher now.
            sender = AgentTools(hub_a, registry, alice.id, wake=WakeTiming(wait=60))
            sent = await sender.send("bob", "Review PR 12.", "pr-12")
            await pushes.wait_for(1)
            assert pushes.wakes[0].mailbox_id == sent.receipt.mailbox_id
            assert pushes.wakes[0].sequence == 1
            # The sender's hub saw the wake delivered by the other hub before answering.
            assert sent.receipt.notification_disposition == DELIVERED_TO_IDLE_SESSION
            assert no_nudges == [bob.id]  # asked for, and switched off: not how it came
            assert isinstance(hub_b, PgMailboxWriter) and hub_b._listener is not None
            assert hub_b._listener.received >= 1
            # The sender's hub listens to nothing: it has no watcher.
            assert isinstance(hub_a, PgMailboxWriter) and hub_a._listener is None
    registry.close()


async def test_a_pass_the_store_cut_short_runs_again_by_itself(pg_url: str, no_nudges):
    """The pass a notification started fails (the store busy, or a connection the outage
    killed): nothing else will wake the watcher (no poll, no rescan), so it runs the pass
    again by itself, and the wake is pushed."""
    from termal_tui.store.errors import RetryableError

    registry = Registry.beside(pg_url)
    alice, bob = registry.add("alice"), registry.add("bob")
    async with hubs(pg_url) as (hub_a, hub_b):
        pushes = Pushes()
        watcher = ChannelWatcher(
            hub_b, registry, bob.id, pushes.push, interval=NEVER, rescan=NEVER, retry=0.05
        )
        async with watching(watcher):
            await until(lambda: watcher.holding and watcher._feed and watcher._feed.live)
            await until(lambda: not watcher._boot)  # the boot pass is done
            real = hub_b.wakeups_for_session
            failed: list[str] = []

            async def once_busy(*args: Any, **kwargs: Any) -> Any:
                if not failed:
                    failed.append(bob.id)
                    raise RetryableError("mailbox storage is temporarily busy")
                return await real(*args, **kwargs)

            hub_b.wakeups_for_session = once_busy  # type: ignore[method-assign]
            sender = AgentTools(hub_a, registry, alice.id, wake=WakeTiming(wait=0))
            sent = await sender.send("bob", "Review PR 12.", "pr-12")
            await pushes.wait_for(1)
            assert failed == [bob.id]
            assert pushes.wakes[0].mailbox_id == sent.receipt.mailbox_id
    registry.close()


async def test_one_listening_connection_serves_every_watcher_of_a_hub(pg_url: str, no_nudges):
    registry = Registry.beside(pg_url)
    alice = registry.add("alice")
    peers = [registry.add(f"peer{n}") for n in range(4)]
    async with hubs(pg_url) as (hub_a, hub_b):
        pushes = {peer.id: Pushes() for peer in peers}
        async with contextlib.AsyncExitStack() as stack:
            watchers = []
            for peer in peers:
                watcher = ChannelWatcher(
                    hub_b, registry, peer.id, pushes[peer.id].push, interval=NEVER, rescan=NEVER
                )
                watchers.append(await stack.enter_async_context(watching(watcher)))
            await until(lambda: all(w.holding and w._feed and w._feed.live for w in watchers))
            sender = AgentTools(hub_a, registry, alice.id, wake=WakeTiming(wait=0))
            for peer in peers:
                await sender.send(peer.name, f"for {peer.name}", f"k-{peer.name}")
            for peer in peers:
                await pushes[peer.id].wait_for(1)
                assert [w.sequence for w in pushes[peer.id].wakes] == [1]
            assert isinstance(hub_b, PgMailboxWriter) and hub_b._listener is not None
            assert hub_b._listener.connections == 1  # one LISTEN for the whole hub
    registry.close()


async def test_a_duplicate_through_another_hub_waits_for_the_original_and_gets_its_receipt(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
):
    looked: list[bool] = []
    seen_alive = asyncio.Event()
    real_alive = pg_writer.finalizer_alive

    async def counted(conn: Any, message_id: str) -> bool:
        alive = await real_alive(conn, message_id)
        looked.append(alive)
        if alive:
            seen_alive.set()
        return alive

    monkeypatch.setattr(pg_writer, "finalizer_alive", counted)
    request = {
        "sender_session_id": "s-alice", "sender_name": "alice",
        "target_session_id": "s-bob", "target_name": "bob",
        "body": "Review PR 12.", "idempotency_key": "pr-12",
    }  # fmt: skip
    async with hubs(pg_url, deadline=60) as (hub_a, hub_b):
        original = await hub_a.append(**request, finalizing=True)  # hub A: still finalizing
        retry = asyncio.create_task(hub_b.append(**request, finalizing=True))
        await asyncio.wait_for(seen_alive.wait(), 60)  # B found A's claim, and waits
        assert not retry.done()
        await hub_a.record_dispatch_outcome(original.message_id, DELIVERED_TO_IDLE_SESSION)
        duplicate = await asyncio.wait_for(retry, 60)
    assert duplicate.duplicate and looked[0] is True
    assert (duplicate.message_id, duplicate.mailbox_id, duplicate.sequence) == (
        original.message_id, original.mailbox_id, original.sequence,
    )  # fmt: skip
    assert duplicate.notification_disposition == DELIVERED_TO_IDLE_SESSION


async def test_a_token_issued_through_one_hub_is_verified_by_every_hub(pg_url: str):
    options = [HubOptions(db_path=pg_url, port=0) for _ in range(2)]
    registries = [Registry.beside(o.db_path) for o in options]
    bob = registries[0].add("bob")
    _, token = registries[0].issue_token("bob")
    for registry in registries:
        found = await RegistryTokenVerifier(registry).verify_token(token)
        assert found is not None and found.client_id == bob.id
    registries[1].revoke_token("bob")
    for registry in registries:
        assert await RegistryTokenVerifier(registry).verify_token(token) is None
    for registry in registries:
        registry.close()


async def test_a_token_that_cannot_be_checked_is_busy_not_refused(pg_server: Any, pg_url: str):
    gate = PgGate(pg_server.port)
    gated = gate.url(pg_url, await gate.start())
    direct = Registry.beside(pg_url)
    direct.add("bob")
    _, token = direct.issue_token("bob")
    direct.close()
    # The hub's registry through the gate (its reads run in worker threads: the gate
    # relays on this loop).
    registry = Registry.beside(gated, busy_timeout=1.0)
    verifier = RegistryTokenVerifier(registry)
    try:
        assert (await verifier.verify_token(token)) is not None
        gate.shut()
        with pytest.raises(RegistryBusy, match="busy"):  # the hub's 503, retry-safe
            await verifier.verify_token(token)
        gate.reopen()
        found = None
        for _attempt in range(5):  # the lost connection answers busy once, then a new one
            with contextlib.suppress(RegistryBusy):
                found = await verifier.verify_token(token)
                break
        assert found is not None
    finally:
        registry.close()
        await gate.close()


async def test_with_the_server_unreachable_calls_are_busy_then_recover_by_themselves(
    pg_server: Any, pg_url: str, no_nudges
):
    gate = PgGate(pg_server.port)
    gated = gate.url(pg_url, await gate.start())
    registry = Registry.beside(pg_url)  # the registry stays reachable: the mailbox is the test
    alice, bob = registry.add("alice"), registry.add("bob")
    fast = ReplayPolicy(attempts=2, base_delay=0.01, budget=5.0, min_replay_budget=0.0)
    try:
        async with open_writer(gated, deadline=2.0) as hub_a, open_writer(gated) as hub_b:
            pushes = Pushes()
            watcher = ChannelWatcher(
                hub_b, registry, bob.id, pushes.push, interval=NEVER, rescan=NEVER
            )
            sender = AgentTools(hub_a, registry, alice.id, replay=fast, wake=WakeTiming(wait=0))
            async with watching(watcher):
                await until(lambda: watcher.holding and watcher._feed and watcher._feed.live)
                assert isinstance(hub_b, PgMailboxWriter) and hub_b._listener is not None
                assert hub_b._listener.connections == 1

                gate.shut()
                await until(lambda: not watcher._feed.live)  # the watcher polls meanwhile
                with pytest.raises(ToolError) as refused:
                    await sender.call(
                        "termal_send_to_session",
                        {"sessionId": "bob", "message": "while down", "idempotencyKey": "k1"},
                    )
                wire = refused.value.to_wire()["error"]
                assert wire["code"] == "busy" and wire["retrySafe"] is True, wire

                gate.reopen()
                await until(lambda: watcher._feed.live)
                assert hub_b._listener.connections == 2  # it listened again by itself
                again = await sender.call(
                    "termal_send_to_session",
                    {"sessionId": "bob", "message": "while down", "idempotencyKey": "k1"},
                )
                assert again["sequence"] == 1 and again.get("duplicate") is not True
                await pushes.wait_for(1)
    finally:
        await gate.close()
    with psycopg.connect(pg_url) as conn:  # one row, written once: the replay's
        rows = conn.execute(
            "SELECT sequence FROM mailbox_messages WHERE idempotency_key = 'k1'"
        ).fetchall()
    assert rows == [(1,)]
    registry.close()


async def test_a_hub_remembers_identities_only_while_it_hears_every_change(pg_url: str):
    from termal_tui.store.postgres.notify import RegistryFeed

    admin = Registry.beside(pg_url)  # another process: the CLI, or another hub
    alice = admin.add("alice")
    _, token = admin.issue_token("alice")
    hub = Registry.beside(pg_url)
    cache = hub.enable_cache()
    # Not listening yet: every lookup reads the database, nothing is kept.
    for _ in range(2):
        found = hub.known_token(token)
        assert found is not None and found.id == alice.id
    assert (cache.hits, cache.live) == (0, False)

    feed = RegistryFeed(pg_url, cache)
    feed.start()
    try:
        await until(lambda: feed.listening)
        first, again = hub.known_token(token), hub.known_token(token)
        assert first == again and cache.hits == 1
        assert again is not None and not again.fresh  # identity only: no turn, no channel
        assert hub.presence(again) == admin.get(alice.id)  # read again, fresh
        assert [s.id for s in hub.known_by_name("ALICE")] == [alice.id]

        # Revoked elsewhere: the notification sent with that COMMIT empties the cache.
        heard = feed.received
        admin.revoke_token("alice")
        await until(lambda: feed.received > heard)
        assert hub.known_token(token) is None
        # Removed elsewhere: its identity goes the same way.
        assert hub.known(alice.id) is not None and hub.known(alice.id) == hub.known(alice.id)
        heard = feed.received
        admin.remove("alice")
        await until(lambda: feed.received > heard)
        gone = hub.known(alice.id)
        assert gone is not None and not gone.live

        # "No left_at marker" is forgotten when a writer sets markers (also announced).
        bob = admin.add("bob")
        hub.remember_markers_clear(bob.id, hub.markers_generation())
        assert hub.markers_clear(bob.id)
        heard = feed.received
        async with open_writer(pg_url) as writer:
            await writer.mark_session_left(bob.id)
        await until(lambda: feed.received > heard)
        assert not hub.markers_clear(bob.id)

        # A lookup that raced with a change is not kept.
        generation = cache.generation()
        cache.reset(live=True)  # what a notification does meanwhile
        hub.remember_markers_clear(bob.id, generation)
        assert not hub.markers_clear(bob.id)
    finally:
        await feed.close()
    # Not listening any more: nothing is trusted, every lookup reads the database.
    assert not cache.live
    _, token2 = admin.issue_token("bob")
    hits = cache.hits
    assert hub.known_token(token2) is not None and hub.known_token(token2) is not None
    assert cache.hits == hits
    hub.close()
    admin.close()


# ------------------------------------------------ real hubs: two `termal-tui serve` processes


async def test_two_serve_processes_share_mailboxes_tokens_and_wakes(pg_url: str, tmp_path):
    from tests.agents.test_e2e import wait_for
    from tests.agents.test_hub import hub, shim

    registry = Registry.beside(pg_url)
    tokens = {name: registry.issue_token(registry.add(name).name)[1] for name in ("alice", "bob")}
    registry.close()
    with (
        hub(pg_url, tmp_path / "a.log") as hub_a,  # type: ignore[arg-type]
        hub(pg_url, tmp_path / "b.log") as hub_b,  # type: ignore[arg-type]
    ):
        assert "secret" not in hub_a.text() and "(database postgresql://" in hub_a.text()
        async with (
            shim(hub_a.url, tokens["alice"], tmp_path / "alice", channel=False) as (alice, _),
            shim(hub_b.url, tokens["bob"], tmp_path / "bob") as (bob, _),
            # alice's token works on hub B too (the registry is the database's).
            shim(hub_b.url, tokens["alice"], tmp_path / "alice2", channel=False) as (alice_b, _),
        ):
            await wait_for(lambda: "wake-ups for" in hub_b.text(), timeout=60)
            request = {"sessionId": "bob", "message": "Review PR 12.", "idempotencyKey": "pr-12"}
            sent = await alice.call("termal_send_to_session", request)
            await wait_for(lambda: len(bob.events) == 1, timeout=60)
            assert bob.events[0][1].meta["mailbox_id"] == sent["mailboxId"]
            # The same request again, through the other hub: the original receipt.
            again = await alice_b.call("termal_send_to_session", request)
            assert again["duplicate"] is True
            assert (again["messageId"], again["sequence"]) == (sent["messageId"], 1)
            read = await bob.call("termal_read_mailbox", {"mailboxId": sent["mailboxId"]})
            assert [m["body"] for m in read["messages"]] == ["Review PR 12."]

            # /health on a hub on PostgreSQL: doctor --json of the database, as on a file.
            import httpx2

            async with httpx2.AsyncClient() as http:
                bearer = {"authorization": f"Bearer {tokens['bob']}"}
                health = await http.get(hub_b.url.removesuffix("/mcp") + "/health", headers=bearer)
                assert health.status_code == 200, health.text
                document = health.json()
                assert document["mailboxes"] == 1 and document["unread"] == 1
                assert isinstance(document["healthy"], bool) and "findings" in document

                # Both hubs have alice's token in their identity cache by now; revoked
                # through the registry (another process), it is refused on each of them.
                alice_bearer = {"authorization": f"Bearer {tokens['alice']}"}
                for running in (hub_a, hub_b):
                    seen = await http.get(
                        running.url.removesuffix("/mcp") + "/health", headers=alice_bearer
                    )
                    assert seen.status_code == 200
                revoker = Registry.beside(pg_url)
                revoker.revoke_token("alice")
                revoker.close()
                for running in (hub_a, hub_b):
                    refused: list[int] = []

                    async def refused_now(running: Any = running, refused: Any = refused) -> bool:
                        answer = await http.get(
                            running.url.removesuffix("/mcp") + "/health", headers=alice_bearer
                        )
                        refused.append(answer.status_code)
                        return answer.status_code == 401

                    for _ in range(600):  # at most a minute, however loaded
                        if await refused_now():
                            break
                        await asyncio.sleep(0.1)
                    assert refused[-1] == 401, refused
                    assert set(refused) <= {200, 401}
