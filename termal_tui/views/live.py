"""One live source per open database: the only place that watches the file.

Every view of the viewer (the index, each tab, the health view, the board and its key
screen, search) subscribes to one :class:`LiveSource` and reads through it. None of them
keeps a timer for reading, polls the file, compares inodes or reopens anything: the
source does all of that, once, and tells them what happened.

What the source owns
--------------------
* **The clock** (:class:`Clock`): wall time (``now()``, for "Live 12:00:08" and ages),
  a monotonic time (``monotonic()``, for "not sooner than …" rules) and timers
  (``call_later``). :class:`SystemClock` runs on the event loop; :class:`ManualClock` is
  driven by tests with ``clock.advance(seconds)`` (nothing waits on the wall clock).
* **The file watcher**: a real change notification (inotify through watchfiles, in a
  thread of its own) on the database's directory, for the file, its ``-wal`` and its
  ``-shm``, so a commit by another process reaches every view within a second. The poll
  every ``interval`` seconds stays as the fallback where notifications do not arrive
  (network filesystems, a watcher that could not start).
* **The change check**: the reader's ``data_version()`` (the store's change counter: it moves
  when another connection commits); nothing else is read when it has not moved.
* **Live / Stale**: :class:`LiveStatus` says the phase, the time of the last good read
  and, when Stale, why.
* **The file's identity**: a file moved away or deleted (Stale, "gone", until a file is
  there again), a file replaced by another (reopened: every view starts again from the
  new file), a main file replaced while the old ``-wal`` stays beside it (refused and
  reported: SQLite would read the pair as a blend of both files), a path with no file
  yet (``missing``: picked up the moment it appears).
* **Reopening**, and **the busy/locked retry** (a locked file is Stale with the reason
  and tried again every ``RETRY_SECONDS``).

On PostgreSQL (a ``postgresql://`` URL) there is no file: no watcher, no identity, no
``-wal``. The change check is the same reader call, ``data_version()`` (the server's
WAL position: one cheap statement), polled every :data:`SERVER_POLL_SECONDS` while
following, so a commit by any process on any host shows within a second. A server
that cannot be reached makes the source Stale (with the time of the last good read);
each following check connects afresh (a new reader: the views read everything again,
as after a reopen), so it is Live again as soon as the server answers.

Public API
----------
``source = LiveSource(path, interval=8.0, clock=None, watch=True, busy_timeout_ms=250)``
    ``interval`` > 0: follow the file (watcher + a poll every ``interval`` s; a
    ``postgresql://`` URL: a poll every ``min(interval, SERVER_POLL_SECONDS)``);
    0: paused (no automatic read; ``check()`` still reads on demand).
``source.target`` / ``source.name``
    What is read (a path, or the URL: it may hold a password) / how to name it to a
    person (the file's name, or the URL with its password replaced by ``***``).
``await source.start()`` / ``await source.close()``
    Start the loop (the first open runs in it: ``start`` returns at once) / stop
    everything and close the reader.
``sub = source.subscribe(callback)`` / ``sub.close()``
    ``callback(event: LiveEvent)`` is called on the event loop, synchronously, after
    each check and on each state change; it must not block (a Textual widget posts a
    message, see ``tui.messages.LiveChanged``). Unsubscribe when the view goes away.
``source.status`` → :class:`LiveStatus` (phase, ``good_at``, ``reason``, generation…)
``source.reader`` → the current :class:`MailboxReader` or None (not open yet / missing)
``source.board`` → a :class:`BoardReader` over the same connection, or None
``source.generation`` → increments at each (re)open; results read from an older
    generation are not this file's.
``await source.read(lambda reader: reader.list_mailboxes(...))``
``await source.read_board(lambda board: board.scopes())``
    Run one read on the current reader. A busy file, a file that went away or any
    store failure makes the source Stale (every view hears it) and raises the
    StoreError; a success makes it Live as of now. A read that straddled a reopen
    raises :class:`Superseded` (drop it: an ``opened`` event follows).
``source.request_check()``
    Check soon (a view's ``r``; the watcher). ``await source.check()`` checks now.
``await source.settled()`` (tests)
    Returns when every requested check has run.

Events (``LiveEvent.kind``)
---------------------------
``opened``    a reader is open (the first one, or the new file after a replacement):
              read everything again from ``source.reader``; drop what the old file
              showed.
``changed``   something was committed (or the source just became Live again after a
              failure): read what you show.
``unchanged`` a check found nothing new: only the time moved on (status, ages, rules
              that depend on time alone).
``tick``      no check was made (paused, snapshot, missing file): time moved on.
``state``     Live/Stale/missing changed without new data (show ``event.status``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import itertools
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, Protocol, TypeVar

from termal_tui.store.errors import NotFoundError, RetryableError, StorageError, StoreError

if TYPE_CHECKING:
    from termal_tui.store.board.reader import BoardReader
    from termal_tui.store.reader import MailboxReader

T = TypeVar("T")

RETRY_SECONDS: Final = 2.0  # a locked file (open or read) is tried again this often
TICK_SECONDS: Final = 10.0  # paused or a snapshot: time still moves on (ages, status)
WATCH_DEBOUNCE_MS: Final = 150  # a burst of file events is one check, at most this late
WATCH_STEP_MS: Final = 50  # quiet this long after an event: the check runs
WATCH_TIMEOUT_MS: Final = 5_000  # the watcher thread looks at its stop flag this often
WAL_HEADER_BYTES: Final = 32  # a -wal this short holds no frame
# A PostgreSQL server is polled this often while followed (there is no file to watch).
SERVER_POLL_SECONDS: Final = 0.5
# A read on a server waits this long for a connection (a lock has no part in it).
SERVER_DEADLINE_MS: Final = 5_000

Phase = Literal["opening", "live", "paused", "snapshot", "stale", "missing"]
EventKind = Literal["opened", "changed", "unchanged", "tick", "state"]


# ------------------------------------------------------------------ clocks


class Handle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Wall time, monotonic time and timers: the one clock of a source and its views."""

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    def call_later(self, seconds: float, callback: Callable[[], None]) -> Handle: ...


class SystemClock:
    """The real clock: timers on the running event loop; ``now`` may be replaced (a
    test's fixed wall time for stable screenshots)."""

    def __init__(self, now: Callable[[], datetime] | None = None) -> None:
        self._now = now or (lambda: datetime.now().astimezone())

    def now(self) -> datetime:
        return self._now()

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    def call_later(self, seconds: float, callback: Callable[[], None]) -> Handle:
        return asyncio.get_running_loop().call_later(max(0.0, seconds), callback)


class _ManualHandle:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when told: ``advance(seconds)`` jumps the time on, then
    runs every timer that fell due, in the order they fell due (as the event loop does
    after a suspended laptop wakes: late, at the time it is now)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.start = start or datetime(2026, 1, 1, 12, 0, 0).astimezone()
        self.elapsed = 0.0
        self._timers: list[
            tuple[float, int, _ManualHandle, Callable[[], None], contextvars.Context]
        ] = []
        self._order = itertools.count()

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.elapsed)

    def monotonic(self) -> float:
        return self.elapsed

    def call_later(self, seconds: float, callback: Callable[[], None]) -> Handle:
        handle = _ManualHandle()
        due = self.elapsed + max(0.0, seconds)
        # Run in the context it was set from, as the event loop's timers are.
        context = contextvars.copy_context()
        heapq.heappush(self._timers, (due, next(self._order), handle, callback, context))
        return handle

    def pending(self) -> list[float]:
        """When the timers still set fall due (for tests)."""
        return sorted(due for due, _, handle, _, _ in self._timers if not handle.cancelled)

    def advance(self, seconds: float) -> None:
        self.elapsed += max(0.0, seconds)
        while self._timers and self._timers[0][0] <= self.elapsed:
            _, _, handle, callback, context = heapq.heappop(self._timers)
            if not handle.cancelled:
                context.run(callback)


# ------------------------------------------------------------------ status


@dataclass(frozen=True)
class LiveStatus:
    """What every view's status line says about the file."""

    phase: Phase = "opening"
    good_at: datetime | None = None  # the last good read (Stale keeps showing it)
    reason: str = ""  # why Stale or missing; empty otherwise
    generation: int = 0  # the reader's generation (0: none opened yet)
    watching: bool = False  # a file-change notification is active (else: poll only)
    snapshot: str | None = None  # why this is an immutable snapshot

    @property
    def live(self) -> bool:
        """Reads succeed: Live, Paused or a snapshot (not Stale, missing or opening)."""
        return self.phase in ("live", "paused", "snapshot")

    def good_time(self, fallback: datetime) -> str:
        """``HH:MM:SS`` of the last good read (``fallback`` before any)."""
        return (self.good_at or fallback).strftime("%H:%M:%S")


@dataclass(frozen=True)
class LiveEvent:
    kind: EventKind
    status: LiveStatus

    @property
    def reread(self) -> bool:
        """A view must read what it shows again (``opened`` or ``changed``)."""
        return self.kind in ("opened", "changed")


class Superseded(Exception):
    """A read straddled a reopen: its answer is the old file's. Drop it."""


class Subscription:
    def __init__(self, source: LiveSource, callback: Callable[[LiveEvent], object]) -> None:
        self._source = source
        self.callback = callback

    def close(self) -> None:
        self._source._subscribers.discard(self)


# ------------------------------------------------------------------ source


def _identity(path: Path) -> tuple[int, int] | None:
    from termal_tui.store.connection import file_identity

    return file_identity(path)


class LiveSource:
    """One per open database; see the module docstring for the API."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        interval: float = 8.0,
        clock: Clock | None = None,
        watch: bool = True,
        busy_timeout_ms: int = 250,
    ) -> None:
        from termal_tui.store.urls import is_postgres_url, redact

        self.url: str | None = str(path).strip() if is_postgres_url(path) else None
        self.path = Path(path).expanduser() if self.url is None else Path()
        self.target: Path | str = self.url if self.url is not None else self.path
        self.name = redact(self.url) if self.url is not None else self.path.name
        self.interval = interval
        self.clock: Clock = clock or SystemClock()
        self.busy_timeout_ms = busy_timeout_ms
        self._want_watch = watch
        self.status = LiveStatus()
        self.reader: MailboxReader | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._subscribers: set[Subscription] = set()
        self._version: int | None = None  # data_version at the last check
        self._wal: tuple[int, int] | None = None  # the -wal of the file being read
        self._check_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._timer: Handle | None = None
        self._tick: Handle | None = None
        self._retry_soon = False
        self._reconnect = False  # a server was lost: the next check connects afresh
        # Another file is at the path and the old one's connection was closed: until the
        # new one opens, each check looks for the old -wal beside it first.
        self._replaced = False
        self._told_at: float | None = None  # when views last heard "unchanged" (a server)
        self._closed = False
        self._watcher: _Watcher | None = None
        self.checks = 0  # checks run (tests count them)

    # ------------------------------------------------------------ readers

    @property
    def generation(self) -> int:
        return self.status.generation

    @property
    def board(self) -> BoardReader | None:
        return self.reader.board() if self.reader is not None else None

    @property
    def poll_seconds(self) -> float:
        """How often a followed source is polled (0: paused)."""
        if self.url is not None and self.interval > 0:
            return min(self.interval, SERVER_POLL_SECONDS)
        return self.interval

    @property
    def _retry_seconds(self) -> float:
        """How soon a busy file, or a server that cannot be reached, is tried again."""
        if self.url is not None and self.poll_seconds > 0:
            return self.poll_seconds
        return RETRY_SECONDS

    @property
    def following(self) -> bool:
        """Changes are followed (not paused, not an immutable snapshot)."""
        return self.interval > 0 and self.status.snapshot is None

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Start the loop; the first open is its first check (returns at once)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
            self.request_check()

    async def close(self) -> None:
        self._closed = True
        for handle in (self._timer, self._tick):
            if handle is not None:
                handle.cancel()
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._stack is not None:
            stack, self._stack, self.reader = self._stack, None, None
            await stack.aclose()
        self._idle.set()

    @property
    def change_mark(self) -> tuple[int, int] | None:
        """Which file (its generation) in which state (its ``data_version`` at the last
        check): equal marks, nothing committed in between. None: not checked yet."""
        if self._version is None:
            return None
        return (self.generation, self._version)

    def subscribe(self, callback: Callable[[LiveEvent], object]) -> Subscription:
        subscription = Subscription(self, callback)
        self._subscribers.add(subscription)
        return subscription

    def request_check(self) -> None:
        """Check soon (from the loop's thread)."""
        if self._closed:
            return
        self._idle.clear()
        self._wake.set()

    async def settled(self) -> None:
        """Every requested check has run (tests: after ``clock.advance``)."""
        if self._task is None:
            return
        await self._idle.wait()

    # ------------------------------------------------------------ loop

    async def _run(self) -> None:
        while not self._closed:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.check()
            except Exception as error:  # never let the loop die: say it, try again
                self._set(phase="stale", reason=f"unexpected error: {error}")
                self._emit("state")
            self._schedule()
            if not self._wake.is_set():
                self._idle.set()

    def _schedule(self) -> None:
        """The next poll (or retry), and the tick that moves time on without a read."""
        if self._closed:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        delay: float | None = None
        if (self.following or self.reader is None) and self.interval > 0:
            # Followed, or not open yet (missing, refused): looked at every interval;
            # a locked one every RETRY_SECONDS, even when paused; a server that cannot
            # be reached at each poll.
            delay = self.poll_seconds if self.reader is not None else self.interval
        if self._retry_soon:
            soon = self._retry_seconds
            delay = soon if delay is None else min(delay, soon)
        if delay is not None:
            self._timer = self.clock.call_later(delay, self.request_check)
        self._start_watcher()
        self._schedule_tick()

    def _schedule_tick(self) -> None:
        """Not following (paused, a snapshot, nothing open): a tick every TICK_SECONDS
        moves time on in the views (ages, the status line) without a read."""
        quiet = not (self.following and self.reader is not None)
        if self._tick is None and quiet and not self._closed:
            self._tick = self.clock.call_later(TICK_SECONDS, self._ticked)
        elif self._tick is not None and not quiet:
            self._tick.cancel()
            self._tick = None

    def _ticked(self) -> None:
        self._tick = None
        if self._closed:
            return
        self._emit("tick")
        # The next one counted from when this one was handled: a clock moved on by days
        # at once (a suspended laptop, a test) gives one tick, not thousands.
        asyncio.get_running_loop().call_soon(self._schedule_tick)

    def _start_watcher(self) -> None:
        want = self._want_watch and self.following and self._watcher is None and self.url is None
        if not want:
            return
        loop = asyncio.get_running_loop()

        def notify() -> None:  # from the watcher's thread
            loop.call_soon_threadsafe(self._file_event)

        self._watcher = _Watcher(self.path, notify)
        self._watcher.start()

    def _file_event(self) -> None:
        if not self.status.watching and self._watcher is not None and self._watcher.active:
            self._set(watching=True)
        self.request_check()

    # ------------------------------------------------------------ the check

    async def check(self) -> None:
        """One cycle: open if not open; the file's identity; data_version; tell views."""
        async with self._check_lock:
            if self._closed:
                return
            self.checks += 1
            self._retry_soon = False
            if self._watcher is not None and self._watcher.active != self.status.watching:
                self._set(watching=self._watcher.active)
            reader = self.reader
            if reader is None:
                if self._replaced:
                    blend = self._old_wal_beside_new_file()
                    if blend:
                        self._stale(blend)
                        return
                await self._open(replacing=self._replaced)
                return
            if self._reconnect:
                await self._open(replacing=True)
                return
            from termal_tui.store.connection import FILE_GONE, FILE_SWAPPED

            state = reader.file_state()
            if state == FILE_GONE:
                self._stale(
                    f"the database file {self.path.name} is gone (moved away or unlinked); "
                    "waiting for it to come back"
                )
                return
            if state == FILE_SWAPPED:
                # The old file's connection goes first: it keeps the old file and its
                # -wal alive (the writer closing last could not remove that -wal, and
                # "stop the processes that still have the old file open" meant us too).
                self._replaced = True
                await self._drop_reader()
                blend = self._old_wal_beside_new_file()
                if blend:
                    self._stale(blend)
                    return
                await self._open(replacing=True)
                return
            try:
                version = await reader.data_version()
            except StoreError as error:
                self._failed(error)
                return
            if self.url is None:
                self._wal = _identity(Path(f"{self.path}-wal"))
            was_live = self.status.live
            changed = version != self._version or not was_live
            self._version = version
            self._good()
            if changed or self._time_moved():
                self._emit("changed" if changed else "unchanged")

    def _old_wal_beside_new_file(self) -> str:
        """A sentence when the main file was replaced but the ``-wal`` beside it is still
        the old file's (same inode, with frames): SQLite would apply the old file's
        frames to the new file and show a blend of both."""
        wal = Path(f"{self.path}-wal")
        if self._wal is None or _identity(wal) != self._wal:
            return ""
        try:
            size = wal.stat().st_size
        except OSError:
            return ""
        if size <= WAL_HEADER_BYTES:
            return ""
        return (
            f"another file is at {self.path.name} now, but {wal.name} beside it is still the "
            "old file's: read together they would show a mix of both files, so neither is "
            "shown; waiting until the old -wal is gone (stop the processes that still have "
            "the old file open, or move the -wal away with it)"
        )

    async def _open(self, *, replacing: bool = False) -> None:
        from termal_tui.store.reader import open_reader

        if self.url is None and not os.path.lexists(self.path):
            phase: Phase = "stale" if replacing else "missing"
            directory = "" if self.path.parent.is_dir() else " (nor does its folder)"
            self._set(
                phase=phase,
                reason=f"{self.path} does not exist yet{directory}; waiting for it to appear",
            )
            self._emit("state")
            return
        stack = contextlib.AsyncExitStack()
        deadline = self.busy_timeout_ms if self.url is None else SERVER_DEADLINE_MS
        try:
            reader = await stack.enter_async_context(
                open_reader(self.target, busy_timeout_ms=deadline)
            )
        except RetryableError as error:
            await stack.aclose()
            self._retry_soon = True
            if self.url is not None:
                self._stale(self._unreachable(error))
            else:
                self._stale(f"{error} — retrying every {RETRY_SECONDS:g} s")
            return
        except StoreError as error:
            await stack.aclose()
            text = str(error)
            if replacing and self.url is None:
                text = (
                    f"another file is at {self.path.name} now and it cannot be opened yet: {text}"
                )
            self._stale(text)
            return
        old, self._stack, self.reader = self._stack, stack, reader
        self._reconnect = self._replaced = False
        # Read with the file's checks when the reader opened it (one thread hop less).
        self._version = getattr(reader, "opened_version", None)
        if self._version is None:
            with contextlib.suppress(StoreError):  # else the next check reads it
                self._version = await reader.data_version()
        if self.url is None:
            self._wal = _identity(Path(f"{self.path}-wal"))
        self._set(
            phase="snapshot" if reader.snapshot else ("live" if self.interval > 0 else "paused"),
            reason="",
            good_at=self.clock.now(),
            generation=self.status.generation + 1,
            snapshot=reader.snapshot,
        )
        self._emit("opened")
        if old is not None:
            await old.aclose()  # reads still running on it fail on their own (Superseded)

    async def _drop_reader(self) -> None:
        """Close the connection to the file being read (reads running on it fail on
        their own and are superseded by the next file)."""
        stack, self._stack, self.reader = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    # ------------------------------------------------------------ reads

    async def read(self, work: Callable[[MailboxReader], Awaitable[T]]) -> T:
        reader = self.reader
        if reader is None:
            raise StorageError(self.status.reason or "the database is not open yet")
        return await self._read(reader, work)

    async def read_board(self, work: Callable[[BoardReader], Awaitable[T]]) -> T:
        reader = self.reader
        if reader is None:
            raise StorageError(self.status.reason or "the database is not open yet")
        return await self._read(reader.board(), work)

    async def _read(self, reader: object, work: Callable[..., Awaitable[T]]) -> T:
        generation = self.status.generation
        opened = self.reader  # dropped meanwhile (another file at the path): superseded

        def superseded() -> bool:
            return generation != self.status.generation or self.reader is not opened

        try:
            result = await work(reader)
        except StoreError as error:
            if superseded():
                raise Superseded() from error
            if not isinstance(error, NotFoundError):  # the file is fine: the view's own
                self._failed(error)
            raise
        if superseded():
            raise Superseded()
        if not self.status.live:
            self._good()
            self._emit("state")
        else:
            self._good()
        return result

    # ------------------------------------------------------------ state

    def _failed(self, error: StoreError) -> None:
        """A read failed: Stale with the reason; a locked file is tried again soon, a
        file that moved or was replaced is looked at now."""
        if isinstance(error, RetryableError):
            self._retry_soon = True
            if self.url is not None:  # the server went away (or is busy): connect again
                self._reconnect = True
                self._stale(self._unreachable(error))
                if self._task is not None and self.poll_seconds <= 0 and self._timer is None:
                    self._timer = self.clock.call_later(self._retry_seconds, self.request_check)
                return
            sooner = self.interval <= 0 or self.interval > RETRY_SECONDS
            if self._task is not None and sooner:  # else the next poll comes sooner
                if self._timer is not None:
                    self._timer.cancel()
                self._timer = self.clock.call_later(RETRY_SECONDS, self.request_check)
        elif self.reader is not None and self.reader.file_state() is not None:
            self.request_check()
        self._stale(str(error))

    def _time_moved(self) -> bool:
        """Whether an ``unchanged`` is worth telling the views (their ages and the time
        of the status line): at every check of a file, at most once an ``interval`` for
        a server polled every :data:`SERVER_POLL_SECONDS` (its views would redraw twice a
        second for nothing)."""
        if self.url is None:
            return True
        now = self.clock.monotonic()
        if self._told_at is not None and now - self._told_at < self.interval:
            return False
        self._told_at = now
        return True

    def _unreachable(self, error: StoreError) -> str:
        """The server's Stale sentence (the driver's reason when it gave one)."""
        import re

        found = re.search(r"\(([^()]*)\)$", str(error))
        detail = f" ({found.group(1)})" if found else ""
        return (
            f"PostgreSQL at {self.name} cannot be reached or is busy{detail}; "
            f"trying again every {self._retry_seconds:g} s"
        )

    def _stale(self, reason: str) -> None:
        if self.status.phase != "stale" or self.status.reason != reason:
            self._set(phase="stale", reason=reason)
            self._emit("state")

    def _good(self) -> None:
        phase: Phase = (
            "snapshot" if self.status.snapshot else ("live" if self.interval > 0 else "paused")
        )
        self._set(phase=phase, reason="", good_at=self.clock.now())

    def _set(self, **changes: object) -> None:
        self.status = replace(self.status, **changes)  # type: ignore[arg-type]

    def _emit(self, kind: EventKind) -> None:
        if self._closed:  # a closing source says nothing: its subscribers are going away
            return
        event = LiveEvent(kind, self.status)
        for subscription in list(self._subscribers):
            subscription.callback(event)


# ------------------------------------------------------------------ watcher


class _Watcher:
    """watchfiles (inotify) on the database's directory in a thread of its own; calls
    ``notify`` (thread-safe) when the file, its -wal or its -shm changes. ``active``
    is False when notifications could not be set up (the poll carries on alone)."""

    def __init__(self, path: Path, notify: Callable[[], None]) -> None:
        self.path = path
        self.notify = notify
        self.active = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        names = {path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"}
        self._names = frozenset(names)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="termal-tui-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        directory = self.path.parent
        while not self._stop.is_set():
            if not directory.is_dir():
                # No folder yet: nothing to watch; the poll looks, and so do we, now and then.
                if self._stop.wait(WATCH_TIMEOUT_MS / 1000):
                    return
                continue
            try:
                from watchfiles._rust_notify import RustNotify

                notify = RustNotify([os.fspath(directory)], False, False, 300, False, True)
            except Exception:
                self.active = False
                return  # no notifications here (limits, platform): the poll alone
            self.active = True
            self.notify()  # watching from now on: a check catches what came before
            try:
                with notify:
                    while not self._stop.is_set():
                        changes = notify.watch(
                            WATCH_DEBOUNCE_MS, WATCH_STEP_MS, WATCH_TIMEOUT_MS, self._stop
                        )
                        if changes == "stop":
                            return
                        if isinstance(changes, set) and any(
                            Path(changed).name in self._names for _, changed in changes
                        ):
                            self.notify()
                        if not directory.is_dir():
                            break  # the folder went: watch it again when it is back
            except Exception:
                self.active = False
                return
            self.active = False


__all__ = [
    "RETRY_SECONDS",
    "TICK_SECONDS",
    "Clock",
    "LiveEvent",
    "LiveSource",
    "LiveStatus",
    "ManualClock",
    "Subscription",
    "Superseded",
    "SystemClock",
]
