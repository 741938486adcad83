"""What ``doctor`` checks of a PostgreSQL database where it checks a file on SQLite: the
server (its version, whether it is a standby), the schema (read by the reader as it
opens), and the URL's role (what it may read, and whether it could write: the viewer
and ``doctor`` need only SELECT, and read in READ ONLY transactions either way)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import psycopg

from termal_tui.store.postgres.connection import every, one
from termal_tui.store.schema import BOARD_TABLES, MAILBOX_TABLES

Conn = psycopg.AsyncConnection[Any]

# The registry's tables (in the same database) that the viewer reads.
REGISTRY_READ: Final = ("sessions", "notifier_seen", "channel_listeners", "projects")
# What each group of tables is for, in the sentence that names one the role cannot read.
_PURPOSE: Final = {
    **dict.fromkeys(MAILBOX_TABLES, "the mailboxes cannot be read"),
    "meta": "the schema version cannot be read",
    **dict.fromkeys(BOARD_TABLES, "the board cannot be shown"),
    **dict.fromkeys(REGISTRY_READ, "who listens for wake-ups cannot be shown"),
}


@dataclass
class ServerFacts:
    version: str  # the server's version, e.g. "15.10"
    role: str  # the URL's role (current_user)
    database: str
    standby: bool  # a hot standby (read replica)
    read_only: bool  # this connection's transactions are READ ONLY
    can_write: bool  # the role could insert messages (the viewer never does)
    unreadable: list[str] = field(default_factory=list)  # sentences: tables it cannot read

    def to_json(self) -> dict[str, object]:
        return {
            "engine": "postgresql",
            "serverVersion": self.version,
            "role": self.role,
            "database": self.database,
            "standby": self.standby,
            "readOnlyTransactions": self.read_only,
            "roleCanWrite": self.can_write,
            "problems": list(self.unreadable),
        }


async def server_facts(conn: Conn) -> ServerFacts:
    row = await one(
        conn,
        "SELECT current_setting('server_version'), current_user, current_database(), "
        "pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'",
    )
    names = ("meta", *MAILBOX_TABLES, *BOARD_TABLES, *REGISTRY_READ)
    found = await every(
        conn,
        "SELECT name, has_table_privilege(to_regclass(name), 'SELECT') FROM unnest(%s::text[]) "
        "AS t(name) WHERE to_regclass(name) IS NOT NULL ORDER BY array_position(%s::text[], name)",
        (list(names), list(names)),
    )
    unreadable = [
        f"the role {row[1]} may not read the table {name}: {_PURPOSE[name]}"
        for name, readable in found
        if not readable
    ]
    write = await one(
        conn,
        "SELECT has_table_privilege(to_regclass('mailbox_messages'), 'INSERT') "
        "WHERE to_regclass('mailbox_messages') IS NOT NULL",
    )
    return ServerFacts(
        version=str(row[0]),
        role=str(row[1]),
        database=str(row[2]),
        standby=bool(row[3]),
        read_only=bool(row[4]),
        can_write=bool(write and write[0]),
        unreadable=unreadable,
    )
