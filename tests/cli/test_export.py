"""``termal-tui export``: JSONL round trip through the reader, inert Markdown, bad input."""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys

import pytest

from termal_tui.core.models import MailboxMessage
from termal_tui.store import open_reader
from termal_tui.views.export import write_export
from tests.helpers import send


async def _mailbox(writer) -> str:
    receipt = None
    for n in range(1, 8):
        receipt = await send(
            writer, body=f"Body {n}.\n\x1b]52;c;eA==\x07 ```fence``` \u200b", key=f"e{n}"
        )
    await writer.acknowledge("session-b", receipt.mailbox_id, 0, 3)
    return receipt.mailbox_id


async def test_jsonl_is_termals_wire_json_and_reads_back_exactly(writer, db_path):
    mailbox = await _mailbox(writer)
    out = io.StringIO()
    assert await write_export(db_path, mailbox, out, first=2, last=6) == 5
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["sequence"] for line in lines] == [2, 3, 4, 5, 6]
    assert [line["processed"] for line in lines] == [True, True, False, False, False]
    async with open_reader(db_path) as reader:
        expected = await reader.read_range(mailbox, 1, 5)
    for line, message in zip(lines, expected, strict=True):
        derived = {key: line.pop(key) for key in ("processed", "dispatchOutcome")}
        assert derived["dispatchOutcome"] == message.dispatch_outcome
        assert MailboxMessage.from_wire(line).to_wire() == message.to_wire() == line


async def test_markdown_keeps_every_control_character_escaped(writer, db_path):
    mailbox = await _mailbox(writer)
    out = io.StringIO()
    await write_export(db_path, mailbox, out, fmt="markdown")
    text = out.getvalue()
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b]", text)
    assert "␛]52;c;eA==␇" in text and "⟨U+200B⟩" in text
    assert "````text" in text  # a fence longer than the body's own backticks
    assert text.count("## #") == 7 and "✓ Processed" in text and "● Unread" in text


def test_export_cli_writes_a_file_and_refuses_bad_ranges(tmp_path):
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "termal_tui",
            "export",
            str(tmp_path / "x.sqlite"),
            "--mailbox",
            "m",
        ],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 3 and "does not exist" in missing.stderr  # not found
    backwards = subprocess.run(
        [
            sys.executable,
            "-m",
            "termal_tui",
            "export",
            "--mailbox",
            "m",
            "--from",
            "5",
            "--to",
            "2",
        ],
        capture_output=True,
        text=True,
    )
    assert backwards.returncode == 2 and "--to must be at least --from" in backwards.stderr


async def test_a_tab_copies_the_body_and_exports_what_is_loaded(tmp_path, monkeypatch):
    import asyncio

    from tests.viewer_support import app_for, demo_copy, mailbox_between, settle

    path = await asyncio.to_thread(demo_copy, tmp_path / "demo")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("TMUX", raising=False)
    app = app_for(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.open_mailbox(mailbox_between(app, "frontend", "planner"))
        await settle(app, pilot)
        view = app.active_view()
        view.thread.highlighted = 2  # #4: ANSI colour, cursor moves, a title escape
        message = view.highlighted_message()
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == message.body  # exact, escapes and all (sent base64)
        notes = [n.message for n in app._notifications]
        assert any(f"Sent {len(message.body):,} characters of #4" in n for n in notes)
        assert any("terminal allows" in n for n in notes)
        assert any("control/invisible characters" in n for n in notes)
        await pilot.press("C")
        await pilot.pause()
        assert app.clipboard == message.id
        await pilot.press("e")
        await pilot.pause()
        # Not into the working directory: the default export directory.
        assert not list(tmp_path.glob("termal-*.jsonl"))
        (written,) = (tmp_path / "data" / "termal-tui" / "exports").glob("termal-*.jsonl")
        records = [json.loads(line) for line in written.read_text().splitlines()]
        assert [r["sequence"] for r in records] == [1, 2, 3, 4, 5, 6]
        # The file name whole on a line of its own (a toast wraps at spaces).
        note = next(n for n in app._notifications if n.title.startswith("Exported"))
        assert note.message.split("\n")[0] == written.name
        assert str(written.parent) in note.message


def test_exports_are_private_whatever_the_umask_and_links_are_not_followed(tmp_path):
    from termal_tui.views.export import open_private

    old = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.jsonl"
        with open_private(fresh) as handle:
            handle.write("x\n")
        existing = tmp_path / "existing.jsonl"
        existing.write_text("old and longer\n")
        existing.chmod(0o644)
        with open_private(existing) as handle:
            handle.write("new\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert stat.S_IMODE(existing.stat().st_mode) == 0o600
    assert existing.read_text() == "new\n"
    target = tmp_path / "target"
    target.write_text("keep")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.raises(OSError):
        open_private(link)
    assert target.read_text() == "keep"


async def test_export_cli_output_file_is_0600(writer, db_path, tmp_path):
    receipt = await send(writer)
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "termal_tui",
            "export",
            str(db_path),
            "--mailbox",
            receipt.mailbox_id,
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert json.loads(out.read_text().splitlines()[0])["body"] == "hello"
