"""Checking a file must never drop this process's SQLite locks on it: closing any
descriptor of a file drops all of a process's POSIX locks, and then another process's
last close deletes the -wal under a live connection (receipted rows lost)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from termal_tui.store import open_writer
from termal_tui.store.board import open_board_writer
from termal_tui.store.sqlite import check_before_write, inspect_database_file


def _outsider_opens_and_closes(path: Path) -> None:
    """Another process's short-lived read-write connection (here: another connection
    object, which SQLite treats as a separate lock owner only across processes, so a
    subprocess does it)."""
    import subprocess
    import sys

    code = (
        "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
        "c.execute('select count(*) from mailbox_messages').fetchone(); c.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)


async def test_checks_while_a_writer_is_open_keep_its_wal(db_path):
    async with open_writer(db_path) as writer:
        await writer.append(
            sender_session_id="session-a",
            sender_name="a",
            target_session_id="session-b",
            target_name="b",
            body="first",
            idempotency_key="k1",
        )
        # What the MCP server does after opening its writer: open the board writer
        # (which checks the file), and what any command's check does.
        async with open_board_writer(db_path):
            pass
        check_before_write(db_path)
        inspect_database_file(db_path)
        _outsider_opens_and_closes(db_path)  # its last close must not delete our -wal
        assert Path(f"{db_path}-wal").exists()
        await writer.append(
            sender_session_id="session-a",
            sender_name="a",
            target_session_id="session-b",
            target_name="b",
            body="second",
            idempotency_key="k2",
        )
        fresh = sqlite3.connect(db_path)
        try:  # a new connection sees the receipted row: it went to the live -wal
            count = fresh.execute("SELECT COUNT(*) FROM mailbox_messages").fetchone()[0]
        finally:
            fresh.close()
        assert count == 2
