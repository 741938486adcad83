from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from termal_tui.store.writer import MailboxWriter, open_writer
from tests.helpers import StepClock, counter_ids

os.environ["TZ"] = "UTC"
time.tzset()
for variable in ("NO_COLOR", "TEXTUAL_THEME", "TEXTUAL_ANIMATIONS"):
    os.environ.pop(variable, None)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "coordination.sqlite"


@pytest.fixture
async def writer(db_path: Path) -> AsyncIterator[MailboxWriter]:
    async with open_writer(db_path, clock=StepClock(), new_id=counter_ids()) as w:
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
