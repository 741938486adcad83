"""``termal-tui board`` on a PostgreSQL URL, end to end through the real command line:
the session comes from the local registry (as for the mailbox commands), the project
from its git top-level, and set, get, ls and rm answer as they do on a file; a retry of
the same command is the original receipt; a server that cannot be reached is busy (exit
5) and never shows the password."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from termal_tui.cli.common import EXIT_BUSY, EXIT_CONFLICT, EXIT_OK
from tests.agents.test_board_tools import make_repo
from tests.agents.test_e2e import EXE
from tests.helpers import rows


def _cli(home: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=os.environ | {"TERMAL_HOME": str(home), "COLUMNS": "120", "NO_COLOR": "1"},
        timeout=120,
        check=False,
    )


def test_board_set_get_ls_rm_on_a_postgresql_url(tmp_path, pg_url):
    home, repo = tmp_path / "home", make_repo(tmp_path / "shop")
    assert _cli(home, repo, "session", "add", "ann", "--db", pg_url).returncode == EXIT_OK

    def board(*argv: str) -> subprocess.CompletedProcess[str]:
        return _cli(home, repo, "board", *argv, "--as", "ann", "--db", pg_url)

    made = board("set", "status.gate", '{"state": "open"}')
    assert made.returncode == EXIT_OK, made.stderr
    assert made.stdout.strip() == "status.gate: revision 1 (created); scope generation 1"
    again = board("set", "status.gate", '{"state": "open"}', "--expect", "0")
    assert again.returncode == EXIT_OK, again.stderr
    assert "already written: this is the original receipt" in again.stdout
    stale = board("set", "status.gate", '"closed"', "--expect", "0", "--key", "other")
    assert stale.returncode == EXIT_CONFLICT
    assert "revision conflict for `status.gate`: expected 0, current revision is 1" in stale.stderr
    got = json.loads(board("get", "status.gate", "--json").stdout)
    assert (got["value"], got["revision"], got["authorName"]) == ({"state": "open"}, 1, "ann")
    listed = json.loads(board("ls", "--json").stdout)
    assert [entry["key"] for entry in listed["entries"]] == ["status.gate"]
    removed = board("rm", "status.gate")
    assert removed.returncode == EXIT_OK, removed.stderr
    assert removed.stdout.startswith("status.gate: deleted at revision 2")
    assert rows(pg_url, "SELECT key, revision, value_json FROM coordination_board_entries") == [
        ("status.gate", 2, None)
    ]
    assert not (repo / "postgresql:").exists()


def test_an_unreachable_server_is_busy_and_hides_the_password(tmp_path):
    home, repo = tmp_path / "home", make_repo(tmp_path / "shop")
    url = "postgresql://alice:s3cret@127.0.0.1:1/db"
    done = _cli(home, repo, "board", "ls", "--as", "ann", "--db", url)
    assert done.returncode == EXIT_BUSY, done.stderr
    assert "s3cret" not in done.stderr and "alice:***@" in done.stderr


def test_mcp_with_a_wake_channel_on_an_unreachable_url_is_one_busy_sentence(tmp_path):
    """``--channel`` works on a URL now (the registry and the watcher are on the server):
    a server that cannot be reached is the busy error, nothing started, no password."""
    home, repo = tmp_path / "home", make_repo(tmp_path / "shop")
    url = "postgresql://alice:s3cret@127.0.0.1:1/db"
    done = _cli(home, repo, "mcp", "--session", "ann", "--db", url, "--channel")
    assert done.returncode == EXIT_BUSY, done.stderr
    # The failure is one sentence; beside it, the warning that argv shows the password.
    warning, *lines = done.stderr.strip().splitlines()
    assert warning.startswith("termal-tui: warning:") and "process list" in warning
    assert len(lines) == 1 and "temporarily busy" in lines[0] and "cannot be reached" in lines[0]
    assert "s3cret" not in done.stderr and "alice:***@" in done.stderr
