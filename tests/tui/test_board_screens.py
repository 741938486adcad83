"""The viewer's board view: projects with names, generations and counts; keys with their
facts and pretty, sanitised values; tombstones on a toggle; a key's whole value and
history on enter; live by the scope generations (an idle tick reads only them), paused
while another screen is on top; hostile text shown as stand-ins; nothing on disk
changes. Live tests drive the one live source's clock (tests/live_host.py) instead of
waiting out a timer, and never press r to see a change. Snapshots at 80x24, 120x40."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sqlite3
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from termal_tui.store.board import open_board_writer
from termal_tui.store.board.reader import BoardReader
from termal_tui.store.board.records import BoardHead
from termal_tui.store.writer import open_writer
from termal_tui.tui.app import MailboxApp
from termal_tui.tui.screens.board import BoardKeyScreen, BoardScreen
from termal_tui.views.board_values import (
    cut_value,
    json_string,
    pretty_json,
    project_names,
    value_text,
)
from tests.helpers import StepClock
from tests.live_host import Host
from tests.viewer_support import FIXED_NOW, advance, app_for, screen_text, settle, wait_for

P1 = "project-11111111-1111-4111-8111-111111111111"
P2 = "project-22222222-2222-4222-8222-222222222222"
P3 = "project-33333333-3333-4333-8333-333333333333"  # no name anywhere: its id is shown
HOSTILE_KEY = "evil\u202e.key\x1b[2J"
HOSTILE_AUTHOR = "mal\u202elory\x1b]0;pwned\x07"
INTERVAL = 0.2


async def put(writer: Any, scope: str, key: str, value: Any, revision: int, who: str, **kw: Any):
    return await writer.set(
        scope,
        key,
        expected_revision=revision,
        author_session_id=f"session-{who}",
        author_name=who,
        idempotency_key=f"{scope}-{key}-{revision}",
        value=value,
        **kw,
    )


async def build_board(root: Path) -> Path:
    """Three projects (one named by TermAl's termal.sqlite, one by the registry, one by
    nothing), a key with history, a tombstone, a long value and hostile text."""
    root.mkdir(parents=True, exist_ok=True)
    db = root / "coordination.sqlite"
    async with open_writer(db):
        pass
    clock = StepClock(FIXED_NOW - timedelta(hours=3), timedelta(minutes=7))
    async with open_board_writer(db, clock=clock) as w:
        await put(w, P1, "release.status", {"phase": "review", "blockers": []}, 0, "planner")
        await put(w, P1, "release.status", {"phase": "qa", "blockers": ["flaky"]}, 1, "reviewer")
        await put(
            w,
            P1,
            "release.status",
            {"phase": "ship", "blockers": [], "notes": "all green"},
            2,
            "backend",
            state_stamp="build-43",
        )
        await put(w, P1, "api.schema.version", 7, 0, "backend")
        steps = [f"step {i}: migrate table {i} and verify the row counts" for i in range(14)]
        await put(w, P1, "plan.steps", {"steps": steps}, 0, "planner")
        await put(w, P1, "hostile.text", {"note": "red \x1b[31mX\x1b[0m \u202eevil"}, 0, "mallory")
        await put(w, P1, "scratch.tmp", True, 0, "planner")
        await w.set(
            P1,
            "scratch.tmp",
            expected_revision=1,
            author_session_id="session-planner",
            author_name="planner",
            idempotency_key="delete-scratch",
            delete=True,
        )
        await put(w, P1, "null.value", None, 0, "planner")
        await put(w, P2, "docs.toc", ["intro", "setup", "board"], 0, "docs")
        await put(w, P3, "orphan.flag", False, 0, "docs")
    # What a hostile peer could write around termal-tui's validation (TermAl's is the same).
    raw = sqlite3.connect(db)
    raw.execute(
        "UPDATE coordination_board_entries SET author_name = ? WHERE key = 'hostile.text'",
        (HOSTILE_AUTHOR,),
    )
    raw.execute(
        "INSERT INTO coordination_board_entries VALUES (?, ?, 1, 6, ?, 'session-x', 'x', ?, ?)",
        (P1, HOSTILE_KEY, json.dumps({"k\u202ey": "v\x9b"}), "2026-11-30T11:00:00.000Z", "\x1b[5m"),
    )
    raw.commit()
    raw.close()
    termal = sqlite3.connect(root / "termal.sqlite")
    termal.execute("CREATE TABLE app_state (key TEXT PRIMARY KEY, value_json TEXT NOT NULL)")
    projects = [{"id": P1, "name": "termal-tui", "rootPath": "/src/tt", "remoteId": "local"}]
    termal.execute(
        "INSERT INTO app_state VALUES ('metadataState', ?)", (json.dumps({"projects": projects}),)
    )
    termal.commit()
    termal.close()
    registry = sqlite3.connect(root / "termal-tui-sessions.sqlite")
    registry.execute(
        "CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT NOT NULL, "
        "root_path TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL)"
    )
    registry.execute("INSERT INTO projects VALUES (?, 'docs-site', '/src/docs', 'x')", (P2,))
    registry.commit()
    registry.close()
    return db


@pytest.fixture
async def board_db(tmp_path: Path) -> Path:
    return await build_board(tmp_path / "board")


async def open_board(app: MailboxApp, pilot: Any) -> BoardScreen:
    await settle(app, pilot)
    await pilot.press("b")
    await settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, BoardScreen)
    await wait_for(lambda: screen.shown and screen.filled)
    return screen


def head(**kw: Any) -> BoardHead:
    base: dict[str, Any] = dict(
        key="a.b",
        revision=1,
        updated_at_generation=1,
        value=None,
        deleted=False,
        author_session_id="s",
        author_name="n",
        updated_at="2026-11-30T12:00:00.000Z",
        state_stamp=None,
    )
    return BoardHead(**(base | kw))


# ----------------------------------------------------------------- headless


def test_values_are_pretty_json_with_every_character_visible():
    text = pretty_json({"a\u202eb": ['x\x1b[31m"q"\n\\', 1.5, None, True, {}, []]})
    assert text.split("\n") == [
        "{",
        '  "a⟨RLO⟩b": [',
        '    "x␛[31m\\"q\\"\\n\\\\",',
        "    1.5,",
        "    null,",
        "    true,",
        "    {},",
        "    []",
        "  ]",
        "}",
    ]
    assert json_string("\x9b\u200b\t") == '"⟨C1:9B⟩⟨U+200B⟩\\t"'


def test_tombstones_and_values_that_are_not_json_say_so():
    assert "tombstone" in value_text(head(deleted=True))
    bad = head(invalid=True, value_json="{not json\x1b")
    assert value_text(bad) == "(stored value is not JSON) {not json␛"


def test_long_values_are_cut_with_what_was_left_out():
    cut = cut_value("\n".join(f"line {i} " + "x" * 50 for i in range(10)), 3, 20)
    assert cut.hidden_lines == 7
    assert cut.text.split("\n")[0] == "line 0 xxxxxxxxxxxx…"
    assert cut.hidden_chars > 0
    assert cut_value("short", 3, 20) == ("short", 0, 0)
    assert cut_value("1\n2\n3\n4", 3, 20) == ("1\n2\n3\n4", 0, 0)  # never "1 more line"


async def test_project_names_come_from_termal_and_the_registry_read_only(board_db):
    before = sorted(p.name for p in board_db.parent.iterdir())
    names = project_names(board_db)
    assert names == {P1: "termal-tui", P2: "docs-site"}
    assert sorted(p.name for p in board_db.parent.iterdir()) == before  # no sidecars
    assert project_names(board_db.parent / "elsewhere" / "coordination.sqlite") == {}


# --------------------------------------------------------------------- pilot


async def test_b_on_the_index_opens_the_board_with_projects_and_keys(board_db):
    app = app_for(board_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_board(app, pilot)
        text = screen_text(app)
        assert "Paused" in text  # --interval 0, as tabs say
        assert "termal-tui  gen 9 · 6 live · 1 tombstoned" in text
        assert "docs-site  gen 1 · 1 live" in text
        assert f"{P3}  gen 1 · 1 live" in text  # no name known: the scope id
        assert "release.status  rev 3 · gen 3 · backend · stamp build-43 · 2 h" in text
        assert '"notes": "all green",' in text
        assert "… 14 more lines · enter shows the whole value" in text
        assert "scratch.tmp" not in text
        await pilot.press("t")
        await settle(app, pilot)
        assert "✕ scratch.tmp  deleted · rev 2 · gen 8 · planner" in screen_text(app)
        await pilot.press("t")
        await settle(app, pilot)
        assert "scratch.tmp" not in screen_text(app)
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, BoardScreen)


async def test_the_palette_offers_the_board(board_db):
    from termal_tui.tui.commands import MailboxCommands

    app = app_for(board_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        provider = MailboxCommands(app.screen)
        names = [name for name, _callback, _help in provider._commands()]
        assert "Board" in names
        dict((n, c) for n, c, _ in provider._commands())["Board"]()  # type: ignore[operator]
        await settle(app, pilot)
        assert isinstance(app.screen, BoardScreen)


async def test_choosing_a_project_shows_its_keys(board_db):
    app = app_for(board_db)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_board(app, pilot)
        await pilot.press("tab", "down")
        await settle(app, pilot)
        await wait_for(lambda: [h.key for h in screen.shown] == ["docs.toc"])
        assert '"setup",' in screen_text(app)


async def test_enter_shows_the_whole_value_and_the_history_table(board_db):
    app = app_for(board_db)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_board(app, pilot)
        keys = [h.key for h in screen.shown]
        await pilot.press(*["down"] * keys.index("plan.steps"), "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, BoardKeyScreen)
        await wait_for(lambda: app.screen.generation > 0)  # type: ignore[attr-defined]
        assert "step 13: migrate table 13" in screen_text(app)  # the whole value
        await pilot.press("escape")
        await settle(app, pilot)
        await pilot.press(*["up"] * 10, *["down"] * keys.index("release.status"), "enter")
        await settle(app, pilot)
        key_screen = app.screen
        assert isinstance(key_screen, BoardKeyScreen)
        await wait_for(lambda: key_screen.generation > 0)
        table = key_screen.query_one("#history", DataTable)
        rows = [[str(cell) for cell in table.get_row_at(i)][:4] for i in range(table.row_count)]
        assert rows == [
            ["3 ●", "3", "backend", "build-43"],
            ["2", "2", "reviewer", ""],
            ["1", "1", "planner", ""],
        ]
        assert "· 2 earlier revisions kept" in screen_text(app)
        await pilot.press("down")  # the value pane follows the highlighted revision
        await settle(app, pilot)
        assert '"flaky"' in screen_text(app)


async def test_hostile_keys_authors_and_values_render_as_visible_stand_ins(board_db):
    app = app_for(board_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_board(app, pilot)
        text = screen_text(app)
        assert "evil⟨RLO⟩.key␛[2J" in text
        assert "stamp ␛[5m" in text
        assert '"k⟨RLO⟩y": "v⟨C1:9B⟩"' in text
        assert "mal⟨RLO⟩lory␛]0;pwned␇" in text
        assert '"note": "red ␛[31mX␛[0m ⟨RLO⟩evil"' in text
        svg = app.export_screenshot()
        for raw in ("\x1b", "\u202e", "\x9b", "\x07"):
            assert raw not in svg


def count_calls(monkeypatch, *names: str) -> Counter[str]:
    calls: Counter[str] = Counter()
    for name in names:
        original = getattr(BoardReader, name)

        def counted(
            self: Any, *args: Any, _original: Any = original, _name: str = name, **kwargs: Any
        ) -> Any:
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(BoardReader, name, counted)
    return calls


READS = ("generations", "generation", "scopes", "entries", "history", "list", "get")


async def hosted_board(host: Host, pilot: Any) -> BoardScreen:
    screen = await host.show(pilot, BoardScreen(host.source))
    assert isinstance(screen, BoardScreen)
    await wait_for(lambda: screen.shown and screen.filled)
    return screen


def text_of(host: Host) -> str:
    return screen_text(host.app)  # type: ignore[arg-type]


async def test_the_board_follows_writes_through_the_live_source_and_idle_checks_read_nothing(
    board_db, monkeypatch
):
    calls = count_calls(monkeypatch, *READS)
    host = Host(board_db)
    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await hosted_board(host, pilot)
        assert "● Live 12:00:00 · 3 projects" in text_of(host)
        calls.clear()
        for _ in range(3):  # three checks that found nothing new: no board read at all
            await host.advance(pilot, 8)
        assert not calls
        assert "● Live 12:00:24 · 3 projects" in text_of(host)  # the time moves on
        async with open_board_writer(board_db) as writer:
            await put(writer, P1, "fresh.key", {"hello": "world"}, 0, "backend")
        await host.advance(pilot, 8)
        assert "fresh.key" in [h.key for h in screen.shown]
        assert calls["entries"] == 1 and calls["scopes"] == 1
        assert "termal-tui  gen 10 · 7 live" in text_of(host)
        # Another project moved: the list is re-read, the shown keys are not.
        calls.clear()
        async with open_board_writer(board_db) as writer:
            await put(writer, P2, "docs.more", 1, 0, "docs")
        await host.advance(pilot, 8)
        assert "docs-site  gen 2 · 2 live" in text_of(host)
        assert calls["entries"] == 0


async def test_idle_checks_redraw_ages_without_reading_the_keys(board_db, monkeypatch):
    host = Host(board_db)
    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await hosted_board(host, pilot)
        assert "release.status  rev 3 · gen 3 · backend · stamp build-43 · 2 h" in text_of(host)
        calls = count_calls(monkeypatch, *READS)
        await host.advance(pilot, 3 * 3600)
        assert "stamp build-43 · 5 h" in text_of(host)
        assert not calls and screen.shown


async def test_the_board_reads_nothing_while_the_key_screen_is_on_top(board_db, monkeypatch):
    calls = count_calls(monkeypatch, "generations", "generation")
    host = Host(board_db)
    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await hosted_board(host, pilot)
        await pilot.press("enter")
        await settle(host.app, pilot)  # type: ignore[arg-type]
        key_screen = host.app.screen
        assert isinstance(key_screen, BoardKeyScreen)
        calls.clear()
        async with open_board_writer(board_db) as writer:
            await put(writer, P1, "api.schema.version", 8, 1, "backend")
        await host.advance(pilot, 8)
        assert key_screen.head is not None and key_screen.head.value == 8
        assert calls["generation"] == 1 and calls["generations"] == 0  # the board waits
        await pilot.press("escape")
        await host.advance(pilot, 0)
        assert calls["generations"] == 1  # shown again: it catches up at once
        assert "rev 2 · gen 10 · backend" in text_of(host)
        assert screen.generations is not None and screen.generations[P1] == 10


async def test_a_failed_read_shows_stale_and_keeps_the_rows(board_db, monkeypatch):
    from termal_tui.store.errors import RetryableError

    host = Host(board_db)
    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await hosted_board(host, pilot)

        async def busy(self: Any) -> Any:
            raise RetryableError("coordination board storage is temporarily busy")

        monkeypatch.setattr(BoardReader, "generations", busy)
        async with open_board_writer(board_db) as writer:
            await put(writer, P1, "fresh.key", 1, 0, "backend")
        await host.advance(pilot, 8)
        # The reason has a line of its own, and the time of the last good read stays.
        assert "● Stale 12:00:00" in text_of(host) and "temporarily busy" in text_of(host)
        assert screen.shown
        monkeypatch.undo()
        await host.advance(pilot, 8)
        assert "● Live 12:00:16" in text_of(host) and "fresh.key" in text_of(host)


async def test_the_board_follows_its_file_when_it_is_moved_away_and_replaced(board_db, monkeypatch):
    """Like the tabs: a board over a moved-away file is Stale with the reason (it kept
    reading the old inode, "Live"), and a new file at the path is read from scratch,
    the key screen on top too."""
    from tests.tui.test_replaced_and_vanished_file import move_away

    host = Host(board_db)
    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await hosted_board(host, pilot)
        await pilot.press("enter")
        await settle(host.app, pilot)  # type: ignore[arg-type]
        key_screen = host.app.screen
        assert isinstance(key_screen, BoardKeyScreen)
        gone_key = key_screen.key
        move_away(board_db)
        await host.advance(pilot, 8)
        assert "Stale" in text_of(host) and "is gone" in text_of(host)
        # A key written into the moved file is not shown as this path's.
        async with open_board_writer(f"{board_db}.old") as old:
            await put(old, P1, "ghost.key", "written to the old file", 0, "planner")
        async with open_board_writer(board_db) as writer:  # a new, empty file at the path
            await put(writer, P2, "fresh.key", 1, 0, "docs")
        await host.advance(pilot, 8)
        assert "this key is not on the board now" in text_of(host)
        assert key_screen.key == gone_key and key_screen.head is None
        for _ in range(3):  # checks later it still says so, nothing old
            await host.advance(pilot, 8)
        assert "this key is not on the board now" in text_of(host)
        value = str(key_screen.query_one("#key-value", Static).render())
        assert value == "" and key_screen.query_one("#history", DataTable).row_count == 0
        await pilot.press("escape")
        await host.advance(pilot, 0)
        assert [h.key for h in screen.shown] == ["fresh.key"]
        assert "Live" in text_of(host) and "1 project" in text_of(host)
        assert "ghost.key" not in text_of(host)


async def test_the_key_screen_s_ages_move_on_while_nothing_changes(board_db):
    host = Host(board_db)
    async with host.app.run_test(size=(120, 40)) as pilot:
        await hosted_board(host, pilot)
        await pilot.press("enter")
        await settle(host.app, pilot)  # type: ignore[arg-type]
        key_screen = host.app.screen
        assert isinstance(key_screen, BoardKeyScreen)
        await host.advance(pilot, 3 * 3600)
        table = key_screen.query_one("#history", DataTable)
        ages = [str(table.get_row_at(index)[4]) for index in range(table.row_count)]
        assert ages and all(age.endswith("h ago") for age in ages), ages
        # The column grows with its text (it kept its first width: "1 min ag").
        await host.advance(pilot, 40 * 86_400)
        assert str(table.get_row_at(0)[4]).endswith(" d ago")
        widest = max(len(str(table.get_row_at(i)[4])) for i in range(table.row_count))
        assert table.ordered_columns[4].content_width >= widest
        meta = str(key_screen.query_one("#key-meta", Static).render())
        assert re.search(r" · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", meta), meta  # with its zone
        assert not re.search(r"\dT\d\d:", meta)  # not the stored ISO text


async def test_a_project_committed_between_two_reads_does_not_crash_the_board(
    board_db, monkeypatch
):
    """A refresh reads the generations, then the projects: one committed in between is
    listed without a generation. It crashed the viewer (KeyError); now another project
    is shown and the next refresh has both."""
    original = BoardReader.generations

    async def before_the_newcomer(self: Any) -> dict[str, int]:
        generations = await original(self)
        generations.pop(P1, None)  # P1 sorts first: "committed after this read"
        return generations

    monkeypatch.setattr(BoardReader, "generations", before_the_newcomer)
    host = Host(board_db)
    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await hosted_board(host, pilot)
        assert screen.scope_id in (P2, P3)
        monkeypatch.undo()
        await pilot.press("r")
        await host.advance(pilot, 0)
        assert screen.generations is not None and P1 in screen.generations
        assert host.app.is_running


async def test_an_empty_board_says_so(tmp_path):
    db = tmp_path / "coordination.sqlite"
    async with open_writer(db):
        pass
    app = app_for(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("b")
        await settle(app, pilot)
        await wait_for(lambda: "No coordination board yet" in screen_text(app))


def _disk(db: Path) -> dict[str, tuple[str, int]]:
    found = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = Path(f"{db}{suffix}")
        if path.exists():
            found[suffix] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return found


async def test_a_session_changes_nothing_on_disk(board_db):
    """With the file in use (a TermAl process holds it open, so its -wal and -shm exist):
    bytes and mtimes of the file and both sidecars are the same after a whole session."""
    holder = sqlite3.connect(board_db)
    holder.execute("SELECT COUNT(*) FROM coordination_board_entries").fetchone()
    try:
        before = _disk(board_db)
        assert set(before) == {"", "-wal", "-shm"}
        app = app_for(board_db, poll_interval=8.0)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await open_board(app, pilot)
            await pilot.press("t")
            await pilot.press("enter")
            await settle(app, pilot)
            for _ in range(3):  # checks of the live source, the key screen on top
                await advance(app, pilot, 8)
            await pilot.press("escape", "tab", "down")
            await wait_for(lambda: [h.key for h in screen.shown] == ["docs.toc"])
            for _ in range(3):  # and with the board shown
                await advance(app, pilot, 8)
        assert _disk(board_db) == before
        names = {p.name for p in board_db.parent.iterdir()}
        assert not {n for n in names if n.startswith(("termal.sqlite-", "termal-tui-sessions"))} - {
            "termal-tui-sessions.sqlite"
        }
    finally:
        holder.close()


# ----------------------------------------------------------------- snapshots


@pytest.fixture(scope="module")
def snapshot_board(tmp_path_factory) -> Path:
    return asyncio.run(build_board(tmp_path_factory.mktemp("snapshot-board")))


def _board(*keys: str):
    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await settle(app, pilot)
        await pilot.press("b")
        await settle(app, pilot)
        await wait_for(lambda: getattr(app.screen, "shown", None) and app.screen.filled)
        if keys:
            await pilot.press(*keys)
            await settle(app, pilot)
            screen = app.screen
            if isinstance(screen, BoardKeyScreen):
                await wait_for(lambda: screen.generation > 0)
        await settle(app, pilot)

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (60, 20)])
class TestBoardSnapshots:
    def test_board(self, snap_compare, snapshot_board, size):
        assert snap_compare(app_for(snapshot_board), terminal_size=size, run_before=_board())

    def test_board_with_tombstones(self, snap_compare, snapshot_board, size):
        run = _board("t", "end")
        assert snap_compare(app_for(snapshot_board), terminal_size=size, run_before=run)

    def test_key_with_history(self, snap_compare, snapshot_board, size):
        run = _board("end", "enter")  # release.status: the last live key
        assert snap_compare(app_for(snapshot_board), terminal_size=size, run_before=run)
