"""Delivery health and ``termal-tui doctor``: each problem kind, ranking, JSON, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from termal_tui.store import open_reader
from termal_tui.views.findings import Thresholds, health_report
from tests.helpers import T0, send
from tests.live_host import Host

LATER = T0 + timedelta(days=1)


async def _report(path: Path, **limits: float):
    async with open_reader(path) as reader:
        return await health_report(reader, now=LATER, thresholds=Thresholds(**limits))


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "termal_tui", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_a_healthy_database_says_nothing_is_stuck(writer, db_path):
    first = await send(writer, body="hello")
    await writer.acknowledge("session-b", first.mailbox_id, 0, 1)
    report = await _report(db_path)
    assert report.healthy and report.mailboxes == 1 and report.unread == 0
    result = _doctor(str(db_path))
    assert result.returncode == 0 and "Nothing is stuck" in result.stdout


async def test_each_problem_kind_is_found_and_ranked(writer, db_path):
    never = await send(writer, body="never woken")  # a → b, durableButNotWoken
    woken = await send(writer, sender="session-c", target="session-b", body="woken")
    await writer.mark_delivered_through("session-b", woken.mailbox_id, woken.sequence)
    gone = await send(writer, sender="session-b", target="session-c", body="to a leaver")
    await writer.mark_session_left("session-c")
    report = await _report(db_path)
    kinds = [(f.kind, f.display_name, f.first_sequence) for f in report.findings]
    assert kinds[0] == ("receiver-gone", "Carol", gone.sequence)  # severity first
    assert ("never-woken", "Bob", never.sequence) in kinds
    assert ("woken-unprocessed", "Bob", woken.sequence) in kinds
    assert sum(kind == "lagging" for kind, _, _ in kinds) == 2
    # Recent enough for every threshold: nothing is stuck.
    young = await _report(db_path, never_woken=10**9, woken_unprocessed=10**9, lagging=10**9)
    assert [f.kind for f in young.findings] == ["receiver-gone"]  # leaving is never fine


async def test_doctor_json_shape_and_exit_code(writer, db_path):
    await send(writer, body="waiting")
    result = _doctor(str(db_path), "--json")
    assert result.returncode == 1
    payload = json.loads(result.stdout)
    assert set(payload) == {"healthy", "mailboxes", "unread", "findings"}
    assert payload["healthy"] is False and payload["unread"] == 1
    finding = payload["findings"][0]
    for key in (
        "kind",
        "mailboxId",
        "participants",
        "sessionId",
        "displayName",
        "rows",
        "firstSequence",
        "oldestAt",
        "ageSeconds",
        "unreadDepth",
        "processedThrough",
        "severity",
        "summary",
    ):
        assert key in finding, key
    table = _doctor(str(db_path))
    assert table.returncode == 1 and "stuck hand-offs" in table.stdout


def test_doctor_on_a_bad_file_is_one_sentence_and_its_own_exit_code(tmp_path):
    # Not 2: that is the usage error's code alone; a missing file is "not found" (3) and
    # a file that is not a database "invalid" (8), as in every command.
    result = _doctor(str(tmp_path / "missing.sqlite"))
    assert result.returncode == 3
    assert result.stderr.count("\n") == 1 and "does not exist" in result.stderr
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database")
    result = _doctor("--db", str(garbage))
    assert result.returncode == 8 and "is not a SQLite database" in result.stderr
    assert _doctor("--lagging-after", "-1").returncode == 2  # usage error


async def test_the_health_view_ranks_findings_and_opens_the_first_affected_row(tmp_path):
    import asyncio

    from tests.viewer_support import app_for, demo_copy, settle

    path = await asyncio.to_thread(demo_copy, tmp_path / "demo")
    app = app_for(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("h")
        await settle(app, pilot)
        screen = app.screen
        assert type(screen).__name__ == "HealthScreen"
        findings = screen.report.findings
        assert findings[0].kind == "receiver-gone" and len(findings) > 5
        target = next(f for f in findings if f.kind == "woken-unprocessed")
        options = screen.query_one("#findings")
        options.highlighted = findings.index(target)
        await pilot.press("enter")
        await settle(app, pilot)
        view = app.active_view()
        assert view is not None and view.mailbox_id == target.mailbox_id
        assert view.highlighted_message().sequence == target.first_sequence


async def test_an_empty_health_view_says_plainly_that_nothing_is_stuck(writer, db_path):
    from tests.viewer_support import app_for, settle

    first = await send(writer, body="hello")
    await writer.acknowledge("session-b", first.mailbox_id, 0, 1)
    app = app_for(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("h")
        await settle(app, pilot)
        status = str(app.screen.query_one("#health-status").render())
        assert "Nothing is stuck" in status


async def test_index_cards_carry_a_marker_and_filter_by_participant_as_you_type(tmp_path):
    import asyncio

    from tests.viewer_support import app_for, demo_copy, settle

    path = await asyncio.to_thread(demo_copy, tmp_path / "demo")
    app = app_for(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        index = app.query_one("#mailbox-index")
        cards = index.query_one("#cards")
        prompts = {o.id: str(o.prompt) for o in cards.options}
        release = next(s.id for s in app.summaries if "release-bot" in str(s.participants))
        frontend = next(s.id for s in app.summaries if "frontend" in str(s.participants))
        assert prompts[release].startswith("⚠") and "gone · " in prompts[release]
        assert not prompts[frontend].startswith("⚠")  # all read: nothing stuck
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press("d", "o", "c")
        await pilot.pause()
        assert [o.id for o in cards.options] == [
            s.id for s in app.summaries if "docs" in str(s.participants)
        ]
        await pilot.press("backspace", "backspace", "backspace", "enter")
        await pilot.pause()
        assert len(cards.options) == 6 and app.focused is cards


async def test_an_empty_database_still_answers_r_and_h(writer, db_path):
    from tests.viewer_support import app_for, screen_lines, settle

    app = app_for(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        footer = screen_lines(app)[-1]
        assert "Refresh" in footer and "Health" in footer
        await send(writer, body="first message")
        await pilot.press("r")
        await settle(app, pilot)
        assert len(app.summaries) == 1


async def test_the_viewer_s_thresholds_reach_the_index_markers(tmp_path):
    """--never-woken-after and friends change the index's markers, not only doctor's."""
    import asyncio

    from tests.viewer_support import app_for, demo_copy, settle, wait_for

    path = await asyncio.to_thread(demo_copy, tmp_path / "demo")
    markers = {}
    for name, thresholds in (
        ("default", None),
        ("patient", Thresholds(never_woken=1e9, woken_unprocessed=1e9, lagging=1e9)),
    ):
        app = app_for(path, thresholds=thresholds)
        async with app.run_test(size=(80, 24)) as pilot:
            index = app.query_one("#mailbox-index")
            await wait_for(lambda index=index: index.problems)
            await settle(app, pilot)
            markers[name] = set(index.problems.values())
    assert markers["default"] > {"receiver gone"}  # the demo has rows waiting past 120 s
    assert markers["patient"] == {"receiver gone"}  # leaving is never fine


async def test_index_cards_are_drawn_before_the_health_markers(tmp_path, monkeypatch):
    """Without --mailbox the cards come first; the (slower) health pass adds markers."""
    import asyncio

    from termal_tui.views import findings as health
    from tests.viewer_support import app_for, demo_copy, settle, wait_for

    path = await asyncio.to_thread(demo_copy, tmp_path / "demo")
    started, release = asyncio.Event(), asyncio.Event()
    original = health.health_report

    async def slow_report(*args, **kwargs):
        started.set()
        await release.wait()
        return await original(*args, **kwargs)

    monkeypatch.setattr(health, "health_report", slow_report)
    from termal_tui.tui.widgets import index as index_module

    monkeypatch.setattr(index_module, "health_report", slow_report, raising=False)
    app = app_for(path)
    async with app.run_test(size=(80, 24)) as pilot:
        index = app.query_one("#mailbox-index")
        cards = index.query_one("#cards")
        await wait_for(lambda: started.is_set())
        await wait_for(lambda: cards.option_count == 6)  # while health is still running
        assert not any(str(o.prompt).startswith("⚠") for o in cards.options)
        release.set()
        await wait_for(lambda: index.problems)
        await settle(app, pilot)
        assert any(str(o.prompt).startswith("⚠") for o in cards.options)


async def test_the_health_view_posts_typed_results_and_fails_into_one_stale_state(
    tmp_path, monkeypatch
):
    import asyncio

    from termal_tui.store.errors import StoreError
    from tests.viewer_support import app_for, demo_copy, settle

    path = await asyncio.to_thread(demo_copy, tmp_path / "demo")
    for error, shown in (
        (
            StoreError("the disk went away"),
            "● Stale 12:00:00 · the findings of that pass\nthe disk went away",
        ),
        (
            RuntimeError("boom"),
            "● Stale 12:00:00 · the findings of that pass\nunexpected error: RuntimeError: boom",
        ),
    ):
        posted: list[str] = []
        app = app_for(path)
        async with app.run_test(
            size=(80, 24), message_hook=lambda m, posted=posted: posted.append(type(m).__name__)
        ) as pilot:
            await settle(app, pilot)
            await pilot.press("h")
            await settle(app, pilot)
            screen = app.screen
            assert "HealthLoaded" in posted and screen.report is not None
            found = len(screen.report.findings)

            async def broken(*args, _error=error, **kwargs):
                raise _error

            monkeypatch.setattr(screen.source.reader, "health_rows", broken)
            posted.clear()
            await pilot.press("r")
            await settle(app, pilot)
            assert "ReadFailed" in posted and "HealthLoaded" not in posted
            assert str(screen.query_one("#health-status").render()) == shown
            assert screen.query_one("#findings").option_count == found  # kept
            monkeypatch.undo()


# --------------------------------------------- the screen on a driven live source


def _status(screen) -> str:
    return str(screen.query_one("#health-status").render())


async def _health(host: Host, pilot):
    from termal_tui.tui.screens.health import HealthScreen

    return await host.show(pilot, HealthScreen(host.source))


async def _stuck(path: Path, count: int, tag: str) -> None:
    from tests.tui.test_replaced_and_vanished_file import stuck_rows

    await stuck_rows(path, count, tag=tag)


async def test_the_health_screen_follows_the_live_source_and_pauses_while_covered(
    tmp_path, monkeypatch
):
    from termal_tui.store.reader import MailboxReader
    from tests.tui.test_replaced_and_vanished_file import move_away

    path = tmp_path / "coordination.sqlite"
    await _stuck(path, 2, "a")
    passes = [0]
    original = MailboxReader.health_rows

    async def counted(self, *args, **kwargs):
        passes[0] += 1
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(MailboxReader, "health_rows", counted)
    host = Host(path)
    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await _health(host, pilot)
        assert "● Live 12:00:00 · 2 stuck unread rows" in _status(screen)
        assert str(screen.query_one("#health-title").render()).startswith(
            "Delivery health · stuck hand-offs, worst first · coordination.sqlite"
        )
        # Another process adds stuck rows: the next check shows them (no r).
        await _stuck(path, 3, "b")
        await host.advance(pilot, 8)
        assert "● Live 12:00:08 · 5 stuck unread rows" in _status(screen)
        # A poll that found nothing new still runs a pass (time alone makes rows stuck).
        before = passes[0]
        await host.advance(pilot, 8)
        assert passes[0] == before + 1 and "● Live 12:00:16" in _status(screen)
        # Covered by another screen: no pass; shown again: one at once.
        from textual.screen import Screen

        await host.app.push_screen(Screen())
        before = passes[0]
        await host.advance(pilot, 16)
        assert passes[0] == before
        host.app.pop_screen()
        await host.advance(pilot, 0)
        assert passes[0] == before + 1
        # The file goes away: Stale with the reason and the last good time, rows kept.
        listed = screen.query_one("#findings").option_count
        move_away(path)
        await host.advance(pilot, 8)
        assert _status(screen).startswith("● Stale 12:00:32") and "gone" in _status(screen)
        assert screen.query_one("#findings").option_count == listed
        await host.advance(pilot, 60)  # time moves on: the Stale time does not
        assert _status(screen).startswith("● Stale 12:00:32")


async def test_a_slow_health_pass_spaces_out_the_next_ones_on_the_driven_clock(
    tmp_path, monkeypatch
):
    from termal_tui.store.reader import MailboxReader

    path = tmp_path / "coordination.sqlite"
    await _stuck(path, 1, "a")
    passes = [0]
    original = MailboxReader.health_rows
    host = Host(path, interval=1.0)

    async def slow(self, *args, **kwargs):
        passes[0] += 1
        host.clock.elapsed += 2.0  # this pass "takes" two seconds
        return await original(self, *args, **kwargs)

    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await _health(host, pilot)
        monkeypatch.setattr(MailboxReader, "health_rows", slow)
        await host.advance(pilot, 1)
        assert passes[0] == 1  # a fast pass before: this one runs at once
        await host.advance(pilot, 1)
        await host.advance(pilot, 1)
        await host.advance(pilot, 30)  # 20 × 2 s after it ended: not yet
        assert passes[0] == 1
        await pilot.press("r")  # a person asking still gets one at once
        await host.advance(pilot, 0)
        assert passes[0] == 2
        await host.advance(pilot, 41)
        await host.advance(pilot, 1)
        assert passes[0] == 3
        assert "Live" in _status(screen)


async def test_the_health_view_opened_while_the_file_is_missing_says_so(tmp_path):
    """Issue 24: it said ``● Stale 07:24:14`` with a time that moved on at each
    redraw, over an empty list; now it says the file is not there yet (no time), and
    shows the findings the moment the file appears."""
    path = tmp_path / "coordination.sqlite"
    host = Host(path)
    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await _health(host, pilot)
        first = _status(screen)
        assert first.startswith("◌ Not there yet · coordination.sqlite does not exist (yet)")
        assert "Stale" not in first and "12:0" not in first
        await host.advance(pilot, 8)
        await pilot.resize_terminal(100, 30)
        await host.advance(pilot, 0)
        assert _status(screen) == first
        assert screen.query_one("#findings").option_count == 0
        await _stuck(path, 2, "a")
        await host.advance(pilot, 8)
        assert "● Live 12:00:16 · 2 stuck unread rows" in _status(screen)
        assert screen.query_one("#findings").option_count == 2


def test_health_rows_with_wide_names_stay_two_lines_at_every_width():
    """Issue 24: a health row with a wide (CJK) name ran to three lines; rows are laid
    out by cell width now, at any width from 30 to 200 cells."""
    from rich.cells import cell_len

    from termal_tui.tui.screens.health import finding_row
    from termal_tui.views.findings import Finding

    names = (
        "計画担当エージェント ⇄ レビュー担当エージェント",
        "planner ⇄ 🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀",
    )
    for participants in names:
        for kind in ("receiver-gone", "never-woken", "lagging", "no-notifier"):
            finding = Finding(
                kind,
                "m",
                participants,
                "s",
                participants.split(" ⇄ ")[1],
                12_345,
                99_999,
                "x",
                7_200.0,
                12_345,
                3,
            )
            for width in range(30, 201):
                lines = finding_row(finding, width).plain.split("\n")
                assert len(lines) == 2, (width, lines)
                assert all(cell_len(line) <= width for line in lines), (width, lines)


async def test_the_health_screen_says_who_holds_each_channel_and_follows_it(tmp_path):
    import os

    from termal_tui.agents.registry import Registry
    from termal_tui.views.notifiers import registry_path_for
    from tests.viewer_support import FIXED_NOW

    path = tmp_path / "coordination.sqlite"
    await _stuck(path, 2, "a")
    moment = [FIXED_NOW.timestamp() - 60]  # the listener started a minute before noon
    registry = Registry(registry_path_for(path), clock=lambda: moment[0])
    planner = registry.add("planner").id
    backend = registry.add("backend").id
    listener = registry.register_listener(planner)
    # what a remote shim says of itself is untrusted: shown, never obeyed
    shim = registry.register_listener(backend, kind="remote", host="10.0.0.7", peer="7@a\x1b[2Jb")
    moment[0] = FIXED_NOW.timestamp()
    assert registry.beat_listener(listener.id) and registry.beat_listener(shim.id)
    host = Host(path)
    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await _health(host, pilot)
        channels = str(screen.query_one("#health-channels").render())
        assert channels == (
            "channels: backend ← remote 10.0.0.7 (shim 7@a␛[2Jb) since 11:59 UTC"
            f" · planner ← local pid {os.getpid()} since 11:59 UTC"
        )
        # The listener's stream closes: the next pass says nobody holds planner's channel.
        registry.release_listener(listener.id)
        moment[0] += 8
        assert registry.beat_listener(shim.id)  # the shim beats on: it still holds backend's
        await host.advance(pilot, 8)
        channels = str(screen.query_one("#health-channels").render())
        assert channels.endswith("since 11:59 UTC · planner ← nobody")


async def test_the_health_screen_has_no_channels_section_without_a_registry(writer, db_path):
    host = Host(db_path)
    async with host.app.run_test(size=(120, 40)) as pilot:
        screen = await _health(host, pilot)
        assert "● Live" in _status(screen)
        assert not screen.query_one("#health-channels").display
