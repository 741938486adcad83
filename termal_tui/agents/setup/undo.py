"""``setup --remove``: undo exactly what setup added.

When setup writes a file it keeps a record (in termal-tui's own directory, mode 0600):
whether it created the file and the directories above it, the file's exact text
before, and a digest of what it wrote. ``--remove`` then:

- a file setup created, unchanged since: removed (and the directories it created,
  when empty);
- a file setup edited, unchanged since: written back byte for byte as it was;
- a file changed since (or with no record, or one that already held an entry of ours
  when setup first edited it): only our entries are taken out (our server; each of our
  hooks, with its group when the group held nothing else; a container our removal
  left empty), every other byte kept as it is.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from termal_tui.agents.setup import tomledit
from termal_tui.agents.setup.common import (
    HOOK_EVENTS,
    SERVER_NAME,
    Client,
    Files,
    SetupError,
    hook_of,
    is_our_server,
    read_text,
    real_path,
    write_text,
)
from termal_tui.agents.setup.jsontext import JsonText

RECORD_VERSION = 1


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_path(records: Path, path: Path) -> Path:
    key = hashlib.sha256(str(real_path(path).absolute()).encode("utf-8")).hexdigest()[:24]
    return records / f"{key}.json"


def load(records: Path, path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(record_path(records, path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != RECORD_VERSION:
        return None
    return data


def remember(
    records: Path, path: Path, before: str | None, after: str, created_dirs: list[Path]
) -> None:
    """Record a write of ``path``: the first record of a setup keeps the state before
    it; a later write on top of our own keeps that first state."""
    previous = load(records, path)
    if previous is not None and before is not None and _digest(before) == previous["after"]:
        record = previous
    else:
        exact = before is None or _strip(path, before) == before  # nothing of ours in it
        record = {
            "version": RECORD_VERSION,
            "path": str(real_path(path).absolute()),
            "created": before is None,
            "before": before,
            "dirs": [str(d) for d in created_dirs],
            "exact": exact,
        }
    record["after"] = _digest(after)
    records.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # termal-tui's own
    records.mkdir(exist_ok=True, mode=0o700)
    target = record_path(records, path)
    fd = os.open(f"{target}.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(record, out)
    os.replace(f"{target}.tmp", target)


# ------------------------------------------------------------------ our entries, taken out


def _strip_json_server(doc: JsonText) -> None:
    if is_our_server(doc.get(["mcpServers", SERVER_NAME])):
        doc.delete_member(["mcpServers"], SERVER_NAME)
        if doc.get(["mcpServers"]) == {}:
            doc.delete_member([], "mcpServers")


def _strip_hooks(doc: JsonText) -> None:
    hooks = doc.get(["hooks"])
    if not isinstance(hooks, dict):
        return
    removed = False
    for event, ours in HOOK_EVENTS.items():
        groups = doc.get(["hooks", event])
        if not isinstance(groups, list):
            continue
        touched = False
        for g in reversed(range(len(groups))):
            group = groups[g]
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                continue
            mine = [
                h
                for h, hook in enumerate(inner)
                if isinstance(hook, dict)
                and isinstance(hook.get("command"), str)
                and (found := hook_of(hook["command"])) is not None
                and found[0] == ours
            ]
            if not mine:
                continue
            touched = removed = True
            if len(mine) == len(inner):
                doc.delete_item(["hooks", event], g)
            else:
                for h in reversed(mine):
                    doc.delete_item(["hooks", event, g, "hooks"], h)
        if touched and doc.get(["hooks", event]) == []:
            doc.delete_member(["hooks"], event)
    if removed and doc.get(["hooks"]) == {}:
        doc.delete_member([], "hooks")


def _strip(path: Path, text: str) -> str:
    """``text`` without our entries (the kind of file told by its name)."""
    if not text.strip():
        return text
    if path.suffix == ".toml":
        server = tomledit.server_of(text, path)
        return tomledit.without_server(text, path) if is_our_server(server) else text
    doc = JsonText(text, path)
    _strip_json_server(doc)
    _strip_hooks(doc)
    return doc.text


def _empty(path: Path, text: str) -> bool:
    if not text.strip():
        return True
    if path.suffix == ".toml":
        return tomledit.parse(text, path) == {}
    return JsonText(text, path).value == {}


# ------------------------------------------------------------------ the plan


@dataclass
class Removal:
    client: Client
    files: Files
    plans: list[Any]  # FilePlan: after None removes the file
    dirs: list[Path] = field(default_factory=list)  # created by setup: removed when empty
    records: list[Path] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(p.changed for p in self.plans)


def plan_removal(client: Client, files: Files, records: Path) -> Removal:
    """What ``--remove`` would change in ``files`` (nothing is written)."""
    from termal_tui.agents.setup.planning import FilePlan

    removal = Removal(client, files, [])
    for path in (files.config, files.hooks):
        current = read_text(path)
        record = load(records, path)
        if record is not None:
            removal.records.append(record_path(records, path))
        if current is None:
            continue
        file_plan = FilePlan(path, current, current)
        exact = record is not None and record.get("exact") and _digest(current) == record["after"]
        if exact and record is not None:
            if record["created"]:
                file_plan.after = None
                file_plan.changes.append("removed (setup created it)")
                removal.dirs.extend(Path(d) for d in reversed(record.get("dirs") or []))
            else:
                file_plan.after = record["before"]
                file_plan.changes.append("restored to its bytes before setup")
        else:
            stripped = _strip(path, current)
            if stripped != current:
                if record is not None and record["created"] and _empty(path, stripped):
                    file_plan.after = None
                    file_plan.changes.append("removed (setup created it; nothing else is in it)")
                    removal.dirs.extend(Path(d) for d in reversed(record.get("dirs") or []))
                else:
                    file_plan.after = stripped
                    file_plan.changes.append(
                        "removed our entries (changed since setup: the rest kept as it is)"
                        if record is not None
                        else "removed our entries (the rest kept as it is)"
                    )
        removal.plans.append(file_plan)
    return removal


def apply_removal(removal: Removal) -> list[Path]:
    """Carry out ``removal``; returns the paths changed."""
    changed: list[Path] = []
    for file_plan in removal.plans:
        if not file_plan.changed:
            continue
        if file_plan.after is None:
            os.unlink(file_plan.path)
        else:
            write_text(file_plan.path, file_plan.after)
        changed.append(file_plan.path)
    for directory in removal.dirs:
        with contextlib.suppress(OSError):
            directory.rmdir()  # only when empty
    for record in removal.records:
        with contextlib.suppress(FileNotFoundError):
            record.unlink()
    return changed


__all__ = ["Removal", "SetupError", "apply_removal", "plan_removal", "remember"]
