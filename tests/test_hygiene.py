"""Layering: no module imports one from a layer above it; the headless core imports no
textual/rich; the viewer never loads the writer or the agents; the fast paths load no
pydantic."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from termal_tui.store import queries
from termal_tui.store.reader import MailboxReader

PACKAGE = Path(__file__).resolve().parents[1] / "termal_tui"

# Lower numbers are lower layers. A module may import its own layer or one below.
LAYERS: dict[str, int] = {
    "termal_tui": 0,
    "termal_tui.sanitize": 0,
    "termal_tui.formats": 0,
    "termal_tui.store.errors": 0,
    "termal_tui.models": 1,
    "termal_tui.review": 1,
    "termal_tui.store": 2,
    "termal_tui.presentation": 3,
    "termal_tui.health": 3,
    "termal_tui.notifiers": 3,
    "termal_tui.thread": 3,
    "termal_tui.views": 3,
    "termal_tui.board_view": 3,
    "termal_tui.export": 3,
    "termal_tui.vocabulary": 3,
    "termal_tui.attention": 3,
    "termal_tui.viewer_config": 3,
    "termal_tui.demo": 3,
    "termal_tui.tui": 4,
    "termal_tui.agents": 4,
    "termal_tui.cli": 5,
    "termal_tui.__main__": 5,
}


def layer_of(module: str) -> int:
    """The layer of the longest registered prefix of ``module``."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in LAYERS:
            return LAYERS[prefix]
    raise AssertionError(f"{module} has no layer: add it to LAYERS")


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_imports(path: Path) -> list[tuple[int, str]]:
    """Every import of a termal_tui module in ``path``, at any depth (lazy ones too),
    except those only for type checking."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            # `from termal_tui.store import queries` imports the module queries.
            target = next(
                (n for n in reversed(names) if n.startswith("termal_tui") and _is_module(n)),
                node.module,
            )
            if target.startswith("termal_tui"):
                found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found.extend(
                (node.lineno, alias.name)
                for alias in node.names
                if alias.name.startswith("termal_tui")
            )
    return found


def _is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (PACKAGE.parent / relative).with_suffix(".py").exists() or (
        PACKAGE.parent / relative / "__init__.py"
    ).exists()


def test_layer_of_is_strict():
    assert layer_of("termal_tui.store.reader") == 2
    assert layer_of("termal_tui.store.errors") == 0
    assert layer_of("termal_tui.tui.widgets.index") == 4
    with pytest.raises(AssertionError):
        layer_of("elsewhere")


def test_the_rule_catches_an_upward_import(tmp_path: Path):
    fake = PACKAGE / "store" / "reader.py"
    source = tmp_path / "reader.py"
    source.write_text("def f():\n    from termal_tui.health import collect\n")
    ((_line, target),) = project_imports(source)
    assert layer_of(target) > layer_of(_module_name(fake))


def test_no_module_imports_one_from_a_layer_above_it():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        mine = layer_of(module)
        for line, target in project_imports(path):
            if layer_of(target) > mine:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} {module} → {target}")
    assert not upward, "\n".join(upward)


def test_the_viewer_and_the_agents_never_import_each_other():
    crossing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for line, target in project_imports(path):
            if module.startswith("termal_tui.tui") and (
                target.startswith(("termal_tui.agents", "termal_tui.cli"))
                or target
                in ("termal_tui.store.writer", "termal_tui.store.board.writer", "termal_tui.demo")
            ):
                crossing.append(f"{module}:{line} → {target}")
            if module.startswith("termal_tui.agents") and target.startswith(
                ("termal_tui.tui", "termal_tui.cli")
            ):
                crossing.append(f"{module}:{line} → {target}")
    assert not crossing, "\n".join(crossing)


def _loaded_after(import_line: str) -> set[str]:
    code = f"import sys\n{import_line}\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_headless_core_imports_no_textual_or_rich():
    modules = _loaded_after(
        "import termal_tui.store, termal_tui.store.writer, termal_tui.models, "
        "termal_tui.presentation, termal_tui.sanitize, termal_tui.review, termal_tui.demo, "
        "termal_tui.thread, termal_tui.health, termal_tui.export, termal_tui.board_view, "
        "termal_tui.vocabulary, termal_tui.attention, termal_tui.viewer_config"
    )
    assert not {m for m in modules if m.split(".")[0] in {"textual", "rich"}}


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
