"""Sessions: names, ids, removal and turns. Rows are returned as tuples in ``COLUMNS``
order; ``agents/registry.py`` makes them ``Session`` records."""

from __future__ import annotations

from typing import Final

from termal_tui.store.registry.dbapi import Db

Row = tuple[object, ...]

COLUMNS: Final = "id, name, agent, workdir, created_at, removed_at, turn_started_at"
_QUALIFIED: Final = ", ".join("s." + column for column in COLUMNS.split(", "))


def by_key_live(db: Db, key: str) -> Row | None:
    return db.execute(
        f"SELECT {COLUMNS} FROM sessions WHERE name_key = ? AND removed_at IS NULL", (key,)
    ).fetchone()


def live_names(db: Db) -> list[tuple[str, str]]:
    """(id, name) of every live session."""
    return [
        (str(row[0]), str(row[1]))
        for row in db.execute("SELECT id, name FROM sessions WHERE removed_at IS NULL")
    ]


def insert(
    db: Db,
    session_id: str,
    name: str,
    key: str,
    agent: str | None,
    workdir: str | None,
    created_at: str,
) -> None:
    db.execute(
        "INSERT INTO sessions(id, name, name_key, agent, workdir, created_at) "
        "VALUES(?, ?, ?, ?, ?, ?)",
        (session_id, name, key, agent, workdir, created_at),
    )


def all_sessions(db: Db, include_removed: bool) -> list[Row]:
    where = "" if include_removed else "WHERE removed_at IS NULL"
    return db.execute(f"SELECT {COLUMNS} FROM sessions {where} ORDER BY created_at, id").fetchall()


def get(db: Db, session_id: str) -> Row | None:
    return db.execute(f"SELECT {COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()


def by_key(db: Db, key: str) -> list[Row]:
    """Every session with this name key, live and removed, oldest first."""
    return db.execute(
        f"SELECT {COLUMNS} FROM sessions WHERE name_key = ? ORDER BY created_at, id", (key,)
    ).fetchall()


def mark_removed(db: Db, session_id: str, at: str) -> None:
    db.execute(
        "UPDATE sessions SET removed_at = ?, turn_started_at = NULL, channel_pid = NULL, "
        "channel_seen_at = NULL WHERE id = ? AND removed_at IS NULL",
        (at, session_id),
    )
    db.execute("DELETE FROM wake_marks WHERE session_id = ?", (session_id,))
    db.execute("DELETE FROM channel_listeners WHERE session_id = ?", (session_id,))


def set_turn(db: Db, session_id: str, started_at: str | None) -> None:
    db.execute(
        "UPDATE sessions SET turn_started_at = ? WHERE id = ? AND removed_at IS NULL",
        (started_at, session_id),
    )


def by_token_hash(db: Db, digest: str) -> Row | None:
    """The live session a live token (by its hash) belongs to."""
    return db.execute(
        f"SELECT {_QUALIFIED} FROM session_tokens t JOIN sessions s ON s.id = t.session_id "
        "WHERE t.token_hash = ? AND t.revoked_at IS NULL AND s.removed_at IS NULL",
        (digest,),
    ).fetchone()
