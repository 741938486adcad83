"""The session registry on PostgreSQL, where several processes (hubs) share it through
their own connections: a name is claimed once, whoever asks; a token issued through one
works through every other until it is revoked; a pushed wake is one wake for all of
them. Each ``Registry`` here is its own connection, as each hub has its own."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from termal_tui.agents.registry import Registry
from termal_tui.store.errors import ConflictError, RetryableError, StorageError
from termal_tui.store.postgres.registry import REGISTRY_LOCK
from tests.helpers import execute, rows

# The registry's busy sentence, the same on a file.
BUSY = (
    "the session registry is temporarily busy; no registry write was committed by this "
    "operation, so retry the same request"
)


def _hubs(url: str, count: int) -> list[Registry]:
    return [Registry(url) for _ in range(count)]


def _race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls at once, one thread each (started together at a barrier); each
    result is its return value or the exception it raised."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = calls[index]()
        except Exception as error:  # the outcome under test
            results[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _waiting_for_the_lock(admin: psycopg.Connection[Any]) -> int:
    row = admin.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    ).fetchone()
    assert row is not None
    return int(row[0])


def _claims_behind_a_held_lock(url: str, calls: list[Callable[[], Any]]) -> list[Any]:
    """The calls, started while another connection holds the registry's lock (a claim in
    flight elsewhere): each checks only once every one of them waits, so all of them read
    the registry at the same moment, after the lock is let go."""
    results: list[Any] = [None] * len(calls)
    with psycopg.connect(url, autocommit=True) as holder, psycopg.connect(url) as admin:
        admin.autocommit = True
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (REGISTRY_LOCK,))

        def run(index: int) -> None:
            try:
                results[index] = calls[index]()
            except Exception as error:  # the outcome under test
                results[index] = error

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
        for thread in threads:
            thread.start()
        for _ in range(1_000_000):  # a count, not a clock: each look is one round trip
            if _waiting_for_the_lock(admin) == len(calls):
                break
        assert _waiting_for_the_lock(admin) == len(calls)
        holder.execute("COMMIT")
        for thread in threads:
            thread.join()
    return results


def _registered(url: str) -> None:
    """Create the registry's tables (the first write does)."""
    Registry(url).set_turn("session-000000000000", False)


@pytest.mark.parametrize(
    ("first", "second", "why"),
    [
        ("alice", "alice", "names are unique case-insensitively"),
        ("Alice", "ALICE", "names are unique case-insensitively"),
        ("alice", "аlice", "names that read alike are one name"),  # Cyrillic а
        ("Ivan", "lvan", "names that read alike are one name"),  # skeleton only
    ],
)
def test_two_hubs_claiming_one_name_at_once_register_it_once(
    pg_url: str, first: str, second: str, why: str
):
    _registered(pg_url)
    one, other = _hubs(pg_url, 2)
    results = _claims_behind_a_held_lock(
        pg_url, [lambda: one.add(first), lambda: other.add(second)]
    )
    won = [r for r in results if not isinstance(r, Exception)]
    lost = [r for r in results if isinstance(r, Exception)]
    assert len(won) == 1 and len(lost) == 1, results
    winner = won[0]
    assert isinstance(lost[0], ConflictError)
    assert str(lost[0]) == (f"a session named `{winner.name}` already exists ({winner.id}); {why}")
    assert [s.id for s in Registry(pg_url).sessions()] == [winner.id]


def test_many_hubs_racing_for_one_name_leave_one_session(pg_url: str):
    hubs = _hubs(pg_url, 6)
    results = _race([lambda hub=hub: hub.add("planner") for hub in hubs])
    won = [r for r in results if not isinstance(r, Exception)]
    assert len(won) == 1
    for lost in (r for r in results if isinstance(r, Exception)):
        assert isinstance(lost, ConflictError)
        assert str(lost) == (
            f"a session named `planner` already exists ({won[0].id}); "
            "names are unique case-insensitively"
        )
    # ensure() from every hub finds the one session instead of minting another.
    assert {hub.ensure("PLANNER").id for hub in hubs} == {won[0].id}


def test_a_token_issued_through_one_hub_works_on_every_hub_until_revoked(pg_url: str):
    a, b, c = _hubs(pg_url, 3)
    alice = a.add("alice")
    me, token = a.issue_token("alice")
    assert me.id == alice.id
    assert b.session_for_token(token) == alice and c.session_for_token(token) == alice
    # Only the hash is stored: the token itself is nowhere in the database.
    assert rows(pg_url, "SELECT session_id, token_hash FROM session_tokens") == [
        (alice.id, hashlib.sha256(token.encode()).hexdigest())
    ]
    assert c.token_holders() == {alice.id}
    session, ended = b.revoke_token("alice")
    assert session.id == alice.id and ended
    assert a.session_for_token(token) is None and c.session_for_token(token) is None
    assert b.revoke_token("alice") == (session, False)  # nothing live to end
    # A new token replaces the old one everywhere.
    _, again = c.issue_token("alice")
    assert a.session_for_token(again) == alice and a.session_for_token(token) is None
    a.remove("alice")  # a removed session's token opens nothing
    assert b.session_for_token(again) is None


def test_a_pushed_wake_is_one_wake_for_every_connection(pg_url: str):
    a, b = _hubs(pg_url, 2)
    bob = a.add("bob").id
    hubs = _hubs(pg_url, 6)
    # Every hub marks the same wake pushed at once, through different sequences: one
    # mark, pending, seen through the highest.
    _race(
        [
            lambda hub=hub, n=n: hub.mark_wake_pushed(bob, "mailbox-1", n)
            for n, hub in enumerate(hubs, 3)
        ]
    )
    assert rows(pg_url, "SELECT mailbox_id, pending, seen_through FROM wake_marks") == [
        ("mailbox-1", 1, 8)
    ]
    assert b.has_pending_wake(bob, "mailbox-1", before=9)  # #9 rides that wake
    assert not b.has_pending_wake(bob, "mailbox-1", before=8)
    # The agent engages through one hub: the wake is consumed for all of them, and an
    # older read arriving late through another never lowers what was seen.
    _race(
        [lambda: a.mark_engaged(bob, "mailbox-1", 10), lambda: b.mark_engaged(bob, "mailbox-1", 2)]
    )
    assert a.wake_marks(bob) == b.wake_marks(bob) == {"mailbox-1": (False, 10)}
    assert not a.has_pending_wake(bob, "mailbox-1", before=11)


def test_an_ignored_wake_is_offered_again_once_whichever_hub_looks(pg_url: str):
    a, b = _hubs(pg_url, 2)
    bob = a.add("bob").id
    a.mark_wake_pushed(bob, "mailbox-1", 4)
    assert (
        a.ignored_wakes(bob, older_than=0)
        == b.ignored_wakes(bob, older_than=0)
        == [("mailbox-1", 4)]
    )
    b.mark_reoffered(bob, "mailbox-1", 4)
    assert a.ignored_wakes(bob, older_than=0) == []  # re-offered: not again
    a.mark_wake_pushed(bob, "mailbox-1", 6)  # a newer wake, ignored in turn
    assert b.ignored_wakes(bob, older_than=0) == [("mailbox-1", 6)]


def test_a_listener_registered_through_one_hub_holds_the_channel_for_all(pg_url: str):
    a, b = _hubs(pg_url, 2)
    bob = a.add("bob").id
    listener = a.register_listener(bob)
    assert b.channel_holder(bob) == listener
    assert b.get(bob).channel == listener  # type: ignore[union-attr]
    b.remove("bob")
    assert not a.beat_listener(listener.id)  # removed through the other: let go


def test_projects_are_minted_once_across_hubs(pg_url: str):
    hubs = _hubs(pg_url, 4)
    results = _race([lambda hub=hub: hub.project_for_root("/work/app", "app") for hub in hubs])
    assert not any(isinstance(r, Exception) for r in results), results
    assert len({r.id for r in results}) == 1
    other = hubs[0].project_for_root("/work/app2", "app")
    assert other.name == "app 2"


def test_a_held_claim_past_the_deadline_is_the_busy_sentence(pg_url: str):
    _registered(pg_url)
    hub = Registry(pg_url, busy_timeout=0.2)
    with psycopg.connect(pg_url, autocommit=True) as holder:
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (REGISTRY_LOCK,))
        with pytest.raises(RetryableError) as caught:
            hub.add("alice")
        holder.execute("ROLLBACK")
    assert str(caught.value) == BUSY
    assert hub.add("alice").name == "alice"  # the same request, again: it goes through


def test_an_unreachable_server_is_the_busy_sentence(pg_url: str, pg_server: Any):
    dead = pg_url.replace(f":{pg_server.port}/", ":1/")
    with pytest.raises(RetryableError) as caught:
        Registry(dead).add("alice")
    assert str(caught.value).startswith(BUSY + " (PostgreSQL at postgresql://termal@127.0.0.1:1/")


def test_a_read_before_any_registration_creates_nothing(pg_url: str):
    registry = Registry(pg_url)
    assert registry.sessions() == [] and registry.token_holders() == set()
    assert registry.session_for_token("ttk_nothing") is None
    assert rows(pg_url, "SELECT to_regclass('sessions') IS NULL") == [(True,)]


def test_a_newer_registry_is_refused_and_a_password_is_never_shown(pg_url: str):
    Registry(pg_url).add("alice")
    execute(pg_url, "UPDATE registry_meta SET value = '99'")
    secret = pg_url.replace("termal@", "termal:hunter2@")
    with pytest.raises(StorageError) as caught:
        Registry(secret).sessions()
    assert "hunter2" not in str(caught.value)
    assert "has version 99; this termal-tui understands up to 7" in str(caught.value)
    assert "termal:***@" in str(caught.value)


def test_the_file_registry_loads_nothing_of_the_driver(tmp_path: Path):
    code = (
        "import sys; from pathlib import Path; from termal_tui.agents.registry import Registry; "
        f"r = Registry.beside(Path({str(tmp_path / 'c.sqlite')!r})); r.add('alice'); "
        "r.issue_token('alice'); "
        "print(any(m.split('.')[0] in ('psycopg', 'psycopg_pool') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_board_projects_on_postgresql_read_termals_own_list_and_share_minted_ones(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """TermAl's project list is still TermAl's own file, in its state folder on this host
    (nothing is beside a URL); projects minted for other directories are the registry's,
    in the database, so every hub resolves a directory to the same project."""
    from termal_tui.agents.projects import ProjectResolver, termal_state_for
    from tests.agents.test_board_tools import make_repo, project, termal_state

    home = tmp_path / "termal-home"
    home.mkdir()
    inside = tmp_path / "termal-project"
    inside.mkdir()
    monkeypatch.setenv("TERMAL_HOME", str(home))
    assert termal_state_for(pg_url) == home / "termal.sqlite"
    termal_state(home / "termal.sqlite", [project("project-t", "termal's", inside)])
    a, b = _hubs(pg_url, 2)
    on_a, on_b = ProjectResolver(pg_url, a), ProjectResolver(pg_url, b)
    repo = make_repo(tmp_path / "repo")
    s1 = a.add("s1", workdir=str(inside))
    s2 = a.add("s2", workdir=str(repo))
    assert on_b.for_session(s1).id == "project-t"  # TermAl's, read from its file
    minted = on_a.for_session(s2)
    assert minted.source == "termal-tui" and on_b.for_session(s2) == minted
    assert [p.id for p in b.registered_projects()] == [minted.id]
    monkeypatch.setenv("TERMAL_HOME", pg_url)  # the database itself: TermAl's default
    assert termal_state_for(pg_url) == Path.home() / ".termal" / "termal.sqlite"
