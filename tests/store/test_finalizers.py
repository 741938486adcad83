"""A retry waits for its original's finalization across processes (issue: one key, two
receipts): whether a finalizer is alive is knowable from outside its process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from termal_tui.store import RetryableError, open_writer
from termal_tui.store.finalizers import SUPPORTED, FinalizerClaims, finalizer_alive

pytestmark = pytest.mark.skipif(not SUPPORTED, reason="abstract sockets are Linux-only")

ORIGINAL = textwrap.dedent(
    """
    import asyncio, sys, time
    from termal_tui.store import open_writer

    async def main(path, hold):
        async with open_writer(path) as writer:
            receipt = await writer.append(
                sender_session_id="session-a", sender_name="alice",
                target_session_id="session-b", target_name="bob",
                body="final", idempotency_key="dup-final", finalizing=True,
            )
            print(receipt.message_id, flush=True)
            await asyncio.sleep(hold)  # the receiver's channel server stalls
            await writer.record_dispatch_outcome(receipt.message_id, "deliveredToIdleSession")
        print("finalized", flush=True)

    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
    """
)


def _start_original(path: Path, hold: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", ORIGINAL, str(path), str(hold)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    message_id = process.stdout.readline().strip()
    assert message_id.startswith("mailbox-message-"), message_id
    return process, message_id


async def _retry(path: Path, deadline: float = 5.0):
    async with open_writer(path, deadline=deadline) as writer:
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
    process, message_id = await asyncio.to_thread(_start_original, db_path, 0.8)
    try:
        assert finalizer_alive(db_path, message_id)  # the retry starts while it finalizes
        receipt = await _retry(db_path)
    finally:
        await asyncio.to_thread(process.wait, 30)
    # The outcome the original recorded when it was done: not the premature
    # `durableButNotWoken` another process used to get at once.
    assert receipt.duplicate and receipt.notification_disposition == "deliveredToIdleSession"
    assert not finalizer_alive(db_path, message_id)  # released with the outcome


async def test_a_finalizer_killed_mid_flight_resolves_to_durable_but_not_woken_at_once(db_path):
    async with open_writer(db_path):
        pass
    process, message_id = await asyncio.to_thread(_start_original, db_path, 60.0)
    os.kill(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.wait, 30)
    assert not finalizer_alive(db_path, message_id)  # the kernel let the claim go
    # At once: a retry that waited for the dead finalizer would outlast this deadline and
    # answer "still finalizing" instead.
    receipt = await _retry(db_path, deadline=0.5)
    assert receipt.duplicate and receipt.notification_disposition == "durableButNotWoken"


async def test_a_finalizer_still_running_at_the_deadline_makes_the_retry_retryable(db_path):
    async with open_writer(db_path):
        pass
    process, _message_id = await asyncio.to_thread(_start_original, db_path, 60.0)
    try:
        with pytest.raises(RetryableError, match="still finalizing"):
            await _retry(db_path, deadline=0.6)
    finally:
        process.kill()
        await asyncio.to_thread(process.wait, 30)


def test_claims_are_per_database_and_released(tmp_path):
    first, second = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    claims = FinalizerClaims(first)
    claims.claim("mailbox-message-1")
    assert finalizer_alive(first, "mailbox-message-1")
    assert not finalizer_alive(second, "mailbox-message-1")
    assert not finalizer_alive(first, "mailbox-message-2")
    claims.release_all()
    assert not finalizer_alive(first, "mailbox-message-1")
