"""Board scopes: projects minted here for sessions outside TermAl's projects, the project a
session was bound to, and TermAl's own project list (its ``termal.sqlite``), read here
once, read-only."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Final

from termal_tui.store.errors import StorageError
from termal_tui.store.registry.dbapi import Db
from termal_tui.store.sqlite import display_path, read_only_uri

PROJECT_COLUMNS: Final = "id, name, root_path, created_at"
ProjectRow = tuple[str, str, str, str]

TERMAL_STATE_FILENAME: Final = "termal.sqlite"
TERMAL_METADATA_KEY: Final = "metadataState"  # persist.rs SQLITE_METADATA_KEY


def registered(db: Db) -> list[ProjectRow]:
    return db.execute(f"SELECT {PROJECT_COLUMNS} FROM projects ORDER BY created_at, id").fetchall()


def registered_one(db: Db, project_id: str) -> ProjectRow | None:
    return db.execute(
        f"SELECT {PROJECT_COLUMNS} FROM projects WHERE id = ?", (project_id,)
    ).fetchone()


def for_root(db: Db, root_path: str, name: str, at: str) -> ProjectRow:
    """The project whose root is ``root_path``, minted once (``project-<uuid>``, as TermAl
    mints its own) with ``name`` de-duplicated as TermAl does (``name 2``...)."""
    row = db.execute(
        f"SELECT {PROJECT_COLUMNS} FROM projects WHERE root_path = ?", (root_path,)
    ).fetchone()
    if row is not None:
        return row  # type: ignore[no-any-return]
    import uuid  # only when minting (the hook path never loads it)

    names = {found[0] for found in db.execute("SELECT name FROM projects")}
    unique, suffix = name, 2
    while unique in names:
        unique, suffix = f"{name} {suffix}", suffix + 1
    project = (f"project-{uuid.uuid4()}", unique, root_path, at)
    db.execute("INSERT INTO projects(id, name, root_path, created_at) VALUES(?, ?, ?, ?)", project)
    return project


def bound(db: Db, session_id: str) -> str | None:
    row = db.execute(
        "SELECT project_id FROM session_projects WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None else str(row[0])


def bind(db: Db, session_id: str, project_id: str, at: str) -> None:
    db.execute(
        "INSERT INTO session_projects(session_id, project_id, updated_at) "
        "VALUES(?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET "
        "project_id = excluded.project_id, updated_at = excluded.updated_at "
        "WHERE session_projects.project_id != excluded.project_id",
        (session_id, project_id, at),
    )


def termal_state_path(db_path: Path) -> Path:
    """TermAl's state database beside a coordination database (``~/.termal/``)."""
    return db_path.expanduser().with_name(TERMAL_STATE_FILENAME)


def termal_state_for(db: Path | str) -> Path:
    """TermAl's own state file, whose project list a database's sessions are resolved
    against: beside a SQLite coordination file; for a ``postgresql://`` database (nothing
    is beside it), in TermAl's state folder on this host (``$TERMAL_HOME`` when that is a
    path, else ``~/.termal``). Only ever read."""
    import os

    from termal_tui.store.urls import is_postgres_url, looks_like_url

    if isinstance(db, str) and is_postgres_url(db):
        home = os.environ.get("TERMAL_HOME")
        folder = Path(home) if home and not looks_like_url(home) else Path.home() / ".termal"
        return folder.expanduser() / TERMAL_STATE_FILENAME
    return termal_state_path(Path(db))


def read_termal_projects(path: Path) -> list[dict[str, Any]]:
    """TermAl's projects (``PersistedState.projects`` in ``app_state``) as TermAl wrote
    them (dicts with ``id``, ``name``, ``rootPath``, ``remoteId``), read-only; an absent
    file has none. Raises StorageError when the file cannot be read as TermAl's."""
    if not path.exists():
        return []
    in_use = Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    try:
        db = sqlite3.connect(read_only_uri(path, immutable=not in_use), uri=True)
    except sqlite3.Error as error:
        raise StorageError(
            f"cannot read TermAl's projects from {display_path(path)}: {error}"
        ) from error
    try:
        db.execute("PRAGMA query_only = ON")
        row = db.execute(
            "SELECT value_json FROM app_state WHERE key = ?", (TERMAL_METADATA_KEY,)
        ).fetchone()
    except sqlite3.Error as error:
        raise StorageError(
            f"cannot read TermAl's projects from {display_path(path)}: {error}"
        ) from error
    finally:
        db.close()
    if row is None:
        return []
    try:
        state: Any = json.loads(row[0])
        projects = state["projects"]
        if not isinstance(projects, list):
            raise TypeError("projects is not a list")
        return projects
    except (ValueError, TypeError, KeyError) as error:
        raise StorageError(
            f"cannot read TermAl's projects from {display_path(path)}: its metadata state is "
            f"not TermAl's ({type(error).__name__}: {error})"
        ) from error
