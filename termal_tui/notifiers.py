"""Is anyone listening? Which sessions have a live notifier, read from the session
registry without changing it.

Mail is lost to a dead notifier when nothing wakes its receiver: no channel server
connected for the session, and no hook of its agent has run for a while. The registry
(``termal-tui-sessions.sqlite``, beside the coordination database) records both: a
channel server's pid and heartbeat, and each hook run. This is the read-only view of
that, for ``doctor`` and the viewer's health view (which must not import the agents'
layer, nor write anything).
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Final, NamedTuple

REGISTRY_FILENAME: Final = "termal-tui-sessions.sqlite"
# A channel server heartbeats every second; one missed by this long is gone.
CHANNEL_STALE_SECONDS: Final = 5.0


def registry_path_for(db_path: Path) -> Path:
    return db_path.expanduser().with_name(REGISTRY_FILENAME)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):
        return False
    return True


def channel_alive(pid: int | None, seen_at: float | None, now: float) -> bool:
    """A channel server is connected: it heartbeat recently and its process lives."""
    if pid is None or seen_at is None:
        return False
    return now - seen_at <= CHANNEL_STALE_SECONDS and pid_alive(pid)


class Notifier(NamedTuple):
    """What wakes one registered session: a live channel server, or hooks that ran."""

    session_id: str
    name: str
    channel: bool
    hook_seen_at: float | None  # epoch seconds of its agent's last hook run

    def listening(self, now: float, hook_window: float) -> bool:
        return self.channel or (
            self.hook_seen_at is not None and now - self.hook_seen_at <= hook_window
        )


def read_notifiers(db_path: Path, now: float | None = None) -> dict[str, Notifier] | None:
    """Every live registered session's notifier, by session id; None when there is no
    registry (sessions TermAl runs are not ours to judge). Read-only: ``mode=ro``, and
    an immutable snapshot when the registry is not in use (so no sidecar is created)."""
    path = registry_path_for(db_path)
    if not path.is_file() or path.is_symlink():
        return None
    moment = time.time() if now is None else now
    in_use = Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    uri = path.resolve().as_uri() + ("?mode=ro" if in_use else "?mode=ro&immutable=1")
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error:
        return None
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if "notifier_seen" in tables:  # registry version 3 and later
            hooks = "(SELECT hook_seen_at FROM notifier_seen n WHERE n.session_id = s.id)"
        else:
            hooks = "NULL"
        rows = db.execute(
            f"SELECT s.id, s.name, s.channel_pid, s.channel_seen_at, {hooks} FROM sessions s "
            "WHERE s.removed_at IS NULL"
        ).fetchall()
    except sqlite3.Error:
        return None
    finally:
        db.close()
    found = {}
    for session_id, name, pid, seen, hook_seen in rows:
        alive = channel_alive(
            pid if isinstance(pid, int) else None,
            seen if isinstance(seen, int | float) else None,
            moment,
        )
        found[str(session_id)] = Notifier(
            str(session_id),
            str(name),
            alive,
            float(hook_seen) if isinstance(hook_seen, int | float) else None,
        )
    return found
