"""``termal-tui setup``: connect Claude Code or Codex CLI to a session in one step, check
it the way the client runs it, and take it away again.

Headless: it plans edits of the client's own files and applies them, checks what is
there, and undoes what it wrote. Nothing here prints or parses a command line
(``cli/setup.py`` does). By job:

- ``common``: the target, the client's files and the environment it gives its server
  (``TERMAL_HOME`` is not passed on, so setup writes ``--db`` when the default would
  differ there), recognising our entries, exact reads and atomic writes;
- ``jsontext``: JSON edited by byte spans (every other server and hook keeps its bytes);
- ``tomledit``: Codex's TOML through tomlkit (comments and layout kept);
- ``planning``: what setup changes, written only when no conflict stands;
- ``undo``: the record of each write and ``--remove``;
- ``check``: ``--check``, down to an MCP handshake with the configured command line;
- ``plugin``: the Claude Code plugin, as Claude Code records it.

An entry of ours that says something else (another session, another command) is a
conflict: named, and left unless ``force``.
"""

from __future__ import annotations

from termal_tui.agents.setup.check import Finding, Report, check, codex_trusts, handshake
from termal_tui.agents.setup.common import (
    CLIENT_ENV_KEEP,
    CLIENTS,
    HOOK_EVENTS,
    SERVER_NAME,
    Client,
    Files,
    SetupError,
    Target,
    as_database,
    client_env,
    codex_home,
    db_to_write,
    default_db_in,
    describe_server,
    files_for,
    hook_of,
    server_session,
    termal_command,
)
from termal_tui.agents.setup.planning import FilePlan, Plan, plan, write
from termal_tui.agents.setup.plugin import PLUGIN_NAME, claude_plugin
from termal_tui.agents.setup.undo import Removal, apply_removal, plan_removal

__all__ = [
    "CLIENTS",
    "CLIENT_ENV_KEEP",
    "HOOK_EVENTS",
    "PLUGIN_NAME",
    "SERVER_NAME",
    "Client",
    "FilePlan",
    "Files",
    "Finding",
    "Plan",
    "Removal",
    "Report",
    "SetupError",
    "Target",
    "apply_removal",
    "as_database",
    "check",
    "claude_plugin",
    "client_env",
    "codex_home",
    "codex_trusts",
    "db_to_write",
    "default_db_in",
    "describe_server",
    "files_for",
    "handshake",
    "hook_of",
    "plan",
    "plan_removal",
    "server_session",
    "termal_command",
    "write",
]
