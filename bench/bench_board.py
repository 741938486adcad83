"""Board benchmark: the board store's calls beside their floors, measured in the same run.

A scope of 512 live keys (TermAl's live-key limit), each a small JSON object, written by
the real writer. Floors, like for like (the same SQL the store runs, results fetched):
- aiosqlite floor: that SQL as one call on an aiosqlite connection (one thread hop: the
  least an async store on aiosqlite can cost);
- plain sqlite3: the same SQL on a synchronous connection (no thread hop at all).

Rows:
- list of 512 keys: TermAl's list paged as TermAl pages it (200 + 200 + 112, the later
  pages bound to the first page's ``snapshotGeneration``), each page its fence check,
  generation and key-ordered select; the floor runs all three pages' SQL in one hop;
- get: one key's head (fence check, generation, head);
- set: an update at the current revision with a fresh idempotency key (one BEGIN
  IMMEDIATE ... COMMIT: fence, receipt lookup, scope row, head, history row, generation,
  upsert, history and receipt retention, receipt), on a WAL file with synchronous=NORMAL
  as the writer's; the floors run the same statements on their own key.

Run: python bench/bench_board.py
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiosqlite

sys.path.insert(0, str(Path(__file__).parent))

from common import interleaved_medians

from termal_tui.store.board import dumps, open_board_reader, open_board_writer
from termal_tui.store.board.queries import HEAD_COLUMNS

SCOPE = "project-00000000-0000-4000-8000-000000000512"
KEYS = [f"area{n // 64}.item-{n:03d}" for n in range(512)]
FENCE_SQL = "SELECT EXISTS(SELECT 1 FROM coordination_board_deleted_scopes WHERE scope_id = ?)"
GENERATION_SQL = "SELECT generation FROM coordination_board_scopes WHERE scope_id = ?"
FIRST_PAGE_SQL = (
    f"SELECT {HEAD_COLUMNS} FROM coordination_board_entries "
    "WHERE scope_id = ? AND value_json IS NOT NULL ORDER BY key LIMIT ?"
)
NEXT_PAGE_SQL = (
    f"SELECT {HEAD_COLUMNS} FROM coordination_board_entries "
    "WHERE scope_id = ? AND value_json IS NOT NULL AND key > ? ORDER BY key LIMIT ?"
)
HEAD_SQL = f"SELECT {HEAD_COLUMNS} FROM coordination_board_entries WHERE scope_id = ? AND key = ?"


def value(n: int) -> dict[str, Any]:
    return {"state": "green" if n % 3 else "running", "owner": f"session-{n % 7}", "n": n}


def row(name: str, ours: float, floor: float, plain: float) -> str:
    return (
        f"| {name} | {ours:.3f} | {floor:.3f} | {ours / floor:.2f}x | {plain:.3f} | "
        f"{ours / plain:.2f}x |"
    )


def list_sql(conn: sqlite3.Connection) -> int:
    """TermAl's three pages of the 512 keys, as the store reads them."""
    fetched = 0
    after = None
    while True:
        conn.execute(FENCE_SQL, (SCOPE,)).fetchone()
        conn.execute(GENERATION_SQL, (SCOPE,)).fetchone()
        if after is None:
            rows = conn.execute(FIRST_PAGE_SQL, (SCOPE, 201)).fetchall()
        else:
            rows = conn.execute(NEXT_PAGE_SQL, (SCOPE, after, 201)).fetchall()
        page = rows[:200]
        fetched += len(page)
        if len(rows) <= 200:
            return fetched
        after = page[-1][0]


def get_sql(conn: sqlite3.Connection, key: str) -> None:
    conn.execute(FENCE_SQL, (SCOPE,)).fetchone()
    conn.execute(GENERATION_SQL, (SCOPE,)).fetchone()
    conn.execute(HEAD_SQL, (SCOPE, key)).fetchone()


class SetFloor:
    """The set's statements on one key of its own, revision tracked here."""

    def __init__(self, key: str, author: str) -> None:
        self.key, self.author, self.n = key, author, 0

    def __call__(self, conn: sqlite3.Connection) -> None:
        self.n += 1
        key, author = self.key, self.author
        canonical = dumps(value(self.n), sort_keys=True)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(FENCE_SQL, (SCOPE,)).fetchone()
        conn.execute(
            "SELECT request_hash, receipt_json FROM coordination_board_idempotency "
            "WHERE scope_id = ? AND author_session_id = ? AND idempotency_key = ?",
            (SCOPE, author, f"floor-{self.n}"),
        ).fetchone()
        conn.execute(
            "INSERT INTO coordination_board_scopes(scope_id, generation) VALUES(?, 0) "
            "ON CONFLICT(scope_id) DO NOTHING",
            (SCOPE,),
        )
        head = conn.execute(HEAD_SQL, (SCOPE, key)).fetchone()
        revision = 0 if head is None else head[1]
        if head is not None:
            conn.execute(
                "INSERT INTO coordination_board_history(scope_id, key, revision, generation, "
                "value_json, author_session_id, author_name, updated_at, state_stamp) "
                "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (SCOPE, *head),
            )
        (generation,) = conn.execute(GENERATION_SQL, (SCOPE,)).fetchone()
        conn.execute(
            "UPDATE coordination_board_scopes SET generation = ? WHERE scope_id = ?",
            (generation + 1, SCOPE),
        )
        conn.execute(
            "INSERT INTO coordination_board_entries(scope_id, key, revision, generation, "
            "value_json, author_session_id, author_name, updated_at, state_stamp) "
            "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(scope_id, key) DO UPDATE SET revision = excluded.revision, "
            "generation = excluded.generation, value_json = excluded.value_json, "
            "author_session_id = excluded.author_session_id, "
            "author_name = excluded.author_name, updated_at = excluded.updated_at, "
            "state_stamp = excluded.state_stamp",
            (
                SCOPE,
                key,
                revision + 1,
                generation + 1,
                canonical,
                author,
                "floor",
                "2026-12-01T00:00:00.000Z",
                None,
            ),
        )
        conn.execute(
            "DELETE FROM coordination_board_history WHERE rowid IN ("
            "SELECT rowid FROM coordination_board_history WHERE scope_id = ? AND key = ? "
            "ORDER BY revision DESC LIMIT -1 OFFSET ?)",
            (SCOPE, key, 100),
        )
        conn.execute(
            "INSERT INTO coordination_board_idempotency(scope_id, author_session_id, "
            "idempotency_key, request_hash, receipt_json, created_at) VALUES(?, ?, ?, ?, ?, ?)",
            (SCOPE, author, f"floor-{self.n}", "0" * 64, canonical, "2026-12-01T00:00:00.000Z"),
        )
        conn.execute(
            "DELETE FROM coordination_board_idempotency WHERE rowid IN ("
            "SELECT rowid FROM coordination_board_idempotency WHERE scope_id = ? "
            "ORDER BY rowid DESC LIMIT -1 OFFSET ?)",
            (SCOPE, 4096),
        )
        conn.execute("COMMIT")


def configure(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")


async def main(path: Path) -> None:
    lines = [
        "| operation (512 live keys) | termal-tui ms | aiosqlite floor ms | ratio | "
        "plain sqlite3 ms | ratio |",
        "|---|---|---|---|---|---|",
    ]
    async with open_board_writer(path) as writer:
        for n, key in enumerate(KEYS[:-2]):
            await writer.set(
                SCOPE,
                key,
                expected_revision=0,
                author_session_id="session-bench",
                author_name="bench",
                idempotency_key=f"seed-{n}",
                value=value(n),
            )
    plain = sqlite3.connect(path, isolation_level=None)
    configure(plain)
    floor = await aiosqlite.connect(path, isolation_level=None)
    await floor._execute(configure, floor._conn)

    async with open_board_reader(path) as reader:

        async def list_all() -> None:
            page = await reader.list(SCOPE, limit=200)
            while page.next_after_key is not None:
                page = await reader.list(
                    SCOPE, page.next_after_key, 200, snapshot_generation=page.generation
                )

        async def list_floor() -> None:
            await floor._execute(list_sql, floor._conn)

        # The floors' own two keys make the scope's 512 live keys.
        set_async, set_plain = SetFloor(KEYS[-2], "session-a"), SetFloor(KEYS[-1], "session-p")
        await floor._execute(set_async, floor._conn)
        set_plain(plain)
        assert list_sql(plain) == 512
        medians = await interleaved_medians(list_all, list_floor, lambda: list_sql(plain), 200)
        lines.append(row("list of 512 keys (3 pages)", *medians))

        async def first_page() -> None:
            await reader.list(SCOPE, limit=200)

        def first_page_sql(conn: sqlite3.Connection) -> None:
            conn.execute(FENCE_SQL, (SCOPE,)).fetchone()
            conn.execute(GENERATION_SQL, (SCOPE,)).fetchone()
            conn.execute(FIRST_PAGE_SQL, (SCOPE, 201)).fetchall()

        medians = await interleaved_medians(
            first_page,
            lambda: floor._execute(first_page_sql, floor._conn),
            lambda: first_page_sql(plain),
            300,
        )
        lines.append(row("list, one page of 200", *medians))
        key = KEYS[300]
        medians = await interleaved_medians(
            lambda: reader.get(SCOPE, key),
            lambda: floor._execute(get_sql, floor._conn, key),
            lambda: get_sql(plain, key),
            1000,
        )
        lines.append(row("get", *medians))

    async with open_board_writer(path) as writer:
        target = KEYS[100]
        state = {"revision": 1, "n": 0}

        async def one_set() -> None:
            state["n"] += 1
            receipt = await writer.set(
                SCOPE,
                target,
                expected_revision=state["revision"],
                author_session_id="session-bench",
                author_name="bench",
                idempotency_key=f"bench-{state['n']}",
                value=value(state["n"]),
            )
            state["revision"] = receipt.revision

        medians = await interleaved_medians(
            one_set, lambda: floor._execute(set_async, floor._conn), lambda: set_plain(plain), 500
        )
        lines.append(row("set (update at the current revision)", *medians))
    await floor.close()
    plain.close()
    print("\n".join(lines))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(main(Path(directory) / "coordination.sqlite"))
