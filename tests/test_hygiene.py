"""Layering and loading: the import contracts in ``.importlinter`` hold (``lint-imports``:
no import upward, the headless core free of textual/rich, the viewer free of the writer
and the agents) and catch what they are meant to; at run time the headless modules load
no textual/rich, the viewer never loads the writer or the agents, and the fast paths
load no pydantic."""

from __future__ import annotations

import inspect
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import termal_tui
from termal_tui.store import queries
from termal_tui.store.reader import MailboxReader

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "termal_tui"
CONTRACTS = ROOT / ".importlinter"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` as .ci/run runs it (no cache: nothing written to the tree)."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(CONTRACTS)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
    )


def test_the_import_contracts_hold():
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    kept = re.search(r"Contracts: (\d+) kept, 0 broken", run.stdout)
    assert kept and int(kept.group(1)) == CONTRACTS.read_text().count("[importlinter:contract:")


def _plant(root: Path, relative: str, line: str) -> None:
    path = root / "termal_tui" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    path.write_text(text + "\n" + line + "\n", encoding="utf-8")


def test_the_contracts_catch_each_kind_of_planted_import(tmp_path: Path):
    """A copy of the package with one wrong import per contract (lazy ones too, and in
    the views package once it exists): every contract reports it, naming the import."""
    shutil.copytree(PACKAGE, tmp_path / "termal_tui", ignore=shutil.ignore_patterns("__pycache__"))
    plants = {
        # upward: the store reaching for a view, lazily inside a function
        "store/reader.py": "def _planted():\n    from termal_tui.health import collect",
        # the agents reaching for the viewer (siblings are independent)
        "agents/wake.py": "import termal_tui.tui.render",
        # headless code importing rich
        "formats.py": "import rich.text",
        # the viewer importing the writer
        "tui/render.py": "from termal_tui.store.writer import open_writer",
        # a views package (landing elsewhere) importing the agents and the writer
        "views/__init__.py": "import termal_tui.store.board.writer",
        "views/index.py": "from termal_tui.agents import tools",
        # the read side reaching for the write side
        "store/board/reader.py": "import termal_tui.store.lifecycle",
        # store.errors is core: it imports nothing of the project
        "store/errors.py": "import termal_tui.store.sqlite",
        # a module nobody gave a layer
        "unplaced.py": "X = 1",
    }
    for relative, line in plants.items():
        _plant(tmp_path, relative, line)
    run = lint_imports(tmp_path, pythonpath=tmp_path)
    out = " ".join((run.stdout + run.stderr).split())
    assert run.returncode != 0
    assert "0 kept" in out, out
    for chain in (
        "termal_tui.store.reader -> termal_tui.health",
        "termal_tui.agents.wake -> termal_tui.tui.render",
        "termal_tui.formats -> rich",
        "termal_tui.tui.render -> termal_tui.store.writer",
        "termal_tui.views -> termal_tui.store.board.writer",
        "termal_tui.views.index -> termal_tui.agents",
        "termal_tui.store.board.reader -> termal_tui.store.lifecycle",
        "termal_tui.store.errors -> termal_tui.store.sqlite",
        "termal_tui.unplaced",
    ):
        assert chain in out, (chain, out)


def _loaded_after(import_line: str) -> set[str]:
    code = f"import sys\n{import_line}\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def headless_modules() -> list[str]:
    """Every module of the package outside the viewer's widgets (tui) and the CLI."""
    return [
        info.name
        for info in pkgutil.walk_packages(termal_tui.__path__, "termal_tui.")
        if not info.name.startswith(("termal_tui.tui", "termal_tui.cli", "termal_tui.__main__"))
    ]


def test_headless_core_imports_no_textual_or_rich():
    names = headless_modules()
    assert {"termal_tui.store.writer", "termal_tui.formats", "termal_tui.demo"} <= set(names)
    modules = _loaded_after("import " + ", ".join(names))
    assert not {m for m in modules if m.split(".")[0] in {"textual", "rich", "rich_argparse"}}


def test_viewer_never_loads_the_writer():
    modules = _loaded_after(
        "import termal_tui.tui.app, termal_tui.cli, termal_tui.cli.viewer, termal_tui.export, "
        "termal_tui.tui.screens.health, termal_tui.tui.screens.search, "
        "termal_tui.tui.screens.board"
    )
    assert "termal_tui.tui.app" in modules
    assert "termal_tui.store.writer" not in modules
    assert "termal_tui.store.board.writer" not in modules
    assert "termal_tui.demo" not in modules


def test_the_first_screen_and_the_hooks_load_no_pydantic():
    viewer = _loaded_after(
        "import termal_tui.cli, termal_tui.cli.viewer, termal_tui.tui.app, "
        "termal_tui.store.reader, termal_tui.health"
    )
    assert not {m for m in viewer if m.split(".")[0] == "pydantic"}
    mail = _loaded_after(
        "import termal_tui.cli, termal_tui.cli.mail, termal_tui.agents.tools, "
        "termal_tui.agents.wake, termal_tui.store.writer"
    )
    assert not {m for m in mail if m.split(".")[0] in {"pydantic", "rich", "textual", "mcp"}}


def test_the_hooks_path_loads_no_asyncio_and_nothing_heavy():
    """A hook runs on every prompt and stop of every agent: no asyncio, aiosqlite,
    pydantic, rich or textual, and none of the expensive standard modules."""
    hooks = _loaded_after(
        "import termal_tui.cli, termal_tui.cli.hook, termal_tui.agents.hooks, "
        "termal_tui.store.lifecycle"
    )
    heavy = {"asyncio", "aiosqlite", "pydantic", "rich", "textual", "mcp", "rich_argparse"}
    heavy |= {"dataclasses", "inspect", "uuid", "secrets", "ssl", "logging", "difflib"}
    assert not {m for m in hooks if m.split(".")[0] in heavy}


def test_reader_has_no_method_that_writes():
    source = inspect.getsource(sys.modules[MailboxReader.__module__]) + inspect.getsource(queries)
    for verb in ("INSERT", "UPDATE", "DELETE", "ALTER", "CREATE", "REPLACE", "COMMIT"):
        assert not re.search(rf"\b{verb}\b", source.upper()), verb


def test_the_agents_layer_is_headless_and_the_viewer_never_loads_it():
    agents = _loaded_after(
        "import termal_tui.agents.registry, termal_tui.agents.tools, termal_tui.agents.wake, "
        "termal_tui.agents.hooks"
    )
    assert not {m for m in agents if m.split(".")[0] in {"textual", "rich", "mcp"}}
    viewer = _loaded_after("import termal_tui.tui.app, termal_tui.cli, termal_tui.cli.viewer")
    assert not {m for m in viewer if m.startswith("termal_tui.agents")}


def test_the_mailbox_and_board_formats_share_one_definition_of_their_text_rules():
    from termal_tui import formats
    from termal_tui.store.board import formats as board

    assert board.rust_trim is formats.rust_trim
    assert board.utf8_len is formats.utf8_len
    assert board.now_ns is formats.utc_now_ns
    assert board.Clock is formats.Clock
    source = inspect.getsource(board)
    assert "def rust_trim" not in source and "\\u2028" not in source
