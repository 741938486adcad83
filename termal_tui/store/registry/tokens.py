"""The hub's bearer tokens, one per session. Only a token's SHA-256 is kept (a token is
256 random bits: no salt or stretching adds anything); a revoked token keeps its row."""

from __future__ import annotations

import hashlib

from termal_tui.store.registry.dbapi import Db


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def issue(db: Db, session_id: str, token: str, at: str) -> None:
    db.execute(
        "INSERT INTO session_tokens(session_id, token_hash, created_at, revoked_at) "
        "VALUES(?, ?, ?, NULL) ON CONFLICT(session_id) DO UPDATE SET "
        "token_hash = excluded.token_hash, created_at = excluded.created_at, revoked_at = NULL",
        (session_id, token_hash(token), at),
    )


def revoke(db: Db, session_id: str, at: str) -> bool:
    """End a session's token; whether it had a live one."""
    ended = db.execute(
        "UPDATE session_tokens SET revoked_at = ? WHERE session_id = ? AND revoked_at IS NULL",
        (at, session_id),
    ).rowcount
    return bool(ended)


def holders(db: Db) -> set[str]:
    rows = db.execute("SELECT session_id FROM session_tokens WHERE revoked_at IS NULL")
    return {str(row[0]) for row in rows}
