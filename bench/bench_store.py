"""Store benchmark: reader calls beside their floors, measured in the same run.

Floors, like for like (the same SQL the store runs, results fetched):
- aiosqlite floor: that SQL as one ``execute_fetchall`` on an aiosqlite connection,
  i.e. one thread hop, the least an async store on aiosqlite can cost;
- plain sqlite3: the same SQL on a synchronous connection (no thread hop at all).

Run: python bench/bench_store.py
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import aiosqlite

sys.path.insert(0, str(Path(__file__).parent))

from common import BIG_MAILBOX, amedian_ms, big_mailbox_db, index_db, median_ms

from termal_tui.models import CONTROL_TOPIC
from termal_tui.store import open_reader, queries

COLUMNS = queries.message_columns(True)
PAGE_SQL = (
    f"SELECT {COLUMNS} FROM mailbox_messages WHERE mailbox_id = ? AND sequence < ? "
    "AND COALESCE(topic, '') != ? ORDER BY sequence DESC LIMIT 51"
)
MESSAGE_SQL = f"SELECT {COLUMNS} FROM mailbox_messages WHERE id = ? AND COALESCE(topic, '') != ?"
PARTICIPANTS_SQL = (
    f"SELECT {queries._PARTICIPANT_COLUMNS} FROM mailbox_participants "
    "ORDER BY mailbox_id, session_id"
)


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
        ours_ms = await amedian_ms(ours, repeat)
        floor_ms = await amedian_ms(lambda: db_async.execute_fetchall(sql, params), repeat)
        plain_ms = median_ms(lambda: db_plain.execute(sql, params).fetchall(), repeat)
        lines.append(row(name, ours_ms, floor_ms, plain_ms))

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
        await measure(
            "list_mailboxes, 1 mailbox of 1,000,000 messages (summary SQL)",
            lambda: reader.list_mailboxes(),
            queries._HUMAN_SUMMARIES,
            summary_params,
            async_big,
            plain_big,
            15,
        )
    async with open_reader(index) as reader:
        ours = await amedian_ms(lambda: reader.list_mailboxes(), 15)

        def plain_list() -> None:
            plain_index.execute(queries._HUMAN_SUMMARIES, summary_params).fetchall()
            plain_index.execute(PARTICIPANTS_SQL).fetchall()

        async def async_list() -> None:
            await async_index.execute_fetchall(queries._HUMAN_SUMMARIES, summary_params)
            await async_index.execute_fetchall(PARTICIPANTS_SQL)

        floor = await amedian_ms(async_list, 15)
        plain = median_ms(plain_list, 15)
        lines.append(
            row("list_mailboxes, 10,000 mailboxes (summary + participants SQL)", ours, floor, plain)
        )
        session_params = {"ctl": CONTROL_TOPIC, "mid": None, "viewer": "session-5000"}
        await measure(
            "list_mailboxes as one session, 10,000 mailboxes",
            lambda: reader.list_mailboxes("session-5000"),
            queries._SESSION_SUMMARIES,
            session_params,
            async_index,
            plain_index,
            50,
        )
    await async_big.close()
    await async_index.close()
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main(big_mailbox_db(), index_db()))
