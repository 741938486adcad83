"""The mailbox and session commands on a PostgreSQL URL, through the command line (its
``main()``; one test runs real processes): session, send, ls, read, ack and wake work,
with the session registry in that database; doctor checks the server and the role and
export writes the same file as on SQLite; a malformed URL is one sentence and exit 2; no
password is ever printed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from tests.cli.conftest import Cli
from tests.helpers import rows


def _cli(tmp_path, *argv: str) -> subprocess.CompletedProcess[str]:
    """A real ``termal-tui`` process (the other tests run ``main()`` in this one)."""
    return subprocess.run(
        [sys.executable, "-m", "termal_tui", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TERMAL_HOME": str(tmp_path / "home"), "NO_COLOR": "1"},
        timeout=60,
        check=False,
    )


def test_send_ls_read_ack_and_wake_on_a_postgresql_url(tmp_path, pg_url, cli):
    for name in ("alice", "bob"):
        added = cli("session", "add", name, "--db", pg_url)
        assert added.returncode == 0, added.stderr
    sent = cli("send", "--as", "alice", "--db", pg_url, "bob", "hello over pg")
    assert sent.returncode == 0, sent.stderr
    assert "sent #1 to bob" in sent.stdout
    listed = cli("ls", "--as", "bob", "--db", pg_url)
    assert listed.returncode == 0 and "alice" in listed.stdout
    read = cli("read", "--as", "bob", "--db", pg_url, "alice")
    assert read.returncode == 0 and "hello over pg" in read.stdout
    woken = cli("wake", "--session", "bob", "--db", pg_url, "--json")
    assert woken.returncode == 0 and "[TermAl mailbox notification]" in woken.stdout
    assert cli("wake", "--session", "bob", "--db", pg_url).stdout == ""  # delivered
    acked = cli("ack", "--as", "bob", "--db", pg_url, "alice", "1")
    assert acked.returncode == 0 and "processed through #1" in acked.stdout
    assert not (tmp_path / "postgresql:").exists()
    # The sessions are in the database, not in a local registry file.
    assert not (tmp_path / "home").exists()


def test_the_session_commands_keep_the_registry_in_the_database(tmp_path, pg_url, cli):
    """$TERMAL_HOME may be the URL itself; every command then shares one registry, as
    every hub on the database does."""
    added = cli("session", "add", "alice", home=pg_url)
    assert added.returncode == 0 and added.stdout.startswith("added alice (session-")
    assert cli("session", "add", "bob", "--db", pg_url).returncode == 0
    twin = cli("session", "add", "аlice", home=pg_url)  # Cyrillic а
    assert twin.returncode == 4, twin.stderr  # conflict
    assert "a session named `alice` already exists" in twin.stderr
    listed = cli("session", "list", "--json", home=pg_url)
    assert listed.returncode == 0, listed.stderr
    assert [(s["name"], s["unreadCount"]) for s in json.loads(listed.stdout)] == [
        ("alice", 0),
        ("bob", 0),
    ]  # no mail was ever sent: no mailbox tables, nothing unread
    assert cli("send", "--as", "alice", "bob", "hi", home=pg_url).returncode == 0
    listed = cli("session", "list", "--json", "--db", pg_url)
    assert [s["unreadCount"] for s in json.loads(listed.stdout)] == [0, 1]
    token = cli("session", "token", "bob", home=pg_url)
    assert token.returncode == 0 and token.stdout.startswith("ttk_")
    assert token.stdout.strip() not in str(rows(pg_url, "SELECT * FROM session_tokens"))
    listed = cli("session", "list", "--json", home=pg_url)
    assert [s["hasToken"] for s in json.loads(listed.stdout)] == [False, True]
    revoked = cli("session", "token", "bob", "--revoke", home=pg_url)
    assert revoked.returncode == 0 and "revoked its token" in revoked.stdout
    removed = cli("session", "rm", "bob", home=pg_url)
    assert removed.returncode == 0, removed.stderr
    assert "left 1 mailbox(es)" in removed.stdout
    gone = cli("send", "--as", "alice", "bob", "again", home=pg_url)
    assert gone.returncode != 0 and "was removed" in gone.stderr


def test_hooks_on_a_postgresql_url_record_turns_and_hand_over_wakes(tmp_path, pg_url, cli):
    """A hook on the database's URL: the turn and the hook run go to the registry in the
    database, and the wake for waiting mail is the hook's document, delivered once."""
    for name in ("alice", "bob"):
        assert cli("session", "add", name, home=pg_url).returncode == 0
    assert cli("send", "--as", "alice", "bob", "hook me", home=pg_url).returncode == 0
    started = _hook(cli, pg_url, "prompt", "bob")
    assert started.returncode == 0, started.stderr
    assert "[TermAl mailbox notification]" in started.stdout and "from alice" in started.stdout
    assert rows(pg_url, "SELECT turn_started_at IS NOT NULL FROM sessions WHERE name = 'bob'") == [
        (True,)
    ]
    assert rows(pg_url, "SELECT count(*) FROM notifier_seen") == [(1,)]
    again = _hook(cli, pg_url, "prompt", "bob")  # delivered once: not woken again
    assert again.returncode == 0 and "[TermAl mailbox notification]" not in again.stdout
    assert cli("ack", "--as", "bob", "alice", "1", home=pg_url).returncode == 0
    stopped = _hook(cli, pg_url, "stop", "bob")
    assert stopped.returncode == 0 and stopped.stdout == ""
    assert rows(pg_url, "SELECT turn_started_at FROM sessions WHERE name = 'bob'") == [(None,)]
    unknown = _hook(cli, pg_url, "prompt", "carol")  # a typo never registers a peer
    assert unknown.returncode == 3 and "no registered session is named `carol`" in unknown.stderr


def _hook(cli: Cli, url: str, event: str, session: str) -> subprocess.CompletedProcess[str]:
    return cli("hook", event, "--session", session, "--db", url, stdin="{}")


@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--db", "{url}"],
        ["export", "--db", "{url}", "--mailbox", "mailbox-x"],
    ],
)
def test_doctor_and_export_on_an_unreachable_server_are_busy_in_one_sentence(tmp_path, argv):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://alice:s3cret@127.0.0.1:{port}/db"
    done = _cli(tmp_path, *[part.format(url=url) for part in argv])
    assert done.returncode == 5, done.stderr
    assert "busy" in done.stderr and "postgresql://alice:***@127.0.0.1" in done.stderr
    assert "s3cret" not in done.stderr and "Traceback" not in done.stderr
    # The failure is one sentence; beside it, the warning that argv shows the password.
    warning, *lines = done.stderr.strip().splitlines()
    assert warning.startswith("termal-tui: warning:") and len(lines) == 1


@pytest.mark.parametrize(
    "url",
    ["postgresql://alice:s3cret@[oops/db", "postgresql://alice:s3cret@host:port/db"],
)
def test_a_malformed_url_is_one_sentence_and_exit_2(tmp_path, url, cli):
    done = cli("send", "--as", "alice", "--db", url, "bob", "hi")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a valid postgresql:// URL" in lines[0]
    assert "s3cret" not in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["send", "--as", "alice", "--db", "{url}", "bob", "hi"],
        ["session", "list", "--db", "{url}"],
        ["serve", "--db", "{url}", "--port", "0"],  # before it listens: nothing served
    ],
)
def test_an_unreachable_server_is_busy_and_hides_the_password(tmp_path, argv, cli):
    url = "postgresql://alice:s3cret@127.0.0.1:1/db"
    done = cli(*[part.format(url=url) for part in argv])
    assert done.returncode == 5, done.stderr  # busy: nothing committed, retry
    assert "s3cret" not in done.stderr and "alice:***@" in done.stderr
    assert "holds a password, which every user of this host can read" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_password_only_in_the_environment_is_not_warned_about(tmp_path, cli):
    url = "postgresql://alice:s3cret@127.0.0.1:1/db"
    quiet = cli("session", "list", home=url)
    bare = cli("session", "list", "--db", "postgresql://alice@127.0.0.1:1/db")
    for done in (quiet, bare):
        assert done.returncode == 5, done.stderr
        assert "process list" not in done.stderr and "s3cret" not in done.stderr


def _owner_and_reader(cli: Cli, pg_url, pg_server) -> tuple[str, str]:
    """Two sessions with mail on ``pg_url`` and a role that may only read it."""
    for name in ("alice", "bob"):
        assert cli("session", "add", name, "--db", pg_url).returncode == 0
    for body in ("one", "two"):
        done = cli("send", "--as", "alice", "--db", pg_url, "bob", body)
        assert done.returncode == 0, done.stderr
    schema = pg_url.rsplit("%3D", 1)[1]
    role = f"doctor_{schema}"
    pg_server.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'hush'", "tests")
    pg_server.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}", "tests")
    pg_server.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}", "tests")
    url = pg_server.url("tests", user=role, password="hush") + f"?options=-csearch_path%3D{schema}"
    return role, url


def test_doctor_on_a_url_checks_the_server_and_a_select_only_role(tmp_path, pg_url, pg_server, cli):
    role, url = _owner_and_reader(cli, pg_url, pg_server)
    done = cli("doctor", url)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert f"role {role} may only read" in text and "Nothing is stuck" in text
    assert "hush" not in done.stdout + done.stderr
    as_json = cli("doctor", "--json", url)
    document = json.loads(as_json.stdout)
    assert document["database"]["role"] == role
    assert document["database"]["readOnlyTransactions"] is True
    assert document["database"]["roleCanWrite"] is False
    assert document["database"]["problems"] == []
    owner = json.loads(cli("doctor", "--json", "--db", pg_url).stdout)
    assert owner["database"]["roleCanWrite"] is True
    assert owner["unread"] == document["unread"] == 2
    # A table the role may not read is named, with what it breaks.
    schema = pg_url.rsplit("%3D", 1)[1]
    pg_server.execute(f"REVOKE SELECT ON {schema}.channel_listeners FROM {role}", "tests")
    narrowed = json.loads(cli("doctor", "--json", url).stdout)
    assert narrowed["database"]["problems"] == [
        f"the role {role} may not read the table channel_listeners: who listens for "
        "wake-ups cannot be shown"
    ]


def test_export_on_a_url_writes_a_private_file_as_on_sqlite(tmp_path, pg_url, pg_server, cli):
    _role, url = _owner_and_reader(cli, pg_url, pg_server)
    listed = cli("ls", "--as", "bob", "--db", pg_url)
    mailbox = listed.stdout.split()[-1]
    out = tmp_path / "export.jsonl"
    done = cli("export", url, "--mailbox", mailbox, "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert out.stat().st_mode & 0o777 == 0o600
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["body"] for line in lines] == ["one", "two"]
    assert [line["processed"] for line in lines] == [False, False]
    markdown = cli("export", url, "--mailbox", mailbox, "--format", "markdown")
    heading = markdown.stdout.splitlines()[0]
    assert markdown.returncode == 0 and heading in ("# alice ⇄ bob", "# bob ⇄ alice")
