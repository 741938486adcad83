"""The session registry: the local peers that may own mailboxes (TermAl's local root sessions).

It lives in its own SQLite file beside the coordination database, so
``coordination.sqlite`` stays exactly TermAl's format. Besides names and ids it
keeps what the wake mechanism needs to report receipts honestly: whether a
session is in a turn (hooks record it), whether a channel-capable MCP server is
connected for it, and which mailboxes have a wake pushed and not yet read.

Every method is one short transaction (WAL, so readers never wait); one long-lived
connection per Registry, with no transaction held between calls, so any number of
processes share the file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from termal_tui.formats import format_timestamp, utc_now_ns
from termal_tui.names import name_key, name_skeleton, validate_name
from termal_tui.notifiers import channel_alive, registry_path_for
from termal_tui.sanitize import visible_line
from termal_tui.store.errors import (
    ConflictError,
    NotFoundError,
    RetryableError,
    StorageError,
)
from termal_tui.store.sqlite import (
    SIDECAR_SUFFIXES,
    FileKind,
    check_before_write,
    describe_error,
    display_path,
    harden_files,
)

REGISTRY_VERSION = 4  # 2: projects (the board's scopes); 3: notifier_seen, wake_reoffers;
# 4: session_tokens (a hub's bearer tokens)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    agent TEXT,
    workdir TEXT,
    created_at TEXT NOT NULL,
    removed_at TEXT,
    turn_started_at TEXT,
    channel_pid INTEGER,
    channel_seen_at REAL
);
CREATE UNIQUE INDEX IF NOT EXISTS sessions_live_name
    ON sessions(name_key) WHERE removed_at IS NULL;
CREATE TABLE IF NOT EXISTS wake_marks (
    session_id TEXT NOT NULL,
    mailbox_id TEXT NOT NULL,
    pending INTEGER NOT NULL,
    seen_through INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (session_id, mailbox_id)
);
"""
# Version 2: board scopes for sessions outside TermAl's projects (``agents/projects.py``).
# Every statement is IF NOT EXISTS, so opening a version-1 file runs the whole script
# once (in one BEGIN IMMEDIATE) and that is its migration; no existing row changes.
_SCHEMA += """
CREATE TABLE IF NOT EXISTS projects (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    root_path TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_projects (
    session_id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"""


# Version 3: is anyone listening? When each session's hooks last ran (``notifiers.py``
# reads it, read-only), and the one wake a channel server re-offers for a mailbox whose
# wake was pushed and then ignored. IF NOT EXISTS, as version 2.
_SCHEMA += """
CREATE TABLE IF NOT EXISTS notifier_seen (
    session_id TEXT PRIMARY KEY,
    hook_seen_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS wake_reoffers (
    session_id TEXT NOT NULL,
    mailbox_id TEXT NOT NULL,
    through INTEGER NOT NULL,
    offered_at TEXT NOT NULL,
    PRIMARY KEY (session_id, mailbox_id)
);
"""

# Version 4: one bearer token per session for ``termal-tui serve`` (``agents/hub.py``).
# Only the token's SHA-256 is kept (a token is 256 random bits: no salt or stretching
# adds anything); a revoked token keeps its row, so the hub can tell it from a new one
# only in its log. IF NOT EXISTS, as version 2.
_SCHEMA += """
CREATE TABLE IF NOT EXISTS session_tokens (
    session_id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
"""

TOKEN_PREFIX = "ttk_"


def token_hash(token: str) -> str:
    import hashlib

    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class Session(NamedTuple):
    """One registered session (a NamedTuple: cheap to import, frozen, built from a row)."""

    id: str
    name: str
    agent: str | None
    workdir: str | None
    created_at: str
    removed_at: str | None
    turn_started_at: str | None
    channel_pid: int | None
    channel_seen_at: float | None

    @property
    def live(self) -> bool:
        return self.removed_at is None

    @property
    def in_turn(self) -> bool:
        return self.turn_started_at is not None

    def channel_connected(self, now: float | None = None) -> bool:
        if self.channel_pid is None or self.channel_seen_at is None:
            return False
        return channel_alive(
            self.channel_pid, self.channel_seen_at, time.time() if now is None else now
        )

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


_COLUMNS = (
    "id, name, agent, workdir, created_at, removed_at, turn_started_at, channel_pid, "
    "channel_seen_at"
)


def _session(row: tuple[object, ...]) -> Session:
    return Session(*row)  # type: ignore[arg-type]


REGISTRY_FILE = FileKind("termal-tui session registry", frozenset({"sessions", "wake_marks"}))


def _create_private(path: Path) -> None:
    """Create the registry file 0600 before SQLite opens it (never a moment at 0644)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))


def _remove_new(path: Path) -> None:
    """Remove a registry this process just created and could not set up."""
    for candidate in [path, *(Path(f"{path}{suffix}") for suffix in SIDECAR_SUFFIXES)]:
        with contextlib.suppress(OSError):
            candidate.unlink()


class Registry:
    """Sessions by id and name. Construct with the registry file's path."""

    def __init__(self, path: Path, busy_timeout: float = 5.0) -> None:
        self.path = path.expanduser()
        self._timeout = busy_timeout
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @classmethod
    def beside(cls, db_path: Path, busy_timeout: float = 5.0) -> Registry:
        return cls(registry_path_for(db_path), busy_timeout)

    # ------------------------------------------------------------ plumbing

    def check(self, *, prepare: bool = False) -> bool:
        """The one check every file we write gets (``sqlite.check_before_write``), before
        anything opens this one: not a symlink, a regular SQLite file that is a session
        registry (or empty). ``prepare`` also creates its directory. Returns whether the
        file exists."""
        return check_before_write(self.path, REGISTRY_FILE, prepare=prepare)

    def _connection(self) -> sqlite3.Connection:
        """One long-lived connection (no transaction is held between calls)."""
        if self._db is None:
            existed = self.check(prepare=True)
            if not existed:
                _create_private(self.path)
            try:
                db = sqlite3.connect(
                    self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
                )
            except (sqlite3.Error, OSError) as error:
                if not existed:
                    _remove_new(self.path)
                raise StorageError(
                    f"cannot open the session registry {display_path(self.path)}: {error}"
                ) from error
            try:
                self._ensure(db)
                # WAL with NORMAL: a heartbeat a second costs no fsync.
                db.execute("PRAGMA synchronous = NORMAL")
            except BaseException as error:
                db.close()
                if not existed:
                    _remove_new(self.path)  # a failed first start leaves nothing behind
                if isinstance(error, sqlite3.Error):
                    raise describe_error(self.path, error, writing=True) from error
                raise
            harden_files(self.path)
            self._db = db
        return self._db

    @contextmanager
    def _connect(self, write: bool) -> Iterator[sqlite3.Connection]:
        if not write and self._db is None and not self.path.exists():
            # Nothing registered yet: a read answers from an empty registry and creates
            # no file (a mistyped path must not leave one behind).
            empty = sqlite3.connect(":memory:", isolation_level=None)
            try:
                empty.executescript(_SCHEMA)
                yield empty
            finally:
                empty.close()
            return
        with self._lock:
            try:
                db = self._connection()
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield db
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.OperationalError as error:
                if "locked" in str(error) or "busy" in str(error):
                    raise RetryableError(
                        "the session registry is temporarily busy; no registry write was "
                        "committed by this operation, so retry the same request"
                    ) from error
                raise describe_error(self.path, error, writing=write) from error
            except sqlite3.DatabaseError as error:
                raise describe_error(self.path, error, writing=write) from error

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _ensure(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > REGISTRY_VERSION:
            raise StorageError(
                f"the session registry {self.path} has version {version}; this termal-tui "
                f"understands up to {REGISTRY_VERSION}"
            )
        if version < REGISTRY_VERSION:
            db.execute("PRAGMA journal_mode = WAL")
            db.executescript(
                f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {REGISTRY_VERSION};COMMIT;"
            )

    # ------------------------------------------------------------ sessions

    def add(self, raw_name: str, agent: str | None = None, workdir: str | None = None) -> Session:
        """Register a new session; its id is minted once and kept across restarts."""
        name = validate_name(raw_name)
        with self._connect(write=True) as db:
            clash = db.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE name_key = ? AND removed_at IS NULL",
                (name_key(name),),
            ).fetchone()
            if clash is None:  # a live name that reads the same (one registered earlier)
                skeleton = name_skeleton(name)
                live = db.execute("SELECT id, name FROM sessions WHERE removed_at IS NULL")
                clash = next((row for row in live if name_skeleton(row[1]) == skeleton), None)
            if clash is not None:
                raise ConflictError(
                    f"a session named `{clash[1]}` already exists ({clash[0]}); names are "
                    "unique case-insensitively"
                )
            session_id = "session-" + os.urandom(6).hex()
            db.execute(
                "INSERT INTO sessions(id, name, name_key, agent, workdir, created_at) "
                "VALUES(?, ?, ?, ?, ?, ?)",
                (session_id, name, name_key(name), agent, workdir, _now()),
            )
            return _session(
                db.execute(
                    f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
                ).fetchone()
            )

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
        except ConflictError:  # registered by another process meanwhile
            return self.find_live_by_name(raw_name)[0]

    def sessions(self, include_removed: bool = False) -> list[Session]:
        where = "" if include_removed else "WHERE removed_at IS NULL"
        with self._connect(write=False) as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM sessions {where} ORDER BY created_at, id"
            ).fetchall()
        return [_session(row) for row in rows]

    def get(self, session_id: str) -> Session | None:
        with self._connect(write=False) as db:
            row = db.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return None if row is None else _session(row)

    def by_name(self, name: str) -> list[Session]:
        """Every session with this name (case-insensitive), live and removed, oldest first:
        one query, for callers that tell the cases apart."""
        with self._connect(write=False) as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE name_key = ? ORDER BY created_at, id",
                (name_key(name.strip()),),
            ).fetchall()
        return [_session(row) for row in rows]

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
        with self._connect(write=True) as db:
            db.execute(
                "UPDATE sessions SET removed_at = ?, turn_started_at = NULL, channel_pid = NULL, "
                "channel_seen_at = NULL WHERE id = ? AND removed_at IS NULL",
                (_now(), target.id),
            )
            db.execute("DELETE FROM wake_marks WHERE session_id = ?", (target.id,))
            row = db.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (target.id,)
            ).fetchone()
        return _session(row)

    # ------------------------------------------------------------ turns and channels

    def set_turn(self, session_id: str, active: bool) -> None:
        with self._connect(write=True) as db:
            db.execute(
                "UPDATE sessions SET turn_started_at = ? WHERE id = ? AND removed_at IS NULL",
                (_now() if active else None, session_id),
            )

    def heartbeat(self, session_id: str, pid: int | None) -> None:
        """A channel server says it is connected (``pid=None``: it is going away)."""
        with self._connect(write=True) as db:
            db.execute(
                "UPDATE sessions SET channel_pid = ?, channel_seen_at = ? WHERE id = ?",
                (pid, None if pid is None else time.time(), session_id),
            )

    # ------------------------------------------------------------ wake marks
    #
    # A channel server pushes at most one wake per mailbox until the agent engages
    # with that mailbox (reads or acknowledges it). ``seen_through`` is the highest
    # sequence the agent has been woken for or has read: a new wake is pushed only
    # for a never-woken row above it.

    def wake_marks(self, session_id: str) -> dict[str, tuple[bool, int]]:
        """mailbox id -> (a wake is pending, seen through)."""
        with self._connect(write=False) as db:
            rows = db.execute(
                "SELECT mailbox_id, pending, seen_through FROM wake_marks WHERE session_id = ?",
                (session_id,),
            ).fetchall()
        return {row[0]: (bool(row[1]), int(row[2])) for row in rows}

    def has_pending_wake(self, session_id: str, mailbox_id: str, before: int) -> bool:
        """A pushed wake the agent has not engaged with covers only rows below ``before``:
        a message at ``before`` rides it and is not woken on its own. A pending wake that
        already covers ``before`` (its channel server was quicker than the sender's check)
        is that message's own wake, so it does not count."""
        with self._connect(write=False) as db:
            row = db.execute(
                "SELECT 1 FROM wake_marks WHERE session_id = ? AND mailbox_id = ? "
                "AND pending = 1 AND seen_through < ?",
                (session_id, mailbox_id, before),
            ).fetchone()
        return row is not None

    def mark_wake_pushed(self, session_id: str, mailbox_id: str, through: int) -> None:
        self._mark(session_id, mailbox_id, 1, through)

    def mark_engaged(self, session_id: str, mailbox_id: str, seen_through: int) -> None:
        """The agent read or acknowledged the mailbox: its pending wake was consumed."""
        self._mark(session_id, mailbox_id, 0, seen_through)

    def _mark(self, session_id: str, mailbox_id: str, pending: int, through: int) -> None:
        with self._connect(write=True) as db:
            db.execute(
                "INSERT INTO wake_marks(session_id, mailbox_id, pending, seen_through, updated_at) "
                "VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(session_id, mailbox_id) DO UPDATE SET "
                "pending = ?3, seen_through = MAX(seen_through, ?4), updated_at = ?5",
                (session_id, mailbox_id, pending, through, _now()),
            )

    def clear_wake_marks(self, session_id: str) -> None:
        """A new agent connection remembers nothing it was woken for."""
        with self._connect(write=True) as db:
            db.execute("DELETE FROM wake_marks WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM wake_reoffers WHERE session_id = ?", (session_id,))

    def ignored_wakes(self, session_id: str, older_than: float) -> list[tuple[str, int]]:
        """Mailboxes whose pushed wake the agent has not engaged with for ``older_than``
        seconds, and not re-offered yet at that point: ``(mailbox_id, seen_through)``."""
        cutoff = format_timestamp(utc_now_ns() - int(older_than * 1e9))
        with self._connect(write=False) as db:
            rows = db.execute(
                "SELECT m.mailbox_id, m.seen_through FROM wake_marks m "
                "LEFT JOIN wake_reoffers r ON r.session_id = m.session_id "
                "  AND r.mailbox_id = m.mailbox_id AND r.through >= m.seen_through "
                "WHERE m.session_id = ? AND m.pending = 1 AND m.updated_at <= ? "
                "  AND r.session_id IS NULL",
                (session_id, cutoff),
            ).fetchall()
        return [(str(row[0]), int(row[1])) for row in rows]

    def mark_reoffered(self, session_id: str, mailbox_id: str, through: int) -> None:
        with self._connect(write=True) as db:
            db.execute(
                "INSERT INTO wake_reoffers(session_id, mailbox_id, through, offered_at) "
                "VALUES(?1, ?2, ?3, ?4) ON CONFLICT(session_id, mailbox_id) DO UPDATE SET "
                "through = ?3, offered_at = ?4",
                (session_id, mailbox_id, through, _now()),
            )

    def hook_ran(self, session_id: str) -> None:
        """A hook of this session's agent ran: it has a notifier (``notifiers.py``)."""
        with self._connect(write=True) as db:
            db.execute(
                "INSERT INTO notifier_seen(session_id, hook_seen_at) VALUES(?1, ?2) "
                "ON CONFLICT(session_id) DO UPDATE SET hook_seen_at = ?2",
                (session_id, time.time()),
            )

    # ------------------------------------------------------------ bearer tokens (the hub)

    def issue_token(self, reference: str) -> tuple[Session, str]:
        """A new bearer token for a live session (replacing its previous one); only its
        hash is stored. Returns the session and the token, shown once."""
        import secrets

        me = self.resolve_own(reference)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self._connect(write=True) as db:
            db.execute(
                "INSERT INTO session_tokens(session_id, token_hash, created_at, revoked_at) "
                "VALUES(?1, ?2, ?3, NULL) ON CONFLICT(session_id) DO UPDATE SET "
                "token_hash = ?2, created_at = ?3, revoked_at = NULL",
                (me.id, token_hash(token), _now()),
            )
        return me, token

    def revoke_token(self, reference: str) -> tuple[Session, bool]:
        """End a session's token; returns the session and whether it had a live one."""
        me = self.resolve_own(reference)
        with self._connect(write=True) as db:
            ended = db.execute(
                "UPDATE session_tokens SET revoked_at = ? WHERE session_id = ? "
                "AND revoked_at IS NULL",
                (_now(), me.id),
            ).rowcount
        return me, bool(ended)

    def session_for_token(self, token: str) -> Session | None:
        """The live session a presented token belongs to (None: unknown, revoked, or its
        session was removed)."""
        with self._connect(write=False) as db:
            row = db.execute(
                f"SELECT {', '.join('s.' + c for c in _COLUMNS.split(', '))} "
                "FROM session_tokens t JOIN sessions s ON s.id = t.session_id "
                "WHERE t.token_hash = ? AND t.revoked_at IS NULL AND s.removed_at IS NULL",
                (token_hash(token),),
            ).fetchone()
        return None if row is None else _session(row)

    def token_holders(self) -> set[str]:
        """Ids of the sessions with a live token."""
        with self._connect(write=False) as db:
            rows = db.execute("SELECT session_id FROM session_tokens WHERE revoked_at IS NULL")
            return {str(row[0]) for row in rows}

    # ------------------------------------------------------------ projects (board scopes)
    #
    # Projects minted for sessions outside TermAl's own projects (``agents/projects.py``
    # decides which project a session is in; TermAl's are read from its termal.sqlite
    # and never stored here), and the project a session was bound to by ``--project``.

    def registered_projects(self) -> list[RegisteredProject]:
        with self._connect(write=False) as db:
            rows = db.execute(f"SELECT {_PROJECT_COLUMNS} FROM projects ORDER BY created_at, id")
            return [RegisteredProject(*row) for row in rows]

    def registered_project(self, project_id: str) -> RegisteredProject | None:
        with self._connect(write=False) as db:
            row = db.execute(
                f"SELECT {_PROJECT_COLUMNS} FROM projects WHERE id = ?", (project_id,)
            ).fetchone()
        return None if row is None else RegisteredProject(*row)

    def project_for_root(self, root_path: str, name: str) -> RegisteredProject:
        """The project whose root is ``root_path``, minted once (``project-<uuid>``, as
        TermAl mints its own) with ``name`` de-duplicated as TermAl does (``name 2``...)."""
        import uuid

        with self._connect(write=True) as db:
            row = db.execute(
                f"SELECT {_PROJECT_COLUMNS} FROM projects WHERE root_path = ?", (root_path,)
            ).fetchone()
            if row is not None:
                return RegisteredProject(*row)
            names = {found[0] for found in db.execute("SELECT name FROM projects")}
            unique, suffix = name, 2
            while unique in names:
                unique, suffix = f"{name} {suffix}", suffix + 1
            project = RegisteredProject(f"project-{uuid.uuid4()}", unique, root_path, _now())
            db.execute(
                "INSERT INTO projects(id, name, root_path, created_at) VALUES(?, ?, ?, ?)",
                project,
            )
            return project

    def bound_project(self, session_id: str) -> str | None:
        """The project id a session was bound to with ``--project``, if any."""
        with self._connect(write=False) as db:
            row = db.execute(
                "SELECT project_id FROM session_projects WHERE session_id = ?", (session_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def bind_project(self, session_id: str, project_id: str) -> None:
        with self._connect(write=True) as db:
            db.execute(
                "INSERT INTO session_projects(session_id, project_id, updated_at) "
                "VALUES(?1, ?2, ?3) ON CONFLICT(session_id) DO UPDATE SET project_id = ?2, "
                "updated_at = ?3 WHERE project_id != ?2",
                (session_id, project_id, _now()),
            )


def _now() -> str:
    return format_timestamp(utc_now_ns())


_PROJECT_COLUMNS = "id, name, root_path, created_at"


class RegisteredProject(NamedTuple):
    """A project minted by termal-tui for a session outside TermAl's projects."""

    id: str
    name: str
    root_path: str
    created_at: str
