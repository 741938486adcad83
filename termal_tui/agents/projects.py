"""Which project a session is in: the coordination board's scope.

TermAl scopes a board by the caller's local project id (``project-<uuid>``) and rejects a
session without a project (``resolve_board_scope_for_session`` in ``src/board_routes.rs``).
termal-tui answers the same question in this order:

1. ``--project`` (an id or a directory), which also binds the session to that project in
   the registry, so later calls without it stay there;
2. the project the session was bound to before;
3. when TermAl's ``termal.sqlite`` sits beside the coordination database (on a
   PostgreSQL database, which has nothing beside it: in TermAl's state folder on this
   host, ``$TERMAL_HOME`` when that is a path, else ``~/.termal``), the deepest of
   its LOCAL projects whose root contains the session's working directory (TermAl's
   ``find_project_for_workdir``), so a termal-tui session in a TermAl project's tree
   shares that project's board with TermAl's own sessions;
4. the git top-level of the session's working directory, as a project minted once in
   the registry (``project-<uuid>``, named after the directory as TermAl names one).

Otherwise TermAl's rejection: "session has no project; the coordination board is
scoped to a project". TermAl's file is only ever read (``mode=ro`` through its own
locks while TermAl runs, an immutable snapshot otherwise); nothing here uses asyncio.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from termal_tui.agents.registry import Registry, Session
from termal_tui.store.errors import NotFoundError, StorageError, ValidationError
from termal_tui.store.registry import projects as store_projects
from termal_tui.store.registry.projects import (
    TERMAL_METADATA_KEY as TERMAL_METADATA_KEY,
)
from termal_tui.store.registry.projects import (
    TERMAL_STATE_FILENAME as TERMAL_STATE_FILENAME,
)
from termal_tui.store.registry.projects import termal_state_path as termal_state_path
from termal_tui.store.sqlite import display_path

LOCAL_REMOTE_ID = "local"  # turns.rs LOCAL_REMOTE_ID

# board_routes.rs resolve_board_scope_for_session, verbatim.
SESSION_NOT_FOUND = "session not found"
NO_PROJECT = "session has no project; the coordination board is scoped to a project"
REMOTE_PROJECT = (
    "the coordination board is local-authoritative in v1; remote projects are not supported"
)


def unknown_project(project_id: str) -> str:
    return f"unknown project `{project_id}`"


class Project(NamedTuple):
    """A board scope: ``source`` is ``termal`` (TermAl's termal.sqlite) or ``termal-tui``
    (minted in the session registry). ``remote_id`` is TermAl's (``local`` for ours)."""

    id: str
    name: str
    root_path: str
    source: str
    remote_id: str = LOCAL_REMOTE_ID

    @property
    def local(self) -> bool:
        return self.remote_id == LOCAL_REMOTE_ID


def read_termal_projects(path: Path) -> list[Project]:
    """TermAl's projects (``PersistedState.projects`` in ``app_state``), read-only through
    the store; an absent file has none. Raises StorageError when the file cannot be read
    as TermAl's."""
    found = store_projects.read_termal_projects(path)
    try:
        return [
            Project(
                id=str(p["id"]),
                name=str(p["name"]),
                root_path=str(p["rootPath"]),
                source="termal",
                remote_id=str(p["remoteId"]),
            )
            for p in found
        ]
    except (TypeError, KeyError) as error:
        raise StorageError(
            f"cannot read TermAl's projects from {display_path(path)}: its metadata state is "
            f"not TermAl's ({type(error).__name__}: {error})"
        ) from error


def canonical(path: str | os.PathLike[str]) -> Path:
    """TermAl's ``normalize_codex_discovery_path``: absolute, then canonicalised where it
    exists (``fs::canonicalize(..).unwrap_or(resolved)``)."""
    resolved = Path(path).expanduser()
    if not resolved.is_absolute():
        resolved = Path.cwd() / resolved
    try:
        return resolved.resolve(strict=True)
    except OSError:
        return resolved


def contains(root_path: str, candidate: Path) -> bool:
    """TermAl's ``codex_discovery_scope_contains`` (component-wise prefix)."""
    return candidate.is_relative_to(canonical(root_path))


def deepest_containing(projects: list[Project], workdir: str | os.PathLike[str]) -> Project | None:
    """TermAl's ``find_project_for_workdir``: the local project with the longest root
    path that contains ``workdir`` (of equal lengths the last, as Rust's ``max_by_key``)."""
    target = canonical(workdir)
    best: Project | None = None
    for project in projects:
        deeper = best is None or len(project.root_path) >= len(best.root_path)
        if project.local and deeper and contains(project.root_path, target):
            best = project
    return best


def git_toplevel(workdir: str | os.PathLike[str]) -> Path | None:
    """The nearest directory at or above ``workdir`` holding a ``.git`` (a directory, or
    the file of a worktree or submodule): git's top-level, without running git."""
    start = canonical(workdir)
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def default_project_name(root_path: str) -> str:
    """TermAl's ``default_project_name``: the root's last component, else the root."""
    return Path(root_path).name or root_path


def termal_state_for(db: Path | str) -> Path:
    """TermAl's own state file for a database (the store's rule: beside a file; for a
    URL, in TermAl's state folder on this host)."""
    from termal_tui.store.registry.projects import termal_state_for as for_target

    return for_target(db)


class ProjectResolver:
    """Sessions to projects, over one coordination database's registry and (if present)
    TermAl's termal.sqlite (:func:`termal_state_for`). Synchronous: callers on an event
    loop run it in a worker thread. TermAl's projects are re-read on every resolution
    (TermAl may create one at any time; the read is one row)."""

    def __init__(self, db_path: Path | str, registry: Registry) -> None:
        self.db_path = db_path if isinstance(db_path, str) else db_path.expanduser()
        self.registry = registry
        self.termal_path = termal_state_for(self.db_path)

    def termal_projects(self) -> list[Project]:
        return read_termal_projects(self.termal_path)

    def registered(self) -> list[Project]:
        return [
            Project(p.id, p.name, p.root_path, "termal-tui")
            for p in self.registry.registered_projects()
        ]

    def by_id(self, project_id: str, termal: list[Project] | None = None) -> Project:
        """A project by exact id, TermAl's first; TermAl's route wording otherwise."""
        for project in self.termal_projects() if termal is None else termal:
            if project.id == project_id:
                if not project.local:
                    raise ValidationError(REMOTE_PROJECT)
                return project
        found = self.registry.registered_project(project_id)
        if found is None:
            raise ValidationError(unknown_project(project_id))
        return Project(found.id, found.name, found.root_path, "termal-tui")

    def for_directory(self, directory: str | os.PathLike[str]) -> Project:
        """The project of an explicit directory: TermAl's project containing it, else the
        directory itself as a project (minted once)."""
        root = canonical(directory)
        if not root.is_dir():
            raise ValidationError(
                f"--project {directory}: no such directory (give an id or a path)"
            )
        termal = deepest_containing(self.termal_projects(), root)
        if termal is not None:
            return termal
        return self._minted(root)

    def for_reference(self, reference: str) -> Project:
        """``--project``: a ``project-`` id (TermAl's or ours), else a directory."""
        reference = reference.strip()
        if not reference:
            raise ValidationError("--project must not be empty (give an id or a path)")
        if reference.startswith("project-") and not Path(reference).is_dir():
            return self.by_id(reference)
        return self.for_directory(reference)

    def for_workdir(self, workdir: str | None) -> Project | None:
        """The project of a working directory (steps 3 and 4), or None."""
        if not workdir:
            return None
        termal = deepest_containing(self.termal_projects(), workdir)
        if termal is not None:
            return termal
        top = git_toplevel(workdir)
        return None if top is None else self._minted(top)

    def for_session(self, session: Session | None, reference: str | None = None) -> Project:
        """The board scope of a session (see the module's order). ``reference`` is its
        ``--project``, bound to the session when given."""
        if session is None or not session.live:
            raise NotFoundError(SESSION_NOT_FOUND)
        if reference is not None:
            project = self.for_reference(reference)
            self.registry.bind_project(session.id, project.id)
            return project
        bound = self.registry.bound_project(session.id)
        if bound is not None:
            return self.by_id(bound)
        found = self.for_workdir(session.workdir)
        if found is None:
            raise ValidationError(NO_PROJECT)
        return found

    def _minted(self, root: Path) -> Project:
        text = str(root)
        found = self.registry.project_for_root(text, default_project_name(text))
        return Project(found.id, found.name, found.root_path, "termal-tui")
