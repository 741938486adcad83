"""The one live source: opening, change checks, Live/Stale, a moved/replaced/missing
file, the old -wal beside a new file, the busy retry, and the file watcher.

Driven by a ManualClock (``clock.advance`` runs the timers that fall due): nothing here
waits for a timer. The watcher tests wait for a real inotify event (bounded), which is
what they test.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from termal_tui.store.errors import RetryableError
from termal_tui.views.live import (
    RETRY_SECONDS,
    TICK_SECONDS,
    LiveEvent,
    LiveSource,
    ManualClock,
    Superseded,
)
from tests.helpers import send


class Events:
    def __init__(self, source: LiveSource) -> None:
        self.seen: list[LiveEvent] = []
        self.subscription = source.subscribe(self.seen.append)

    def kinds(self) -> list[str]:
        return [event.kind for event in self.seen]

    def take(self) -> list[str]:
        kinds = self.kinds()
        self.seen.clear()
        return kinds


async def started(path: Path, clock: ManualClock, interval: float = 8.0) -> LiveSource:
    source = LiveSource(path, interval=interval, clock=clock, watch=False)
    await source.start()
    await source.settled()
    return source


async def _move_in_over_the_main_file(tmp_path: Path, path: Path) -> None:
    """Another coordination file (one message, "in the new file") moves in over ``path``
    alone: the -wal and -shm beside it stay the old file's."""
    from termal_tui.store.writer import open_writer

    replacement = tmp_path / "replacement.sqlite"
    async with open_writer(replacement) as other:
        await send(other, body="in the new file")
    for suffix in ("-wal", "-shm"):
        Path(f"{replacement}{suffix}").unlink(missing_ok=True)
    os.replace(replacement, path)


async def test_opens_then_reports_unchanged_and_changed_by_the_clock(writer, db_path):
    await send(writer)
    clock = ManualClock()
    source = LiveSource(db_path, interval=8.0, clock=clock, watch=False)
    events = Events(source)
    await source.start()
    await source.settled()
    assert events.take() == ["opened"]
    assert source.status.phase == "live" and source.status.good_at == clock.now()
    assert source.reader is not None and source.generation == 1

    clock.advance(7.9)
    await source.settled()
    assert events.take() == []  # not due yet: nothing is read
    clock.advance(0.1)
    await source.settled()
    assert events.take() == ["unchanged"]
    assert source.status.good_at == clock.now()

    await send(writer)
    clock.advance(8)
    await source.settled()
    assert events.take() == ["changed"]
    await source.close()


async def test_paused_reads_nothing_but_time_moves_on(writer, db_path):
    await send(writer)
    clock = ManualClock()
    source = await started(db_path, clock, interval=0)
    events = Events(source)
    assert source.status.phase == "paused"
    checks = source.checks
    await send(writer)
    for _ in range(3):
        clock.advance(TICK_SECONDS)
        await asyncio.sleep(0)  # the next tick is set from when this one was handled
    assert events.take() == ["tick", "tick", "tick"]
    clock.advance(TICK_SECONDS * 1000)  # days at once (a suspended laptop): one tick
    await asyncio.sleep(0)
    assert events.take() == ["tick"]
    assert source.checks == checks  # nothing read while paused
    await source.check()  # r: a check on demand
    assert events.take() == ["changed"]
    await source.close()


async def test_missing_file_is_reported_then_picked_up(db_path, tmp_path):
    db_path.parent.mkdir(parents=True)
    clock = ManualClock()
    source = LiveSource(db_path, interval=8.0, clock=clock, watch=False)
    events = Events(source)
    await source.start()
    await source.settled()
    assert source.status.phase == "missing"
    assert "does not exist yet" in source.status.reason
    assert source.reader is None and events.take() == ["state"]

    from termal_tui.store.writer import open_writer

    async with open_writer(db_path) as writer:
        await send(writer)
        clock.advance(8)
        await source.settled()
        assert events.take() == ["opened"]
        assert source.status.phase == "live"
        rows = await source.read(lambda reader: reader.list_mailboxes())
        assert len(rows) == 1
    await source.close()


async def test_gone_file_is_stale_with_the_time_of_the_last_good_read(writer, db_path):
    await send(writer)
    clock = ManualClock()
    source = await started(db_path, clock)
    events = Events(source)
    good = source.status.good_at
    moved = db_path.with_name("moved.sqlite")
    os.rename(db_path, moved)
    clock.advance(8)
    await source.settled()
    assert events.take() == ["state"]
    assert source.status.phase == "stale" and "is gone" in source.status.reason
    assert source.status.good_at == good  # the last good read, not now
    clock.advance(8)
    await source.settled()
    assert events.take() == []  # still gone: said once
    assert source.status.good_at == good
    os.rename(moved, db_path)  # the same file back: Live again, and re-read
    clock.advance(8)
    await source.settled()
    assert events.take() == ["changed"]
    assert source.status.phase == "live" and source.generation == 1
    await source.close()


async def test_replaced_file_is_reopened_and_old_reads_are_superseded(tmp_path):
    from termal_tui.store.writer import open_writer

    path = tmp_path / "coordination.sqlite"
    other = tmp_path / "other" / "coordination.sqlite"
    async with open_writer(path) as first:
        await send(first, body="old")
    async with open_writer(other) as second:
        await send(second, body="new")
        await send(second, sender="session-c", body="new too")
    clock = ManualClock()
    source = await started(path, clock)
    events = Events(source)
    old_reader = source.reader
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    os.replace(other, path)
    clock.advance(8)
    await source.settled()
    assert events.take() == ["opened"]
    assert source.generation == 2 and source.reader is not old_reader
    rows = await source.read(lambda reader: reader.list_mailboxes())
    assert len(rows) == 2

    async def late(_reader):  # began on the old file, answered after the reopen
        source._set(generation=source.generation + 1)
        return 1

    with pytest.raises(Superseded):
        await source.read(late)
    await source.close()


async def test_new_main_file_beside_the_old_wal_is_refused_not_blended(tmp_path):
    """A main file replaced while the old file's -wal (with frames) stays beside it:
    SQLite would apply the old frames to the new file. Reported, never opened."""
    path = tmp_path / "coordination.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    from termal_tui.store.writer import open_writer

    async with open_writer(path) as writer:
        await send(writer, body="in the old file")
        clock = ManualClock()
        source = await started(path, clock)
        events = Events(source)
        assert Path(f"{path}-wal").stat().st_size > 32
        # Another file moves in over the main file only; the -wal stays.
        await _move_in_over_the_main_file(tmp_path, path)
        clock.advance(8)
        await source.settled()
        assert events.take() == ["state"]
        assert source.status.phase == "stale"
        assert "still the old file's" in source.status.reason
        assert source.generation == 1  # not opened
    conn.close()
    # The old -wal goes away (its processes closed it, or it was moved): the new file opens.
    Path(f"{path}-wal").unlink(missing_ok=True)
    Path(f"{path}-shm").unlink(missing_ok=True)
    clock.advance(8)
    await source.settled()
    assert events.take() == ["opened"]
    await source.close()


async def test_busy_read_is_stale_and_retried_soon(writer, db_path, monkeypatch):
    await send(writer)
    clock = ManualClock()
    source = await started(db_path, clock, interval=30)
    events = Events(source)
    reader = source.reader
    assert reader is not None
    calls = {"n": 0}
    real = reader.data_version

    async def busy() -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RetryableError("coordination.sqlite is busy (locked by another process)")
        return await real()

    monkeypatch.setattr(reader, "data_version", busy)
    source.request_check()
    await source.settled()
    assert events.take() == ["state"] and source.status.phase == "stale"
    assert "busy" in source.status.reason
    assert clock.pending()[0] == pytest.approx(RETRY_SECONDS)  # sooner than the interval
    clock.advance(RETRY_SECONDS)
    await source.settled()
    assert events.take() == ["changed"]  # Live again: views read what failed
    assert source.status.phase == "live"
    await source.close()


async def test_a_views_failed_read_makes_every_view_stale(writer, db_path):
    await send(writer)
    clock = ManualClock()
    source = await started(db_path, clock)
    events = Events(source)

    async def locked(_reader):
        raise RetryableError("coordination.sqlite is busy (locked by another process)")

    with pytest.raises(RetryableError):
        await source.read(locked)
    assert events.take() == ["state"] and source.status.phase == "stale"
    await source.read(lambda reader: reader.list_mailboxes())
    assert events.take() == ["state"] and source.status.phase == "live"
    await source.close()


async def test_the_board_reader_shares_the_connection_and_follows_reopen(writer, db_path):
    await send(writer)
    clock = ManualClock()
    source = await started(db_path, clock)
    board = source.board
    assert board is not None
    assert await source.read_board(lambda b: b.generations()) == {}
    await source.close()
    assert board.closed


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="inotify (Linux)")
async def test_the_watcher_notices_a_commit_without_a_poll(writer, db_path):
    """End to end: a real inotify notification; the poll is a day away."""
    await send(writer)
    source = LiveSource(db_path, interval=86_400, watch=True)
    changed = asyncio.Event()

    def seen(event: LiveEvent) -> None:
        if event.kind == "changed":
            changed.set()

    source.subscribe(seen)
    await source.start()
    for _ in range(200):  # the watcher is up (its first notification)
        if source.status.watching:
            break
        await asyncio.sleep(0.01)
    assert source.status.watching
    changed.clear()
    await send(writer)
    await asyncio.wait_for(changed.wait(), 5)
    await source.close()


async def test_a_missing_folder_is_waited_for(tmp_path):
    path = tmp_path / "nowhere" / "coordination.sqlite"
    source = LiveSource(path, interval=8.0, clock=ManualClock(), watch=False)
    await source.start()
    await source.settled()
    assert source.status.phase == "missing" and "nor does its folder" in source.status.reason
    await source.close()
    shutil.rmtree(tmp_path / "nowhere", ignore_errors=True)


async def test_a_closing_source_says_nothing_to_its_subscribers(writer, db_path):
    """A check that fails because the source is closing under it (the connection goes
    away mid-read) is not news: subscribers are being taken down and must hear nothing
    (a status line that was already gone met a "state" event at exit)."""
    await send(writer)
    clock = ManualClock()
    source = await started(db_path, clock)
    events = Events(source)
    entered = asyncio.Event()

    async def check_that_dies_with_its_connection() -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("the connection was closed") from None

    source.check = check_that_dies_with_its_connection  # type: ignore[method-assign]
    source.request_check()
    await entered.wait()
    await source.close()
    assert events.kinds() == []


def held_inodes() -> set[tuple[int, int]]:
    """(device, inode) of every file this process has open or mapped (Linux)."""
    held = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            info = os.stat(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        held.add((info.st_dev, info.st_ino))
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[4] != "0":
                major, minor = (int(part, 16) for part in fields[3].split(":"))
                held.add((os.makedev(major, minor), int(fields[4])))
    return held


def inode(path: Path) -> tuple[int, int]:
    info = path.stat()
    return (info.st_dev, info.st_ino)


async def test_a_replaced_file_s_connection_is_closed_as_soon_as_the_swap_is_seen(tmp_path):
    """The viewer kept its connection to the replaced file, and with it the old file,
    its -wal and its -shm open: its own advice, "stop the processes that still have
    the old file open", then meant the viewer too. The connection is closed as soon as
    the swap is seen; once the old -wal is gone, the new file opens."""
    path = tmp_path / "coordination.sqlite"
    from termal_tui.store.writer import open_writer

    keeper = sqlite3.connect(path)  # the old file's writer, with frames in its -wal
    keeper.execute("PRAGMA journal_mode=WAL")
    keeper.execute("PRAGMA wal_autocheckpoint=0")
    async with open_writer(path) as writer:
        await send(writer, body="in the old file")
    keeper.execute("CREATE TABLE scratch (x)")  # frames that stay in the old -wal
    keeper.commit()
    clock = ManualClock()
    source = await started(path, clock)
    events = Events(source)
    old = {inode(Path(f"{path}{suffix}")) for suffix in ("", "-wal", "-shm")}
    assert Path(f"{path}-wal").stat().st_size > 32
    await _move_in_over_the_main_file(tmp_path, path)
    keeper.close()  # the writer is gone; only the viewer could still hold the old file
    assert held_inodes() & old, "the viewer holds the old file until it sees the swap"
    clock.advance(8)
    await source.settled()
    assert source.status.phase == "stale"
    assert "still the old file's" in source.status.reason
    assert not held_inodes() & old  # nothing of the old file is open here any more
    events.take()
    Path(f"{path}-wal").unlink()  # the old -wal moved away, as the reason says
    Path(f"{path}-shm").unlink()
    clock.advance(8)
    await source.settled()
    assert events.take() == ["opened"]
    assert source.status.live
    summaries = await source.read(lambda reader: reader.list_mailboxes())
    assert len(summaries) == 1
    await source.close()
