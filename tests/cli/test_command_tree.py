"""One command tree: typos are usage errors with a suggestion, --db everywhere, one
exit-code table, help that fits 80 columns."""

from __future__ import annotations

import dataclasses
import io
import os
import subprocess
import sys

import pytest

from termal_tui.cli import COMMANDS, main
from termal_tui.cli.common import EXIT_INVALID, EXIT_NOT_FOUND, EXIT_USAGE
from termal_tui.cli.viewer import _THRESHOLD_FLAGS
from termal_tui.views.findings import Thresholds


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "near"),
    [(["sesion"], "session"), (["sesion", "list"], "session"), (["doctr"], "doctor")],
)
def test_a_mistyped_command_is_a_usage_error_that_names_it_and_suggests(capsys, argv, near):
    code, out, err = _run(capsys, *argv)
    assert code == EXIT_USAGE and out == ""
    assert f"unknown command '{argv[0]}' (did you mean '{near}'?)" in err
    assert "Traceback" not in err


def test_a_word_near_no_command_is_still_a_usage_error(capsys):
    code, _out, err = _run(capsys, "zzzqqq")
    assert code == EXIT_USAGE and "unknown command 'zzzqqq'" in err and "did you mean" not in err


def test_a_missing_database_path_is_not_found_not_a_usage_error(capsys, tmp_path):
    # (A path where a file could appear opens the viewer waiting for it: the first run.
    # Under a regular file nothing can appear: that is "not found".)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, _out, err = _run(capsys, str(blocker / "nope.sqlite"))
    assert code == EXIT_NOT_FOUND and "does not exist" in err


def test_root_help_lists_every_command_once_with_the_exit_codes_and_fits_80_columns():
    env = dict(os.environ, COLUMNS="80", NO_COLOR="1", TERM="dumb")
    done = subprocess.run(
        [sys.executable, "-m", "termal_tui", "--help"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    for name, (_module, line) in COMMANDS.items():
        assert sum(text.split()[:1] == [name] for text in lines) == 1, name
        assert line in done.stdout
    assert "exit codes" in done.stdout and "130  interrupted" in done.stdout


@pytest.mark.parametrize("command", sorted(set(COMMANDS)))
def test_every_command_has_help_with_the_table_and_db(command):
    env = dict(os.environ, COLUMNS="80", NO_COLOR="1", TERM="dumb")
    argv = {"session": [command, "add"], "db": [command, "copy"]}.get(command, [command])
    done = subprocess.run(
        [sys.executable, "-m", "termal_tui", *argv, "--help"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    if command == "db":  # two databases: SRC and DST, each a path or a URL
        assert "SRC" in done.stdout and "DST" in done.stdout
    else:
        assert "--db" in done.stdout
    assert "2  usage: the command line is wrong" in done.stdout
    assert max(map(len, done.stdout.splitlines())) <= 80


USAGE_ERRORS = [
    ["--interval", "-3"],
    ["doctor", "--lagging-after", "-1"],
    ["export"],  # --mailbox is required
    ["export", "--mailbox", "m", "--from", "0"],
    ["export", "--mailbox", "m", "--from", "5", "--to", "2"],
    ["session"],
    ["session", "add"],
    ["send", "--as", "a"],
    ["ls"],
    ["read", "--as", "a", "m", "--limit", "x"],
    ["ack", "--as", "a", "m", "-1"],
    ["wake"],
    ["hook", "lunch", "--session", "a"],
    ["mcp"],
    ["db"],
    ["db", "copy", "a.sqlite"],
    ["db", "copy", "a.sqlite", "a.sqlite"],
    ["doctor", "a.sqlite", "--db", "b.sqlite"],
    ["--demo", "--db", "x.sqlite"],
]


@pytest.mark.parametrize("argv", USAGE_ERRORS, ids=" ".join)
def test_a_usage_error_exits_2_in_every_command(capsys, argv):
    code, _out, err = _run(capsys, *argv)
    assert code == EXIT_USAGE, err
    assert "Traceback" not in err and "error:" in err


def test_no_other_failure_exits_2(capsys, tmp_path, monkeypatch):
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database")
    monkeypatch.setattr("sys.stdin", io.StringIO("{}"))
    failures = [
        ["doctor", "--db", str(garbage)],
        ["export", "--db", str(garbage), "--mailbox", "m"],
        ["session", "list", "--db", str(garbage)],
        ["send", "--as", "a", "b", "hi", "--db", str(garbage)],
        ["ls", "--as", "a", "--db", str(garbage)],
        ["wake", "--session", "a", "--db", str(garbage)],
        ["hook", "prompt", "--session", "a", "--db", str(garbage)],
        ["--db", str(garbage)],
    ]
    for argv in failures:
        code, _out, err = _run(capsys, *argv)
        assert code == EXIT_INVALID, (argv, err)
        assert "is not a SQLite database" in err, (argv, err)


def test_db_works_in_every_command(capsys, tmp_path):
    """--db names the database for every command: a missing one is named in the error."""
    blocker = tmp_path / "absent"
    blocker.write_text("")  # nothing can appear below it (else the viewer waits for it)
    missing = blocker / "coordination.sqlite"
    for argv in (["doctor"], ["export", "--mailbox", "m"], ["session", "rm", "x"], []):
        code, _out, err = _run(capsys, *argv, "--db", str(missing))
        assert str(missing) in err or "no registered session" in err, (argv, err)
        assert code in (EXIT_NOT_FOUND,), (argv, code, err)


def test_viewer_threshold_defaults_are_the_health_modules():
    defaults = Thresholds()
    for _flag, field, _meaning, default in _THRESHOLD_FLAGS:
        assert getattr(defaults, field) == default
    assert {f.name for f in dataclasses.fields(Thresholds)} == {f[1] for f in _THRESHOLD_FLAGS}


@pytest.mark.parametrize(
    "argv",
    [
        ["session", "add", "alice", "--db", "mysql://u@127.0.0.1/db"],
        ["mysql://u@127.0.0.1/db"],  # the viewer
        ["board", "ls", "--as", "a", "--db", "mysql://127.0.0.1/db"],
        ["doctor", "--db", "sqlite://x"],
        ["serve", "--db", "mysql://127.0.0.1/db"],  # serve takes postgresql:// itself
    ],
)
def test_a_database_that_looks_like_a_url_is_never_created_as_a_path(tmp_path, argv):
    done = subprocess.run(
        [sys.executable, "-m", "termal_tui", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TERMAL_HOME": str(tmp_path / "home")},
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "URL" in done.stderr and "nothing was created" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # no `postgresql:` folder, no registry


def test_termal_home_that_looks_like_a_url_is_refused(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "termal_tui", "doctor"],  # session takes one (the registry's)
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TERMAL_HOME": "mysql://127.0.0.1/db"},
        timeout=60,
    )
    assert done.returncode == 2 and "$TERMAL_HOME is a mysql:// URL" in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["session", "list"], ["session", "list", "--json"]])
def test_a_reader_that_closes_our_output_ends_it_quietly(tmp_path, argv):
    """``termal-tui … | head``: the pipe's reader is gone before we write. No traceback,
    no "unexpected failure", the code a shell's pipefail knows (SIGPIPE's)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "termal_tui", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "TERMAL_HOME": str(tmp_path)},
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141
