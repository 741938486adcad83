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
