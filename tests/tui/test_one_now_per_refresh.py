"""Ages on screen come from one moment per refresh: rows sent in the same second read
the same age side by side (a row drawn by a refresh said ``26 s ago`` beside an older
row of the same second still drawn at the previous tick, ``24 s ago``). The same for
the index's cards when a page is appended."""

from __future__ import annotations

import re
from pathlib import Path

from termal_tui.store import open_writer
from tests.viewer_support import (
    FIXED_NOW,
    advance,
    app_for,
    mailbox_between,
    screen_lines,
    settle,
)

INTERVAL = 0.2
STAMP_NS = int(FIXED_NOW.timestamp()) * 1_000_000_000  # one second for every row here


async def append_at_stamp(path: Path, body: str) -> int:
    async with open_writer(path, clock=lambda: STAMP_NS) as writer:
        receipt = await writer.append(
            sender_session_id="session-2",
            sender_name="backend",
            target_session_id="session-1",
            target_name="planner",
            body=body,
            idempotency_key=f"same-second-{body}",
        )
    return receipt.sequence


def age_of(lines: list[str], sequence: int) -> str:
    for line in lines:
        if f"#{sequence}  " in line:
            found = re.search(r"(\d+ s ago|just now|\d+ min ago)", line)
            assert found, line
            return found.group(1)
    raise AssertionError(f"#{sequence} is not on screen")


async def test_rows_sent_in_the_same_second_read_the_same_age(demo):
    first = await append_at_stamp(demo, "first of the second")
    await append_at_stamp(demo, "then another")  # the row the next one lands on
    app = app_for(demo, poll_interval=INTERVAL)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.open_mailbox(mailbox_between(app, "planner", "backend"))
        await settle(app, pilot)
        await advance(app, pilot, 24)  # one check: nothing new, the ages tick
        assert age_of(screen_lines(app), first) == "24 s ago"
        second = await append_at_stamp(demo, "and one more in the same second")
        await advance(app, pilot, 2)  # one check: the new row is read and drawn
        lines = screen_lines(app)
        assert age_of(lines, second) == age_of(lines, first) == "26 s ago"


async def test_cards_appended_as_the_index_scrolls_and_those_above_read_one_moment(tmp_path):
    """A page of cards appended later was drawn at its own moment while the cards above
    kept the ages of an earlier one: every card on screen now reads its age at the
    moment of the last draw."""
    from datetime import UTC, datetime, timedelta

    from textual.widgets import OptionList

    from termal_tui.tui.widgets.index import MailboxIndex
    from termal_tui.views.index import PAGE_CARDS
    from termal_tui.views.live import ManualClock
    from tests.viewer_support import many_mailboxes

    count = PAGE_CARDS + 30
    path = await many_mailboxes(tmp_path / "coordination.sqlite", count)
    # Card n's latest message is n seconds after midnight: ages in seconds and minutes.
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=count + 24))
    app = app_for(path, live_clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        index = app.query_one(MailboxIndex)
        cards = app.query_one("#cards", OptionList)
        assert cards.option_count == PAGE_CARDS
        clock.elapsed += 37  # time passes with no tick (paused): then the next page
        cards.scroll_end(animate=False)
        await settle(app, pilot)
        assert cards.option_count == count
        stamps = {s.id: s.latest_message_at or "" for s in index.summaries}
        assert not index.ages.changed(stamps, clock.now())
