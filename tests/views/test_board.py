"""The board view's headless models, on a real board file and a driven clock: what a
refresh reads (generations only while nothing moved; the keys only when the shown
project's own generation moved), names, the tombstone toggle, ages redrawn only where
they changed, Stale keeping the last good time, a replaced file read from scratch, and
a key's screen following its key. No Textual, no timers."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from termal_tui.store.board import open_board_writer
from termal_tui.store.board.reader import BoardReader, open_board_reader
from termal_tui.views.board import KEY_GONE, BoardKeyView, BoardView
from termal_tui.views.board_values import project_names
from tests.tui.test_board_screens import P1, P2, P3, build_board, put
from tests.viewer_support import FIXED_NOW


class Counting:
    """A board reader whose calls are counted."""

    def __init__(self, reader: BoardReader) -> None:
        self.reader = reader
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.reader, name)

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return await method(*args, **kwargs)

        return counted


@pytest.fixture
async def board_db(tmp_path: Path) -> Path:
    return await build_board(tmp_path / "board")


def model(db: Path, now: list, **kw: Any) -> BoardView:
    return BoardView(db.name, lambda: project_names(db), clock=lambda: now[0], **kw)


async def test_a_first_refresh_reads_projects_names_and_the_first_project_s_keys(board_db):
    now = [FIXED_NOW]
    board = model(board_db, now)
    async with open_board_reader(board_db) as reader:
        change = await board.refresh(reader)  # type: ignore[arg-type]
    assert change.read and change.moved and change.scopes and change.keys
    assert [s.scope_id for s in board.scopes] == [P1, P2, P3]
    assert board.names == {P1: "termal-tui", P2: "docs-site"}
    assert board.scope_id == P1 and board.heads_generation == 9
    assert board.header.state == "live" and board.header.refreshed == "12:00:00"
    assert board.header.detail == "3 projects · coordination.sqlite"
    assert "scratch.tmp" not in [h.key for h in board.shown]  # a tombstone: hidden
    assert board.keys_status() == ("termal-tui", " · 6 keys · 1 tombstone hidden (t)")
    assert board.can_toggle()
    board.toggle_tombstones()
    assert "scratch.tmp" in [h.key for h in board.shown]
    assert board.keys_status()[1] == " · 6 keys · 1 tombstone shown (t)"


async def test_idle_refreshes_read_only_the_generations_and_a_write_reads_the_keys(board_db):
    now = [FIXED_NOW]
    board = model(board_db, now)
    async with open_board_reader(board_db) as opened:
        reader = Counting(opened)
        await board.refresh(reader)  # type: ignore[arg-type]
        reader.calls.clear()
        for _ in range(3):
            change = await board.refresh(reader)  # type: ignore[arg-type]
            assert change.read and not change.moved
        assert reader.calls == Counter(generations=3)
        async with open_board_writer(board_db) as writer:
            await put(writer, P1, "fresh.key", {"hello": "world"}, 0, "backend")
        change = await board.refresh(reader)  # type: ignore[arg-type]
        assert change.keys and "fresh.key" in [h.key for h in board.shown]
        assert reader.calls["entries"] == 1 and reader.calls["scopes"] == 1
        # Another project moved: the list is read again, the shown keys are not.
        reader.calls.clear()
        async with open_board_writer(board_db) as writer:
            await put(writer, P2, "docs.more", 1, 0, "docs")
        change = await board.refresh(reader)  # type: ignore[arg-type]
        assert change.scopes and not change.keys
        assert reader.calls["entries"] == 0
        assert {s.scope_id: s.live_count for s in board.scopes}[P2] == 2
        # A forced refresh (r) reads everything again.
        reader.calls.clear()
        change = await board.refresh(reader, force=True)  # type: ignore[arg-type]
        assert change.keys and reader.calls["entries"] == 1


async def test_ages_are_redrawn_only_where_they_read_differently(board_db):
    now = [FIXED_NOW]
    board = model(board_db, now)
    async with open_board_reader(board_db) as reader:
        await board.refresh(reader)
    board.drawn()
    assert board.aged() == []
    now[0] = FIXED_NOW + timedelta(hours=3)
    changed = board.aged()
    assert changed and all(board.ages[i].endswith("h ago") for i in changed)
    assert board.aged() == []  # remembered


async def test_choosing_a_project_reads_its_keys_and_a_late_answer_is_dropped(board_db):
    now = [FIXED_NOW]
    board = model(board_db, now)
    async with open_board_reader(board_db) as reader:
        await board.refresh(reader)
        assert await board.choose(reader, P2)
        assert [h.key for h in board.shown] == ["docs.toc"]
        assert board.keys_status()[0] == "docs-site"

        class Racing:
            async def generation(self, scope_id: str) -> int:
                board.scope_id = P3  # another project chosen while this one is read
                return await reader.generation(scope_id)

            async def entries(self, *args: Any, **kwargs: Any) -> Any:
                return await reader.entries(*args, **kwargs)

        assert not await board.choose(Racing(), P1)  # type: ignore[arg-type]
        assert board.heads == []


async def test_a_project_committed_between_two_reads_is_shown_on_the_next(board_db):
    now = [FIXED_NOW]
    board = model(board_db, now)
    async with open_board_reader(board_db) as reader:

        class Early:
            async def generations(self) -> dict[str, int]:
                found = await reader.generations()
                found.pop(P1)  # "committed after this read"
                return found

            def __getattr__(self, name: str) -> Any:
                return getattr(reader, name)

        await board.refresh(Early())  # type: ignore[arg-type]
        assert board.scope_id in (P2, P3)
        await board.refresh(reader)
        assert board.generations is not None and P1 in board.generations


async def test_stale_keeps_the_last_good_time_and_live_comes_back(board_db):
    now = [FIXED_NOW]
    board = model(board_db, now, paused=True)
    async with open_board_reader(board_db) as reader:
        await board.refresh(reader)
        assert board.header.state == "paused"
        now[0] = FIXED_NOW + timedelta(minutes=5)
        board.mark_stale("coordination board storage is temporarily busy")
        assert (board.header.state, board.header.refreshed) == ("stale", "12:00:00")
        assert board.header.error.endswith("busy") and board.shown  # the rows stay
        await board.refresh(reader)
        assert (board.header.state, board.header.refreshed, board.header.error) == (
            "paused",
            "12:05:00",
            "",
        )


async def test_an_empty_board_is_empty_only_after_a_read(tmp_path):
    from termal_tui.store.writer import open_writer

    db = tmp_path / "coordination.sqlite"
    async with open_writer(db):
        pass
    board = model(db, [FIXED_NOW])
    assert not board.empty
    async with open_board_reader(db) as reader:
        await board.refresh(reader)
    assert board.empty and board.scope_id is None and board.shown == []


async def test_a_replaced_file_is_read_from_scratch_and_an_old_answer_dropped(board_db):
    from tests.tui.test_replaced_and_vanished_file import move_away

    now = [FIXED_NOW]
    board = model(board_db, now)
    async with open_board_reader(board_db) as old:
        await board.refresh(old)

        class Slow:
            """The old file's read answers after the reopen."""

            async def generations(self) -> dict[str, int]:
                board.reopened()
                return {P1: 99}

            def __getattr__(self, name: str) -> Any:
                return getattr(old, name)

        change = await board.refresh(Slow())  # type: ignore[arg-type]
        assert not change.read and board.generations is None
    move_away(board_db)
    async with open_board_writer(board_db) as writer:
        await put(writer, P2, "fresh.key", 1, 0, "docs")
    async with open_board_reader(board_db) as new:
        change = await board.refresh(new, force=True)
    assert [s.scope_id for s in board.scopes] == [P2]
    assert board.scope_id == P2 and [h.key for h in board.shown] == ["fresh.key"]
    assert board.header.detail == "1 project · coordination.sqlite"


async def test_the_key_view_reads_its_key_when_the_scope_moved_only(board_db):
    now = [FIXED_NOW]
    async with open_board_reader(board_db) as opened:
        reader = Counting(opened)
        first = next(h for h in await opened.entries(P1) if h.key == "release.status")
        key = BoardKeyView(P1, "termal-tui", first, clock=lambda: now[0])
        assert key.header.detail == "termal-tui · release.status"
        assert await key.refresh(lambda: reader)  # type: ignore[arg-type,return-value]
        assert [h.revision for h in key.revisions] == [3, 2, 1]
        reader.calls.clear()
        assert not await key.refresh(lambda: reader)  # type: ignore[arg-type,return-value]
        assert reader.calls == Counter(generation=1)
        async with open_board_writer(board_db) as writer:
            await put(writer, P1, "release.status", {"phase": "done"}, 3, "planner")
        assert await key.refresh(lambda: reader)  # type: ignore[arg-type,return-value]
        assert key.head is not None and key.head.value == {"phase": "done"}
        assert key.header.state == "live" and key.header.error == ""


async def test_the_key_view_says_its_key_is_gone_after_a_replaced_file(board_db):
    from tests.tui.test_replaced_and_vanished_file import move_away

    now = [FIXED_NOW]
    async with open_board_reader(board_db) as old:
        first = next(h for h in await old.entries(P1) if h.key == "api.schema.version")
        key = BoardKeyView(P1, "termal-tui", first, clock=lambda: now[0])
        await key.refresh(lambda: old)
        move_away(board_db)
        async with open_board_writer(board_db) as writer:
            await put(writer, P2, "fresh.key", 1, 0, "docs")
        async with open_board_reader(board_db) as new:
            readers = [old, new]

            class Racing:
                """The old file answers the generation after the reopen."""

                def __init__(self, inner: BoardReader) -> None:
                    self.inner = inner

                async def generation(self, scope_id: str) -> int:
                    key.reopened()
                    readers.pop(0)
                    return 5

                def __getattr__(self, name: str) -> Any:
                    return getattr(self.inner, name)

            racing = Racing(old)
            assert await key.refresh(lambda: racing if readers[0] is old else new)  # type: ignore[arg-type,return-value]
            assert key.head is None and key.history == []
            assert key.header.error == KEY_GONE and key.key == "api.schema.version"
            assert not await key.refresh(lambda: new)  # later refreshes still say so
            assert key.header.error == KEY_GONE


def test_the_board_and_health_views_hold_no_sql():
    """The store owns every SQL statement: the views, their screens and the headless
    helpers they use only call named reader methods."""
    import re

    root = Path(__file__).resolve().parents[2] / "termal_tui"
    sql = re.compile(
        r"\b(SELECT|INSERT|UPDATE|DELETE|PRAGMA|CREATE)\b[^\n]*\b(FROM|INTO|SET|TABLE|\w+_\w+)\b"
    )
    for relative in (
        "views/findings.py",
        "views/board_values.py",
        "views/board.py",
        "views/health.py",
        "tui/screens/board.py",
        "tui/screens/health.py",
    ):
        source = (root / relative).read_text(encoding="utf-8")
        assert not sql.search(source), relative
        assert "sqlite3" not in source, relative
