"""Wake-ups without TermAl: a pull pass for hooks and a push watcher for Claude Code channels.

Both follow the spec's wake lifecycle: the rows a wake covers advance to
``recoveredWake`` when the wake is materialized, and to ``deliveredToIdleSession``
only after the prompt was actually written (to stdout for a hook, to the MCP
transport for a channel). A wake that could not be written leaves its rows
recoverable. Wakes carry metadata only (``prompts.wake_prompt``), never bodies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from termal_tui.agents.nudge import nudge_address
from termal_tui.agents.prompts import wake_prompt
from termal_tui.agents.registry import Registry
from termal_tui.formats import NEVER_WOKEN_PASS_CAP
from termal_tui.models import UnreadWakeup
from termal_tui.sanitize import visible_line
from termal_tui.store.errors import StoreError
from termal_tui.store.writer import MailboxWriter

T = TypeVar("T")
logger = logging.getLogger(__name__)

# A wake is delivered only if this returns normally (it raises when nothing was written).
Emit = Callable[[UnreadWakeup, str], Awaitable[None]]


async def prepare_wakes(
    writer: MailboxWriter,
    session_id: str,
    *,
    boot: bool = False,
    skip: Callable[[UnreadWakeup], bool] | None = None,
) -> list[tuple[UnreadWakeup, str]]:
    """The wakes of one recovery pass, with their prompts, their rows marked recoveredWake:
    never-woken or turn-queued mailboxes (at most 16), or every unread one on boot.
    ``skip`` leaves a candidate untouched. Deliver them with :func:`mark_delivered` once
    written."""
    prepared: list[tuple[UnreadWakeup, str]] = []
    for wake in await writer.wakeups_for_session(session_id, boot=boot, queued=True):
        if skip is not None and skip(wake):
            continue
        await writer.mark_recovered_through(session_id, wake.mailbox_id, wake.sequence, boot=boot)
        prepared.append((wake, wake_prompt(wake)))
    return prepared


async def mark_delivered(
    writer: MailboxWriter, session_id: str, wakes: Iterable[UnreadWakeup]
) -> None:
    """Runtime acceptance: every row the written wakes cover becomes deliveredToIdleSession."""
    for wake in wakes:
        await writer.mark_delivered_through(session_id, wake.mailbox_id, wake.sequence)


async def wake_pass(
    writer: MailboxWriter,
    session_id: str,
    emit: Emit,
    *,
    boot: bool = False,
    skip: Callable[[UnreadWakeup], bool] | None = None,
    failed: list[UnreadWakeup] | None = None,
) -> list[UnreadWakeup]:
    """One recovery pass, each wake written by ``emit`` and delivered once written.

    Returns the wakes that were delivered; those that could not be written are added
    to ``failed``.
    """
    delivered: list[UnreadWakeup] = []
    for wake, prompt in await prepare_wakes(writer, session_id, boot=boot, skip=skip):
        try:
            await emit(wake, prompt)
        except (OSError, EOFError, RuntimeError):
            # Not written: the rows stay recoveredWake, which only a boot pass covers.
            if failed is not None:
                failed.append(wake)
            continue
        await mark_delivered(writer, session_id, [wake])
        delivered.append(wake)
    return delivered


def channel_meta(wake: UnreadWakeup) -> dict[str, str]:
    """``meta`` of a channel event: identifier keys and string values (Claude Code's rule),
    every value from the database made visible (an agent reads them as text)."""
    return {
        "mailbox_id": visible_line(wake.mailbox_id, 120),
        "sender": visible_line(wake.sender_name, 120),
        "sender_session_id": visible_line(wake.sender_session_id, 120),
        "latest_sequence": str(wake.sequence),
        "unread_count": str(wake.unread_count),
    }


@dataclass
class ChannelWatcher:
    """Pushes one channel event per mailbox with newly unread inbound rows, while connected.

    Polls SQLite's ``data_version`` (a pragma on an open connection: no file read when
    nothing changed) every ``interval`` seconds and runs a pass when another connection
    has committed, when the agent engaged with a mailbox, and every ``rescan`` seconds.
    A sender nudges it (:func:`nudge`, a datagram on a Linux abstract socket) right
    after committing, so a wake does not wait for the next poll.
    The first pass is the boot pass over every unread inbound mailbox. Never more than
    one pending wake per mailbox: after a push, that mailbox is skipped until the agent
    reads or acknowledges it (``engaged``), and a new wake is pushed only for a
    never-woken row above what the agent has already been woken for or read.
    """

    writer: MailboxWriter
    registry: Registry
    session_id: str
    push: Emit
    interval: float = 0.2
    heartbeat: float = 1.0
    rescan: float = 10.0
    # A pushed wake the agent has not engaged with for this long is offered once more
    # (recorded as a wake: rows back to recoveredWake, then delivered; never a new
    # message, never a change to the dispatch outcome).
    reoffer_after: float = 900.0
    pushed: list[UnreadWakeup] = field(default_factory=list)
    reoffered: list[UnreadWakeup] = field(default_factory=list)
    _dirty: asyncio.Event = field(default_factory=asyncio.Event, init=False)

    async def engaged(self, mailbox_id: str, through: int) -> None:
        await asyncio.to_thread(self.registry.mark_engaged, self.session_id, mailbox_id, through)
        self._dirty.set()

    def _listen(self) -> socket.socket | None:
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        except (OSError, AttributeError):
            return None
        try:
            sock.bind(nudge_address(self.registry.path, self.session_id))
            sock.setblocking(False)
        except OSError:  # not Linux, or another server for this session listens: poll only
            sock.close()
            return None

        def readable() -> None:
            with contextlib.suppress(OSError):
                while sock.recv(64):
                    pass
            self._dirty.set()

        asyncio.get_running_loop().add_reader(sock.fileno(), readable)
        return sock

    async def run(self) -> None:
        pid = os.getpid()
        listener = self._listen()
        last_beat = time.monotonic()
        last_scan = 0.0
        version: int | None = None
        boot = True
        try:
            await self._quietly(asyncio.to_thread(self.registry.clear_wake_marks, self.session_id))
            await self._quietly(asyncio.to_thread(self.registry.heartbeat, self.session_id, pid))
            while True:
                now = time.monotonic()
                if now - last_beat >= self.heartbeat:
                    await self._quietly(
                        asyncio.to_thread(self.registry.heartbeat, self.session_id, pid)
                    )
                    last_beat = now
                current = await self._quietly(self.writer.data_version())
                if (
                    boot
                    or self._dirty.is_set()
                    or current != version
                    or now - last_scan >= self.rescan
                ):
                    self._dirty.clear()
                    version = current
                    last_scan = now
                    outcome = await self._quietly(self.scan(boot))
                    if outcome is not None:
                        # A wake that could not be written left recoveredWake rows: only
                        # another boot pass covers them.
                        boot = outcome
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._dirty.wait(), self.interval)
        finally:
            if listener is not None:
                asyncio.get_running_loop().remove_reader(listener.fileno())
                listener.close()
            # Synchronous on purpose: this runs while being cancelled.
            with contextlib.suppress(StoreError):
                self.registry.heartbeat(self.session_id, None)

    async def scan(self, boot: bool = False) -> bool:
        """One pass; True when some wake could not be written (retry as a boot pass)."""
        marks = await asyncio.to_thread(self.registry.wake_marks, self.session_id)

        seen_candidates = [0]

        def skip(wake: UnreadWakeup) -> bool:
            seen_candidates[0] += 1
            pending, seen = marks.get(wake.mailbox_id, (False, 0))
            return pending or wake.sequence <= seen

        async def emit(wake: UnreadWakeup, prompt: str) -> None:
            await self.push(wake, prompt)
            await asyncio.to_thread(
                self.registry.mark_wake_pushed, self.session_id, wake.mailbox_id, wake.sequence
            )

        failed: list[UnreadWakeup] = []
        delivered = await wake_pass(
            self.writer, self.session_id, emit, boot=boot, skip=skip, failed=failed
        )
        self.pushed.extend(delivered)
        if not boot and seen_candidates[0] >= NEVER_WOKEN_PASS_CAP:
            self._dirty.set()  # a full pass: more mailboxes may wait beyond the cap
        return bool(failed) or await self._reoffer_ignored()

    async def _reoffer_ignored(self) -> bool:
        """Woken, then ignored: one new wake for each mailbox whose pushed wake went
        unanswered past ``reoffer_after`` and still has unread mail. True if one could
        not be written."""
        ignored = await asyncio.to_thread(
            self.registry.ignored_wakes, self.session_id, self.reoffer_after
        )
        if not ignored:
            return False
        waiting = {
            wake.mailbox_id: wake
            for wake in await self.writer.wakeups_for_session(self.session_id, boot=True)
        }
        failed = False
        for mailbox_id, _seen in ignored:
            wake = waiting.get(mailbox_id)
            if wake is None:
                continue  # processed meanwhile: nothing to re-offer
            await self.writer.mark_recovered_through(
                self.session_id, mailbox_id, wake.sequence, boot=True
            )
            try:
                await self.push(wake, wake_prompt(wake))
            except (OSError, EOFError, RuntimeError):
                failed = True  # stays recoveredWake: the next boot pass covers it
                continue
            await self.writer.mark_delivered_through(self.session_id, mailbox_id, wake.sequence)
            await asyncio.to_thread(
                self.registry.mark_reoffered, self.session_id, mailbox_id, wake.sequence
            )
            self.reoffered.append(wake)
        return failed

    @staticmethod
    async def _quietly(work: Awaitable[T]) -> T | None:
        """A busy or failing store skips this tick; the next one tries again. The watcher
        never takes the server down: the tools keep working without wakes."""
        try:
            return await work
        except StoreError:
            return None
        except Exception:  # a bug here must not end the agent's session
            logger.exception("channel watcher: this tick failed; the next one tries again")
            return None
