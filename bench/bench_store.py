"""Store benchmark: reader calls beside plain sqlite3 hand-written queries, same run.

Run: python bench/bench_store.py
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import BIG_MAILBOX, amedian_ms, big_mailbox_db, index_db, median_ms

from termal_tui.store import open_reader

PAGE_SQL = (
    "SELECT * FROM mailbox_messages WHERE mailbox_id = ? AND sequence < ? "
    "ORDER BY sequence DESC LIMIT 51"
)
LIST_SQL = """
SELECT m.id, latest.sequence, latest.body, latest.created_at
FROM mailboxes m JOIN mailbox_messages latest ON latest.mailbox_id = m.id
 AND latest.sequence = m.next_sequence - 1
ORDER BY latest.created_at DESC
"""


def row(name: str, ours: float, floor: float) -> str:
    return f"| {name} | {ours:.3f} | {floor:.3f} | {ours / floor:.2f}x |"


async def main(big: Path, index: Path) -> None:
    plain_big = sqlite3.connect(big.resolve().as_uri() + "?mode=ro", uri=True)
    plain_index = sqlite3.connect(index.resolve().as_uri() + "?mode=ro", uri=True)
    lines = [
        "| operation | termal-tui median ms | plain sqlite3 median ms | ratio |",
        "|---|---|---|---|",
    ]
    async with open_reader(big) as reader:
        for label, before in (("newest page (50)", None), ("page at depth 500,000", 500_000)):
            ours = await amedian_ms(lambda b=before: reader.read_page(BIG_MAILBOX, b), 200)
            floor = median_ms(
                lambda b=before: plain_big.execute(PAGE_SQL, (BIG_MAILBOX, b or 2**62)).fetchall(),
                200,
            )
            lines.append(row(label, ours, floor))
        deep = await amedian_ms(lambda: reader.read_page(BIG_MAILBOX, 10), 200)
        lines.append(
            row(
                "page at depth ~1,000,000 (oldest)",
                deep,
                median_ms(lambda: plain_big.execute(PAGE_SQL, (BIG_MAILBOX, 10)).fetchall(), 200),
            )
        )
        message_id = f"mailbox-message-{777_777:036d}"
        ours = await amedian_ms(lambda: reader.read_message(message_id), 200)
        floor = median_ms(
            lambda: plain_big.execute(
                "SELECT * FROM mailbox_messages WHERE id = ?", (message_id,)
            ).fetchall(),
            200,
        )
        lines.append(row("read_message", ours, floor))
        ours = await amedian_ms(lambda: reader.list_mailboxes(), 50)
        lines.append(
            row(
                "list_mailboxes, 1 mailbox of 1,000,000 messages",
                ours,
                median_ms(lambda: plain_big.execute(LIST_SQL).fetchall(), 50),
            )
        )
    async with open_reader(index) as reader:
        ours = await amedian_ms(lambda: reader.list_mailboxes(), 15)
        floor = median_ms(lambda: plain_index.execute(LIST_SQL).fetchall(), 15)
        lines.append(row("list_mailboxes, 10,000 mailboxes", ours, floor))
        ours = await amedian_ms(lambda: reader.list_mailboxes("session-5000"), 50)
        floor = median_ms(lambda: plain_index.execute(LIST_SQL).fetchall(), 15)
        lines.append(row("list_mailboxes as one session, 10,000 mailboxes", ours, floor))
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main(big_mailbox_db(), index_db()))
