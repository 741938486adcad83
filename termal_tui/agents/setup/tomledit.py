"""Codex's ``config.toml``, edited through tomlkit: our ``[mcp_servers.termal]`` table
added, replaced or removed, every other line, comment and blank kept as it is."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from termal_tui.agents.setup.common import SERVER_NAME, SetupError


def parse(text: str, path: Path) -> dict[str, Any]:
    """The document as plain values (read-only checks)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SetupError(f"{path} is not valid TOML ({error}); fix it first") from None


def server_of(text: str, path: Path) -> Any:
    servers = parse(text, path).get("mcp_servers")
    return servers.get(SERVER_NAME) if isinstance(servers, dict) else None


def _document(text: str, path: Path) -> Any:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    parse(text, path)  # the same sentence for a file tomllib refuses
    try:
        return tomlkit.parse(text)
    except TOMLKitError as error:  # pragma: no cover - tomllib accepted it
        raise SetupError(f"{path} is not valid TOML ({error}); fix it first") from None


def with_server(text: str, path: Path, server: dict[str, Any]) -> str:
    """``text`` with ``[mcp_servers.termal]`` set to ``server`` (added at the end of the
    servers, or replaced where it is)."""
    import tomlkit
    from tomlkit.items import InlineTable, Table

    if text and not text.endswith("\n"):
        text += "\n"
    doc = _document(text, path)
    servers = doc.get("mcp_servers")
    if servers is not None and not isinstance(servers, Table | InlineTable):
        raise SetupError(f"{path}: mcp_servers is not a table; edit it by hand")
    if isinstance(servers, InlineTable):
        entry: Any = tomlkit.inline_table()
        entry.update({"command": server["command"], "args": server["args"]})
        servers[SERVER_NAME] = entry
    else:
        entry = tomlkit.table()
        entry.add("command", server["command"])
        entry.add("args", server["args"])
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            servers.add(SERVER_NAME, entry)
            doc.add("mcp_servers", servers)
        else:
            if list(doc.keys())[-1] != "mcp_servers" and SERVER_NAME not in servers:
                entry.add(tomlkit.nl())  # a blank line before the table that follows
            servers[SERVER_NAME] = entry
    after = tomlkit.dumps(doc)
    result = server_of(after, path)
    if not isinstance(result, dict) or (result.get("command"), result.get("args")) != (
        server["command"],
        server["args"],
    ):  # pragma: no cover - a bug, never a bad write
        raise SetupError(f"{path}: the edited file would not hold our server; nothing written")
    return after


def without_server(text: str, path: Path) -> str:
    """``text`` without ``[mcp_servers.termal]`` (and without ``mcp_servers`` when that
    leaves it empty and it was only a header for sub-tables). Comments and blank lines
    that follow our last key belong to what comes next, and stay."""
    import tomlkit
    from tomlkit.items import Table

    doc = _document(text, path)
    servers = doc.get("mcp_servers")
    if servers is None or SERVER_NAME not in servers:
        return text
    expected = parse(text, path)
    del expected["mcp_servers"][SERVER_NAME]
    if not expected["mcp_servers"]:
        del expected["mcp_servers"]
    entry = servers[SERVER_NAME]
    if isinstance(entry, Table) and not entry.is_super_table():
        cut = _cut_table(text, entry.as_string())
        if cut is not None and parse(cut, path) == expected:
            return cut
    del servers[SERVER_NAME]
    if not len(servers) and (not isinstance(servers, Table) or servers.is_super_table()):
        del doc["mcp_servers"]
    return tomlkit.dumps(doc)


def _cut_table(text: str, body: str) -> str | None:
    """``text`` without the table whose body (as tomlkit renders it) is ``body``: its
    header line and keys go; the comments and blank lines ending the body stay, and
    the blank line setup put before the header goes with it."""
    at = text.find(body)
    if at <= 0 or text.find(body, at + 1) != -1 or text[at - 1] != "\n":
        return None
    header = text.rfind("\n", 0, at - 1) + 1
    lines = body.splitlines(keepends=True)
    keep = len(lines)
    while keep > 0 and (not lines[keep - 1].strip() or lines[keep - 1].lstrip().startswith("#")):
        keep -= 1
    trailing = "".join(lines[keep:])
    before, after = text[:header], trailing + text[at + len(body) :]
    if before.endswith("\n\n") and (not after or after.startswith("\n")):
        before = before[:-1]
    if not after and before.endswith("\n\n"):
        before = before.rstrip("\n") + "\n"
    return before + after
