"""``termal-tui board ls|get|set|rm`` for people and scripts, run as a user runs it: the
session's project (git top-level, --project, TermAl's termal.sqlite), TermAl's JSON with
--json, TermAl's sentences on stderr and the exit-code table."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from termal_tui.cli.common import (
    EXIT_BUSY,
    EXIT_CONFLICT,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_UNKNOWN,
)
from tests.agents.test_board_tools import make_repo, project, termal_state
from tests.agents.test_e2e import EXE
from tests.helpers import run_cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class Shell:
    """``termal-tui ... --db DB`` from ``cwd``: a real process, or with ``in_process``
    (the test's monkeypatch and capsys) ``main()`` in this one (:func:`run_cli`)."""

    def __init__(
        self,
        db: Path,
        cwd: Path,
        env: dict[str, str] | None = None,
        in_process: tuple[pytest.MonkeyPatch, pytest.CaptureFixture[str]] | None = None,
    ) -> None:
        self.db, self.cwd, self.env, self.in_process = db, cwd, env, in_process

    def __call__(
        self, *argv: str, cwd: Path | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {"COLUMNS": "120"} | (self.env or {})  # tables at a known width
        if self.in_process:
            monkeypatch, capsys = self.in_process
            return run_cli(
                [*argv, "--db", str(self.db)],
                monkeypatch=monkeypatch,
                capsys=capsys,
                cwd=cwd or self.cwd,
                env=env,
                stdin=stdin,
            )
        return subprocess.run(
            [EXE, *argv, "--db", str(self.db)],
            capture_output=True,
            text=True,
            cwd=cwd or self.cwd,
            input=stdin,
            env=os.environ | env,
            timeout=120,
            check=False,
        )

    def json(self, *argv: str, cwd: Path | None = None) -> Any:
        done = self(*argv, "--json", cwd=cwd)
        assert done.returncode == EXIT_OK, done.stderr
        return json.loads(done.stdout)


@pytest.fixture
def sh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Shell:
    """The commands in this process; ``real_sh`` runs them as a user does."""
    repo = make_repo(tmp_path / "shop")
    shell = Shell(
        tmp_path / "state" / "coordination.sqlite", repo, in_process=(monkeypatch, capsys)
    )
    assert shell("session", "add", "ann").returncode == 0
    return shell


@pytest.fixture
def real_sh(tmp_path: Path) -> Shell:
    repo = make_repo(tmp_path / "shop")
    shell = Shell(tmp_path / "state" / "coordination.sqlite", repo)
    assert shell("session", "add", "ann").returncode == 0
    return shell


def test_set_get_ls_round_trip_in_termals_shapes(real_sh: Shell):
    """As a user runs it: real processes (the other tests call ``main()``)."""
    sh = real_sh
    made = sh("board", "set", "status.gate", '{"state": "open", "n": 1.50}', "--as", "ann")
    assert made.returncode == EXIT_OK, made.stderr
    assert made.stdout.strip() == "status.gate: revision 1 (created); scope generation 1"
    got = sh.json("board", "get", "status.gate", "--as", "ann")
    assert list(got) == [
        "key",
        "revision",
        "updatedAtGeneration",
        "value",
        "deleted",
        "authorSessionId",
        "authorName",
        "updatedAt",
        "scopeGeneration",
    ]
    assert got["value"] == {"n": 1.5, "state": "open"} and got["authorName"] == "ann"
    listed = sh.json("board", "ls", "--as", "ann")
    assert listed["generation"] == 1 and listed["unchanged"] is False
    assert [e["key"] for e in listed["entries"]] == ["status.gate"]
    human = sh("board", "ls", "--as", "ann")
    assert human.returncode == EXIT_OK
    first, *table = human.stdout.splitlines()
    assert first.startswith("board of shop (project-") and first.endswith("generation 1, 1 key")
    assert table[0].split() == ["key", "rev", "gen", "author", "updated", "preview"]
    assert (
        table[1].startswith("status.gate  1    1    ann")
        and '{"n":1.5,"state":"open"}' in (table[1])
    )
    shown = sh("board", "get", "status.gate", "--as", "ann").stdout
    assert shown.startswith("status.gate: revision 1 (written at generation 1; the scope is at 1)")
    assert '"state": "open"' in shown


def test_the_same_command_twice_is_one_write(sh: Shell):
    command = ("board", "set", "ci.main", "green", "--text", "--expect", "0", "--as", "ann")
    assert sh(*command).returncode == EXIT_OK
    again = sh(*command)
    assert again.returncode == EXIT_OK
    assert "already written: this is the original receipt" in again.stdout
    receipt = sh.json(*command)
    assert receipt["duplicate"] is True and receipt["revision"] == 1
    assert receipt["value"] == "green"
    piped = sh("board", "set", "ci.nightly", "-", "--as", "ann", stdin='[1, null, "x"]\n')
    assert piped.returncode == EXIT_OK, piped.stderr
    assert sh.json("board", "get", "ci.nightly", "--as", "ann")["value"] == [1, None, "x"]


def test_errors_are_termals_sentences_with_the_tables_codes(sh: Shell, tmp_path: Path):
    missing = sh("board", "get", "no.such", "--as", "ann")
    assert missing.returncode == EXIT_NOT_FOUND
    assert missing.stderr.startswith(
        "termal-tui: error: termal-tui board store returned 404 Not Found: coordination board "
        "key `no.such` was not found in scope `project-"
    )
    assert sh("board", "set", "k", "1", "--as", "ann").returncode == EXIT_OK
    stale = sh("board", "set", "k", "2", "--expect", "0", "--as", "ann")
    assert stale.returncode == EXIT_CONFLICT
    assert "coordination board revision conflict for `k`: expected 0, current revision is 1" in (
        stale.stderr
    )
    assert '"currentGeneration":1' in stale.stderr  # TermAl's detail, for CAS repair
    bad = sh("board", "set", "Bad.Key", "1", "--as", "ann")
    assert bad.returncode == EXIT_INVALID
    assert "coordination board keys must use 1 to 8 lowercase alphanumeric segments" in bad.stderr
    not_json = sh("board", "set", "k", "hello", "--as", "ann")
    assert not_json.returncode == EXIT_INVALID and "--text" in not_json.stderr
    nobody = sh("board", "ls", "--as", "zed")
    assert nobody.returncode == EXIT_NOT_FOUND and "known sessions: ann" in nobody.stderr
    loose = tmp_path / "loose"
    loose.mkdir()
    assert sh("session", "add", "drifter", cwd=loose).returncode == 0
    homeless = sh("board", "ls", "--as", "drifter")
    assert homeless.returncode == EXIT_INVALID
    assert homeless.stderr.strip() == (
        "termal-tui: error: termal-tui board store returned 400 Bad Request: session has no "
        "project; the coordination board is scoped to a project"
    )


def test_rm_leaves_a_tombstone_restored_only_deliberately(sh: Shell):
    assert sh("board", "set", "lock.deploy", '"ann"', "--as", "ann").returncode == EXIT_OK
    removed = sh("board", "rm", "lock.deploy", "--as", "ann")
    assert removed.returncode == EXIT_OK, removed.stderr
    assert "deleted at revision 2" in removed.stdout and "--expect 2" in removed.stdout
    gone = sh("board", "get", "lock.deploy", "--as", "ann")
    assert gone.returncode == EXIT_NOT_FOUND and '"deleted":true' in gone.stderr
    assert sh.json("board", "ls", "--as", "ann")["entries"] == []
    resurrect = sh("board", "set", "lock.deploy", '"bob"', "--as", "ann")
    assert resurrect.returncode == EXIT_CONFLICT  # create-only never resurrects a tombstone
    restored = sh.json("board", "set", "lock.deploy", '"bob"', "--expect", "2", "--as", "ann")
    assert (restored["priorRevision"], restored["revision"], restored["value"]) == (2, 3, "bob")
    assert sh("board", "rm", "never.was", "--as", "ann").returncode == EXIT_NOT_FOUND


def test_busy_is_exit_5_with_termals_no_commit_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """A database held by another writer: exit 5 with TermAl's no-commit sentence, and
    nothing was written. (What is asserted is the answer, never how long it took.)"""
    from termal_tui.cli import main

    repo = make_repo(tmp_path / "shop")
    sh = Shell(tmp_path / "state" / "coordination.sqlite", repo, in_process=(monkeypatch, capsys))
    assert sh("session", "add", "ann").returncode == 0
    assert sh("board", "set", "a", "1", "--as", "ann").returncode == EXIT_OK
    monkeypatch.setenv("TERMAL_TUI_BUSY_TIMEOUT", "0.05")
    monkeypatch.chdir(repo)
    holder = sqlite3.connect(sh.db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        code = main(["board", "set", "a", "2", "--expect", "1", "--as", "ann", "--db", str(sh.db)])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = capsys.readouterr().err
    assert code == EXIT_BUSY, err
    assert err.rstrip().endswith(
        "no coordination board write was committed by this operation, so retry the same request"
    )
    assert sh.json("board", "get", "a", "--as", "ann")["revision"] == 1  # nothing written


def test_a_busy_set_is_replayed_on_termals_schedule_then_exit_5(
    sh: Shell, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """Busy at every attempt: five attempts and four jittered doubling pauses (counted,
    not slept), then exit 5 with TermAl's sentence; busy twice then free: written once."""
    from termal_tui.agents import board_tools
    from termal_tui.agents.tools import replay_delay
    from termal_tui.cli import main
    from termal_tui.store.board import formats
    from termal_tui.store.board.writer import BoardWriter
    from termal_tui.store.errors import RetryableError

    listed = json.loads(sh("session", "list", "--json").stdout)
    ann_id = next(s["sessionId"] for s in listed if s["name"] == "ann")
    paused: list[float] = []
    attempts: list[int] = []
    busy_for = [5]
    real_set = BoardWriter.set

    async def pause(seconds: float) -> None:
        paused.append(seconds)

    async def busy_set(self: BoardWriter, *args: Any, **kwargs: Any) -> Any:
        attempts.append(1)
        if len(attempts) <= busy_for[0]:
            raise RetryableError(formats.busy_message(formats.OP_BEGIN_UPDATE))
        return await real_set(self, *args, **kwargs)

    monkeypatch.setattr(board_tools, "pause", pause)
    monkeypatch.setattr(BoardWriter, "set", busy_set)
    monkeypatch.chdir(sh.cwd)
    argv = ["board", "set", "a.b", "1", "--expect", "0", "--as", "ann", "--db", str(sh.db)]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_BUSY, err
    assert err.rstrip().endswith("so retry the same request")
    assert len(attempts) == 5
    assert paused == [replay_delay(ann_id, n, 0.2) for n in (1, 2, 3, 4)]

    attempts.clear()
    paused.clear()
    busy_for[0] = 2
    assert main(argv) == EXIT_OK
    assert len(attempts) == 3 and paused == [replay_delay(ann_id, n, 0.2) for n in (1, 2)]
    assert sh.json("board", "get", "a.b", "--as", "ann")["revision"] == 1


def test_project_shares_a_board_across_directories_and_is_kept(sh: Shell, tmp_path: Path):
    elsewhere = tmp_path / "scratch"
    elsewhere.mkdir()
    assert sh("board", "set", "plan.step", "1", "--as", "ann").returncode == EXIT_OK
    assert sh("session", "add", "bea", cwd=elsewhere).returncode == 0
    assert sh("board", "ls", "--as", "bea").returncode == EXIT_INVALID  # no project yet
    joined = sh.json("board", "ls", "--as", "bea", "--project", str(sh.cwd / "."))
    assert [e["key"] for e in joined["entries"]] == ["plan.step"]
    kept = sh.json("board", "ls", "--as", "bea")  # bound: no --project needed any more
    assert kept == joined
    unknown = sh("board", "ls", "--as", "bea", "--project", "project-nope")
    assert unknown.returncode == EXIT_INVALID
    assert "unknown project `project-nope`" in unknown.stderr


def test_a_termal_project_beside_the_database_is_the_sessions_board(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """TermAl's own board file (written by TermAl's code, scope ``project-main``) and a
    termal.sqlite naming ``project-main`` for a directory: a termal-tui session in that
    directory reads TermAl's board, and its writes land in TermAl's scope."""
    root = tmp_path / "checkout"
    (root / "src").mkdir(parents=True)  # no .git: TermAl's project alone decides
    state = tmp_path / "state"
    state.mkdir()
    db = state / "coordination.sqlite"
    shutil.copy(FIXTURES / "termal_board" / "coordination.sqlite", db)
    termal_state(state / "termal.sqlite", [project("project-main", "Main", root)])
    sh = Shell(db, root / "src", in_process=(monkeypatch, capsys))
    assert sh("session", "add", "ann").returncode == 0
    listed = sh.json("board", "ls", "--as", "ann")
    stored = sqlite3.connect(db).execute(
        "SELECT key FROM coordination_board_entries WHERE scope_id = 'project-main' "
        "AND value_json IS NOT NULL ORDER BY key"
    )
    assert [e["key"] for e in listed["entries"]] == [row[0] for row in stored]
    assert listed["entries"], "TermAl's fixture has live keys in project-main"
    header = sh("board", "ls", "--as", "ann").stdout.splitlines()[0]
    assert header.startswith("board of Main (project-main): generation ")
    wrote = sh.json("board", "set", "termal-tui.hello", "1", "--as", "ann")
    assert wrote["generation"] == listed["generation"] + 1


def test_an_unknown_outcome_is_exit_6_with_the_exact_command_to_rerun(
    sh: Shell, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    from termal_tui.cli import main
    from termal_tui.store.board.writer import BoardWriter
    from termal_tui.store.errors import CommitOutcomeUnknownError

    async def lost(*_args: Any, **_kwargs: Any) -> Any:
        raise CommitOutcomeUnknownError("I/O error while committing coordination board update")

    monkeypatch.setattr(BoardWriter, "set", lost)
    monkeypatch.chdir(sh.cwd)
    code = main(["board", "set", "a.b", "1", "--as", "ann", "--db", str(sh.db)])
    assert code == EXIT_UNKNOWN
    err = capsys.readouterr().err
    assert (
        "board update receipt was not received; the write outcome is unknown. Retry the exact "
        "same request with the SAME idempotencyKey: a committed write replays as "
        "duplicate=true, an uncommitted one applies cleanly: I/O error while committing"
    ) in err
    assert re.search(
        r"run the exact same command again with --expect 0 --key cli-[0-9a-f]{32}", err
    )
