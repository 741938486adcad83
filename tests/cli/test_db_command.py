"""``termal-tui db copy SRC DST`` through the command line (``main()``; one test runs a
real process): a short summary and exit 0 both ways, "already up to date" on a rerun,
and every refusal as one sentence with the table's exit code (never a traceback, never a
password)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from termal_tui.cli.common import (
    EXIT_BUSY,
    EXIT_CONFLICT,
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "termal_tui", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TERMAL_HOME": str(tmp_path / "home"), "NO_COLOR": "1"},
        timeout=60,
        check=False,
    )


def _termal(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    directory.mkdir(mode=0o700)
    shutil.copy(FIXTURES / name / "coordination.sqlite", directory / "coordination.sqlite")
    return directory / "coordination.sqlite"


def _one_sentence(done: subprocess.CompletedProcess[str]) -> str:
    assert done.stdout == ""
    assert done.stderr.startswith("termal-tui: error: ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    return done.stderr


def test_copy_into_postgresql_and_back_then_again(tmp_path, pg_url, cli):
    source = _termal(tmp_path, "termal_board_ours")
    into = cli("db", "copy", str(source), pg_url)
    assert into.returncode == 0, into.stderr
    first = into.stdout.splitlines()[0]
    assert first.startswith(f"copied {source} to {pg_url}: ")
    assert "verified row for row" in first
    counted = dict(line.split() for line in into.stdout.splitlines()[1:])
    assert counted["coordination_board_idempotency"] == "13"
    assert counted["mailbox_messages"] == "0"

    again = cli("db", "copy", str(source), pg_url)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"{pg_url} is already up to date: ")
    assert "nothing was changed" in again.stdout

    back = tmp_path / "out" / "coordination.sqlite"
    out = cli("db", "copy", pg_url, "out/coordination.sqlite")
    assert out.returncode == 0, out.stderr
    assert back.exists()
    again = cli("db", "copy", pg_url, str(back))
    assert again.returncode == 0
    assert again.stdout.startswith(f"{back} is already up to date: ")


def test_refusals_are_one_sentence_with_the_tables_code(tmp_path, pg_url, cli):
    source = _termal(tmp_path, "termal_board")
    other = _termal(tmp_path, "termal_board_ours")
    assert cli("db", "copy", str(other), pg_url).returncode == 0

    refused = cli("db", "copy", str(source), pg_url)
    assert refused.returncode == EXIT_CONFLICT
    assert "already holds other data" in _one_sentence(refused)

    nowhere = pg_url.replace("/tests?", "/nodb?")
    missing = cli("db", "copy", str(source), nowhere)
    assert missing.returncode == EXIT_FAILED
    assert 'database "nodb" does not exist' in _one_sentence(missing)

    cases = [
        (
            ("db", "copy", str(tmp_path / "missing.sqlite"), pg_url),
            EXIT_NOT_FOUND,
            "does not exist",
        ),
        (("db", "copy", str(source), str(source)), EXIT_USAGE, "the same database"),
        (("db", "copy", "ftp://host/db", pg_url), EXIT_USAGE, "SRC is a ftp:// URL"),
        (("db", "copy", str(source), "postgresql://h:port/db"), EXIT_USAGE, "DST is not a valid"),
        (("db", "copy", str(tmp_path), pg_url), EXIT_INVALID, "is a directory"),
    ]
    for argv, code, words in cases:
        done = cli(*argv)
        assert done.returncode == code, (argv, done.stderr)
        assert words in _one_sentence(done), done.stderr
    assert not (tmp_path / "ftp:").exists()


def test_nul_text_into_postgresql_is_refused_by_name(tmp_path, pg_url, cli):
    source = _termal(tmp_path, "termal_basic")
    done = cli("db", "copy", str(source), pg_url)
    assert done.returncode == EXIT_INVALID
    sentence = _one_sentence(done)
    assert "holds the NUL character (U+0000) in body" in sentence
    assert "nothing was copied" in sentence


def test_an_unreachable_server_is_busy_and_no_password_is_shown(tmp_path):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://termal:s3cret-pw@127.0.0.1:{port}/db"
    done = _cli(tmp_path, "db", "copy", str(_termal(tmp_path, "termal_board")), url)
    assert done.returncode == EXIT_BUSY
    assert "s3cret-pw" not in done.stderr + done.stdout
    assert "termal:***@127.0.0.1" in _one_sentence(done)


def test_a_destination_file_of_another_kind_is_refused_untouched(tmp_path, cli):
    import sqlite3

    stranger = tmp_path / "notes.sqlite"
    db = sqlite3.connect(stranger)
    db.execute("CREATE TABLE notes (x)")
    db.commit()
    db.close()
    before = stranger.read_bytes()
    done = cli("db", "copy", str(_termal(tmp_path, "termal_board")), str(stranger))
    assert done.returncode == EXIT_INVALID
    assert "not a TermAl coordination database" in _one_sentence(done)
    assert stranger.read_bytes() == before


@pytest.mark.parametrize("argv", [("db",), ("db", "copy"), ("db", "copy", "a")])
def test_usage(tmp_path, argv, cli):
    done = cli(*argv)
    assert done.returncode == EXIT_USAGE
    assert "usage: termal-tui db" in done.stderr


def test_the_registry_moves_and_the_summary_says_so(tmp_path, cli):
    source = str(tmp_path / "home" / "coordination.sqlite")
    for name in ("alice", "bob"):
        assert cli("session", "add", name, "--db", source).returncode == 0
    sent = cli("send", "--as", "alice", "--db", source, "bob", "hello")
    assert sent.returncode == 0, sent.stderr
    there = tmp_path / "there" / "coordination.sqlite"
    done = cli("db", "copy", source, str(there))
    assert done.returncode == 0, done.stderr
    assert "of the coordination tables and the session registry, in one" in done.stdout
    assert "  sessions " in done.stdout
    (there.with_name("termal-tui-sessions.sqlite")).unlink()
    again = cli("db", "copy", source, str(there))
    assert again.returncode == 0, again.stderr
    assert ": 2 rows of the session registry (the coordination tables were up to date)" in (
        again.stdout
    )
    assert "is already up to date" in cli("db", "copy", source, str(there)).stdout


def test_a_missing_database_or_role_is_one_sentence_and_not_busy(pg_url, cli):
    """libpq gives these refusals no SQLSTATE: told apart by the server's words, they are
    a failure (exit 7) that says what is missing, never the busy error (retrying will
    not help)."""
    nodb = pg_url.replace("/tests?", "/nodb?")
    norole = pg_url.replace("termal@", "nobody@", 1)
    assert nodb != pg_url and norole != pg_url
    for url, words in (
        (nodb, 'the database "nodb" does not exist on that server'),
        (norole, 'the role "nobody" does not exist on that server'),
    ):
        for argv in (
            ("session", "list", "--db", url),
            ("doctor", url),
            ("ls", "--db", url, "--as", "alice"),
        ):
            done = cli(*argv)
            assert done.returncode == EXIT_FAILED, (argv, done.stderr)
            sentence = _one_sentence(done)
            assert words in sentence and "busy" not in sentence, sentence
