"""The index's model without Textual: what it reads and when, on a real file and the
live source's driven clock (``ManualClock.advance``; nothing waits for a timer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from termal_tui.views.index import (
    FILTER_PAUSE,
    HEALTH_EVERY_SECONDS,
    HIDDEN_FACTOR,
    PAGE_CARDS,
    IndexModel,
)
from termal_tui.views.live import LiveSource, ManualClock
from tests.viewer_support import FIXED_NOW, many_mailboxes, send

INTERVAL = 8.0


class Reads:
    """Counts the reader's calls by name (through the source's current reader)."""

    def __init__(self, source: LiveSource, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        reader = source.reader
        assert reader is not None
        for name in ("list_mailboxes", "index_totals", "health_rows", "count_matching"):
            original = getattr(reader, name)

            async def spy(*args, _name=name, _original=original, **kwargs):
                self.calls.append(_name)
                return await _original(*args, **kwargs)

            monkeypatch.setattr(reader, name, spy)

    def take(self) -> list[str]:
        calls, self.calls = self.calls, []
        return calls


async def opened(path: Path, **kwargs: object) -> tuple[LiveSource, IndexModel, ManualClock]:
    clock = ManualClock(FIXED_NOW)
    source = LiveSource(path, interval=INTERVAL, clock=clock, watch=False)
    model = IndexModel(source, **kwargs)  # type: ignore[arg-type]
    model.set_visible(True)
    await source.start()
    await source.settled()
    await model.idle()
    return source, model, clock


async def tick(source: LiveSource, model: IndexModel, clock: ManualClock, seconds: float) -> None:
    clock.advance(seconds)
    await source.settled()
    await model.idle()


async def test_first_page_then_markers_and_an_idle_check_reads_nothing(demo, monkeypatch):
    source, model, clock = await opened(demo)
    updates: list[str] = []
    model.listeners.append(updates.append)
    assert len(model.summaries) == 6 and model.loaded and not model.more
    assert model.problems  # the demo has stuck hand-offs: markers after the cards
    line = model.status()
    assert line.state == "live" and line.text == "12:00:00 · 6 mailboxes · 42 unread"
    reads = Reads(source, monkeypatch)
    await tick(source, model, clock, INTERVAL)
    assert reads.take() == [] and updates == ["status"]  # the time moved on, nothing read
    assert model.status().text.startswith("12:00:08 ·")
    await send(demo, "One more.", "index-model-1")
    await tick(source, model, clock, INTERVAL)
    assert reads.take() == ["list_mailboxes"]  # markers not due yet (30 s)
    assert model.unread == 43
    await tick(source, model, clock, HEALTH_EVERY_SECONDS)
    assert reads.take() == ["health_rows"]  # due by time alone: no commit needed
    model.close()
    await source.close()


async def test_hidden_it_follows_commits_no_sooner_than_its_reads_cost(demo, monkeypatch):
    source, model, clock = await opened(demo)
    model._read_took = 1.0  # as if a page took a second to read (a huge file)
    model.set_visible(False)
    reads = Reads(source, monkeypatch)
    await send(demo, "Behind a tab.", "index-model-2")
    await tick(source, model, clock, INTERVAL)  # 8 s after the read: held back
    assert reads.take() == []
    await tick(source, model, clock, HIDDEN_FACTOR * 1.0 - INTERVAL)  # now due
    assert "list_mailboxes" in reads.take()
    assert model.unread == 43
    model._read_took = 1.0
    await send(demo, "Still behind.", "index-model-3")
    await tick(source, model, clock, INTERVAL)
    assert reads.take() == []  # held back again
    model.set_visible(True)  # shown: read at once
    await model.idle()
    assert reads.take() == ["list_mailboxes"] and model.unread == 44
    model.close()
    await source.close()


async def test_deferred_reads_nothing_until_released(demo, monkeypatch):
    source, model, _clock = await opened(demo, deferred=True)
    assert not model.loaded and model.summaries == []
    assert model.status().state == "loading"
    model.release()
    await model.idle()
    assert model.loaded and len(model.summaries) == 6
    model.close()
    await source.close()


async def test_a_paged_index_counts_totals_and_filters_in_the_store(tmp_path, monkeypatch):
    count = PAGE_CARDS + 20
    path = await many_mailboxes(tmp_path / "coordination.sqlite", count)
    source, model, clock = await opened(path)
    assert model.more and len(model.summaries) == PAGE_CARDS
    assert model.totals == (count, 2 * count)
    assert model.status().text.endswith(f"{count} mailboxes · {2 * count} unread")
    reads = Reads(source, monkeypatch)
    # A filter: the loaded cards at once, the store after a pause in typing.
    assert model.set_filter("agent-0")
    assert model.matches is None and "searching" in model.status().text
    await tick(source, model, clock, FILTER_PAUSE / 2)
    assert reads.take() == []  # still typing
    assert model.set_filter("agent-0 ") is False  # the same filter (spaces trimmed)
    await tick(source, model, clock, FILTER_PAUSE)
    assert reads.take()[:2] == ["list_mailboxes", "count_matching"]
    assert model.matches is not None and [s.id for s in model.matches] == [
        "mailbox-00000000-0000-4000-8000-000000000000"
    ]
    assert "1 of 120 mailboxes match" in model.status().text
    model.set_filter("")
    assert model.matches is None and len(model.shown()) == PAGE_CARDS
    # The next page as the highlight nears the end; one read however often it is asked.
    assert model.wants_more(PAGE_CARDS - 5, PAGE_CARDS)
    model.more_cards()
    model.more_cards()
    await model.idle()
    assert reads.take().count("list_mailboxes") == 1
    assert len(model.summaries) == count and not model.more
    model.close()
    await source.close()


async def test_a_replaced_file_drops_the_old_markers_and_totals(tmp_path):
    import os

    count = PAGE_CARDS + 5
    path = await many_mailboxes(tmp_path / "coordination.sqlite", count)
    other = await many_mailboxes(tmp_path / "other" / "coordination.sqlite", 3)
    source, model, clock = await opened(path)
    assert model.totals is not None and model.problems
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
        Path(f"{other}{suffix}").unlink(missing_ok=True)
    os.replace(other, path)
    await tick(source, model, clock, INTERVAL)
    assert source.generation == 2
    assert len(model.summaries) == 3 and not model.more and model.totals is None
    assert set(model.problems) <= {s.id for s in model.summaries}
    model.close()
    await source.close()


async def test_stale_keeps_the_time_and_counts_of_the_last_good_read(demo):
    source, model, clock = await opened(demo)
    for suffix in ("", "-wal", "-shm"):
        moved = Path(f"{demo}{suffix}")
        if moved.exists():
            moved.rename(Path(f"{demo}.old{suffix}"))
    await tick(source, model, clock, INTERVAL * 10)
    line = model.status()
    assert line.state == "stale" and "gone" in line.reason
    assert line.text == "12:00:00 · 6 mailboxes · 42 unread"  # not the failure's time
    model.close()
    await source.close()


async def test_a_session_view_says_why_it_lists_nothing(tmp_path):
    from termal_tui.store import open_writer

    path = tmp_path / "coordination.sqlite"
    async with open_writer(path):
        pass
    source, model, _clock = await opened(path, session_id="session-nobody")
    assert model.loaded and model.summaries == []
    assert "takes part in no mailbox" in model.empty_reason
    model.close()
    await source.close()


async def _replace(path: Path, other: Path) -> None:
    import os

    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
        Path(f"{other}{suffix}").unlink(missing_ok=True)
    os.replace(other, path)


async def test_markers_of_a_replaced_file_come_with_its_cards(tmp_path, monkeypatch):
    """⚠ markers vanished for ~30 s after a file replacement: a health pass running on
    the old file when the new one opened ended Superseded, the new file's pass was
    turned away meanwhile, and the markers waited for the next pass. Now the pass asked
    for meanwhile runs as soon as the old one ends, with no clock advanced."""
    import asyncio

    import termal_tui.views.findings as health

    path = await many_mailboxes(tmp_path / "coordination.sqlite", 4)
    other = await many_mailboxes(tmp_path / "other" / "coordination.sqlite", 3)
    source, model, clock = await opened(path)
    assert model.problems
    real = health.health_report
    entered, gate = asyncio.Event(), asyncio.Event()

    async def held(reader, **kwargs):
        if not gate.is_set():
            entered.set()
            await gate.wait()
        return await real(reader, **kwargs)

    monkeypatch.setattr(health, "health_report", held)
    clock.advance(HEALTH_EVERY_SECONDS)  # a health pass on the old file, held open
    await source.settled()
    await asyncio.wait_for(entered.wait(), 5)
    await _replace(path, other)
    clock.advance(INTERVAL)
    await source.settled()  # the new file opened, its cards read; its pass turned away
    while model._refreshing:
        await asyncio.sleep(0)
    assert source.generation == 2 and len(model.summaries) == 3
    gate.set()  # the old pass ends (Superseded)
    await model.idle()
    assert model.problems, "no markers until the next health pass"
    assert set(model.problems) <= {s.id for s in model.summaries}
    model.close()
    await source.close()


async def test_a_read_superseded_by_a_new_file_does_not_drop_the_new_files_read(
    tmp_path, monkeypatch
):
    """A page read running on the old file when the new one opens ends Superseded; the
    read the new file asked for meanwhile must still happen (not wait for a check)."""
    import asyncio

    path = await many_mailboxes(tmp_path / "coordination.sqlite", 4)
    other = await many_mailboxes(tmp_path / "other" / "coordination.sqlite", 3)
    source, model, clock = await opened(path)
    reader = source.reader
    assert reader is not None
    real = reader.list_mailboxes
    entered, gate = asyncio.Event(), asyncio.Event()

    async def held(*args, **kwargs):
        entered.set()
        await gate.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(reader, "list_mailboxes", held)
    model.request_refresh()  # a read of the old file, held open
    await asyncio.wait_for(entered.wait(), 5)
    await _replace(path, other)
    clock.advance(INTERVAL)
    await source.settled()  # opened: asks for a read while the old one runs
    gate.set()
    await model.idle()
    assert source.generation == 2
    assert len(model.summaries) == 3, "the new file's cards wait for the next check"
    model.close()
    await source.close()


async def test_an_unchanged_file_is_not_read_again_for_markers_but_ages_move_on(demo, monkeypatch):
    """Each health pass read every unread range again, committed or not (on a
    1,000,000-message file: ~0.7 s of CPU every 30 s, idle). Now a pass over an
    unchanged file re-reads nothing, yet a row that grows old enough while nobody
    writes still gets its marker; a commit makes the next pass read."""
    from termal_tui.core.vocabulary import FINDING_WORDS
    from termal_tui.store.reader import open_reader
    from termal_tui.views.findings import Thresholds, health_report

    async with open_reader(demo) as reader:
        report = await health_report(reader, now=FIXED_NOW)
    oldest = max(
        (f for f in report.findings if f.kind == "never-woken"), key=lambda f: f.age_seconds
    )
    later = Thresholds(
        never_woken=oldest.age_seconds + 60, woken_unprocessed=1e9, lagging=1e9, no_notifier=1e9
    )
    source, model, clock = await opened(demo, thresholds=later)
    assert model.problems.get(oldest.mailbox_id) != FINDING_WORDS["never-woken"]
    reads = Reads(source, monkeypatch)

    await tick(source, model, clock, 3 * HEALTH_EVERY_SECONDS)  # passes, nothing committed
    assert "health_rows" not in reads.take()
    assert model.problems[oldest.mailbox_id] == FINDING_WORDS["never-woken"]

    await send(demo, "One more.", "index-markers-1")
    await tick(source, model, clock, HEALTH_EVERY_SECONDS)
    assert "health_rows" in reads.take()  # a commit: the next pass reads the file
    model.close()
    await source.close()
