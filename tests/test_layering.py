"""Layering and loading: the import contracts in ``.importlinter`` hold (``lint-imports``:
no import upward, the headless core free of textual/rich, the viewer free of the writer
and the agents) and catch what they are meant to; at run time the headless modules load
no textual/rich, the viewer never loads the writer or the agents, and the fast paths
load no pydantic."""

from __future__ import annotations

import ast
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
        "store/reader.py": "def _planted():\n    from termal_tui.views.findings import collect",
        # the agents reaching for the viewer (siblings are independent)
        "agents/wake.py": "import termal_tui.tui.render",
        # headless code importing rich
        "core/formats.py": "import rich.text",
        # the viewer importing the writer
        "tui/render.py": "from termal_tui.store.writer import open_writer",
        # a views package (landing elsewhere) importing the agents and the writer
        "views/__init__.py": "import termal_tui.store.board.writer",
        "views/index.py": "from termal_tui.agents import tools",
        # the read side reaching for the write side
        "store/board/reader.py": "import termal_tui.store.lifecycle",
        # store.errors is core: it imports nothing of the project
        "store/errors.py": "import termal_tui.store.sqlite",
        # the SQLite engine importing the PostgreSQL driver (only store.postgres may)
        "store/sqlite.py": "def _driver():\n    import psycopg",
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
        "termal_tui.store.reader -> termal_tui.views.findings",
        "termal_tui.agents.wake -> termal_tui.tui.render",
        "termal_tui.core.formats -> rich",
        "termal_tui.tui.render -> termal_tui.store.writer",
        "termal_tui.views -> termal_tui.store.board.writer",
        "termal_tui.views.index -> termal_tui.agents",
        "termal_tui.store.board.reader -> termal_tui.store.lifecycle",
        "termal_tui.store.errors -> termal_tui.store.sqlite",
        "termal_tui.store.sqlite -> psycopg",
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
    assert {"termal_tui.store.writer", "termal_tui.core.formats", "termal_tui.demo"} <= set(names)
    modules = _loaded_after("import " + ", ".join(names))
    assert not {m for m in modules if m.split(".")[0] in {"textual", "rich", "rich_argparse"}}


def test_viewer_never_loads_the_writer():
    modules = _loaded_after(
        "import termal_tui.tui.app, termal_tui.cli, termal_tui.cli.viewer, termal_tui.views.export, "
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
        "termal_tui.store.reader, termal_tui.views.findings"
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
    from termal_tui.core import formats
    from termal_tui.store.board import formats as board

    assert board.rust_trim is formats.rust_trim
    assert board.utf8_len is formats.utf8_len
    assert board.now_ns is formats.utc_now_ns
    assert board.Clock is formats.Clock
    source = inspect.getsource(board)
    assert "def rust_trim" not in source and "\\u2028" not in source


# ------------------------------------------------------------------ SQL lives in the store

# Statement shapes and SQL-only clauses, as this code base writes SQL (upper case)...
_SQL_UPPER = re.compile(
    r"""\b(?:
    SELECT\s | INSERT\s+(?:OR\s+[A-Z]+\s+)?INTO\b | REPLACE\s+INTO\b | UPDATE\s+[\w."]+\s+SET\b
    | DELETE\s+FROM\b | CREATE\s+(?:TEMP\w*\s+|UNIQUE\s+|VIRTUAL\s+)?(?:TABLE|INDEX|TRIGGER|VIEW)\b
    | DROP\s+(?:TABLE|INDEX|TRIGGER|VIEW)\b | ALTER\s+TABLE\b | PRAGMA\s+\w+ | ATTACH\s+DATABASE\b
    | BEGIN(?:\s+(?:IMMEDIATE|EXCLUSIVE|DEFERRED))?(?:\s+TRANSACTION)?\s*;?\s*\Z
    | COMMIT\s*;?\s*\Z | ROLLBACK\b | VACUUM\b
    | WHERE\s+[\w."]+\s*(?:=|<|>|!=|IN\b|IS\b|LIKE\b) | ORDER\s+BY\b | GROUP\s+BY\b
    | (?:LEFT\s+)?JOIN\s+\w+\s+(?:\w+\s+)?ON\b | VALUES\s*\(
    | (?:COALESCE|EXISTS|COUNT|IFNULL|NULLIF|SUM|MAX|MIN)\s*\( | IS\s+(?:NOT\s+)?NULL\b
    | (?:=|<|>|!=)\s*:[a-z_]\w*\b | LIMIT\s+[?:\d]
    )""",
    re.X,
)
# ... and statements written in lower case, shaped strictly enough that prose does not
# match ("Select a mailbox from the list", "delete the key").
_SQL_ANY_CASE = re.compile(
    r"""\b(?:
    select\s+[\w.()*]+(?:\s*,\s*[\w.()*]+)*\s+from\s+\w+\s*(?:where\b|order\b|limit\b|join\b|group\b|;|\Z)
    | insert\s+(?:or\s+\w+\s+)?into\s+\w+\s*(?:\(|values\b|select\b|default\b) | update\s+\w+\s+set\s+\w+\s*=
    | delete\s+from\s+\w+(?:\s+where\b|\s*;?\s*\Z)
    | create\s+(?:temp\w*\s+|unique\s+)?(?:table|index|trigger|view)\s+(?:if\s+not\s+exists\s+)?\w+
    | pragma\s+\w+\s*(?:=|\(|;|\Z) | drop\s+(?:table|index)\s+(?:if\s+exists\s+)?\w+
    )""",
    re.X | re.I,
)


def sql_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal in ``source`` that holds SQL: plain, implicitly
    concatenated, or an f-string (its fields read as ``{}``). Docstrings and other bare
    string statements are prose, and skipped."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skipped.add(id(node.value))
        elif isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in node.values)
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
            )
        else:
            continue
        if _SQL_UPPER.search(text) or _SQL_ANY_CASE.search(text):
            found.append((node.lineno, text))
    return sorted(found)


def sql_outside_the_store(skip: tuple[str, ...] = ()) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith("termal_tui/store/") or name in skip:
            continue
        for line, text in sql_literals(path.read_text(encoding="utf-8")):
            found.append(f"{name}:{line}: {' '.join(text.split())[:100]}")
    return found


def test_sql_literals_finds_sql_in_every_form_and_no_prose():
    source = '''
"""Module docstring: SELECT id FROM mailboxes WHERE id = ? is documentation."""
A = "SELECT id FROM mailboxes WHERE id = ?"
B = ("UPDATE mailbox_participants SET processed_through = ? "
     "WHERE mailbox_id = ?")
C = f"DELETE FROM {table} WHERE id = ?"
D = "insert into sessions (id) values (?)"
E = "PRAGMA busy_timeout = 5000"
F = " AND COALESCE(topic, '') != :ctl"
G = "create table if not exists t (x)"
H = "select name from sqlite_master"
def f():
    """Update the view; select from the list, then delete from the board."""
    notes = ["Select a mailbox from the list", "Delete the key", "update available",
             "Order by date", "Press ? for help", "Created a table of contents",
             "count (3) where shown", "The pragma of the matter", "group by group",
             "Select one or more from the list", "insert into the text"]
    return notes
'''
    lines = [line for line, _ in sql_literals(source)]
    assert lines == [3, 4, 6, 7, 8, 9, 10, 11]


def test_no_sql_outside_the_store():
    found = sql_outside_the_store()
    assert not found, "SQL outside termal_tui/store/:\n" + "\n".join(found)


# ------------------------------------------------------------------ no process-wide switches


async def test_reading_summaries_never_switches_the_collector_off(tmp_path: Path, monkeypatch):
    """The store reads on its own thread: a pause of the cycle collector there was a
    pause for every thread of the process. While 1,000 summaries are built, the
    collector stays on."""
    import contextlib
    import gc
    import sqlite3

    from termal_tui.store import demo_data
    from termal_tui.store.writer import open_writer

    path = tmp_path / "many.sqlite"
    async with open_writer(path):
        pass
    with contextlib.closing(sqlite3.connect(path)) as db:
        demo_data.fill_pair_mailboxes(db, 1_000)
    seen: list[bool] = []
    real = queries.trusted

    def watching(model, values):
        seen.append(gc.isenabled())
        return real(model, values)

    monkeypatch.setattr(queries, "trusted", watching)
    assert gc.isenabled()
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert len(queries.summaries(db, None)) == 1_000
    assert len(seen) >= 1_000 and all(seen)
    assert gc.isenabled()
