"""A retry waits for its original's finalization across processes (issue: one key, two
receipts): whether a finalizer is alive is knowable from outside its process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from termal_tui.store import RetryableError, open_writer
from termal_tui.store.finalizers import SUPPORTED, FinalizerClaims, finalizer_alive
from termal_tui.store.writer import FINALIZER_POLL_SECONDS
from tests.helpers import DrivenClock

pytestmark = pytest.mark.skipif(not SUPPORTED, reason="abstract sockets are Linux-only")

ORIGINAL = textwrap.dedent(
    """
    import asyncio, sys
    from termal_tui.store import open_writer

    async def main(path):
        async with open_writer(path) as writer:
            receipt = await writer.append(
                sender_session_id="session-a", sender_name="alice",
                target_session_id="session-b", target_name="bob",
                body="final", idempotency_key="dup-final", finalizing=True,
            )
            print(receipt.message_id, flush=True)
            # The receiver's channel server stalls: until the test says go.
            await asyncio.to_thread(sys.stdin.readline)
            await writer.record_dispatch_outcome(receipt.message_id, "deliveredToIdleSession")
        print("finalized", flush=True)

    asyncio.run(main(sys.argv[1]))
    """
)


def _start_original(path: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", ORIGINAL, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    message_id = process.stdout.readline().strip()
    assert message_id.startswith("mailbox-message-"), message_id
    return process, message_id


def _finalize(process: subprocess.Popen[str]) -> str:
    """Tell the original to record its outcome; its next line once it has."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("go\n")
    process.stdin.flush()
    return process.stdout.readline().strip()


Pause = Callable[[float], Awaitable[None]]


async def _retry(path: Path, pause: Pause, deadline: float = 5.0, timer: DrivenClock | None = None):
    """The same append from this process; its wait for the original's finalizer measured
    on ``timer`` (a driven clock) and paused with ``pause``."""
    async with open_writer(path, deadline=deadline) as writer:
        writer.timer = timer or DrivenClock()
        writer.sleep = pause
        return await writer.append(
            sender_session_id="session-a",
            sender_name="alice",
            target_session_id="session-b",
            target_name="bob",
            body="final",
            idempotency_key="dup-final",
            finalizing=True,
        )


async def test_a_retry_from_another_process_waits_for_the_originals_outcome(db_path):
    async with open_writer(db_path):
        pass  # the schema exists before the two processes race
    process, message_id = await asyncio.to_thread(_start_original, db_path)
    pauses: list[float] = []

    async def pause(delay: float) -> None:
        """The retry found no outcome and a live finalizer: the original finalizes now."""
        pauses.append(delay)
        if len(pauses) == 1:
            assert await asyncio.to_thread(_finalize, process) == "finalized"

    try:
        assert finalizer_alive(db_path, message_id)
        receipt = await _retry(db_path, pause)
    finally:
        process.kill()
        await asyncio.to_thread(process.wait, 30)
    # Not the premature `durableButNotWoken` another process used to get at once.
    assert receipt.duplicate and receipt.notification_disposition == "deliveredToIdleSession"
    assert len(pauses) == 1  # it waited, then read the outcome the original recorded
    assert not finalizer_alive(db_path, message_id)  # released with the outcome


async def test_a_finalizer_killed_mid_flight_resolves_to_durable_but_not_woken_at_once(db_path):
    async with open_writer(db_path):
        pass
    process, message_id = await asyncio.to_thread(_start_original, db_path)
    os.kill(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.wait, 30)
    assert not finalizer_alive(db_path, message_id)  # the kernel let the claim go
    clock = DrivenClock()
    pauses: list[float] = []

    async def pause(delay: float) -> None:
        pauses.append(delay)
        clock.advance(delay)

    receipt = await _retry(db_path, pause, timer=clock)
    assert receipt.duplicate and receipt.notification_disposition == "durableButNotWoken"
    assert pauses == []  # at once: nothing to wait for


async def test_a_finalizer_still_running_at_the_deadline_makes_the_retry_retryable(db_path):
    async with open_writer(db_path):
        pass
    process, _message_id = await asyncio.to_thread(_start_original, db_path)
    clock = DrivenClock()
    started = clock()
    pauses: list[float] = []

    async def pause(delay: float) -> None:  # the time passes while it pauses
        pauses.append(delay)
        clock.advance(delay)

    try:
        with pytest.raises(RetryableError, match="still finalizing"):
            await _retry(db_path, pause, deadline=0.6, timer=clock)
    finally:
        process.kill()
        await asyncio.to_thread(process.wait, 30)
    assert clock() - started == pytest.approx(0.6)  # it looked until the deadline, no longer
    assert len(pauses) >= 2 and max(pauses) <= FINALIZER_POLL_SECONDS


def test_claims_are_per_database_and_released(tmp_path):
    first, second = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    claims = FinalizerClaims(first)
    claims.claim("mailbox-message-1")
    assert finalizer_alive(first, "mailbox-message-1")
    assert not finalizer_alive(second, "mailbox-message-1")
    assert not finalizer_alive(first, "mailbox-message-2")
    claims.release_all()
    assert not finalizer_alive(first, "mailbox-message-1")
