"""The viewer left open all day: a replaced or vanished database file, the health view
live like a tab, hidden control-plane rows marked where they stand, big indexes drawn
a screenful first. Live tests drive the live source's clock (``advance``), never press r
and never wait for a timer."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from textual.widgets import Static

from termal_tui.store import open_writer
from termal_tui.store.reader import FILE_GONE, FILE_SWAPPED, open_reader
from termal_tui.tui.app import MailboxApp
from termal_tui.tui.widgets.index import MailboxIndex
from termal_tui.tui.widgets.mailbox_view import ThreadHeader
from tests.viewer_support import (
    advance_until,
    app_for,
    demo_copy,
    mailbox_between,
    many_mailboxes,
    settle,
    wait_for,
)

INTERVAL = 0.2
SIDECARS = ("", "-wal", "-shm")


@pytest.fixture
def demo(tmp_path) -> Path:
    return demo_copy(tmp_path / "demo")


def live_app(path: Path, **kwargs: object) -> MailboxApp:
    return app_for(path, poll_interval=INTERVAL, **kwargs)


async def until(app: MailboxApp, pilot: object, predicate, steps: int = 10) -> None:
    """The live source's next checks (its clock driven), until ``predicate`` holds."""
    await advance_until(app, pilot, predicate, INTERVAL, steps)


def index_status(app: MailboxApp) -> str:
    index = app.screen_stack[0].query_one(MailboxIndex)
    return str(index.query_one("#index-status", Static).render())


def move_away(path: Path) -> None:
    for suffix in SIDECARS:
        source = Path(f"{path}{suffix}")
        if source.exists():
            source.rename(Path(f"{path}.old{suffix}"))


async def new_file(path: Path, body: str) -> None:
    async with open_writer(path) as writer:
        await writer.append(
            sender_session_id="session-x",
            sender_name="restorer",
            target_session_id="session-y",
            target_name="auditor",
            body=body,
            idempotency_key="replaced-1",
        )


# ------------------------------------------------------- 1. the file replaced


async def test_the_reader_knows_its_file_is_gone_or_another_one(demo):
    async with open_reader(demo) as reader:
        assert reader.file_state() is None
        move_away(demo)
        assert reader.file_state() == FILE_GONE
        with pytest.raises(Exception, match="gone"):
            await reader.list_mailboxes()
        await new_file(demo, "A new file.")
        assert reader.file_state() == FILE_SWAPPED


@pytest.mark.parametrize("which", ["mailboxes", "board"])
async def test_a_file_swapped_while_its_reader_opens_is_noticed(demo, monkeypatch, which):
    """The identity is taken before the connection opens: a file put at the path just
    after the connection opened the old one is "another file", never the reader's own
    (it was, for good: the reader showed the old file as live)."""
    import termal_tui.store.board.reader as board_module
    import termal_tui.store.reader as reader_module
    from termal_tui.store.board.reader import open_board_reader

    module = reader_module if which == "mailboxes" else board_module
    opener = open_reader if which == "mailboxes" else open_board_reader
    original = module._open_verified
    spare = demo.with_name("spare.sqlite")
    shutil.copy(demo, spare)

    async def then_swapped(*args, **kwargs):
        opened = await original(*args, **kwargs)
        if not kwargs.get("immutable") and spare.exists():  # the real open, not a probe
            os.replace(spare, demo)  # another file at the path, after the connection opened
        return opened

    monkeypatch.setattr(module, "_open_verified", then_swapped)
    async with opener(demo) as reader:
        assert reader.file_state() == FILE_SWAPPED


async def test_a_replaced_database_is_noticed_and_the_new_file_opened(demo):
    app = live_app(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert len(app.summaries) > 1
        move_away(demo)
        # Deleted: Stale with the reason, until it comes back.
        await until(
            app, pilot, lambda: "Stale" in index_status(app) and "gone" in index_status(app)
        )
        await new_file(demo, "Restored from a backup.")
        await until(
            app,
            pilot,
            lambda: (
                [s.latest_message_preview for s in app.summaries] == ["Restored from a backup."]
            ),
        )
        assert "Live" in index_status(app)
        assert "1 mailbox" in index_status(app)


async def test_an_open_tab_goes_stale_when_the_file_goes_and_reads_the_new_one(demo):
    app = live_app(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.open_mailbox(mailbox_between(app, "planner", "backend"))
        await settle(app, pilot)
        view = app.active_view()
        assert view is not None
        header = view.query_one(ThreadHeader)
        await until(app, pilot, lambda: header.state == "live")
        move_away(demo)
        await until(app, pilot, lambda: header.state == "stale" and "gone" in header.error)
        await new_file(demo, "Restored.")
        # The old tab's mailbox is not in the new file: it says so, no old rows.
        await until(
            app, pilot, lambda: header.state == "stale" and "no longer available" in header.error
        )
        assert not view.messages
        assert os.path.exists(demo)


# ------------------------------------------------------------- 7. big indexes


async def test_a_big_index_draws_a_page_of_cards_and_the_next_as_it_scrolls(tmp_path):
    from textual.widgets import OptionList

    from termal_tui.views.index import PAGE_CARDS

    path = await many_mailboxes(tmp_path / "coordination.sqlite", 2 * PAGE_CARDS + 30)
    app = app_for(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        cards = app.query_one("#cards", OptionList)
        # Only the first page is read and built, newest activity first.
        assert cards.option_count == PAGE_CARDS
        assert (
            app.summaries[0].id == f"mailbox-{2 * PAGE_CARDS + 29:08d}-0000-4000-8000-000000000000"
        )
        # The counts cover every mailbox, not only the cards built.
        assert f"{2 * PAGE_CARDS + 30} mailboxes" in index_status(app)
        assert f"{2 * (2 * PAGE_CARDS + 30)} unread" in index_status(app)
        cards.scroll_end(animate=False)  # the wheel or the scrollbar, not the highlight
        await settle(app, pilot)
        assert cards.option_count == 2 * PAGE_CARDS
        await pilot.press("end")
        await settle(app, pilot)
        assert cards.option_count == 2 * PAGE_CARDS + 30
        ids = [s.id for s in app.summaries]
        assert len(set(ids)) == len(ids) == 2 * PAGE_CARDS + 30
        assert not app.screen_stack[0].query_one(MailboxIndex).more


# ------------------------------------------------------------ 2. health, live


def health_status(app: MailboxApp) -> str:
    return str(app.screen.query_one("#health-status", Static).render())


async def stuck_rows(path: Path, count: int, hours_old: float = 5.0, tag: str = "a") -> None:
    """``count`` rows from planner to reviewer, never woken, ``hours_old`` before the
    tests' fixed clock: each one both never woken and lagging."""
    from datetime import timedelta

    from tests.viewer_support import FIXED_NOW

    async with open_writer(path, clock=lambda: FIXED_NOW - timedelta(hours=hours_old)) as w:
        for n in range(count):
            await w.append(
                sender_session_id="session-p",
                sender_name="planner",
                target_session_id="session-r",
                target_name="reviewer",
                body=f"Please review part {n}.",
                idempotency_key=f"stuck-{tag}-{n}",
            )


async def test_the_health_view_counts_each_unread_row_once(tmp_path):
    from termal_tui.views.findings import health_report
    from tests.viewer_support import FIXED_NOW

    path = tmp_path / "coordination.sqlite"
    await stuck_rows(path, 3)
    async with open_reader(path) as reader:
        report = await health_report(reader, now=FIXED_NOW)
    assert sorted(f.kind for f in report.findings) == ["lagging", "never-woken"]
    assert report.stuck_rows == 3
    app = app_for(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("h")
        await settle(app, pilot)
        assert "stuck" in health_status(app)
        assert "3 stuck unread rows in 1 of 1 mailbox " in health_status(app)


async def test_the_health_view_is_live_with_its_time_and_state_and_no_tab_keys(tmp_path):
    path = tmp_path / "coordination.sqlite"
    await stuck_rows(path, 2)
    app = live_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("h")
        await settle(app, pilot)
        assert "2 stuck unread rows" in health_status(app)
        assert "● Live 12:00:00" in health_status(app)
        footer = {b.binding.description for b in app.active_bindings.values() if b.enabled}
        assert "Tabs" not in footer and "Index" not in footer
        # Another process adds stuck rows: the view shows them by itself (no r).
        await stuck_rows(path, 3, tag="b")
        await until(app, pilot, lambda: "5 stuck unread rows" in health_status(app))
        # Covered by help, no pass; uncovered, one at once (counted on a driven clock
        # in test_health.py::test_the_health_screen_follows_the_live_source_…).
        screen = app.screen
        await pilot.press("question_mark")
        await pilot.pause()
        assert screen._covered
        await pilot.press("escape")
        await settle(app, pilot)
        assert not screen._covered
        # The file goes away: Stale with the reason, listed findings kept.
        move_away(path)
        await until(
            app, pilot, lambda: "Stale" in health_status(app) and "gone" in health_status(app)
        )


def test_every_finding_kind_has_a_label_in_the_health_view():
    from termal_tui.tui.screens.health import KIND_LABELS
    from termal_tui.views.findings import SEVERITY

    assert set(KIND_LABELS) == set(SEVERITY)  # "no-notifier" included


# ----------------------------------------------- 4. hidden control-plane rows

REVIEW = {
    "schemaVersion": 1,
    "status": "completed",
    "summary": "Looks good.",
    "findings": [],
    "commandsRun": [],
    "filesInspected": ["a.py"],
    "notes": [],
    "suggestedTrackerUpdates": [],
}


async def with_review_rows(path: Path) -> None:
    """#1 visible, #2 a review result, #3 visible, #4 a review result."""

    async def visible(writer, n: int) -> None:
        await writer.append(
            sender_session_id="session-child",
            sender_name="child",
            target_session_id="session-parent",
            target_name="parent",
            body=f"Visible row {n}.",
            idempotency_key=f"visible-{n}",
        )

    async def review(writer, attempt: int) -> None:
        await writer.append_review_result(
            delegation_id="delegation-1",
            attempt=attempt,
            child_session_id="session-child",
            child_name="child",
            coordinator_session_id="session-parent",
            coordinator_name="parent",
            result=REVIEW,
        )

    async with open_writer(path) as writer:
        await visible(writer, 1)
        await review(writer, 1)
        await visible(writer, 3)
        await review(writer, 2)


async def test_hidden_control_plane_rows_are_marked_where_they_stand(tmp_path):
    from tests.viewer_support import screen_text

    path = tmp_path / "coordination.sqlite"
    await with_review_rows(path)
    app = app_for(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        summary = app.summaries[0]
        app.open_mailbox(summary.id)
        await settle(app, pilot)
        view = app.active_view()
        assert view is not None
        text = screen_text(app)
        assert "· 1 control-plane row hidden (#4)" in text  # above the newest row
        assert "· 1 control-plane row hidden (#2)" in text  # between #3 and #1
        assert text.index("hidden (#4)") < text.index("Visible row 3.")
        assert text.index("Visible row 3.") < text.index("hidden (#2)")
        assert text.index("hidden (#2)") < text.index("Visible row 1.")
        # One latest number: the header says what the index and the palette say.
        header = view.query_one(ThreadHeader)
        from termal_tui.views.thread import latest_shown

        assert header.latest == latest_shown(summary)
        # v shows the review result itself (next to the highlighted row, #4 above #3).
        await pilot.press("v")
        await wait_for(lambda: type(app.screen).__name__ == "BodyScreen")
        assert app.screen.message.sequence == 4  # type: ignore[attr-defined]
        assert app.screen.message.is_control  # type: ignore[attr-defined]


def termal_basic(tmp_path: Path) -> Path:
    import shutil

    source = (
        Path(__file__).resolve().parents[1] / "fixtures" / "termal_basic" / "coordination.sqlite"
    )
    target = tmp_path / "termal_basic" / "coordination.sqlite"
    target.parent.mkdir()
    shutil.copy(source, target)
    return target


async def test_a_departed_session_s_view_says_why_it_lists_nothing(tmp_path):
    path = termal_basic(tmp_path)
    app = app_for(path, session_id="session-c")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert not app.summaries
        empty = str(app.query_one("#index-empty", Static).render())
        assert "No mailboxes yet" not in empty
        assert "session-c has left every mailbox it was in (2)" in empty


async def test_a_recovered_wake_hours_old_is_woken_and_not_processed(tmp_path):
    from datetime import timedelta

    from termal_tui.core.formats import parse_timestamp
    from termal_tui.views.findings import health_report

    path = termal_basic(tmp_path)
    async with open_reader(path) as reader:
        rows = await reader.list_mailboxes()
        mailbox = next(s for s in rows if s.latest_message_preview == "Review ready?")
        assert mailbox.latest_message_at is not None
        now = parse_timestamp(mailbox.latest_message_at) + timedelta(hours=5)
        report = await health_report(reader, now=now)
    kinds = {f.kind for f in report.findings if f.mailbox_id == mailbox.id}
    assert "woken-unprocessed" in kinds  # recoveredWake: a recovery pass woke backend


async def test_the_tab_header_and_the_palette_say_the_same_latest_number(demo):
    from termal_tui.tui.commands import MailboxCommands

    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        mailbox = mailbox_between(app, "planner", "review-child")  # #2: a review result
        app.open_mailbox(mailbox)
        await settle(app, pilot)
        view = app.active_view()
        assert view is not None
        latest = view.query_one(ThreadHeader).latest
        helps = [
            help_text
            for name, _, help_text in MailboxCommands(app.screen)._commands()
            if mailbox in name
        ]
        assert helps and f"latest #{latest:,}" in helps[0]
        assert latest == 2


async def test_a_review_result_arriving_above_the_newest_row_is_marked_live(tmp_path):
    from tests.viewer_support import screen_text

    path = tmp_path / "coordination.sqlite"
    await with_review_rows(path)
    app = live_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.open_mailbox(app.summaries[0].id)
        await settle(app, pilot)
        assert "hidden (#4)" in screen_text(app)
        async with open_writer(path) as writer:
            await writer.append_review_result(
                delegation_id="delegation-1",
                attempt=3,
                child_session_id="session-child",
                child_name="child",
                coordinator_session_id="session-parent",
                coordinator_name="parent",
                result=REVIEW,
            )
        await until(app, pilot, lambda: "2 control-plane rows hidden (#4–#5)" in screen_text(app))
