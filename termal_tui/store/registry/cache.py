"""What a hub on PostgreSQL remembers of the registry between calls: which session a token
belongs to, a session's identity by id and by name, and the sessions known to have no
stale ``left_at`` marker — so a call does not re-read them through the database every
time (on a file they are read at once on the event loop; on a server each read is a
round trip in a worker thread).

It is trusted only while it is told of every change: every write that changes a
session's identity or its token (a session added, adopted or removed, a token issued or
revoked) and every write of ``left_at`` markers sends a notification on the registry's
channel inside its own transaction (``store/postgres/notify.py``), and each hub listens
on it. A notification empties the cache; while the listening connection is down (the
server restarting) the cache answers nothing and every read goes to the database; when
it listens again the cache starts empty (what changed meanwhile was not told).

A read that raced with a change is not kept: :meth:`IdentityCache.generation` is taken
before the read and the answer is stored only if no notification came meanwhile.

And an answer is kept :data:`MAX_AGE_SECONDS` at most, whatever was heard: a connection
that listens but is never told (a transaction-mode pooler between the hub and the
server, a peer gone silent before keepalives notice) cannot keep a revoked token or a
removed session accepted for longer than that.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, Final

# Answers kept per table at most (a table that fills is emptied: a bound on memory, not
# a policy; a hub's live sessions are far fewer).
MAX_ENTRIES: Final = 10_000
MISSING: Final = object()  # not in the cache (``None`` is a remembered answer)
# How long an answer is trusted without being read again, however quiet the channel.
MAX_AGE_SECONDS: Final = 10.0

# Tables of the cache (keys of ``IdentityCache._tables``).
BY_ID: Final = "id"
BY_KEY: Final = "name"
BY_TOKEN: Final = "token"
NO_MARKERS: Final = "markers"


class IdentityCache:
    """Thread-safe (the registry is read from worker threads and from the event loop)."""

    def __init__(
        self,
        *,
        max_age: float = MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        self._live = False  # the listening connection is up and the cache is complete
        self._generation = 0
        self._tables: dict[str, dict[Hashable, Any]] = {}
        self.hits = 0
        self.misses = 0
        self.resets = 0

    @property
    def live(self) -> bool:
        return self._live

    def generation(self) -> int | None:
        """Take before a read whose answer may be stored (None: do not store it)."""
        with self._lock:
            return self._generation if self._live else None

    def reset(self, *, live: bool) -> None:
        """Forget everything (a change was announced, or the listener connected or went
        down); ``live``: whether answers may be kept from now on."""
        with self._lock:
            self._generation += 1
            self._tables = {}
            self._live = live
            self.resets += 1

    def get(self, table: str, key: Hashable) -> Any:
        """The remembered answer, or :data:`MISSING`."""
        if not self._live:
            return MISSING
        found = self._tables.get(table, {}).get(key, MISSING)
        if found is MISSING or self._clock() - found[1] > self._max_age:
            self.misses += 1
            return MISSING
        self.hits += 1
        return found[0]

    def put(self, table: str, key: Hashable, value: Any, generation: int | None) -> None:
        """Keep an answer read after :meth:`generation` returned ``generation``, unless a
        change was announced since (or the cache is not live)."""
        if generation is None:
            return
        with self._lock:
            if self._live and generation == self._generation:
                kept = self._tables.setdefault(table, {})
                if len(kept) >= MAX_ENTRIES:
                    kept.clear()
                kept[key] = (value, self._clock())
