from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from termal_tui.store.writer import MailboxWriter, open_writer
from tests.helpers import StepClock, counter_ids
from tests.pg_server import PgServer, start_server

os.environ["TZ"] = "UTC"
time.tzset()
for variable in ("NO_COLOR", "TEXTUAL_THEME", "TEXTUAL_ANIMATIONS"):
    os.environ.pop(variable, None)

# ``pytest -n auto``: three test processes per core (at most 16). A viewer test spends much
# of its time waiting for its app to go idle, and an agent test for a child process: with
# one process per core the cores idle meanwhile. $PYTEST_XDIST_AUTO_NUM_WORKERS still wins.
WORKERS_PER_CORE = 3
MAX_AUTO_WORKERS = 16


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_AUTO_WORKERS, WORKERS_PER_CORE * (cores or 1)))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "coordination.sqlite"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """This test process's own PostgreSQL server (each xdist worker starts one, on first
    use). Missing binaries fail the test with one sentence: never a skip."""
    try:
        server = start_server()
    except RuntimeError as error:
        pytest.fail(str(error), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """The URL of a fresh, empty database on the test server."""
    return pg_server.fresh_database()


@pytest.fixture
def engine() -> str:
    """The store engine the ``db`` and ``writer`` fixtures use: SQLite here;
    ``tests/store`` parametrizes it over both engines (``sqlite_only`` pins one test)."""
    return "sqlite"


@pytest.fixture
def db(engine: str, db_path: Path, request: pytest.FixtureRequest) -> Path | str:
    """The test's coordination database on its engine: a SQLite path or a PostgreSQL URL."""
    if engine == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return db_path


@pytest.fixture
async def writer(db: Path | str) -> AsyncIterator[MailboxWriter]:
    async with open_writer(db, clock=StepClock(), new_id=counter_ids()) as w:
        yield w


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A fresh copy of the demo database (built through the writer once per run)."""
    from tests.viewer_support import demo_copy

    return demo_copy(tmp_path / "demo")


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own XDG directories (never the user's config, state or data)."""
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.delenv("TMUX", raising=False)
    return tmp_path
