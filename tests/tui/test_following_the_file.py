"""The viewer as a live monitor: tabs and the index follow the file by themselves (a tab
only while shown), deep jumps, bounded refreshes, cheap idle checks, per-context
footers, dim processed rows, 80x24. Live tests drive the live source's clock
(``advance``), never press r and never wait for a timer."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from textual.geometry import Region

from termal_tui.store import open_writer
from termal_tui.tui.app import MailboxApp
from termal_tui.tui.widgets.index import MailboxIndex
from termal_tui.tui.widgets.mailbox_view import MailboxView, ThreadHeader
from termal_tui.tui.widgets.tabs import TabStrip
from termal_tui.tui.widgets.thread_list import ThreadList
from tests.viewer_support import (
    advance,
    advance_until,
    app_for,
    demo_copy,
    mailbox_between,
    screen_lines,
    screen_text,
    settle,
)

INTERVAL = 0.2


@pytest.fixture
def demo(tmp_path) -> Path:
    return demo_copy(tmp_path / "demo")


def live_app(path: Path, **kwargs: object) -> MailboxApp:
    return app_for(path, poll_interval=INTERVAL, **kwargs)


async def until(app: MailboxApp, pilot: object, predicate) -> None:
    """The live source's next checks (its clock driven), until ``predicate`` holds."""
    await advance_until(app, pilot, predicate, INTERVAL)


async def append(path: Path, body: str, sender: str = "session-2", target: str = "session-1"):
    names = {"session-1": "planner", "session-2": "backend"}
    async with open_writer(path) as writer:
        return await writer.append(
            sender_session_id=sender,
            sender_name=names.get(sender, sender),
            target_session_id=target,
            target_name=names.get(target, target),
            body=body,
            idempotency_key=f"live-{body}",
        )


async def open_tab(app: MailboxApp, pilot: object, *names: str) -> MailboxView:
    """Start-up settled, then the tab of the mailbox between ``names``, settled."""
    await settle(app, pilot)
    app.open_mailbox(mailbox_between(app, *names))
    await settle(app, pilot)
    view = app.active_view()
    assert view is not None
    return view


# ------------------------------------------------------------------ live polls


@pytest.mark.parametrize("opened", ["from the index with enter", "with --mailbox"])
async def test_an_open_tab_shows_new_rows_by_itself(demo, opened):
    probe = live_app(demo)
    async with probe.run_test(size=(120, 40)) as pilot:
        await settle(probe, pilot)
        target = mailbox_between(probe, "planner", "backend")
    app = live_app(demo, mailbox_id=target) if opened == "with --mailbox" else live_app(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        if opened != "with --mailbox":
            index = [s.id for s in app.summaries].index(target)
            for _ in range(index):
                await pilot.press("down")
            await pilot.press("enter")
            await settle(app, pilot)
        view = app.active_view()
        assert view is not None and view.mailbox_id == target
        assert view.messages[0].sequence == 140
        await append(demo, "arrives while watching")
        await until(app, pilot, lambda: view.messages[0].sequence == 141)  # the next check
        await settle(app, pilot)
        assert view.messages[0].sequence == 141  # at the top: shown at once
        assert view.query_one(ThreadHeader).state == "live"
        assert view.thread.highlighted == 0  # still following the top
        # A cursor that moves with the next arrival (a divider changes too): still shown.
        receipt = await append(demo, "and acknowledged", sender="session-1", target="session-2")
        async with open_writer(demo) as writer:
            (summary,) = [
                s for s in await writer.list_mailboxes(session_id="session-2") if s.id == target
            ]
            cursor = summary.participant("session-2").processed_through
            await writer.acknowledge("session-2", target, cursor, receipt.sequence)
        await until(app, pilot, lambda: view.messages[0].sequence == 142)
        await settle(app, pilot)
        assert view.messages[0].sequence == 142 and not view.pending
        assert view.thread.highlighted == 0
        # Reading further down: announced instead, the reader's row kept.
        view.thread.highlighted = 6
        await pilot.pause()
        await append(demo, "second while reading")
        await until(app, pilot, lambda: view.pending)
        await settle(app, pilot)
        assert [m.sequence for m in view.pending] == [143] and view.thread.highlighted == 6
        assert "▲ 1 new message above — press n to show" in screen_text(app)


async def test_an_expanded_top_row_keeps_the_highlight_when_new_rows_arrive(demo):
    """Reading the newest row expanded is reading, not watching: new rows are announced
    above it (they pushed it down and the highlight off it)."""
    app = live_app(demo)
    async with app.run_test(size=(60, 20)) as pilot:
        view = await open_tab(app, pilot, "planner", "backend")
        assert view.thread.highlighted == 0
        top = view.messages[0]
        await pilot.press("enter")  # expanded
        await settle(app, pilot)
        await append(demo, "arrives while reading the top row")
        await until(app, pilot, lambda: view.pending)
        await settle(app, pilot)
        assert view.highlighted_message() == top and view.thread.highlighted == 0
        assert "new message above" in screen_text(app)
        await pilot.press("enter")  # collapsed: watching the top again
        await append(demo, "and one more")
        await until(
            app, pilot, lambda: not view.pending and view.messages[0].sequence == top.sequence + 2
        )


async def test_the_index_polls_by_itself(demo):
    app = live_app(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert len(app.summaries) == 6
        await append(demo, "a new pair", sender="session-3", target="session-6")
        await until(app, pilot, lambda: len(app.summaries) == 7)
        await settle(app, pilot)
        assert len(app.summaries) == 7
        assert app.summaries[0].latest_message_preview == "a new pair"


async def test_an_idle_check_reads_only_the_data_version(demo, monkeypatch):
    """Idle, the one live source asks SQLite whether anything was committed (PRAGMA
    data_version) and nothing else is read: no change token, no page. A commit to the
    open tab's mailbox reads its head once and re-renders only what moved."""
    app = live_app(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        view = await open_tab(app, pilot, "planner", "backend")
        assert view is not None
        calls: list[str] = []
        for name in (
            "data_version",
            "change_token",
            "get_head",
            "read_range",
            "list_mailboxes",
            "get_mailbox",
        ):
            original = getattr(app.reader, name)

            def spy(*args, _name=name, _original=original, **kwargs):
                calls.append(_name)
                return _original(*args, **kwargs)

            monkeypatch.setattr(app.reader, name, spy)
        replaced: list[set[str]] = []
        original_replace = ThreadList.replace_rows
        monkeypatch.setattr(
            ThreadList,
            "replace_rows",
            lambda self, prompts: (replaced.append(set(prompts)), original_replace(self, prompts)),
        )
        for _ in range(3):
            await advance(app, pilot, INTERVAL)
        # three idle checks: the data version only (no token, no count, no rows, no
        # summary, for the tab or the hidden index)
        assert calls == ["data_version"] * 3
        async with open_writer(demo) as writer:  # backend processes two more rows
            await writer.acknowledge("session-2", view.mailbox_id, 96, 98)
        await advance(app, pilot, INTERVAL)
        assert "get_head" in calls
        calls.clear()
        for _ in range(2):  # and idle again
            await advance(app, pilot, INTERVAL)
        assert calls == ["data_version"] * 2
        changed = set().union(*replaced)
        ids = {m.sequence: m.id for m in view.messages}
        assert {ids[97]} <= changed  # planner → backend #97 flipped to processed
        assert len(changed) <= 4  # the flipped row and where the divider moved, nothing else


async def test_refresh_with_nothing_loaded_reads_the_first_page_again(demo, monkeypatch):
    app = live_app(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        original = app.reader.read_page
        locked = {"now": True}
        attempts: list[bool] = []

        async def flaky(*args, **kwargs):
            attempts.append(locked["now"])
            if locked["now"]:
                from termal_tui.store.errors import RetryableError

                raise RetryableError("the file is busy")
            return await original(*args, **kwargs)

        monkeypatch.setattr(app.reader, "read_page", flaky)
        app.open_mailbox(mailbox_between(app, "planner", "backend"))
        await settle(app, pilot)
        view = app.active_view()
        await until(app, pilot, lambda: len(attempts) >= 3)  # tried again while failing
        assert view is not None and view.summary is None  # stays empty and Stale
        assert view.query_one(ThreadHeader).state == "stale"
        locked["now"] = False
        await until(app, pilot, lambda: view.summary is not None)  # the next check, no key
        await settle(app, pilot)
        assert len(view.messages) == 50  # the first page, not every row after #0
        assert view.query_one(ThreadHeader).state == "live"


async def test_a_refresh_brings_at_most_a_bounded_number_of_rows(demo):
    app = live_app(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        view = await open_tab(app, pilot, "planner", "backend")
        view.thread.highlighted = 3  # not at the top: new rows wait as pending
        await pilot.pause()
        async with open_writer(demo) as writer:
            for n in range(1_050):
                await writer.append(
                    sender_session_id="session-2",
                    sender_name="backend",
                    target_session_id="session-1",
                    target_name="planner",
                    body=f"burst {n}",
                    idempotency_key=f"burst-{n}",
                )
        # One check reads at most 1,000 rows and says there are more.
        await until(app, pilot, lambda: len(view.pending) >= 1_000 and view.model.pending_more)
        await settle(app, pilot)
        assert len(view.pending) == 1_000 and view.model.pending_more
        assert "1,000+ new messages above" in screen_text(app)
        assert len(view.messages) == 50  # nothing was pulled into the view


# -------------------------------------------------------------------- jumps


def _big_mailbox(path: Path, count: int) -> str:
    async def create() -> None:
        async with open_writer(path):
            pass

    asyncio.run(create())
    mailbox = "mailbox-00000000-0000-4000-8000-00000000beef"
    db = sqlite3.connect(path)
    db.execute(
        "INSERT INTO mailboxes VALUES (?, '[\"a\",\"b\"]', '2026-01-01T00:00:00+00:00', ?)",
        (mailbox, count + 1),
    )
    db.executemany(
        "INSERT INTO mailbox_participants VALUES (?, ?, ?, ?, '2026-01-01T00:00:00+00:00', NULL)",
        [(mailbox, "a", "alpha", count // 2), (mailbox, "b", "beta", count)],
    )
    db.executemany(
        "INSERT INTO mailbox_messages VALUES (?,?,?,?,?,?,?,?,'routine',NULL,NULL,?,?,1,"
        "'durableButNotWoken','durableButNotWoken')",
        (
            (
                f"m-{n}",
                mailbox,
                n,
                "b",
                "beta",
                "a",
                "alpha",
                f"2026-01-01T00:00:00.{n:09d}+00:00",
                f"Row {n}. Detail.",
                f"k-{n}",
            )
            for n in range(1, count + 1)
        ),
    )
    db.commit()
    db.close()
    return mailbox


async def test_a_deep_jump_reads_a_window_and_marks_the_gap(tmp_path):
    path = tmp_path / "state" / "coordination.sqlite"
    path.parent.mkdir()
    mailbox = await asyncio.to_thread(_big_mailbox, path, 20_000)
    app = app_for(path, mailbox_id=mailbox)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = app.active_view()
        assert view is not None and len(view.messages) == 50
        app.active_view().jump_to(5_000)
        await settle(app, pilot)
        message = view.highlighted_message()
        assert message is not None and message.sequence == 5_000
        assert len(view.messages) == 50 + 51  # a window, not 15,000 rows
        text = screen_text(app)
        assert "#5,000" in text
        gap_prompts = [
            str(o.prompt) for o in view.thread.options if o.id and o.id.startswith("gap-")
        ]
        (gap_prompt,) = gap_prompts
        # alpha's cursor (#10000) stands inside the gap: its divider splits the gap row
        # there (never drawn above the unloaded rows #10,001–#19,950 it is not above).
        assert gap_prompt.splitlines() == [
            "  … up to 9,950 rows not loaded (#10,001–#19,950) — enter to load",
            "──── alpha has processed to here (#10,000) ────",
            "  … up to 4,975 rows not loaded (#5,026–#10,000)",
        ]
        view.thread.highlighted = view.model.index_of(view.model.items[50].key)  # the gap row
        await pilot.press("enter")
        await settle(app, pilot)
        assert len(view.messages) == 151
        assert [m.sequence for m in view.messages[50:52]] == [19_950, 19_949]
        app.active_view().jump_to(19_999)  # loaded already: selected at once
        await settle(app, pilot)
        assert view.highlighted_message().sequence == 19_999


async def test_jumping_to_a_hidden_or_missing_row_says_which(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_tab(app, pilot, "planner", "review-child")
        app.active_view().jump_to(2)  # the structured review result: hidden in the human view
        await settle(app, pilot)
        assert any("control-plane row" in n.message for n in app._notifications)
        app.active_view().jump_to(999)
        await settle(app, pilot)
        assert any("There is no message #999" in n.message for n in app._notifications)


# ------------------------------------------------------------- counts, titles


async def test_no_cursor_is_shown_above_the_latest_sequence(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_tab(app, pilot, "planner", "review-child")
        text = screen_text(app)
        assert "review-child 2/2" in text and "2/1" not in text
        assert "of latest #2 loaded" in text


async def test_a_visible_review_result_renders_structured(demo):
    app = app_for(demo, session_id="session-7")  # the child sees its own result
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.open_mailbox(app.summaries[0].id)
        await settle(app, pilot)
        text = screen_text(app)
        assert "Review result · completed" in text
        assert '{"schemaVersion"' not in text  # never raw JSON


async def test_paused_and_a_tab_opened_by_id_is_titled_with_names(demo):
    probe = app_for(demo)
    async with probe.run_test(size=(120, 40)) as pilot:
        await settle(probe, pilot)
        target = mailbox_between(probe, "planner", "docs")
    app = app_for(demo, mailbox_id=target)  # interval 0
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = app.active_view()
        assert view.query_one(ThreadHeader).state == "paused"
        assert "⏸ Paused" in screen_text(app) and "● Live" not in screen_text(app)
        assert app.query_one(TabStrip).label(app.active_pane).plain == "planner ⇄ docs"


# ----------------------------------------------------------------- appearance


async def test_the_footer_offers_what_applies_where_you_are(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        footer = screen_lines(app)[-1]
        assert "Open" in footer and "Refresh" in footer
        for absent in ("Older", "Body", "Close", "Expand"):
            assert absent not in footer
        app.open_mailbox(mailbox_between(app, "planner", "backend"))
        await settle(app, pilot)
        footer = screen_lines(app)[-1]
        for present in ("Expand", "Older", "Body", "Close", "[ ] Tabs", "Search", "Quit"):
            assert present in footer, present
        assert "New" not in footer  # nothing pending
        assert footer.rstrip().endswith("palette")  # nothing cut at 80 columns


async def test_80x24_fits_the_index_and_a_tab_header(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        text = screen_text(app)
        from termal_tui.views.presentation import summary_title

        shown = sum(1 for s in app.summaries if summary_title(s) in text)
        assert shown >= 5
        assert "read-only" in text.splitlines()[0]
        app.open_mailbox(mailbox_between(app, "planner", "backend"))
        await settle(app, pilot)
        header = next(line for line in screen_text(app).splitlines() if "Paused" in line)
        assert "12:00:00" in header and "50 of latest #140 loaded" in header


async def test_processed_rows_are_dimmer_than_unread_rows(demo):
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        view = await open_tab(app, pilot, "planner", "backend")
        view.thread.highlighted = 0
        await pilot.pause()

        def sender_brightness(marker: str) -> float:
            """Luminance of the sender name on the first non-highlighted row with ``marker``."""
            thread = view.thread
            width, height = thread.size
            for strip in thread.render_lines(Region(0, 0, width, height)):
                segments = list(strip)
                text = "".join(segment.text for segment in segments)
                if marker not in text or "▸" not in text:
                    continue
                name = next(s for s in segments if "backend" in s.text or "planner" in s.text)
                r, g, b = name.style.color.get_truecolor()
                return 0.2126 * r + 0.7152 * g + 0.0722 * b
            raise AssertionError(marker)

        app.active_view().jump_to(
            120
        )  # processed rows (backend → planner, planner at 120) on screen
        await settle(app, pilot)
        assert sender_brightness("✓ Processed") < sender_brightness("● Unread") - 40


async def test_a_tall_expanded_row_is_read_with_page_down(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await open_tab(app, pilot, "backend", "reviewer")
        view.thread.highlighted = 1  # the 100 KiB log
        await pilot.press("enter")
        await pilot.pause()
        assert "press f for the full body" not in screen_text(app)
        await pilot.press("pagedown", "pagedown")
        await pilot.pause()
        assert "more lines — press f for the full body" in screen_text(app)
        assert view.thread.highlighted == 1  # still on the same row


async def test_with_mailbox_the_first_page_is_read_before_any_count(demo, monkeypatch):
    probe = app_for(demo)
    async with probe.run_test(size=(120, 40)) as pilot:
        await settle(probe, pilot)
        target = mailbox_between(probe, "planner", "backend")
    order: list[str] = []
    from termal_tui.store.reader import MailboxReader

    for name in ("read_page", "list_mailboxes", "get_head", "get_mailbox"):
        original = getattr(MailboxReader, name)

        async def spy(self, *args, _name=name, _original=original, **kwargs):
            order.append(_name)
            return await _original(self, *args, **kwargs)

        monkeypatch.setattr(MailboxReader, name, spy)
    app = app_for(demo, mailbox_id=target)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert len(app.active_view().messages) == 50 and len(app.summaries) == 6
    assert order.index("read_page") < order.index("list_mailboxes")
    assert "get_mailbox" not in order  # the CLI-style count never runs for a tab


# ------------------------------------------------------- timers follow visibility


async def test_hidden_tabs_read_nothing_and_a_hidden_index_reads_no_idle_page(demo, monkeypatch):
    """A hidden tab reads nothing, even on a commit (it remembers it); coming back to
    it reads what moved at once. The index keeps following commits behind a tab (the
    terminal's title and the attention signals follow every mailbox), and an idle check
    reads no page."""
    polls: list[str] = []
    view_poll = MailboxView.poll

    def view_tick(self: MailboxView) -> None:
        polls.append(self.mailbox_id)
        view_poll(self)

    monkeypatch.setattr(MailboxView, "poll", view_tick)
    app = live_app(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first = await open_tab(app, pilot, "planner", "backend")
        second = await open_tab(app, pilot, "planner", "docs")
        pages: list[int] = []
        original = app.reader.list_mailboxes

        async def counting(*args: object, **kwargs: object):
            pages.append(1)
            return await original(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(app.reader, "list_mailboxes", counting)
        polls.clear()
        for _ in range(3):
            await advance(app, pilot, INTERVAL)
        assert not polls and not pages  # nothing committed: nobody read anything
        await append(demo, "while the first tab is hidden")
        await advance(app, pilot, INTERVAL)
        assert polls == [second.mailbox_id]  # the shown tab only
        assert pages == [1]  # the hidden index follows the commit (the title)
        app.activate(first.id)  # back to the first tab
        await settle(app, pilot)
        assert polls == [second.mailbox_id, first.mailbox_id]  # refreshed at once
        assert first.live and first.messages[0].body == "while the first tab is hidden"


async def test_a_tab_activated_before_its_view_is_built_still_gets_the_keys(demo, monkeypatch):
    """TabActivated can arrive before the view has composed its children (fast
    start-up): the view focuses its thread once it has one, instead of NoMatches."""
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        view = await open_tab(app, pilot, "planner", "backend")
        pane = view.id
        app.action_show_index()
        await settle(app, pilot)
        unbuilt = MailboxView(view.mailbox_id, app.live)
        monkeypatch.setattr(app, "active_view", lambda: unbuilt)
        app.activate(pane)
        await settle(app, pilot)
        assert app.is_running
        monkeypatch.undo()
        await view.mount(unbuilt)  # built now: its thread takes the keys
        await settle(app, pilot)
        assert app.focused is unbuilt.thread


# ----------------------------------------------------------------- start-up


@pytest.mark.parametrize("opened", ["from the index", "with --mailbox"])
async def test_the_first_page_is_rendered_once_at_the_real_width(demo, monkeypatch, opened):
    from termal_tui.tui.widgets import mailbox_view

    widths: list[int] = []
    original = mailbox_view.message_row

    def spy(*args, **kwargs):
        widths.append(kwargs["width"])
        return original(*args, **kwargs)

    monkeypatch.setattr(mailbox_view, "message_row", spy)
    target = None
    if opened == "with --mailbox":
        probe = app_for(demo)
        async with probe.run_test(size=(120, 40)) as pilot:
            await settle(probe, pilot)
            target = mailbox_between(probe, "planner", "backend")
    app = app_for(demo, mailbox_id=target)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        if target is None:
            widths.clear()
            await open_tab(app, pilot, "planner", "backend")
        view = app.active_view()
        assert view is not None and len(view.messages) == 50
        thread = view.thread  # its content less the scrollbar and the option padding
        real = thread.size.width - thread.styles.scrollbar_size_vertical - 2
        assert real > 20
        assert widths and set(widths) == {real}, sorted(set(widths))
        assert len(widths) == 50  # each row of the first page, once


async def test_the_index_is_drawn_before_it_reads(demo, monkeypatch):
    """The first frame (the index saying "Loading mailboxes…") comes before the first
    list of summaries is read."""
    from termal_tui.store.reader import MailboxReader

    laid_out: list[bool] = []
    original = MailboxReader.list_mailboxes

    async def spy(self, *args, **kwargs):
        (index,) = list(app.query(MailboxIndex)) or [None]
        laid_out.append(index is not None and index.size.width > 0)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(MailboxReader, "list_mailboxes", spy)
    app = app_for(demo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert len(app.summaries) == 6
    assert laid_out and laid_out[0]
