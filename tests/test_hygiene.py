"""Layering: the headless core imports no textual/rich; the viewer never loads the writer."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys

from termal_tui.store import queries
from termal_tui.store.reader import MailboxReader


def _loaded_after(import_line: str) -> set[str]:
    code = f"import sys\n{import_line}\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_headless_core_imports_no_textual_or_rich():
    modules = _loaded_after(
        "import termal_tui.store, termal_tui.store.writer, termal_tui.models, "
        "termal_tui.presentation, termal_tui.sanitize, termal_tui.review, termal_tui.demo, "
        "termal_tui.thread, termal_tui.health, termal_tui.export"
    )
    assert not {m for m in modules if m.split(".")[0] in {"textual", "rich"}}


def test_viewer_never_loads_the_writer():
    modules = _loaded_after(
        "import termal_tui.tui.app, termal_tui.cli, termal_tui.doctor, termal_tui.export, "
        "termal_tui.tui.screens.health, termal_tui.tui.screens.search"
    )
    assert "termal_tui.tui.app" in modules
    assert "termal_tui.store.writer" not in modules
    assert "termal_tui.demo" not in modules


def test_reader_has_no_method_that_writes():
    source = inspect.getsource(sys.modules[MailboxReader.__module__]) + inspect.getsource(queries)
    for verb in ("INSERT", "UPDATE", "DELETE", "ALTER", "CREATE", "REPLACE", "COMMIT"):
        assert not re.search(rf"\b{verb}\b", source.upper()), verb


def test_the_agents_layer_is_headless_and_the_viewer_never_loads_it():
    agents = _loaded_after(
        "import termal_tui.agents.registry, termal_tui.agents.tools, termal_tui.agents.wake, "
        "termal_tui.agents.cli"
    )
    assert not {m for m in agents if m.split(".")[0] in {"textual", "rich", "mcp"}}
    viewer = _loaded_after("import termal_tui.tui.app, termal_tui.cli")
    assert not {m for m in viewer if m.startswith("termal_tui.agents")}
