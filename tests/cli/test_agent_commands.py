"""The agents' CLI: sessions, send/ls/read/ack, wake and hook output, exit codes per class."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from termal_tui.agents.hooks import hook_output
from termal_tui.cli import main
from termal_tui.cli.common import (
    EXIT_BUSY,
    EXIT_CONFLICT,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
)
from termal_tui.cli.mail import derived_key
from tests.helpers import rows

STATES = "SELECT sequence, notification_disposition FROM mailbox_messages ORDER BY sequence"


@pytest.fixture
def run(db_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("COLUMNS", "200")

    def invoke(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main([*argv, "--db", str(db_path)])
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


@pytest.fixture
def pair(run) -> None:
    assert run("session", "add", "alice")[0] == EXIT_OK
    assert run("session", "add", "bob")[0] == EXIT_OK


def test_session_add_list_rm(run, db_path: Path):
    code, out, _ = run("session", "add", "alice", "--agent", "Claude")
    assert code == EXIT_OK and "added alice (session-" in out
    code, _, err = run("session", "add", "ALICE")
    assert code == EXIT_CONFLICT and "already exists" in err and "Traceback" not in err
    code, out, _ = run("session", "list", "--json")
    (alice,) = json.loads(out)
    assert alice["name"] == "alice" and alice["agent"] == "Claude" and alice["status"] == "idle"
    code, out, _ = run("session", "list")
    assert "alice" in out and alice["sessionId"] in out
    code, out, _ = run("session", "rm", "alice")
    assert code == EXIT_OK and "removed alice" in out
    assert run("session", "list", "--json")[1].strip() == "[]"
    assert not db_path.exists()  # nothing to leave: the coordination file is not created


def test_session_list_counts_each_sessions_unread_mail(run, pair):
    run("send", "--as", "alice", "bob", "one")
    run("send", "--as", "alice", "bob", "two")
    listed = {s["name"]: s["unreadCount"] for s in json.loads(run("session", "list", "--json")[1])}
    assert listed == {"alice": 0, "bob": 2}
    run("ack", "--as", "bob", "alice", "1")
    listed = {s["name"]: s["unreadCount"] for s in json.loads(run("session", "list", "--json")[1])}
    assert listed == {"alice": 0, "bob": 1}


def test_session_rm_marks_its_mailboxes_left(run, pair, db_path: Path):
    run("send", "--as", "alice", "bob", "hello")
    code, out, _ = run("session", "rm", "bob")
    assert code == EXIT_OK and "left 1 mailbox(es)" in out
    assert rows(
        db_path, "SELECT display_name, left_at IS NOT NULL FROM mailbox_participants ORDER BY 1"
    ) == [
        ("alice", 0),
        ("bob", 1),
    ]


def test_send_derives_a_key_so_a_retried_command_is_a_duplicate(run, pair, db_path: Path):
    code, out, _ = run("send", "--as", "alice", "bob", "Please review PR 12.")
    assert code == EXIT_OK and "sent #1 to bob" in out and "durableButNotWoken" in out
    code, out, _ = run("send", "--as", "alice", "BOB", "Please review PR 12.")
    assert code == EXIT_OK and "already sent" in out
    code, out, _ = run("send", "--as", "alice", "bob", "Please review PR 12.", "--key", "again")
    assert code == EXIT_OK and "sent #2" in out
    code, out, _ = run("send", "--as", "alice", "bob", "-", "--json", stdin="from stdin\n")
    receipt = json.loads(out)
    assert receipt["sequence"] == 3 and receipt["resolvedFrom"] == "bob"
    assert rows(db_path, "SELECT idempotency_key FROM mailbox_messages ORDER BY sequence")[0] == (
        derived_key(receipt["sessionId"], "Please review PR 12.", None),
    )


def test_exit_codes_per_error_class(run, pair, db_path: Path, monkeypatch: pytest.MonkeyPatch):
    code, _, err = run("send", "--as", "alice", "alice", "hi")
    assert code == EXIT_INVALID and "is this session" in err
    code, _, err = run("send", "--as", "alice", "carol", "hi")
    assert code == EXIT_NOT_FOUND and "no root session" in err
    code, _, err = run("send", "--as", "nobody", "bob", "hi")
    assert code == EXIT_NOT_FOUND and "session add nobody" in err
    run("send", "--as", "alice", "bob", "one", "--key", "k")
    code, _, err = run("send", "--as", "alice", "bob", "two", "--key", "k")
    assert code == EXIT_CONFLICT and "already used" in err
    code, _, err = run("ack", "--as", "bob", "alice", "9")
    assert code == EXIT_INVALID and "exceeds latest sequence 1" in err
    code, _, err = run("read", "--as", "bob", "mailbox-00000000-0000-4000-8000-000000000000")
    assert code == EXIT_NOT_FOUND
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    monkeypatch.setenv("TERMAL_TUI_BUSY_TIMEOUT", "0.1")
    try:
        code, _, err = run("send", "--as", "alice", "bob", "blocked", "--key", "busy")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == EXIT_BUSY and ("try again" in err or "retry the same request" in err)
    assert "Traceback" not in err
    assert rows(db_path, "SELECT COUNT(*) FROM mailbox_messages") == [(1,)]


def test_ls_read_ack_for_humans_and_scripts(run, pair):
    run("send", "--as", "alice", "bob", "first \x1b[31mred\x1b[0m")
    run("send", "--as", "alice", "bob", "second")
    code, out, _ = run("ls", "--as", "bob")
    assert code == EXIT_OK and "alice" in out and "second" in out
    code, out, _ = run("read", "--as", "bob", "alice")
    assert "\x1b" not in out and "␛[31mred" in out  # agent-written escapes are shown, not run
    assert out.count("unread") == 2
    code, out, _ = run("ack", "--as", "bob", "alice", "1")
    assert code == EXIT_OK and "processed through #1" in out and "(was #0); 1 unread" in out
    code, out, _ = run("read", "--as", "bob", "alice")
    assert "second" in out and "first" not in out  # read starts after your cursor
    code, out, _ = run("read", "--as", "bob", "alice", "--after", "0", "--json")
    assert [m["sequence"] for m in json.loads(out)["messages"]] == [1, 2]
    code, out, _ = run("ack", "--as", "bob", "alice", "2", "--json")
    assert json.loads(out)["unreadCount"] == 0


def test_reading_or_acknowledging_from_the_command_line_consumes_a_pending_wake(
    run, pair, db_path: Path
):
    """An agent woken on its channel that reads or acknowledges with the command line
    (a Codex agent in its shell) has engaged, as through the tools: its next message
    wakes it again instead of riding a wake it has already answered (before: every later
    send said durableButNotWoken and the listener pushed nothing until the re-offer)."""
    from termal_tui.agents.registry import Registry

    run("send", "--as", "alice", "bob", "first")
    _, out, _ = run("ls", "--as", "bob", "--json")
    mailbox = json.loads(out)["mailboxes"][0]["id"]
    registry = Registry.beside(db_path)
    bob = registry.resolve_own("bob").id
    registry.mark_wake_pushed(bob, mailbox, 1)  # what bob's channel server did
    assert registry.has_pending_wake(bob, mailbox, 2)
    assert run("ack", "--as", "bob", "alice", "1")[0] == EXIT_OK
    assert not registry.has_pending_wake(bob, mailbox, 2)
    run("send", "--as", "alice", "bob", "second")
    registry.mark_wake_pushed(bob, mailbox, 2)
    assert run("read", "--as", "bob", "alice")[0] == EXIT_OK
    assert not registry.has_pending_wake(bob, mailbox, 3)
    registry.close()


def test_wake_prints_each_wake_once_and_nothing_when_there_is_nothing(run, pair, db_path: Path):
    code, out, _ = run("wake", "--session", "bob")
    assert (code, out) == (EXIT_OK, "")  # no database yet
    run("send", "--as", "alice", "bob", "SECRET one")
    run("send", "--as", "alice", "bob", "SECRET two")
    code, out, _ = run("wake", "--session", "bob")
    assert code == EXIT_OK and out.startswith("[TermAl mailbox notification]")
    assert "2 unread message(s)" in out and "SECRET" not in out
    assert rows(db_path, STATES) == [(1, "deliveredToIdleSession"), (2, "deliveredToIdleSession")]
    assert run("wake", "--session", "bob")[1] == ""
    code, out, _ = run("wake", "--session", "bob", "--boot", "--json")
    assert json.loads(out)["prompt"].startswith("[TermAl mailbox notification]")


def test_hook_prompt_adds_context_and_records_the_turn(run, pair, db_path: Path):
    run("send", "--as", "alice", "bob", "SECRET")
    _code, out, _ = run("hook", "prompt", "--session", "bob", stdin='{"prompt": "go"}')
    document = json.loads(out)
    context = document["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert "1 unread message(s)" in context["additionalContext"] and "SECRET" not in out
    assert rows(db_path, STATES) == [(1, "deliveredToIdleSession")]
    # bob is in a turn now: a send says so honestly
    _code, out, _ = run("send", "--as", "alice", "bob", "while busy", "--json")
    assert json.loads(out)["notificationDisposition"] == "queuedBehindActiveTurn"


def test_hook_stop_blocks_while_mail_waits_then_lets_go(run, pair):
    run("hook", "prompt", "--session", "bob", stdin="{}")
    run("send", "--as", "alice", "bob", "new while working")
    code, out, _ = run("hook", "stop", "--session", "bob", stdin='{"stop_hook_active": false}')
    block = json.loads(out)
    assert block["decision"] == "block" and "1 unread message(s)" in block["reason"]
    # Woken but not acknowledged: one reminder, then (stop_hook_active) it may stop.
    code, out, _ = run("hook", "stop", "--session", "bob", stdin='{"stop_hook_active": false}')
    assert json.loads(out)["decision"] == "block" and "termal_acknowledge_mailbox" in out
    code, out, _ = run("hook", "stop", "--session", "bob", stdin='{"stop_hook_active": true}')
    assert (code, out) == (EXIT_OK, "")
    code, out, _ = run("send", "--as", "alice", "bob", "after the turn", "--json")
    assert json.loads(out)["notificationDisposition"] == "durableButNotWoken"  # idle again
    run("ack", "--as", "bob", "alice", "1")
    run("hook", "stop", "--session", "bob", stdin="{}")  # delivers #2's wake


def test_hook_session_start_recovers_every_unread_mailbox(run, pair, db_path: Path):
    run("session", "add", "carol")
    run("send", "--as", "alice", "bob", "a")
    run("send", "--as", "carol", "bob", "c")
    run("wake", "--session", "bob")  # delivered once, then the agent crashed
    _code, out, _ = run("hook", "session-start", "--session", "bob", stdin="not json")
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert context["additionalContext"].count("[TermAl mailbox notification]") == 2


def test_hook_output_shapes():
    assert hook_output("prompt", [], False, False) is None
    assert hook_output("stop", [], False, False) is None
    assert hook_output("stop", [], True, True) is None
    assert hook_output("stop", ["p1", "p2"], True, True) == {
        "decision": "block",
        "reason": "p1\n\np2",
    }
    assert hook_output("prompt", ["p"], True, False) == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "p"}
    }


def test_mcp_without_the_sdk_says_how_to_install_it(run, monkeypatch: pytest.MonkeyPatch):
    import builtins

    real_import = builtins.__import__

    def no_mcp(name: str, *args: object, **kwargs: object):
        if name == "termal_tui.agents.mcp_server":
            raise ImportError("No module named 'mcp'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mcp)
    code, _, err = run("mcp", "--session", "alice", "--register")
    assert code != 0 and "pip install 'termal-tui[mcp]'" in err


def test_a_wrong_database_path_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    directory = tmp_path / "docs"
    directory.mkdir()
    directory.chmod(0o755)
    notes = directory / "notes.txt"
    notes.write_text("my notes\n")
    notes.chmod(0o644)
    for argv in (
        ["mcp", "--session", "alice", str(notes)],
        ["session", "add", "alice", "--db", str(notes)],
    ):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == EXIT_INVALID and "is not a SQLite database" in err, err
    assert notes.read_text() == "my notes\n" and oct(notes.stat().st_mode & 0o777) == "0o644"
    assert oct(directory.stat().st_mode & 0o777) == "0o755"
    assert [p.name for p in directory.iterdir()] == ["notes.txt"]
    # Reads against a registry that does not exist create nothing either.
    code = main(["send", "--as", "alice", "bob", "hi", "--db", str(tmp_path / "none" / "c.sqlite")])
    assert code == EXIT_NOT_FOUND and not (tmp_path / "none").exists()


@pytest.mark.parametrize("columns", [50, 80, 120])
def test_ids_are_whole_at_any_width(run, pair, monkeypatch: pytest.MonkeyPatch, columns: int):
    code, out, _ = run("send", "--as", "alice", "bob", "a fairly long first message " * 3, "--json")
    mailbox = json.loads(out)["mailboxId"]
    monkeypatch.setenv("COLUMNS", str(columns))
    for argv in (("ls", "--as", "bob"), ("session", "list")):
        code, out, _ = run(*argv)
        assert code == EXIT_OK
        assert all(len(line) <= columns for line in out.splitlines()), out
    assert mailbox in run("ls", "--as", "bob")[1]  # never cut: it is what you copy
    assert "session-" in run("session", "list")[1]


def test_read_shows_your_own_messages_as_the_peer_processed_them(run, pair):
    run("send", "--as", "alice", "bob", "for bob")
    code, out, _ = run("read", "--as", "alice", "bob", "--after", "0")
    assert code == EXIT_OK and "unread" in out  # bob has not processed it yet
    run("ack", "--as", "bob", "alice", "1")
    code, out, _ = run("read", "--as", "alice", "bob", "--after", "0")
    assert "processed" in out and "unread" not in out


def test_history_with_a_removed_peer_stays_readable_by_name(run, pair):
    run("send", "--as", "alice", "bob", "before bob left")
    run("session", "rm", "bob")
    code, out, err = run("read", "--as", "alice", "bob", "--after", "0")
    assert code == EXIT_OK, err
    assert "before bob left" in out
    code, _, err = run("send", "--as", "alice", "bob", "after")
    assert code == EXIT_NOT_FOUND and "was removed" in err


def test_a_hook_registers_its_session_only_when_told_to(run, pair):
    """A typo must not create a peer: an unknown name is an error naming the known ones."""
    code, out, err = run("hook", "prompt", "--session", "hbb", stdin="{}")
    assert code == EXIT_NOT_FOUND and out == ""
    assert "no registered session is named `hbb`" in err and "alice, bob" in err
    assert "--register" in err
    names = [s["name"] for s in json.loads(run("session", "list", "--json")[1])]
    assert names == ["alice", "bob"]
    code, out, _ = run("hook", "session-start", "--session", "newcomer", "--register")
    assert (code, out) == (EXIT_OK, "")
    names = [s["name"] for s in json.loads(run("session", "list", "--json")[1])]
    assert names == ["alice", "bob", "newcomer"]


def test_a_removed_name_is_not_registered_again_by_a_hook_or_server(run, pair):
    run("session", "rm", "bob")
    for argv in (("hook", "stop", "--session", "bob"), ("mcp", "--session", "bob")):
        code, _out, err = run(*argv, stdin="{}")
        assert code == EXIT_NOT_FOUND and "was removed at" in err, (argv, err)
        assert "known sessions: alice" in err
    assert [s["name"] for s in json.loads(run("session", "list", "--json")[1])] == ["alice"]


def test_a_new_session_closes_a_turn_its_crashed_predecessor_left_open(run, pair):
    run("hook", "prompt", "--session", "bob", stdin="{}")  # ... and the agent died mid-turn
    _code, out, _ = run("send", "--as", "alice", "bob", "m1", "--json")
    assert json.loads(out)["notificationDisposition"] == "queuedBehindActiveTurn"
    run("hook", "session-start", "--session", "bob", stdin="{}")
    _code, out, _ = run("send", "--as", "alice", "bob", "m2", "--json")
    assert json.loads(out)["notificationDisposition"] == "durableButNotWoken"
