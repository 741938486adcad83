from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import run_cli

Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """``termal-tui ARGV`` in this process (``main()``; a real process costs ~0.3 s of CPU
    to start), answered as ``subprocess.run`` would: run in ``tmp_path``, with
    ``$TERMAL_HOME`` at ``tmp_path/home`` unless ``home=`` names another, no colour, and
    ``stdin=`` as its standard input."""

    def run(*argv: str, home: str | None = None, stdin: str | None = None):
        return run_cli(
            list(argv),
            monkeypatch=monkeypatch,
            capsys=capsys,
            cwd=tmp_path,
            env={"TERMAL_HOME": home or str(tmp_path / "home"), "NO_COLOR": "1"},
            stdin=stdin,
        )

    return run
