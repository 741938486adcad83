"""Hostile and broken files cannot hurt the person watching (issue: every field sanitised,
honest read-only claims, precise errors, one bad row never blinds the viewer)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from textual.widgets import OptionList

from termal_tui.core.models import MailboxMessage, MailboxParticipant, MailboxSummary
from termal_tui.core.sanitize import contains_terminal_escape, visible, visible_line
from termal_tui.store import open_reader, open_writer
from termal_tui.store import reader as reader_module
from termal_tui.store.errors import RetryableError, SchemaError
from termal_tui.tui import app as app_module
from termal_tui.tui.app import MailboxApp
from termal_tui.tui.render import card, message_row, participants_bar
from termal_tui.tui.screens.body import BodyScreen
from termal_tui.views.presentation import format_time
from tests.helpers import StepClock, counter_ids, execute, send
from tests.viewer_support import app_for, screen_text, settle, wait_for

# Writes the clipboard (OSC 52), plants a link (OSC 8), resets the terminal (ESC c),
# CSI through C1, bidi, invisible and tag characters, and markup.
HOSTILE = (
    "\x1b]52;c;cHduZWQ=\x07\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\\x1bc"
    "\x9b31m\u202egnp.exe\u200b\u2060\u00ad\U000e0049\U000e0067[bold]b[/][@click=app.quit]q[/]"
)
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u00ad\U000e0000-\U000e007f]")


def assert_inert(text: str, where: object = "") -> None:
    """No control or invisible character anywhere (lines are joined with newlines)."""
    for line in text.split("\n"):
        assert not CONTROL.search(line), (where, line[:200])
        assert not INVISIBLE.search(line), (where, line[:200])


# ------------------------------------------------------------------- sanitizer


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\u200bb", "a⟨U+200B⟩b"),
        ("a\u200cb\u200db", "a⟨U+200C⟩b⟨U+200D⟩b"),
        ("word\u2060joiner", "word⟨U+2060⟩joiner"),
        ("soft\u00adhyphen", "soft⟨U+00AD⟩hyphen"),
        ("\U000e0069\U000e0067nore", "⟨U+E0069⟩⟨U+E0067⟩nore"),
        ("x\ufe0f\ufe0f\ufe0f", "x\ufe0f⟨U+FE0F⟩⟨U+FE0F⟩"),  # variation-selector smuggling
        ("\u3164", "⟨U+3164⟩"),  # Hangul filler: blank but not whitespace
        ("\u2066x\u2069", "⟨LRI⟩x⟨PDI⟩"),
        ("\x1b]52;c;eA==\x07", "␛]52;c;eA==␇"),
    ],
)
def test_invisible_and_control_characters_become_visible(raw, shown):
    assert visible(raw) == shown
    assert contains_terminal_escape(raw)


@pytest.mark.parametrize(
    "kept",
    [
        "👩\u200d💻 pair",  # ZWJ inside an emoji sequence
        "👨\u200d👩\u200d👧",
        "🏳\ufe0f\u200d🌈",
        "❤\ufe0f",
        "e\u0301 cafe\u0301 ñ",  # combining marks
        "日本語 한국어 العربية",
        "👍🏽",
    ],
)
def test_ordinary_text_emoji_and_combining_marks_are_untouched(kept):
    assert visible(kept) == kept
    assert not contains_terminal_escape(kept)


def test_a_timestamp_that_does_not_parse_is_shown_as_stand_ins():
    shown = format_time("2026-01-01" + HOSTILE)
    assert_inert(shown)
    assert "␛]52" in shown


# ----------------------------------------- every displayed field of every model

FIELD_MODELS = (MailboxMessage, MailboxParticipant, MailboxSummary)


def _base_models() -> tuple[MailboxMessage, MailboxSummary]:
    participants = [
        MailboxParticipant(session_id="s-a", display_name="A", processed_through=1),
        MailboxParticipant(session_id="s-b", display_name="B", processed_through=0, left_at="t"),
    ]
    summary = MailboxSummary(
        id="mailbox-1",
        participants=participants,
        latest_sequence=2,
        unread_count=1,
        latest_message_preview="p",
        latest_message_at="2026-01-01T00:00:00+00:00",
    )
    message = MailboxMessage(
        id="m-1",
        mailbox_id="mailbox-1",
        sequence=2,
        sender_session_id="s-a",
        sender_name="A",
        target_session_id="s-b",
        target_name="B",
        created_at="2026-01-01T00:00:00+00:00",
        topic="t",
        state_stamp="st",
        body="body",
        idempotency_key="k",
        notification_state="durableButNotWoken",
        dispatch_outcome="durableButNotWoken",
    )
    return message, summary


def _string_fields(model: type) -> list[str]:
    """Every field whose annotation admits a str: generated, so new fields are covered."""
    return [field.name for field in model.fields() if "str" in field.type]


@pytest.mark.parametrize("model", FIELD_MODELS, ids=lambda m: m.__name__)
def test_every_string_field_of_every_displayed_model_renders_inert(model):
    fields = _string_fields(model)
    assert fields
    for field in fields:
        message, summary = _base_models()
        if model is MailboxMessage:
            message = message.replace(**{field: HOSTILE})
        elif model is MailboxSummary:
            summary = summary.replace(**{field: HOSTILE})
        else:
            hostile = summary.participants[0].replace(**{field: HOSTILE})
            summary = summary.replace(participants=[hostile, summary.participants[1]])
        rendered = [
            card(summary),
            participants_bar(summary),
            message_row(message, summary, expanded=False),
            message_row(message, summary, expanded=True),
        ]
        for content in rendered:
            assert_inert(content.plain, (model.__name__, field))


# ------------------------------------------------------------ hostile database


async def _hostile_database(path: Path) -> None:
    """A real demo-like file, then every TEXT column of every mailbox table gets the
    hostile suffix (ids and session ids consistently, so joins still hold)."""

    async def build() -> None:
        async with open_writer(path, clock=StepClock(), new_id=counter_ids()) as writer:
            for n in range(3):
                await send(writer, body=f"Message {n}. More text.", key=f"k{n}", topic="topic")
                await send(writer, sender="session-b", target="session-c", body="x", key=f"c{n}")

    await build()
    db = sqlite3.connect(path)
    for table in ("mailboxes", "mailbox_participants", "mailbox_messages"):
        for column in db.execute(f"PRAGMA table_info({table})").fetchall():
            name, kind = column[1], column[2]
            if kind != "TEXT":
                continue
            # CHECK (class = 'routine') refuses it: a file TermAl could not have written.
            with contextlib.suppress(sqlite3.IntegrityError):
                db.execute(f"UPDATE {table} SET {name} = COALESCE({name}, '') || ?", (HOSTILE,))
    db.commit()
    db.close()


async def test_every_screen_of_a_hostile_database_renders_no_control_characters(tmp_path):
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir()
    await _hostile_database(path)
    app = app_for(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert len(app.summaries) == 2
        seen = [screen_text(app)]
        for summary in list(app.summaries):
            app.open_mailbox(summary.id)
            await settle(app, pilot)
            view = app.active_view()
            assert view is not None and view.messages
            for message in view.messages:
                view.toggle(message.id)
            await pilot.pause()
            seen.append(screen_text(app))
            thread = view.query_one("#thread", OptionList)
            thread.highlighted = thread.get_option_index(view.messages[0].id)
            await pilot.press("f")
            await pilot.pause()
            assert isinstance(app.screen, BodyScreen)
            seen.append(screen_text(app))
            await pilot.press("escape")
            await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"open")
        await wait_for(lambda: "Open mailbox" in screen_text(app))  # the palette's hits
        seen.append(screen_text(app))
        assert app.is_running  # [@click=app.quit] never became an action
    for index, text in enumerate(seen):
        assert_inert(text, index)
    assert any("␛]52;c;" in text for text in seen)  # shown, not sent


def test_the_cli_quotes_database_text_visibly_and_capped(tmp_path):
    path = tmp_path / "coordination.sqlite"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE mailboxes (id TEXT); CREATE TABLE mailbox_participants (mailbox_id TEXT);"
        "CREATE TABLE mailbox_messages (id TEXT);"
    )
    db.execute("INSERT INTO meta VALUES ('coordination_schema_version', ?)", ("9" + HOSTILE * 20,))
    db.commit()
    db.close()
    result = subprocess.run(
        [sys.executable, "-m", "termal_tui", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 8  # invalid: not a coordination database
    assert "unsupported SQLite coordination schema version `9␛]52;c;" in result.stderr
    assert_inert(result.stderr.rstrip("\n"))
    assert len(result.stderr) < 700 and len(result.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------ one bad row


async def _two_mailboxes(path: Path) -> None:
    async def build() -> None:
        async with open_writer(path, clock=StepClock(), new_id=counter_ids()) as writer:
            for n in range(3):
                await send(writer, body=f"healthy {n}", key=f"h{n}")
            for n in range(3):
                await send(
                    writer, sender="session-c", target="session-b", body=f"b{n}", key=f"b{n}"
                )

    await build()


def _break_one_mailbox(path: Path) -> str:
    (broken,) = [
        row[0]
        for row in sqlite3.connect(path).execute(
            "SELECT mailbox_id FROM mailbox_messages WHERE sender_session_id = 'session-c' LIMIT 1"
        )
    ]
    execute(
        path,
        "UPDATE mailbox_messages SET body = x'ff00fe41', sender_name = CAST(x'4361726fff6c' AS TEXT) "
        "WHERE mailbox_id = ? AND sequence = 3",
        (broken,),
    )
    execute(
        path,
        "UPDATE mailbox_messages SET sequence = 1.5 WHERE mailbox_id = ? AND sequence = 1",
        (broken,),
    )
    execute(
        path,
        "UPDATE mailbox_participants SET display_name = CAST(x'ff' AS BLOB) "
        "WHERE mailbox_id = ? AND session_id = 'session-c'",
        (broken,),
    )
    return broken


async def test_undecodable_values_and_a_bad_sequence_never_blind_the_reader(tmp_path):
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir()
    await _two_mailboxes(path)
    broken = _break_one_mailbox(path)
    async with open_reader(path) as reader:
        summaries = await reader.list_mailboxes()
        assert len(summaries) == 2
        page = await reader.read_page(broken)
        by_sequence = {m.sequence: m for m in page.messages}
        assert by_sequence[3].body == "\\xff\x00\\xfeA" and by_sequence[3].unreadable is None
        assert by_sequence[3].sender_name == "Caro\\xffl"
        assert by_sequence[1].unreadable == "sequence '1.5' is not an integer"
        names = {p.display_name for s in summaries for p in s.participants}
        assert "\\xff" in names


async def test_the_viewer_shows_every_healthy_mailbox_and_marks_the_bad_row(tmp_path):
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir()
    await _two_mailboxes(path)
    broken = _break_one_mailbox(path)
    app = app_for(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        status = str(app.query_one("#index-status").render())
        assert "Paused" in status and "Stale" not in status
        assert len(app.summaries) == 2
        app.open_mailbox(broken)
        await settle(app, pilot)
        text = screen_text(app)
        assert "⚠ unreadable row #1" in text and "is not an integer" in text
        assert "Caro\\xffl" in text
        assert_inert(text)


# ---------------------------------------------------------- files, errors, sidecars


def _sidecars(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


def test_a_fifo_is_refused_at_once_with_one_sentence(tmp_path):
    fifo = tmp_path / "coordination.sqlite"
    os.mkfifo(fifo)
    result = subprocess.run(
        [sys.executable, "-m", "termal_tui", str(fifo)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 8  # invalid: not a coordination database
    assert "is a FIFO; a coordination database is a regular file" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


async def _wal_file(path: Path, termal: bool) -> None:
    if termal:
        await _two_mailboxes(path)
    else:
        db = sqlite3.connect(path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE notes (x)")
        db.execute("INSERT INTO notes VALUES (1)")
        db.commit()
        db.close()
    assert not Path(f"{path}-wal").exists()  # checkpointed on close


async def test_a_rejected_wal_file_leaves_no_sidecars(tmp_path):
    path = tmp_path / "d" / "other.sqlite"
    path.parent.mkdir()
    await _wal_file(path, termal=False)
    with pytest.raises(SchemaError, match="is a SQLite database but not a TermAl coordination"):
        async with open_reader(path):
            pass
    assert _sidecars(path) == []


async def test_a_truncated_wal_file_is_refused_as_damaged_and_leaves_no_sidecars(tmp_path):
    path = tmp_path / "d" / "coordination.sqlite"
    path.parent.mkdir()
    await _wal_file(path, termal=True)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(SchemaError, match=r"damaged SQLite database|not a TermAl coordination"):
        async with open_reader(path):
            pass
    assert _sidecars(path) == []


async def test_a_garbage_file_is_not_sqlite_and_never_opened(tmp_path):
    path = tmp_path / "d" / "coordination.sqlite"
    path.parent.mkdir()
    path.write_bytes(b"\x00" * 4096)
    with pytest.raises(SchemaError, match=r"is not a SQLite database$"):
        async with open_reader(path):
            pass
    assert _sidecars(path) == []


async def test_a_wal_database_in_a_read_only_directory_opens_as_a_labelled_snapshot(
    tmp_path, monkeypatch
):
    path = tmp_path / "d" / "coordination.sqlite"
    path.parent.mkdir()
    await _wal_file(path, termal=True)
    monkeypatch.setattr(reader_module, "directory_writable", lambda _path: False)
    async with open_reader(path) as reader:
        assert reader.snapshot is not None and "live refresh is off" in reader.snapshot
        assert len(await reader.list_mailboxes()) == 2
    assert _sidecars(path) == []  # immutable: no -wal, no -shm


def _locked(path: Path) -> sqlite3.Connection:
    """Another process holds an exclusive lock on a rollback-journal database."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("BEGIN EXCLUSIVE")
    return db


async def test_a_locked_database_is_busy_not_not_sqlite(tmp_path):
    path = tmp_path / "d" / "coordination.sqlite"
    path.parent.mkdir()
    await _two_mailboxes(path)
    lock = _locked(path)
    try:
        with pytest.raises(RetryableError, match=r"is busy .locked by another process.; nothing"):
            async with open_reader(path, busy_timeout_ms=50):
                pass
    finally:
        lock.rollback()
        lock.close()


async def test_the_viewer_started_on_a_locked_file_is_stale_then_recovers(tmp_path, monkeypatch):
    path = tmp_path / "d" / "coordination.sqlite"
    path.parent.mkdir()
    await _two_mailboxes(path)
    from termal_tui.views.live import RETRY_SECONDS
    from tests.viewer_support import advance

    monkeypatch.setattr(app_module, "READER_BUSY_TIMEOUT_MS", 20)
    lock = _locked(path)
    app = app_for(path)
    async with app.run_test(size=(120, 40)) as pilot:

        def status() -> str:
            return str(app.query_one("#index-status").render())

        await wait_for(lambda: "Stale" in status())  # the open waits out a real lock
        assert "is busy" in status() and "retrying" in status()
        lock.rollback()
        lock.close()
        await advance(app, pilot, RETRY_SECONDS)  # the retry (paused, too), not a key
        await settle(app, pilot)
        assert len(app.summaries) == 2
        assert "Paused" in str(app.query_one("#index-status").render())


async def test_a_tab_opened_while_locked_loads_by_itself_when_the_lock_goes(tmp_path):
    path = tmp_path / "d" / "coordination.sqlite"
    path.parent.mkdir()
    await _two_mailboxes(path)
    sqlite3.connect(path).execute("PRAGMA journal_mode=DELETE").fetchall()
    app = MailboxApp(path, poll_interval=0.3)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        mailbox = app.summaries[0].id
        lock = _locked(path)
        try:
            app.open_mailbox(mailbox)
            await settle(app, pilot)
            view = app.active_view()
            assert view is not None
            await wait_for(lambda: view.query_one("ThreadHeader").state == "stale")
            assert view.summary is None and not view.live
        finally:
            lock.rollback()
            lock.close()
        await wait_for(lambda: view.live)  # the view's own poll timer, not a key press
        await settle(app, pilot)
        assert view.live and view.summary is not None and len(view.messages) == 3


def test_visible_line_caps_after_making_everything_visible():
    shown = visible_line("\x1b" * 500, 20)
    assert len(shown) == 20 and shown.endswith("…") and "\x1b" not in shown


def _unprivileged() -> list[str] | None:
    """A command prefix that runs this Python as `nobody`, if this machine allows it (the
    real read-only-directory case cannot be made as root, who may write anywhere)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import termal_tui"], capture_output=True
    )
    return prefix if probe.returncode == 0 else None


@pytest.mark.skipif(_unprivileged() is None, reason="needs root and setpriv to drop privileges")
def test_a_real_read_only_directory_gives_a_snapshot_and_no_sidecars(tmp_path):
    base = Path(tempfile.mkdtemp(prefix="termal-ro-"))
    try:
        base.chmod(0o755)
        state = base / "state"
        state.mkdir()
        path = state / "coordination.sqlite"
        asyncio.run(_wal_file(path, termal=True))
        path.chmod(0o644)
        state.chmod(0o555)
        code = (
            "import asyncio\n"
            "from termal_tui.store import open_reader\n"
            "async def main():\n"
            f"    async with open_reader({str(path)!r}) as reader:\n"
            "        print(bool(reader.snapshot), len(await reader.list_mailboxes()))\n"
            "asyncio.run(main())\n"
        )
        result = subprocess.run(
            [*_unprivileged(), sys.executable, "-c", code], capture_output=True, text=True
        )
        assert result.stdout.split() == ["True", "2"], result.stderr
        assert _sidecars(path) == []
    finally:
        (base / "state").chmod(0o755)
        shutil.rmtree(base)
