"""Who holds a session's channel: the newest live listener, decided from the registry with
a driven clock (no sleeping), and the watcher that pushes only while it holds it; on both
engines (the registry and the mailboxes on a file, or both in one PostgreSQL database)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from termal_tui.agents.registry import REGISTRY_VERSION, Registry
from termal_tui.agents.tools import AgentTools
from termal_tui.agents.wake import ChannelWatcher
from termal_tui.core.models import UnreadWakeup
from termal_tui.store.writer import MailboxWriter, open_writer
from termal_tui.views.notifiers import (
    CHANNEL_STALE_SECONDS,
    read_notifiers,
    registry_path_for,
    this_host,
)
from tests.helpers import ENGINES, DrivenClock, execute, rows, sqlite_only

DEAD_PID = 2**22 + 12345


@pytest.fixture
def clock() -> DrivenClock:
    return DrivenClock()


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path | str:
    if engine == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return tmp_path / "coordination.sqlite"


@pytest.fixture
def registry(db: Path | str, clock: DrivenClock) -> Registry:
    found = Registry.beside(db, clock=clock)
    assert found.path == (db if isinstance(db, str) else registry_path_for(db))
    return found


def test_the_newest_live_listener_holds_the_channel(registry: Registry, clock: DrivenClock):
    bob = registry.add("bob").id
    assert registry.channel_holder(bob) is None
    local = registry.register_listener(bob)
    assert registry.channel_holder(bob) == local
    clock.advance(1)
    remote = registry.register_listener(bob, kind="remote", host="10.0.0.7", peer="77@laptop")
    assert registry.channel_holder(bob) == remote  # the newer wins
    assert registry.get(bob).channel.kind == "remote"  # type: ignore[union-attr]
    # The remote one stops beating; the local one keeps on: it takes the channel back.
    for _ in range(int(CHANNEL_STALE_SECONDS) + 1):
        clock.advance(1)
        assert registry.beat_listener(local.id)
    holder = registry.channel_holder(bob)
    assert holder is not None and holder.id == local.id
    assert registry.get(bob).channel_connected(now=clock())  # type: ignore[union-attr]
    registry.release_listener(local.id)
    assert registry.channel_holder(bob) is None
    assert not registry.beat_listener(local.id)  # released: its beat says so


def test_the_holder_going_takes_its_pending_wakes_with_it(registry: Registry, clock: DrivenClock):
    """A shim woken for a mailbox, then gone (its stream closed): the next send is not
    told that it rides that wake (it went to a listener that is gone), so it waits for
    the listener that takes the channel back. A listener that did not hold the channel
    leaves the holder's marks alone."""
    bob = registry.add("bob").id
    old = registry.register_listener(bob)
    clock.advance(1)
    local = registry.register_listener(bob)
    clock.advance(1)
    remote = registry.register_listener(bob, kind="remote", host="10.0.0.7", peer="77@laptop")
    registry.mark_wake_pushed(bob, "mailbox-1", 1)  # pushed by the shim, the holder
    assert registry.has_pending_wake(bob, "mailbox-1", 2)
    registry.release_listener(old.id)  # not the holder: the holder's wake stands
    assert registry.has_pending_wake(bob, "mailbox-1", 2)
    registry.release_listener(remote.id)  # the holder: what it was woken for goes with it
    assert not registry.has_pending_wake(bob, "mailbox-1", 2)
    assert registry.channel_holder(bob) == local


def test_a_listener_whose_process_is_gone_never_holds(registry: Registry, clock: DrivenClock):
    bob = registry.add("bob").id
    live = registry.register_listener(bob)
    clock.advance(1)
    registry.register_listener(bob, pid=DEAD_PID)  # newer, but kill -9'd
    assert registry.channel_holder(bob) == live


def test_a_listener_on_another_host_is_judged_by_its_heartbeat(
    registry: Registry, clock: DrivenClock
):
    """Hubs on several hosts share one registry on PostgreSQL: a pid is checked only on
    the host its process runs on; elsewhere the heartbeat alone says it is there."""
    bob = registry.add("bob").id
    here = registry.register_listener(bob)
    assert here.runs_on == this_host()
    clock.advance(1)
    # Another hub's listener, as that hub registered it: its pid is nothing here.
    there = registry.register_listener(bob, pid=DEAD_PID, kind="remote", host="10.0.0.9")
    execute(
        registry.path, "UPDATE channel_listeners SET runs_on = 'hub-b' WHERE id = ?", (there.id,)
    )
    assert registry.channel_holder(bob) == there._replace(runs_on="hub-b")
    clock.advance(CHANNEL_STALE_SECONDS + 1)  # hub B stopped beating: it is gone
    assert registry.beat_listener(here.id)
    holder = registry.channel_holder(bob)
    assert holder is not None and holder.id == here.id


def test_a_version_6_registry_gets_the_listeners_host(tmp_path: Path, clock: DrivenClock):
    """A version 6 file (no runs_on) is read as it is by the viewer, then migrated in
    place by the next opener, its listeners kept (judged on this host)."""
    db = tmp_path / "coordination.sqlite"
    path = registry_path_for(db)
    old = Registry(path, clock=clock)
    bob = old.add("bob").id
    listener = old.register_listener(bob)
    old.close()
    execute(path, "ALTER TABLE channel_listeners DROP COLUMN runs_on")
    execute(path, "PRAGMA user_version = 6")
    seen = read_notifiers(db, now=clock())
    assert seen is not None and seen[bob].holder == listener._replace(runs_on=None)
    assert Registry(path, clock=clock).channel_holder(bob) == listener._replace(runs_on=None)
    assert rows(path, "PRAGMA user_version") == [(REGISTRY_VERSION,)]
    assert "runs_on" in {row[1] for row in rows(path, "PRAGMA table_info(channel_listeners)")}


def test_removing_a_session_drops_its_listeners(registry: Registry):
    bob = registry.add("bob").id
    listener = registry.register_listener(bob)
    registry.remove("bob")
    assert registry.listeners(bob) == []
    assert not registry.beat_listener(listener.id)


@sqlite_only
def test_the_viewer_reads_who_holds_each_channel(
    tmp_path: Path, registry: Registry, clock: DrivenClock
):
    bob = registry.add("bob").id
    registry.register_listener(bob, kind="remote", host="10.0.0.7", peer="77@laptop")
    found = read_notifiers(tmp_path / "coordination.sqlite", now=clock())
    assert found is not None
    notifier = found[bob]
    assert notifier.channel and notifier.holder is not None
    assert notifier.holder.describe().startswith("remote 10.0.0.7 (shim 77@laptop) via hub pid")
    later = read_notifiers(tmp_path / "coordination.sqlite", now=clock() + 60)
    assert later is not None and not later[bob].channel and later[bob].holder is None


# ------------------------------------------------------------------ watchers


@pytest.fixture
async def peers(
    db: Path | str, registry: Registry
) -> AsyncIterator[tuple[AgentTools, str, MailboxWriter]]:
    alice = registry.add("alice")
    bob = registry.add("bob")
    async with open_writer(db) as alices, open_writer(db) as bobs:
        tools = AgentTools(alices, registry, alice.id)
        tools.wake = tools.wake._replace(wait=0)  # the receipt is not what is tested here
        yield tools, bob.id, bobs


async def _send(tools: AgentTools, n: int) -> None:
    await tools.call(
        "termal_send_to_session",
        {"sessionId": "bob", "message": f"m{n}", "idempotencyKey": f"k{n}"},
    )


def _watcher(
    registry: Registry,
    bobs: MailboxWriter,
    bob: str,
    clock: DrivenClock,
    got: list[int],
    **kw: object,
) -> ChannelWatcher:
    async def push(wake: UnreadWakeup, _prompt: str) -> None:
        got.append(wake.sequence)

    return ChannelWatcher(bobs, registry, bob, push, clock=clock, **kw)  # type: ignore[arg-type]


async def test_only_the_holder_pushes_and_the_old_one_takes_over_when_it_goes(
    peers: tuple[AgentTools, str, MailboxWriter], registry: Registry, clock: DrivenClock
):
    alice, bob, bobs = peers
    local_got: list[int] = []
    remote_got: list[int] = []
    local = _watcher(registry, bobs, bob, clock, local_got)
    await local.start()
    await local.tick()
    assert local.holding
    await _send(alice, 1)
    await local.tick()
    assert local_got == [1]
    await bobs.acknowledge(bob, (await bobs.list_mailboxes(session_id=bob))[0].id, 0, 1)

    clock.advance(1)
    remote = _watcher(registry, bobs, bob, clock, remote_got, kind="remote", host="10.0.0.7")
    await remote.start()
    await remote.tick()
    assert remote.holding
    await _send(alice, 2)
    clock.advance(1)  # the local one's heartbeat is due: it sees it lost the channel
    await local.tick()
    await remote.tick()
    assert not local.holding
    assert (local_got, remote_got) == ([1], [2])  # one push, by the holder only

    # The remote listener goes (its stream closed): the local one takes the channel back
    # with a boot pass, so the wake the gone listener took is offered again.
    registry.release_listener(remote.listener.id)  # type: ignore[union-attr]
    clock.advance(1)
    await local.tick()
    assert local.holding
    assert local_got == [1, 2]
    await _send(alice, 3)  # rides the pending wake for mailbox #2: one wake per mailbox
    await local.tick()
    assert local_got == [1, 2]


async def test_a_stale_remote_listener_loses_to_a_live_local_one(
    peers: tuple[AgentTools, str, MailboxWriter], registry: Registry, clock: DrivenClock
):
    """A remote listener whose beats stopped (its hub froze) stops counting after the
    stale window, measured on the driven clock."""
    alice, bob, bobs = peers
    local_got: list[int] = []
    local = _watcher(registry, bobs, bob, clock, local_got)
    await local.start()
    clock.advance(1)
    registry.register_listener(bob, kind="remote", host="10.0.0.7")
    await local.tick()
    assert not local.holding
    await _send(alice, 1)
    await local.tick()
    assert local_got == []
    clock.advance(CHANNEL_STALE_SECONDS + 1)
    await local.tick()
    assert local.holding and local_got == [1]
