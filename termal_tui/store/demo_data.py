"""Bulk demo data: thousands of mailboxes in one transaction, for benches and tests.

A million rows through the writer would take minutes, so these rows are inserted
directly into a schema the writer created (same tables, indexes and formats).
"""

from __future__ import annotations

import sqlite3


def fill_pair_mailboxes(
    db: sqlite3.Connection, count: int, *, name: str = "session-{n}", body: str = "Message {seq}."
) -> None:
    """``count`` two-message mailboxes between ``session-n`` and ``session-n+1``, one unread
    row each, bulk-inserted into a schema the writer made (for big indexes in benches and
    tests: a million rows through the writer would take minutes). ``name`` and ``body``
    are formatted with ``n`` (and ``seq``); commits."""
    stamp = "2026-01-01T00:00:00+00:00"
    for n in range(count):
        mailbox = f"mailbox-{n:08d}-0000-4000-8000-000000000000"
        a, b = f"session-{n}", f"session-{n + 1}"
        db.execute("INSERT INTO mailboxes VALUES (?, ?, ?, 3)", (mailbox, f'["{a}","{b}"]', stamp))
        db.executemany(
            "INSERT INTO mailbox_participants VALUES (?, ?, ?, ?, ?, NULL)",
            [
                (mailbox, a, name.format(n=n), 1, stamp),
                (mailbox, b, name.format(n=n + 1), 0, stamp),
            ],
        )
        clock = f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}"
        db.executemany(
            "INSERT INTO mailbox_messages VALUES "
            "(?,?,?,?,?,?,?,?,'routine',NULL,NULL,?,?,1,'durableButNotWoken',NULL)",
            [
                (
                    f"mailbox-message-{n:08d}-{seq}",
                    mailbox,
                    seq,
                    a if seq == 1 else b,
                    a,
                    b if seq == 1 else a,
                    b,
                    f"{clock}.{seq}+00:00",
                    body.format(n=n, seq=seq),
                    f"k-{n}-{seq}",
                )
                for seq in (1, 2)
            ],
        )
    db.commit()
