"""The session registry: the peers that may own mailboxes (TermAl's local root sessions).

Beside a SQLite coordination file it lives in its own SQLite file, so
``coordination.sqlite`` stays exactly TermAl's format; on a ``postgresql://`` database it
lives in that database (its own tables), so every hub on it shares one registry: a
session registered or a token issued through one hub is known to all. Besides names and ids it
keeps what the wake mechanism needs to report receipts honestly: whether a
session is in a turn (hooks record it), which processes listen on its channel (and
which one holds it: the newest live one), and which mailboxes have a wake pushed and
not yet read.

This is the API the rest of the code uses; every SQL statement is the store's
(``store/registry/``, run by ``store/postgres/registry.py`` on PostgreSQL). Every method
is one short transaction (WAL, so readers never wait), so any number of processes share
the file or the database.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from termal_tui.core.formats import format_timestamp, utc_now_ns
from termal_tui.core.names import name_key, name_skeleton, validate_name
from termal_tui.core.sanitize import visible_line
from termal_tui.store.errors import ConflictError, NotFoundError
from termal_tui.store.registry import projects as store_projects
from termal_tui.store.registry import sessions as store_sessions
from termal_tui.store.registry import tokens as store_tokens
from termal_tui.store.registry import wakes as store_wakes
from termal_tui.store.registry.cache import (
    BY_ID,
    BY_KEY,
    BY_TOKEN,
    MISSING,
    NO_MARKERS,
    IdentityCache,
)
from termal_tui.store.registry.database import RegistryDatabase, WouldWait
from termal_tui.store.registry.schema import REGISTRY_FILE as REGISTRY_FILE
from termal_tui.store.registry.schema import REGISTRY_VERSION as REGISTRY_VERSION
from termal_tui.store.registry.tokens import token_hash as token_hash
from termal_tui.store.urls import is_postgres_url, redact
from termal_tui.views.notifiers import (
    CHANNEL_STALE_SECONDS,
    Listener,
    channel_holder,
    registry_path_for,
    this_host,
)

if TYPE_CHECKING:
    from termal_tui.store.postgres.registry import PgRegistryDatabase

T = TypeVar("T")

TOKEN_PREFIX = "ttk_"
# A listener that has not beaten for this long is forgotten when another registers.
_FORGET_LISTENERS_AFTER = 24 * 3600.0


class Session(NamedTuple):
    """One registered session (a NamedTuple: cheap to import, frozen, built from a row)."""

    id: str
    name: str
    agent: str | None
    workdir: str | None
    created_at: str
    removed_at: str | None
    turn_started_at: str | None
    channel: Listener | None = None  # who held its channel when it was read
    # False: from a hub's identity cache (``Registry.known``): its turn and channel were
    # not read (they say idle and not connected); read them with ``Registry.get``.
    fresh: bool = True

    @property
    def live(self) -> bool:
        return self.removed_at is None

    @property
    def in_turn(self) -> bool:
        return self.turn_started_at is not None

    @property
    def channel_pid(self) -> int | None:
        return None if self.channel is None else self.channel.pid

    @property
    def channel_seen_at(self) -> float | None:
        return None if self.channel is None else self.channel.seen_at

    def channel_connected(self, now: float | None = None) -> bool:
        if self.channel is None:
            return False
        return self.channel.alive(time.time() if now is None else now)

    def to_wire(self) -> dict[str, Any]:
        """The session as ``termal_list_sessions`` lists it (TermAl's fields)."""
        return {
            "sessionId": self.id,
            "name": self.name,
            "agent": self.agent,
            "status": self.status,
            "workdir": self.workdir,
            "preview": None,
        }

    @property
    def status(self) -> str:
        if self.removed_at is not None:
            return "removed"
        if self.in_turn:
            return "active"
        return "idle"


class RegisteredProject(NamedTuple):
    """A project minted by termal-tui for a session outside TermAl's projects."""

    id: str
    name: str
    root_path: str
    created_at: str


class Registry:
    """Sessions by id and name. Construct with the registry file's path, or with a
    ``postgresql://`` URL (the registry in that database); ``clock`` is the wall clock
    heartbeats are stamped and judged with (tests drive it).

    ``path`` is what names this registry: the file, or the URL (as given: it is passed
    to the driver; show it through :attr:`shown`)."""

    path: Path | str

    def __init__(
        self,
        path: Path | str,
        busy_timeout: float = 5.0,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.clock = clock
        self._db: RegistryDatabase | PgRegistryDatabase
        if isinstance(path, str) and is_postgres_url(path):
            from termal_tui.store.postgres import require_driver

            require_driver()
            from termal_tui.store.postgres.registry import PgRegistryDatabase

            self.path = path.strip()
            self.shown = redact(self.path)
            self._db = PgRegistryDatabase(self.path, busy_timeout)
        else:
            self.path = Path(path).expanduser()
            self.shown = str(self.path)
            self._db = RegistryDatabase(self.path, busy_timeout)
        self._here = threading.local()  # ``at_once`` is on for this thread's reads
        # What a hub on PostgreSQL remembers between calls (``enable_cache``); None: every
        # read goes to the database (a file's reads are answered at once anyway).
        self.cache: IdentityCache | None = None

    def enable_cache(self) -> IdentityCache:
        """Remember identities between calls (``store/registry/cache.py``): the caller
        feeds the cache the registry's change notifications (``RegistryFeed``); until it
        listens, the cache answers nothing."""
        if self.cache is None:
            self.cache = IdentityCache()
        return self.cache

    def _connect(
        self, write: bool, *, exclusive: bool = False, announce: bool = False
    ) -> AbstractContextManager[Any]:
        if getattr(self._here, "at_once", False):
            if not isinstance(self._db, RegistryDatabase):
                raise WouldWait  # a server's answer is a network round trip: a worker's
            return self._db.at_once(write)
        return self._db.transaction(write, exclusive=exclusive, announce=announce)

    def at_once(self, read: Callable[[], T]) -> T:
        """``read()`` — calls of this registry's reading methods — answered at once on the
        calling thread, or :class:`WouldWait` if any of its reads would have to wait (a
        lock, the file not opened yet by an ordinary call, a PostgreSQL server): then ask
        again where waiting is allowed. For an event loop, where a worker thread's round
        trip costs more than a registry read (see ``store/registry/database.py``)."""
        before = getattr(self._here, "at_once", False)
        self._here.at_once = True
        try:
            return read()
        finally:
            self._here.at_once = before

    @classmethod
    def beside(
        cls, db: Path | str, busy_timeout: float = 5.0, *, clock: Callable[[], float] = time.time
    ) -> Registry:
        """The registry of a coordination database: the file beside it, or the same
        PostgreSQL database."""
        if isinstance(db, str) and is_postgres_url(db):
            return cls(db, busy_timeout, clock=clock)
        return cls(registry_path_for(Path(db)), busy_timeout, clock=clock)

    @property
    def on_postgres(self) -> bool:
        return isinstance(self.path, str)

    def check(self, *, prepare: bool = False) -> bool:
        """The one check every file we write gets (``sqlite.check_before_write``), before
        anything opens this one: not a symlink, a regular SQLite file that is a session
        registry (or empty). ``prepare`` also creates its directory. Returns whether the
        file exists."""
        return self._db.check(prepare=prepare)

    def close(self) -> None:
        self._db.close()

    def _sessions(self, db: Any, rows: list[tuple[object, ...]]) -> list[Session]:
        """Rows made sessions, each with the listener holding its channel, if any."""
        if not rows:
            return []
        now = self.clock()
        by_session: dict[str, list[Listener]] = {}
        only = str(rows[0][0]) if len(rows) == 1 else None  # one session: its listeners
        for row in store_wakes.listeners(db, only):
            by_session.setdefault(row[1], []).append(Listener(*row))
        return [
            Session(*row, channel_holder(by_session.get(str(row[0]), ()), now))  # type: ignore[arg-type,call-arg]
            for row in rows
        ]

    def _one(self, db: Any, row: tuple[object, ...] | None) -> Session | None:
        return None if row is None else self._sessions(db, [row])[0]

    # ------------------------------------------------------------ sessions

    def add(self, raw_name: str, agent: str | None = None, workdir: str | None = None) -> Session:
        """Register a new session; its id is minted once and kept across restarts."""
        name = validate_name(raw_name)
        with self._connect(write=True, exclusive=True, announce=True) as db:
            clash = store_sessions.by_key_live(db, name_key(name))
            if clash is None:  # a live name that reads the same (one registered earlier)
                skeleton = name_skeleton(name)
                clash = next(
                    (
                        row
                        for row in store_sessions.live_names(db)
                        if name_skeleton(row[1]) == skeleton
                    ),
                    None,
                )
            if clash is not None:
                other = str(clash[1])
                shown = visible_line(other, 80)
                if name.casefold() == other.casefold():
                    why = "names are unique case-insensitively"
                else:
                    why = "names that read alike are one name"
                raise ConflictError(f"a session named `{shown}` already exists ({clash[0]}); {why}")
            session_id = "session-" + os.urandom(6).hex()
            store_sessions.insert(db, session_id, name, name_key(name), agent, workdir, _now())
            found = self._one(db, store_sessions.get(db, session_id))
        assert found is not None
        return found

    def adopt(self, session_id: str, raw_name: str) -> Session:
        """Register a session TermAl's file already knows by ``session_id`` under its
        name (the demo's sessions, so `send --db DEMO --as planner` writes into what the
        viewer shows). An id already registered is returned as it is."""
        name = validate_name(raw_name)
        with self._connect(write=True, exclusive=True, announce=True) as db:
            known = self._one(db, store_sessions.get(db, session_id))
            if known is not None:
                return known
            clash = store_sessions.by_key_live(db, name_key(name))
            if clash is not None:
                raise ConflictError(
                    f"a session named `{visible_line(str(clash[1]), 80)}` already exists "
                    f"({clash[0]})"
                )
            store_sessions.insert(db, session_id, name, name_key(name), None, None, _now())
            found = self._one(db, store_sessions.get(db, session_id))
        assert found is not None
        return found

    def ensure(
        self, raw_name: str, agent: str | None = None, workdir: str | None = None
    ) -> Session:
        """The live session with this name (or exact id), registered first if there is none."""
        if raw_name.strip().startswith("session-"):
            return self.resolve_own(raw_name)
        found = self.find_live_by_name(raw_name)
        if found:
            return found[0]
        try:
            return self.add(raw_name, agent, workdir)
        except ConflictError:
            again = self.find_live_by_name(raw_name)
            if again:  # registered by another process meanwhile
                return again[0]
            raise  # a live name that reads like this one (Ivan beside lvan): said as is

    def sessions(self, include_removed: bool = False) -> list[Session]:
        with self._connect(write=False) as db:
            return self._sessions(db, store_sessions.all_sessions(db, include_removed))

    def get(self, session_id: str) -> Session | None:
        with self._connect(write=False) as db:
            return self._one(db, store_sessions.get(db, session_id))

    def by_name(self, name: str) -> list[Session]:
        """Every session with this name (case-insensitive), live and removed, oldest first:
        one query, for callers that tell the cases apart."""
        with self._connect(write=False) as db:
            return self._sessions(db, store_sessions.by_key(db, name_key(name.strip())))

    def find_live_by_name(self, name: str) -> list[Session]:
        return [s for s in self.by_name(name) if s.live]

    def find_removed_by_name(self, name: str) -> list[Session]:
        """Removed sessions with this name, the most recently removed first."""
        removed = [s for s in self.by_name(name) if not s.live]
        return sorted(removed, key=lambda s: s.removed_at or "", reverse=True)

    def resolve_own(self, reference: str) -> Session:
        """A live session by exact id or case-insensitive name (for --as / --session)."""
        reference = reference.strip()
        if reference.startswith("session-"):
            found = self.get(reference)
            if found is None or not found.live:
                raise NotFoundError(
                    f"no registered session has id `{visible_line(reference, 64)}`; "
                    f"{self.known_sessions_sentence()}"
                )
            return found
        matches = self.by_name(reference)
        live = [s for s in matches if s.live]
        if live:
            return live[0]
        shown = visible_line(reference, 64)
        if matches:
            gone = max(matches, key=lambda s: s.removed_at or "")
            why = f"session `{shown}` was removed at {gone.removed_at} (it was {gone.id})"
        else:
            why = f"no registered session is named `{shown}`"
        raise NotFoundError(
            f"{why}; {self.known_sessions_sentence()}; register it with "
            f"`termal-tui session add {shown}` (or pass --register)"
        )

    def known_sessions_sentence(self, limit: int = 12) -> str:
        """``known sessions: a, b, c`` (or that there are none), for error messages."""
        names = [visible_line(s.name, 40) for s in self.sessions()]
        if not names:
            return "no sessions are registered yet"
        more = f" and {len(names) - limit} more" if len(names) > limit else ""
        return "known sessions: " + ", ".join(names[:limit]) + more

    def remove(self, reference: str) -> Session:
        """Mark a session removed (its mailboxes' participation is ended by the caller)."""
        target = self.resolve_own(reference)
        with self._connect(write=True, announce=True) as db:
            store_sessions.mark_removed(db, target.id, _now())
            found = self._one(db, store_sessions.get(db, target.id))
        assert found is not None
        return found

    # ------------------------------------------------------------ turns

    def set_turn(self, session_id: str, active: bool) -> None:
        with self._connect(write=True) as db:
            store_sessions.set_turn(db, session_id, _now() if active else None)

    # ------------------------------------------------------------ channel listeners
    #
    # Every process that takes a session's wake-ups registers a listener and beats its
    # heartbeat; the newest live one holds the channel (``notifiers.channel_holder``) and
    # is the only one that pushes. A listener is released when its stream closes (or
    # its process ends); one whose process died without a word stops counting when its
    # heartbeat goes stale, or at once when its pid is gone.

    def register_listener(
        self,
        session_id: str,
        *,
        kind: str = "local",
        pid: int | None = None,
        host: str | None = None,
        peer: str | None = None,
    ) -> Listener:
        import socket

        now = self.clock()
        listener = Listener(
            f"listener-{os.urandom(6).hex()}",
            session_id,
            kind,
            os.getpid() if pid is None else pid,
            socket.gethostname() if host is None else host,
            peer,
            now,
            now,
            this_host(),  # where os.getpid() (or ``pid``) names that process
        )
        with self._connect(write=True) as db:
            store_wakes.drop_stale(db, now - _FORGET_LISTENERS_AFTER)
            store_wakes.add_listener(db, tuple(listener))  # type: ignore[arg-type]
        return listener

    def beat_listener(self, listener_id: str) -> bool:
        """A listener is still there; False when its row is gone (it was released)."""
        with self._connect(write=True) as db:
            return store_wakes.beat(db, listener_id, self.clock())

    def release_listener(self, listener_id: str) -> None:
        """The listener is gone (its stream closed, its process ended). If it held its
        session's channel, what it was woken for goes with it: a send before the next
        holder takes over (its boot pass offers every unread mailbox again) is not told it
        rides a wake pushed to a listener that is gone, and waits for the new one."""
        gone = next((found for found in self.listeners() if found.id == listener_id), None)
        holder = None if gone is None else self.channel_holder(gone.session_id)
        with self._connect(write=True) as db:
            store_wakes.drop_listener(db, listener_id)
            if gone is not None and holder is not None and holder.id == listener_id:
                store_wakes.clear(db, gone.session_id)

    def listeners(self, session_id: str | None = None) -> list[Listener]:
        """Listeners (of one session, or all), newest first, live or not."""
        with self._connect(write=False) as db:
            return [Listener(*row) for row in store_wakes.listeners(db, session_id)]

    def channel_holder(self, session_id: str) -> Listener | None:
        """The listener holding the session's channel now (the newest live one)."""
        return channel_holder(self.listeners(session_id), self.clock())

    def heartbeat(self, session_id: str, pid: int | None) -> None:
        """The old one-channel-per-session call: ``pid`` listens locally (``None``: every
        listener this process registered for the session goes away)."""
        if pid is None:
            with self._connect(write=True) as db:
                store_wakes.drop_listeners_of(db, session_id, os.getpid())
            return
        with self._connect(write=True) as db:
            for row in store_wakes.listeners(db, session_id):
                if row[3] == pid and row[2] == "local":
                    store_wakes.beat(db, row[0], self.clock())
                    return
        self.register_listener(session_id, pid=pid)

    # ------------------------------------------------------------ wake marks
    #
    # A channel listener pushes at most one wake per mailbox until the agent engages
    # with that mailbox (reads or acknowledges it). ``seen_through`` is the highest
    # sequence the agent has been woken for or has read: a new wake is pushed only
    # for a never-woken row above it.

    def _stamp(self, ago: float = 0.0) -> str:
        """Now (less ``ago`` seconds) on this registry's clock, as a wake mark is stamped:
        pushed, engaged and re-offered wakes are timed on the clock heartbeats are (tests
        drive it); on the default wall clock, exactly ``utc_now_ns``."""
        now_ns = utc_now_ns() if self.clock is time.time else round(self.clock() * 1e9)
        return format_timestamp(now_ns - int(ago * 1e9))

    def wake_marks(self, session_id: str) -> dict[str, tuple[bool, int]]:
        """mailbox id -> (a wake is pending, seen through)."""
        with self._connect(write=False) as db:
            rows = store_wakes.marks(db, session_id)
        return {row[0]: (bool(row[1]), int(row[2])) for row in rows}

    def has_pending_wake(self, session_id: str, mailbox_id: str, before: int) -> bool:
        """A pushed wake the agent has not engaged with covers only rows below ``before``:
        a message at ``before`` rides it and is not woken on its own. A pending wake that
        already covers ``before`` (its channel server was quicker than the sender's check)
        is that message's own wake, so it does not count."""
        with self._connect(write=False) as db:
            return store_wakes.has_pending(db, session_id, mailbox_id, before)

    def mark_wake_pushed(self, session_id: str, mailbox_id: str, through: int) -> None:
        with self._connect(write=True) as db:
            store_wakes.mark(db, session_id, mailbox_id, 1, through, self._stamp())

    def mark_engaged(self, session_id: str, mailbox_id: str, seen_through: int) -> None:
        """The agent read or acknowledged the mailbox: its pending wake was consumed."""
        with self._connect(write=True) as db:
            store_wakes.mark(db, session_id, mailbox_id, 0, seen_through, self._stamp())

    def clear_wake_marks(self, session_id: str) -> None:
        """A new agent connection remembers nothing it was woken for."""
        with self._connect(write=True) as db:
            store_wakes.clear(db, session_id)

    def ignored_wakes(self, session_id: str, older_than: float) -> list[tuple[str, int]]:
        """Mailboxes whose pushed wake the agent has not engaged with for ``older_than``
        seconds, and not re-offered yet at that point: ``(mailbox_id, seen_through)``."""
        cutoff = self._stamp(ago=older_than)
        with self._connect(write=False) as db:
            return store_wakes.ignored(db, session_id, cutoff)

    def mark_reoffered(self, session_id: str, mailbox_id: str, through: int) -> None:
        with self._connect(write=True) as db:
            store_wakes.mark_reoffered(db, session_id, mailbox_id, through, self._stamp())

    def hook_ran(self, session_id: str) -> None:
        """A hook of this session's agent ran: it has a notifier (``notifiers.py``)."""
        with self._connect(write=True) as db:
            store_wakes.hook_ran(db, session_id, time.time())

    # ------------------------------------------------------------ bearer tokens (the hub)

    def issue_token(self, reference: str) -> tuple[Session, str]:
        """A new bearer token for a live session (replacing its previous one); only its
        hash is stored. Returns the session and the token, shown once."""
        import secrets

        me = self.resolve_own(reference)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self._connect(write=True, announce=True) as db:
            store_tokens.issue(db, me.id, token, _now())
        return me, token

    def revoke_token(self, reference: str) -> tuple[Session, bool]:
        """End a session's token; returns the session and whether it had a live one."""
        me = self.resolve_own(reference)
        with self._connect(write=True, announce=True) as db:
            ended = store_tokens.revoke(db, me.id, _now())
        return me, ended

    def session_for_token(self, token: str) -> Session | None:
        """The live session a presented token belongs to (None: unknown, revoked, or its
        session was removed)."""
        with self._connect(write=False) as db:
            return self._one(db, store_sessions.by_token_hash(db, token_hash(token)))

    # ------------------------------------------------------------ remembered identities
    #
    # What a call checks again and again (whose token this is, whether a session exists
    # and is live, its name): from the cache when this registry keeps one, else read
    # as above. A session from the cache is ``fresh=False``: its turn and channel were
    # not read.

    def known(self, session_id: str) -> Session | None:
        """As :meth:`get`, possibly from the cache (then without turn and channel)."""
        if self.cache is None:
            return self.get(session_id)

        def read(db: Any) -> Session | None:
            row = store_sessions.get(db, session_id)
            return None if row is None else _identity(row)

        # Unknown ids are not remembered (any caller may name any id).
        return self._remembered(BY_ID, session_id, read, keep=lambda found: found is not None)

    def known_by_name(self, name: str) -> list[Session]:
        """As :meth:`by_name`, possibly from the cache (then without turn and channel)."""
        if self.cache is None:
            return self.by_name(name)
        key = name_key(name.strip())

        def read(db: Any) -> list[Session]:
            return [_identity(row) for row in store_sessions.by_key(db, key)]

        return self._remembered(BY_KEY, key, read, keep=bool)

    def known_token(self, token: str) -> Session | None:
        """As :meth:`session_for_token`, possibly from the cache (then without turn and
        channel). Only a live token's session is remembered: a revoked or unknown token
        is read again each time it is presented."""
        if self.cache is None:
            return self.session_for_token(token)
        digest = token_hash(token)

        def read(db: Any) -> Session | None:
            row = store_sessions.by_token_hash(db, digest)
            return None if row is None else _identity(row)

        return self._remembered(BY_TOKEN, digest, read, keep=lambda found: found is not None)

    def _remembered(
        self, table: str, key: Hashable, read: Callable[[Any], T], keep: Callable[[T], bool]
    ) -> T:
        """The cache's answer for ``key``, else ``read(db)`` — remembered when ``keep``
        says so and no change was announced while it was read."""
        cache = self.cache
        assert cache is not None
        found = cache.get(table, key)
        if found is not MISSING:
            return found  # type: ignore[no-any-return]
        generation = cache.generation()
        with self._connect(write=False) as db:
            value = read(db)
        if keep(value):
            cache.put(table, key, value, generation)
        return value

    def presence(self, session: Session) -> Session | None:
        """``session`` with its turn and channel as they are now (read again unless it
        was just read); None if it is no longer registered."""
        if session.fresh:
            return session
        return self.get(session.id)

    def markers_clear(self, session_id: str) -> bool:
        """Whether this session is remembered to have no ``left_at`` marker (so there is
        nothing to reactivate); always False without a cache."""
        cache = self.cache
        return cache is not None and cache.get(NO_MARKERS, session_id) is True

    def markers_generation(self) -> int | None:
        """Taken before reading a session's markers (see :meth:`remember_markers_clear`)."""
        return None if self.cache is None else self.cache.generation()

    def remember_markers_clear(self, session_id: str, generation: int | None) -> None:
        """The session had no ``left_at`` marker when read after ``generation`` was taken
        (every write of markers is announced: the cache is emptied when one is set)."""
        if self.cache is not None:
            self.cache.put(NO_MARKERS, session_id, True, generation)

    def token_holders(self) -> set[str]:
        """Ids of the sessions with a live token."""
        with self._connect(write=False) as db:
            return store_tokens.holders(db)

    # ------------------------------------------------------------ projects (board scopes)
    #
    # Projects minted for sessions outside TermAl's own projects (``agents/projects.py``
    # decides which project a session is in; TermAl's are read from its termal.sqlite
    # and never stored here), and the project a session was bound to by ``--project``.

    def registered_projects(self) -> list[RegisteredProject]:
        with self._connect(write=False) as db:
            return [RegisteredProject(*row) for row in store_projects.registered(db)]

    def registered_project(self, project_id: str) -> RegisteredProject | None:
        with self._connect(write=False) as db:
            row = store_projects.registered_one(db, project_id)
        return None if row is None else RegisteredProject(*row)

    def project_for_root(self, root_path: str, name: str) -> RegisteredProject:
        """The project whose root is ``root_path``, minted once (``project-<uuid>``, as
        TermAl mints its own) with ``name`` de-duplicated as TermAl does (``name 2``...)."""
        with self._connect(write=True, exclusive=True) as db:
            return RegisteredProject(*store_projects.for_root(db, root_path, name, _now()))

    def bound_project(self, session_id: str) -> str | None:
        """The project id a session was bound to with ``--project``, if any."""
        with self._connect(write=False) as db:
            return store_projects.bound(db, session_id)

    def bind_project(self, session_id: str, project_id: str) -> None:
        with self._connect(write=True) as db:
            store_projects.bind(db, session_id, project_id, _now())


def _now() -> str:
    return format_timestamp(utc_now_ns())


def _identity(row: tuple[object, ...]) -> Session:
    """A session row as the cache keeps it: no turn, no channel, not fresh."""
    return Session(*row[:6], None, None, False)  # type: ignore[arg-type,call-arg]


__all__ = [
    "CHANNEL_STALE_SECONDS",
    "REGISTRY_FILE",
    "REGISTRY_VERSION",
    "Listener",
    "RegisteredProject",
    "Registry",
    "Session",
    "WouldWait",
    "name_key",
    "name_skeleton",
    "token_hash",
    "validate_name",
]
