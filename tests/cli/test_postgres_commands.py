"""The mailbox commands on a PostgreSQL URL, end to end through the real command line:
send, ls, read, ack and wake work; other commands say PostgreSQL is not yet supported
there; a malformed URL is one sentence and exit 2; no password is ever printed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _cli(tmp_path, *argv: str, home: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "termal_tui", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TERMAL_HOME": home or str(tmp_path / "home"), "NO_COLOR": "1"},
        timeout=60,
        check=False,
    )


def test_send_ls_read_ack_and_wake_on_a_postgresql_url(tmp_path, pg_url):
    for name in ("alice", "bob"):
        assert _cli(tmp_path, "session", "add", name).returncode == 0
    sent = _cli(tmp_path, "send", "--as", "alice", "--db", pg_url, "bob", "hello over pg")
    assert sent.returncode == 0, sent.stderr
    assert "sent #1 to bob" in sent.stdout
    listed = _cli(tmp_path, "ls", "--as", "bob", "--db", pg_url)
    assert listed.returncode == 0 and "alice" in listed.stdout
    read = _cli(tmp_path, "read", "--as", "bob", "--db", pg_url, "alice")
    assert read.returncode == 0 and "hello over pg" in read.stdout
    woken = _cli(tmp_path, "wake", "--session", "bob", "--db", pg_url, "--json")
    assert woken.returncode == 0 and "[TermAl mailbox notification]" in woken.stdout
    assert _cli(tmp_path, "wake", "--session", "bob", "--db", pg_url).stdout == ""  # delivered
    acked = _cli(tmp_path, "ack", "--as", "bob", "--db", pg_url, "alice", "1")
    assert acked.returncode == 0 and "processed through #1" in acked.stdout
    # $TERMAL_HOME may be the URL itself (the registry is then ~/.termal's: not here).
    assert not (tmp_path / "postgresql:").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--db", "{url}"],
        ["export", "--db", "{url}", "--mailbox", "mailbox-x"],
        ["session", "list", "--db", "{url}"],
        ["{url}"],
    ],
)
def test_other_commands_say_postgresql_is_not_yet_supported(tmp_path, argv):
    url = "postgresql://alice:s3cret@127.0.0.1:1/db"
    done = _cli(tmp_path, *[part.format(url=url) for part in argv])
    assert done.returncode == 2, done.stderr
    assert "PostgreSQL is not yet supported for" in done.stderr
    assert "s3cret" not in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "url",
    ["postgresql://alice:s3cret@[oops/db", "postgresql://alice:s3cret@host:port/db"],
)
def test_a_malformed_url_is_one_sentence_and_exit_2(tmp_path, url):
    done = _cli(tmp_path, "send", "--as", "alice", "--db", url, "bob", "hi")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a valid postgresql:// URL" in lines[0]
    assert "s3cret" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_server_is_busy_and_hides_the_password(tmp_path):
    assert _cli(tmp_path, "session", "add", "alice").returncode == 0
    assert _cli(tmp_path, "session", "add", "bob").returncode == 0
    url = "postgresql://alice:s3cret@127.0.0.1:1/db"
    done = _cli(tmp_path, "send", "--as", "alice", "--db", url, "bob", "hi")
    assert done.returncode == 5, done.stderr  # busy: nothing committed, retry
    assert "s3cret" not in done.stderr and "alice:***@" in done.stderr
