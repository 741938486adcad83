"""The termal-tui Claude Code plugin (``plugins/termal-tui``), as Claude Code records it
once installed: which plugin id is enabled and the options it was configured with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PLUGIN_NAME = "termal-tui"


def claude_plugin(
    project: Path | None, home: Path | None = None
) -> tuple[str, dict[str, Any]] | None:
    """The enabled termal-tui Claude Code plugin (user or project settings) and its
    options as ``claude plugin install --config`` stored them, or None (read-only)."""
    places = [(home or Path.home()) / ".claude" / "settings.json"]
    places.append((project or Path.cwd()) / ".claude" / "settings.json")
    found: tuple[str, dict[str, Any]] | None = None
    options: dict[str, Any] = {}
    for path in places:
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(settings, dict):
            continue
        enabled = settings.get("enabledPlugins")
        for plugin_id, on in enabled.items() if isinstance(enabled, dict) else []:
            if on is True and plugin_id.split("@")[0] == PLUGIN_NAME:
                found = (plugin_id, options)
        configs = settings.get("pluginConfigs")
        if isinstance(configs, dict) and found is not None:
            stored = (configs.get(found[0]) or {}).get("options")
            if isinstance(stored, dict):
                options.update(stored)
    return found
