"""Is anyone listening? Which sessions have a live notifier, read from the session
registry without changing it.

Mail is lost to a dead notifier when nothing wakes its receiver: no channel listener
holding the session's channel, and no hook of its agent has run for a while. The
registry (``termal-tui-sessions.sqlite``, beside the coordination database) records
both: every channel listener (a local ``termal-tui mcp --channel``, or a remote shim's
stream held by the hub) with its process and heartbeat, and each hook run. This is the
read-only view of that, for ``doctor``, ``session list`` and the viewer's health view
(which must not import the agents' layer, nor write anything). The SQL is the store's
(``store/registry/wakes.py``).
"""

from __future__ import annotations

import functools
import os
import socket
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, NamedTuple

REGISTRY_FILENAME: Final = "termal-tui-sessions.sqlite"
# A channel listener heartbeats every second; one missed by this long is gone.
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
    """A channel listener is connected: it heartbeat recently and its process lives (the
    process that pushes — a local server, or the hub — runs beside the registry)."""
    if pid is None or seen_at is None:
        return False
    return now - seen_at <= CHANNEL_STALE_SECONDS and pid_alive(pid)


@functools.cache
def this_host() -> str:
    return socket.gethostname()


class Listener(NamedTuple):
    """One process taking a session's wake-ups. ``kind`` is ``local`` (``termal-tui mcp
    --channel`` on this machine: ``pid`` is it) or ``remote`` (a ``termal-tui mcp --remote
    --channel`` shim whose stream the hub holds: ``pid`` is the hub's, ``host`` the
    shim's address, ``peer`` what the shim said of itself, ``pid@host``). ``runs_on`` is
    the host of the process ``pid`` names (None: written before version 7, on this host),
    where alone that pid can be checked."""

    id: str
    session_id: str
    kind: str
    pid: int
    host: str
    peer: str | None
    since: float  # epoch seconds: when it started listening
    seen_at: float  # epoch seconds: its last heartbeat
    runs_on: str | None = None

    def alive(self, now: float) -> bool:
        """A recent heartbeat, and its process alive: checked by pid on its own host; a
        process on another host (a hub sharing the registry on PostgreSQL) by its
        heartbeat alone."""
        if self.runs_on is not None and self.runs_on != this_host():
            return now - self.seen_at <= CHANNEL_STALE_SECONDS
        return channel_alive(self.pid, self.seen_at, now)

    def describe(self) -> str:
        """``local pid 4242 since 12:01:07`` / ``remote 10.0.0.7 (shim 77@laptop) via hub
        pid 99 since …``: which process holds the channel, and since when."""
        since = datetime.fromtimestamp(self.since, UTC).strftime("%Y-%m-%d %H:%M:%S")
        if self.kind == "remote":
            shim = f" (shim {self.peer})" if self.peer else ""
            return f"remote {self.host}{shim} via hub pid {self.pid} since {since} UTC"
        return f"local pid {self.pid} since {since} UTC"

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "pid": self.pid,
            "host": self.host,
            "peer": self.peer,
            "since": datetime.fromtimestamp(self.since, UTC).isoformat(),
            "lastSeen": datetime.fromtimestamp(self.seen_at, UTC).isoformat(),
        }


def channel_holder(listeners: Iterable[Listener], now: float) -> Listener | None:
    """The listener that holds a session's channel: the newest one that is alive (a
    newer listener wins over an older one; a dead one wins over nothing)."""
    best: Listener | None = None
    for listener in listeners:
        if listener.alive(now) and (
            best is None or (listener.since, listener.id) > (best.since, best.id)
        ):
            best = listener
    return best


class Notifier(NamedTuple):
    """What wakes one registered session: a live channel listener, or hooks that ran."""

    session_id: str
    name: str
    channel: bool
    hook_seen_at: float | None  # epoch seconds of its agent's last hook run
    holder: Listener | None = None  # who holds the channel, when one does

    def listening(self, now: float, hook_window: float) -> bool:
        return self.channel or (
            self.hook_seen_at is not None and now - self.hook_seen_at <= hook_window
        )


def read_notifiers(db_path: Path | str, now: float | None = None) -> dict[str, Notifier] | None:
    """Every live registered session's notifier, by session id; None when there is no
    registry (sessions TermAl runs are not ours to judge). Read-only and synchronous (it
    may connect to a server: run it off the event loop). ``db_path`` is the database: a
    file (the registry is the file beside it) or a ``postgresql://`` URL (the registry
    is in that database)."""
    from termal_tui.store.urls import is_postgres_url

    moment = time.time() if now is None else now
    if isinstance(db_path, str) and is_postgres_url(db_path):
        from termal_tui.store.postgres.registry_reads import read_notifier_rows as read_url

        found = read_url(db_path)
    else:
        from termal_tui.store.registry.wakes import read_notifier_rows

        path = registry_path_for(Path(db_path))
        if not path.is_file() or path.is_symlink():
            return None
        found = read_notifier_rows(path)
    if found is None:
        return None
    by_session: dict[str, list[Listener]] = {}
    for row in found.listeners:
        by_session.setdefault(str(row[1]), []).append(Listener(*row))
    notifiers = {}
    for session_id, name, pid, seen, hook_seen in found.sessions:
        holder = channel_holder(by_session.get(str(session_id), ()), moment)
        # A registry written by a version before 5 records one channel on the session.
        legacy = channel_alive(
            pid if isinstance(pid, int) else None,
            seen if isinstance(seen, int | float) else None,
            moment,
        )
        notifiers[str(session_id)] = Notifier(
            str(session_id),
            str(name),
            holder is not None or legacy,
            float(hook_seen) if isinstance(hook_seen, int | float) else None,
            holder,
        )
    return notifiers


async def notifiers_for(target: Path | str, now: float | None = None) -> dict[str, Notifier] | None:
    """:func:`read_notifiers` from a coroutine: a registry file is read in place (one
    short read), a registry on a server in a worker thread (it connects)."""
    from termal_tui.store.urls import is_postgres_url

    if isinstance(target, str) and is_postgres_url(target):
        import asyncio

        return await asyncio.to_thread(read_notifiers, target, now)
    return read_notifiers(target, now)
