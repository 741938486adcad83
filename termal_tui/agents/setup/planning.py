"""Planning and writing: what setting up a target changes in each file (nothing is
written until ``write``), and the record that lets ``--remove`` undo it exactly."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from termal_tui.agents.setup import tomledit, undo
from termal_tui.agents.setup.common import (
    HOOK_EVENTS,
    SERVER_NAME,
    Files,
    SetupError,
    Target,
    describe_server,
    hook_of,
    missing_parents,
    read_text,
    same_server,
    write_text,
)
from termal_tui.agents.setup.jsontext import JsonText


@dataclass
class FilePlan:
    """One file's change: its text before (None: missing) and after (None: removed)."""

    path: Path
    before: str | None
    after: str | None
    changes: list[str] = field(default_factory=list)  # what was added, replaced or removed

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        before = (self.before or "").splitlines(keepends=True)
        after = (self.after or "").splitlines(keepends=True)
        label = str(self.path)
        lines = difflib.unified_diff(
            before,
            after,
            fromfile="/dev/null" if self.before is None else label,
            tofile="/dev/null" if self.after is None else label,
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass
class Plan:
    target: Target
    files: Files
    plans: list[FilePlan]
    conflicts: list[str]  # entries of ours that say something else, left as they are
    replaced: list[str]  # the same, replaced because of ``force``

    @property
    def changed(self) -> bool:
        return any(p.changed for p in self.plans)


def _plan_json_server(path: Path, target: Target, force: bool) -> tuple[FilePlan, str | None]:
    before = read_text(path)
    doc = JsonText(before or "", path)
    ours = target.server()
    existing = doc.get(["mcpServers", SERVER_NAME])
    plan = FilePlan(path, before, before or "")
    conflict = None
    if existing is None:
        doc.set(["mcpServers", SERVER_NAME], ours)
        plan.changes.append(f"added server {SERVER_NAME} (session {target.session})")
    elif not same_server(existing, ours):
        conflict = f"{path}: server {SERVER_NAME} is already there and {describe_server(existing)}"
        if force:
            doc.set(["mcpServers", SERVER_NAME], ours)
            plan.changes.append(f"replaced server {SERVER_NAME} (session {target.session})")
    plan.after = doc.text
    return plan, conflict


def _plan_hooks(path: Path, target: Target, force: bool) -> tuple[FilePlan, list[str]]:
    before = read_text(path)
    doc = JsonText(before or "", path)
    plan = FilePlan(path, before, before or "")
    conflicts: list[str] = []
    added: list[str] = []
    for event in HOOK_EVENTS:
        wanted = target.hook_command(event)
        groups = doc.get(["hooks", event])
        if groups is not None and not isinstance(groups, list):
            raise SetupError(f"{path}: hooks.{event} is not a list")
        found: list[tuple[int, int, str]] = []
        for g, group in enumerate(groups or []):
            inner = group.get("hooks") if isinstance(group, dict) else None
            for h, hook in enumerate(inner if isinstance(inner, list) else []):
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str):
                    recognised = hook_of(command)
                    if recognised and recognised[0] == HOOK_EVENTS[event]:
                        found.append((g, h, command))
        if any(command == wanted for _g, _h, command in found):
            continue
        if found:
            g, h, command = found[0]
            conflicts.append(f"{path}: the {event} hook is already there and runs `{command}`")
            if force:
                doc.replace_string(["hooks", event, g, "hooks", h, "command"], wanted)
                added.append(f"replaced the {event} hook")
            continue
        entry = {"hooks": [{"type": "command", "command": wanted}]}
        if groups is None:
            doc.set(["hooks", event], [entry])
        else:
            doc.append(["hooks", event], entry)
        added.append(event)
    new_events = [a for a in added if not a.startswith("replaced")]
    if new_events:
        plan.changes.append(f"added hooks {', '.join(new_events)} (session {target.session})")
    plan.changes.extend(a for a in added if a.startswith("replaced"))
    plan.after = doc.text
    return plan, conflicts


def _plan_toml(path: Path, target: Target, force: bool) -> tuple[FilePlan, str | None]:
    before = read_text(path)
    text = before or ""
    ours = target.server()
    existing = tomledit.server_of(text, path)
    plan = FilePlan(path, before, text)
    if existing is not None and same_server(existing, ours):
        return plan, None
    conflict = None
    if existing is not None:
        conflict = f"{path}: server {SERVER_NAME} is already there and {describe_server(existing)}"
        if not force:
            return plan, conflict
        plan.changes.append(f"replaced server {SERVER_NAME} (session {target.session})")
    else:
        plan.changes.append(f"added server {SERVER_NAME} (session {target.session})")
    plan.after = tomledit.with_server(text, path, ours)
    return plan, conflict


def plan(target: Target, files: Files, *, force: bool = False) -> Plan:
    """What setting up ``target`` in ``files`` would change (nothing is written)."""
    if target.client == "claude":
        config, conflict = _plan_json_server(files.config, target, force)
    else:
        config, conflict = _plan_toml(files.config, target, force)
    hooks, hook_conflicts = _plan_hooks(files.hooks, target, force)
    conflicts = ([conflict] if conflict else []) + hook_conflicts
    return Plan(
        target,
        files,
        [config, hooks],
        [] if force else conflicts,
        conflicts if force else [],
    )


def write(plan_: Plan, records: Path | None = None) -> list[Path]:
    """Write every changed file (atomically, through a symlink to its target, keeping
    its mode); returns the paths written. Nothing is written while conflicts stand.
    With ``records`` (a directory), what each file was before is kept there for
    ``--remove``."""
    if plan_.conflicts:
        raise SetupError("conflicts stand: nothing written")
    written = []
    for file_plan in plan_.plans:
        if file_plan.changed and file_plan.after is not None:
            created_dirs = missing_parents(file_plan.path)
            write_text(file_plan.path, file_plan.after)
            if records is not None:
                undo.remember(
                    records, file_plan.path, file_plan.before, file_plan.after, created_dirs
                )
            written.append(file_plan.path)
    return written
