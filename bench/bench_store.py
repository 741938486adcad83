"""Store benchmark: reader calls beside their floors, measured in the same run.

Floors, like for like (the same SQL the store runs, results fetched):
- aiosqlite floor: that SQL as one ``execute_fetchall`` on an aiosqlite connection,
  i.e. one thread hop, the least an async store on aiosqlite can cost;
- plain sqlite3: the same SQL on a synchronous connection (no thread hop at all).

And the time the cycle collector spends in one read of 10,000 summaries (the store no
longer pauses it: a pause is process-wide and only defers the young collection).

Run: python bench/bench_store.py
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import aiosqlite

sys.path.insert(0, str(Path(__file__).parent))

from common import BIG_MAILBOX, big_mailbox_db, index_db, interleaved_medians

from termal_tui.core.models import CONTROL_TOPIC
from termal_tui.store import open_reader, queries

COLUMNS = queries.message_columns(True)
PAGE_SQL = (
    f"SELECT {COLUMNS} FROM mailbox_messages WHERE mailbox_id = ? AND sequence < ? "
    "AND COALESCE(topic, '') != ? ORDER BY sequence DESC LIMIT 51"
)
MESSAGE_SQL = f"SELECT {COLUMNS} FROM mailbox_messages WHERE id = ? AND COALESCE(topic, '') != ?"
PARTICIPANTS_SQL = queries.participants_sql(with_unread=True)


def row(name: str, ours: float, floor: float, plain: float) -> str:
    return (
        f"| {name} | {ours:.3f} | {floor:.3f} | {ours / floor:.2f}x | {plain:.3f} | "
        f"{ours / plain:.2f}x |"
    )


async def main(big: Path, index: Path) -> None:
    uri_big = big.resolve().as_uri() + "?mode=ro"
    uri_index = index.resolve().as_uri() + "?mode=ro"
    plain_big = sqlite3.connect(uri_big, uri=True)
    plain_index = sqlite3.connect(uri_index, uri=True)
    async_big = await aiosqlite.connect(uri_big, uri=True)
    async_index = await aiosqlite.connect(uri_index, uri=True)
    lines = [
        "| operation | termal-tui ms | aiosqlite floor ms | ratio | plain sqlite3 ms | ratio |",
        "|---|---|---|---|---|---|",
    ]

    async def measure(name, ours, sql, params, db_async, db_plain, repeat):
        medians = await interleaved_medians(
            ours,
            lambda: db_async.execute_fetchall(sql, params),
            lambda: db_plain.execute(sql, params).fetchall(),
            repeat,
        )
        lines.append(row(name, *medians))

    async def measure_list(name, reader, statements, db_async, db_plain, repeat):
        """list_mailboxes against the two statements it runs (summaries, participants
        with their unread counts), fetched on one aiosqlite hop and on plain sqlite3."""

        def run_on(conn):
            return lambda: [conn.execute(sql, params).fetchall() for sql, params in statements]

        async def floor() -> None:
            await db_async._execute(run_on(db_async._conn))

        viewer = statements[0][1].get("viewer")
        medians = await interleaved_medians(
            lambda: reader.list_mailboxes(session_id=viewer), floor, run_on(db_plain), repeat
        )
        lines.append(row(name, *medians))

    big_max = 2**63 - 1
    async with open_reader(big) as reader:
        for label, before in (
            ("newest page (50)", None),
            ("page at depth 500,000", 500_000),
            ("page at the oldest end", 10),
        ):
            await measure(
                label,
                lambda b=before: reader.read_page(BIG_MAILBOX, b),
                PAGE_SQL,
                (BIG_MAILBOX, before or big_max, CONTROL_TOPIC),
                async_big,
                plain_big,
                300,
            )
        message_id = f"mailbox-message-{777_777:036d}"
        await measure(
            "read_message",
            lambda: reader.read_message(message_id),
            MESSAGE_SQL,
            (message_id, CONTROL_TOPIC),
            async_big,
            plain_big,
            300,
        )
        summary_params = {"ctl": CONTROL_TOPIC, "mid": None}
        one_params = summary_params | {"m0": BIG_MAILBOX}
        one_participants = queries.participants_sql(True, "WHERE p.mailbox_id IN (:m0)")
        await measure_list(
            "list_mailboxes, 1 mailbox of 1,000,000 messages",
            reader,
            [(queries._HUMAN_SUMMARIES, summary_params), (one_participants, one_params)],
            async_big,
            plain_big,
            15,
        )
    async with open_reader(index) as reader:
        await measure_list(
            "list_mailboxes, 10,000 mailboxes",
            reader,
            [(queries._HUMAN_SUMMARIES, summary_params), (PARTICIPANTS_SQL, summary_params)],
            async_index,
            plain_index,
            15,
        )
        session_params = {"ctl": CONTROL_TOPIC, "mid": None, "viewer": "session-5000"}
        mine = [f"mailbox-{n:08d}-0000-4000-8000-000000000000" for n in (4999, 5000)]
        await measure_list(
            "list_mailboxes as one session, 10,000 mailboxes",
            reader,
            [
                (queries._SESSION_SUMMARIES, session_params),
                (
                    queries.participants_sql(False, "WHERE p.mailbox_id IN (:m0, :m1)"),
                    {"m0": mine[0], "m1": mine[1]},
                ),
            ],
            async_index,
            plain_index,
            50,
        )
        lines.append(await collector_row(reader))
    await async_big.close()
    await async_index.close()
    print("\n".join(lines))


async def collector_row(reader, repeat: int = 15) -> str:
    """Median time in the cycle collector during one list_mailboxes of 10,000 mailboxes
    (the collections a call triggers, on any thread), beside the call's own median."""
    spent = [0.0, 0.0]

    def callback(phase: str, _info: dict) -> None:
        if phase == "start":
            spent[1] = time.perf_counter()
        else:
            spent[0] += time.perf_counter() - spent[1]

    calls, collector = [], []
    gc.callbacks.append(callback)
    try:
        for _ in range(repeat):
            spent[0] = 0.0
            start = time.perf_counter()
            result = await reader.list_mailboxes()
            _after = [[] for _ in range(1_000)]  # a deferred collection would run here
            calls.append((time.perf_counter() - start) * 1000)
            collector.append(spent[0] * 1000)
            del result, _after
    finally:
        gc.callbacks.remove(callback)
    return (
        f"| time in the cycle collector, list_mailboxes of 10,000 mailboxes | "
        f"{statistics.median(collector):.1f} | | | | (call {statistics.median(calls):.0f} ms) |"
    )


if __name__ == "__main__":
    asyncio.run(main(big_mailbox_db(), index_db()))
