"""Builds a realistic, deterministic demo coordination database through the real writer.

Seven agent sessions coordinate a release: a 140-message planner⇄backend thread (paging),
hostile bodies (Rich markup, ANSI/OSC escapes, C0/C1 controls, bidi overrides),
a 100 KiB log dump, every notification state and dispatch outcome, a structured
review-result control row, and a departed participant. Big indexes for benches and
tests are bulk-filled by the store (:func:`fill_pair_mailboxes`, re-exported here).
"""

from __future__ import annotations

import os
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from termal_tui.core.models import DELIVERED_TO_IDLE_SESSION, QUEUED_BEHIND_ACTIVE_TURN
from termal_tui.store.demo_data import fill_pair_mailboxes as fill_pair_mailboxes
from termal_tui.store.writer import MailboxWriter, open_writer

DEMO_START = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)

AGENTS = {
    "session-1": "planner",
    "session-2": "backend",
    "session-3": "frontend",
    "session-4": "reviewer",
    "session-5": "docs",
    "session-6": "release-bot",
    "session-7": "review-child",
}

HOSTILE_BODIES = [
    "Rendering check: [bold]this should not be bold[/] and [red]neither red[/red].",
    "Unterminated markup [b and a closing tag [/x] that would crash a naive Static.",
    "Click me: [@click=app.quit]quit the viewer[/] — it must stay inert.",
    "ANSI colour \x1b[31mred text\x1b[0m, cursor move \x1b[2J\x1b[H and a title \x1b]0;pwned\x07.",
    "NUL \x00 byte, bell \x07, backspace \x08, C1 CSI \x9b31m and DEL \x7f in one body.",
    "Bidi trick: the file is named \u202eexe.txt\u202c — an override must show visibly.",
]


class _Clock:
    def __init__(self, start: datetime, step: timedelta) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


def _ids(seed: int):
    rng = random.Random(seed)

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    return new_id


async def _send(
    writer: MailboxWriter,
    sender: str,
    target: str,
    body: str,
    key: str,
    topic: str | None = None,
    state_stamp: str | None = None,
):
    return await writer.append(
        sender_session_id=sender,
        sender_name=AGENTS[sender],
        target_session_id=target,
        target_name=AGENTS[target],
        body=body,
        idempotency_key=key,
        topic=topic,
        state_stamp=state_stamp,
    )


async def _ack(writer: MailboxWriter, session_id: str, mailbox_id: str, through: int) -> None:
    expected = await writer.processed_through(session_id, mailbox_id)
    await writer.acknowledge(session_id, mailbox_id, expected, through)


def _planner_backend_body(index: int, sender: str) -> tuple[str, str | None]:
    topics = ["schema", "migration", "api", "tests", "perf"]
    topic = topics[index % len(topics)] if index % 3 == 0 else None
    if sender == "session-1":
        body = (
            f"Step {index}: please take the {topics[index % len(topics)]} work next. "
            "Keep the change small and report the test result.\n\n"
            f"Acceptance: CI green, no new warnings, figures for item {index}."
        )
    else:
        body = (
            f"Done with step {index - 1}. Tests pass locally ({100 + index} passed). "
            "Pushed to the feature branch; ready for the next item."
        )
    return body, topic


DEMO_SPAN = timedelta(minutes=108)  # from the first message to the last


def recent_start(now: datetime | None = None) -> datetime:
    """A start that ends the demo 20 minutes before ``now``: its ages read as a live
    workspace's, old enough for every health finding it is built to show."""
    moment = (now or datetime.now(UTC)).replace(microsecond=0)
    return moment - DEMO_SPAN - timedelta(minutes=20)


async def build_demo(
    path: str | os.PathLike[str], *, start: datetime = DEMO_START, portable: bool | None = None
) -> Path | str:
    """Create (or extend idempotently) the demo database at ``path`` (a file, or a
    ``postgresql://`` URL); ``start`` is the first message's time (fixed by default, for
    snapshots). ``portable`` (always on PostgreSQL): the NUL character, which only a file
    can hold, is written as its visible stand-in ``␀``."""
    from termal_tui.store.urls import is_postgres_url

    url = isinstance(path, str) and is_postgres_url(path)
    target: Path | str = str(path) if url else Path(path)
    portable = url if portable is None else portable
    clock = _Clock(start, timedelta(seconds=41))
    async with open_writer(target, clock=clock, new_id=_ids(20261201)) as writer:
        # 1. A long planner ⇄ backend thread: 140 messages, for paging.
        receipts = []
        for index in range(1, 141):
            sender, recipient = (
                ("session-1", "session-2") if index % 2 else ("session-2", "session-1")
            )
            body, topic = _planner_backend_body(index, sender)
            receipts.append(
                await _send(writer, sender, recipient, body, f"pb-{index}", topic, f"step-{index}")
            )
        long_mailbox = receipts[0].mailbox_id
        # Every dispatch outcome and notification state appears in this thread.
        for index, receipt in enumerate(receipts):
            if index % 4 == 0:
                await writer.record_dispatch_outcome(receipt.message_id, DELIVERED_TO_IDLE_SESSION)
            elif index % 4 == 1:
                await writer.record_dispatch_outcome(receipt.message_id, QUEUED_BEHIND_ACTIVE_TURN)
            elif index % 4 == 2 and index < 130:
                await writer.record_dispatch_outcome(receipt.message_id, "durableButNotWoken")
            # index % 4 == 3 (and the newest few) keep a NULL outcome: never finalized.
        await writer.mark_recovered_through("session-2", long_mailbox, 131)
        await writer.mark_delivered_through("session-1", long_mailbox, 60)
        # planner acknowledged through #120; backend lags at #96.
        await _ack(writer, "session-1", long_mailbox, 120)
        await _ack(writer, "session-2", long_mailbox, 96)

        # 2. planner ⇄ frontend: hostile content, frontend caught up.
        hostile = []
        for index, body in enumerate(HOSTILE_BODIES):
            body = body.replace("\x00", "\u2400") if portable else body
            sender, recipient = (
                ("session-1", "session-3")
                if index % 2 == 0
                else (
                    "session-3",
                    "session-1",
                )
            )
            topic = "[red]markup-topic[/]" if index == 0 else None
            hostile.append(
                await _send(writer, sender, recipient, body, f"hostile-{index}", topic, "\x1b[7m")
            )
        mailbox = hostile[0].mailbox_id
        await _ack(writer, "session-3", mailbox, len(HOSTILE_BODIES))
        await _ack(writer, "session-1", mailbox, len(HOSTILE_BODIES))

        # 3. backend ⇄ reviewer: a 100 KiB log dump, then a verdict.
        log_lines = [
            f"2026-11-30T10:{minute % 60:02d}:{second:02d} INFO worker[{minute % 7}] "
            f"processed batch {minute * 60 + second} in {(minute * 7 + second) % 97} ms"
            for minute in range(40)
            for second in range(60)
        ]
        log = "Full log from the soak run follows.\n" + "\n".join(log_lines)
        log = log[: 100 * 1024]
        dump = await _send(writer, "session-2", "session-4", log, "soak-log", "soak-log")
        await writer.record_dispatch_outcome(dump.message_id, QUEUED_BEHIND_ACTIVE_TURN)
        verdict = await _send(
            writer,
            "session-4",
            "session-2",
            "Reviewed the soak log. No errors; p99 stays under 100 ms. Approved.",
            "soak-verdict",
            "review",
        )
        await _ack(writer, "session-4", dump.mailbox_id, 1)
        await writer.record_dispatch_outcome(verdict.message_id, DELIVERED_TO_IDLE_SESSION)

        # 4. planner ⇄ docs: docs caught up, planner lagging.
        for index in range(1, 6):
            sender, recipient = (
                ("session-5", "session-1")
                if index % 2
                else (
                    "session-1",
                    "session-5",
                )
            )
            await _send(
                writer,
                sender,
                recipient,
                f"Docs pass {index}: updated the README section on mailboxes. "
                "Please check the wording of the cursor paragraph.",
                f"docs-{index}",
            )

        # 5. backend ⇄ release-bot: the release bot was deleted (departed participant).
        for index in range(1, 4):
            await _send(
                writer,
                "session-6" if index % 2 else "session-2",
                "session-2" if index % 2 else "session-6",
                f"Release candidate rc{index} tagged. Waiting for the go-ahead.",
                f"release-{index}",
                "release",
            )
        await writer.mark_session_left("session-6")

        # 6. review-child → planner: a routine note and a structured review result.
        await _send(
            writer,
            "session-7",
            "session-1",
            "Starting the review of the mailbox store. Results will follow as a structured row.",
            "child-hello",
        )
        await writer.append_review_result(
            delegation_id="delegation-42",
            attempt=1,
            child_session_id="session-7",
            child_name=AGENTS["session-7"],
            coordinator_session_id="session-1",
            coordinator_name=AGENTS["session-1"],
            result={
                "schemaVersion": 1,
                "status": "completed",
                "summary": "Store matches the contract; two nits.",
                "findings": [
                    {"severity": "Low", "file": "store/writer.py", "line": 42, "message": "nit"}
                ],
                "commandsRun": [{"command": "pytest", "status": "success"}],
                "filesInspected": ["store/writer.py"],
                "notes": [],
                "suggestedTrackerUpdates": [],
            },
        )
    return target
