"""Concurrent board writers in separate processes (each with its own connection and
admission, so only the database orders them: SQLite's file lock, PostgreSQL's scope
lock across connections): whatever interleaving happens,
revisions are dense per key, the scope generation counts exactly the committed writes,
heads/history/receipts agree with what each writer was told, and replays return the
original receipts."""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from termal_tui.store.board import canonical_value, dumps, request_hash
from termal_tui.store.board.writer import open_board_writer
from termal_tui.store.errors import ConflictError, NotFoundError, RetryableError
from tests.helpers import ENGINES, rows

SCOPE = "project-race"
KEYS = ("gate", "lock", "round")


async def _work(path: str, worker: int, plan: list[tuple[str, int]], start: Any):
    done: list[dict[str, Any]] = []  # {"request": ..., "receipt": wire} per committed write
    replays: list[tuple[dict[str, Any], dict[str, Any]]] = []
    async with open_board_writer(path) as board:
        await asyncio.to_thread(start.wait, 60)  # every writer open: they race from here
        for step, (action, pick) in enumerate(plan):
            if action == "replay":
                if done:
                    original = done[pick % len(done)]
                    again = await board.set(SCOPE, original["key"], **original["request"])
                    replays.append((original["receipt"], again.to_wire()))
                continue
            key = KEYS[pick % len(KEYS)]
            for attempt in range(60):
                try:
                    found = await board.get(SCOPE, key)
                    revision, live = found.head.revision, True
                except NotFoundError as error:
                    current = (error.detail or {}).get("current")
                    revision, live = (current["revision"] if current else 0), False
                if action == "delete" and not live:
                    break  # nothing to delete
                request: dict[str, Any] = {
                    "expected_revision": revision,
                    "author_session_id": f"session-{worker}",
                    "author_name": f"Worker {worker}",
                    "idempotency_key": f"w{worker}-{step}-{attempt}",
                    "state_stamp": f"step-{step}" if step % 2 else None,
                }
                if action == "delete":
                    request["delete"] = True
                else:
                    request["value"] = {"worker": worker, "step": step, "attempt": attempt}
                try:
                    receipt = await board.set(SCOPE, key, **request)
                except (ConflictError, NotFoundError, RetryableError):
                    continue  # someone else moved the key (or SQLite was busy): re-read
                done.append({"key": key, "request": request, "receipt": receipt.to_wire()})
                break
    return {"done": done, "replays": replays}


def worker_main(args: tuple[str, int, list[tuple[str, int]], Any]) -> dict[str, Any]:
    return asyncio.run(_work(*args))


@pytest.fixture(scope="module")
def pool():
    """Four worker processes, started before any example runs, and a manager for the
    barrier each example's writers meet at (a ``multiprocessing`` barrier, not a time)."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as workers, context.Manager() as manager:
        workers.map(abs, [0] * 4)  # every worker started and imported
        yield workers, manager


async def _create(target: Path | str) -> None:
    async with open_board_writer(target):
        pass


def _table(target: Path | str, sql: str) -> list[tuple[Any, ...]]:
    return rows(target, sql)


actions = st.tuples(st.sampled_from(["set", "set", "set", "delete", "replay"]), st.integers(0, 5))
plans = st.lists(st.lists(actions, min_size=4, max_size=12), min_size=2, max_size=4)


@pytest.mark.parametrize("store_engine", ENGINES)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans=plans)
def test_concurrent_writers_keep_revisions_generations_and_receipts_consistent(
    pool, pg_server, store_engine, plans
):
    with tempfile.TemporaryDirectory() as scratch:
        path: Path | str = Path(scratch) / "state" / "coordination.sqlite"
        if store_engine == "postgres":
            path = pg_server.fresh_database()
        asyncio.run(_create(path))
        workers, manager = pool
        start = manager.Barrier(len(plans))
        jobs = [(str(path), n, plan, start) for n, plan in enumerate(plans)]
        results = workers.map(worker_main, jobs, chunksize=1)
        retried = sum(
            1
            for r in results
            for w in r["done"]
            if not w["request"]["idempotency_key"].endswith("-0")
        )
        event(f"writes that lost a race and retried: {'some' if retried else 'none'}")
        check(path, [write for result in results for write in result["done"]], results)


def check(path: Path | str, writes: list[dict[str, Any]], results: list[dict[str, Any]]) -> None:
    receipts = sorted((w["receipt"] for w in writes), key=lambda r: r["generation"])
    generation = _table(
        path, f"SELECT generation FROM coordination_board_scopes WHERE scope_id = '{SCOPE}'"
    )
    total = generation[0][0] if generation else 0
    # One generation per committed write, none lost, none shared.
    assert [r["generation"] for r in receipts] == list(range(1, total + 1))
    assert all(not r["duplicate"] for r in receipts)

    heads = {
        row[0]: row
        for row in _table(
            path,
            "SELECT key, revision, generation, value_json, author_session_id, state_stamp "
            "FROM coordination_board_entries",
        )
    }
    history = _table(
        path, "SELECT key, revision, generation, value_json FROM coordination_board_history"
    )
    for key in {r["key"] for r in receipts}:
        mine = [r for r in receipts if r["key"] == key]
        # Dense revisions in generation order; each write saw exactly the one before.
        assert [r["revision"] for r in mine] == list(range(1, len(mine) + 1))
        assert [r["priorRevision"] for r in mine] == list(range(len(mine)))
        for before, after in itertools.pairwise(mine):
            assert not (before["deleted"] and after["deleted"])  # no delete of a tombstone
        last = mine[-1]
        head = heads[key]
        assert head[1:3] == (last["revision"], last["generation"])
        assert head[4] == last["authorSessionId"] and head[5] == last.get("stateStamp")
        assert head[3] == (None if last["deleted"] else canonical_value(last["value"]))
        # History: the live revisions since the last delete (its tombstone included),
        # at most 100, none at all while the key is deleted.
        tombstones = [r["revision"] for r in mine if r["deleted"]]
        start = max([1, *tombstones])
        expected = (
            []
            if last["deleted"]
            else list(range(max(start, last["revision"] - 100), last["revision"]))
        )
        kept = sorted((row for row in history if row[0] == key), key=lambda row: row[1])
        assert [row[1] for row in kept] == expected
        by_revision = {r["revision"]: r for r in mine}
        for _, revision, gen, value_json in kept:
            source = by_revision[revision]
            assert gen == source["generation"]
            assert value_json == (None if source["deleted"] else canonical_value(source["value"]))

    # Every committed write has its receipt, with TermAl's hash of the request.
    stored = {
        (row[0], row[1]): row[2:]
        for row in _table(
            path,
            "SELECT author_session_id, idempotency_key, request_hash, receipt_json "
            "FROM coordination_board_idempotency",
        )
    }
    assert len(stored) == len(writes)
    for write in writes:
        request = write["request"]
        canonical = None if request.get("delete") else canonical_value(request["value"])
        digest = request_hash(
            SCOPE, write["key"], request["expected_revision"], canonical, request["state_stamp"]
        )
        row = stored[(request["author_session_id"], request["idempotency_key"])]
        assert row == (digest, dumps(write["receipt"]))
    # A replay, whenever it ran, is the original receipt marked duplicate.
    for result in results:
        for original, again in result["replays"]:
            assert again == original | {"duplicate": True}
