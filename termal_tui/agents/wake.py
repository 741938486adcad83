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
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from termal_tui.agents.nudge import nudge_address
from termal_tui.agents.prompts import wake_prompt
from termal_tui.agents.registry import Registry
from termal_tui.core.formats import NEVER_WOKEN_PASS_CAP
from termal_tui.core.models import UnreadWakeup
from termal_tui.core.sanitize import visible_line
from termal_tui.store.errors import StoreError
from termal_tui.store.writer import MailboxWriter
from termal_tui.views.notifiers import Listener

if TYPE_CHECKING:
    from termal_tui.store.postgres.notify import MailSubscription

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
    """Pushes one channel event per mailbox with newly unread inbound rows, while it holds
    its session's channel.

    It registers a listener for the session (``kind`` local, or remote for a shim's stream
    held by the hub) and beats its heartbeat; of a session's live listeners the newest
    holds the channel, and only the holder pushes: a newer listener takes over at once,
    and when it goes (its stream closed, its process ended) the older one takes the
    channel back. Whoever takes the channel starts with a boot pass over every unread
    inbound mailbox (wakes pushed to a listener that has gone are offered again).

    Polls SQLite's ``data_version`` (a pragma on an open connection: no file read when
    nothing changed) every ``interval`` seconds and runs a pass when another connection
    has committed, when the agent engaged with a mailbox, and every ``rescan`` seconds.
    A sender nudges the holder (:func:`nudge`, a datagram on a Linux abstract socket that
    only the holder binds) right after committing, so a wake does not wait for the poll.
    On PostgreSQL the writer's mail feed (``writer.watch_mail``: a notification sent in
    the committing transaction, through whichever hub, on whichever host) marks the
    watcher dirty instead; while that feed listens there is nothing to poll, and while
    it does not (the server restarting) the watcher polls the database's version.
    Never more than one pending wake per mailbox: after a push, that mailbox is skipped
    until the agent reads or acknowledges it (``engaged``), and a new wake is pushed only
    for a never-woken row above what the agent has already been woken for or read.
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
    kind: str = "local"  # or "remote": a shim's stream, held by the hub
    host: str | None = None  # where the listening agent is (default: this machine)
    peer: str | None = None  # what a remote shim said of itself
    clock: Callable[[], float] = time.monotonic  # heartbeat and rescan timing
    # A pass that a busy or unreachable store cut short is run again this soon (whatever
    # ``interval`` is: a notification it was running for is not sent twice).
    retry: float = 1.0
    pushed: list[UnreadWakeup] = field(default_factory=list)
    reoffered: list[UnreadWakeup] = field(default_factory=list)
    listener: Listener | None = field(default=None, init=False)
    holding: bool = field(default=False, init=False)
    _dirty: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _socket: socket.socket | None = field(default=None, init=False)
    _boot: bool = field(default=True, init=False)
    _last_beat: float | None = field(default=None, init=False)
    _last_scan: float = field(default=0.0, init=False)
    _version: int | None = field(default=None, init=False)
    _feed: MailSubscription | None = field(default=None, init=False)
    _failed: bool = field(default=False, init=False)  # the last pass did not finish

    async def engaged(self, mailbox_id: str, through: int) -> None:
        await asyncio.to_thread(self.registry.mark_engaged, self.session_id, mailbox_id, through)
        self._dirty.set()

    def _listen(self) -> None:
        """Bind the session's nudge address (only the holder does; if the old holder has
        not let go yet, the next tick tries again)."""
        if self._socket is not None:
            return
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        except (OSError, AttributeError):
            return
        try:
            sock.bind(nudge_address(self.registry.path, self.session_id))
            sock.setblocking(False)
        except OSError:  # not Linux, or the old holder still has it: poll meanwhile
            sock.close()
            return

        def readable() -> None:
            with contextlib.suppress(OSError):
                while sock.recv(64):
                    pass
            self._dirty.set()

        asyncio.get_running_loop().add_reader(sock.fileno(), readable)
        self._socket = sock

    def _unlisten(self) -> None:
        sock, self._socket = self._socket, None
        if sock is not None:
            with contextlib.suppress(RuntimeError, ValueError):
                asyncio.get_running_loop().remove_reader(sock.fileno())
            sock.close()

    async def start(self) -> Listener:
        """Register this listener (the newest: it holds the channel from now on)."""
        self.listener = await asyncio.to_thread(
            self.registry.register_listener,
            self.session_id,
            kind=self.kind,
            host=self.host,
            peer=self.peer,
        )
        return self.listener

    async def _check_holder(self) -> bool:
        """Whether this listener holds the channel now; taking it starts a boot pass with
        nothing remembered, losing it lets go of the nudge address."""
        assert self.listener is not None
        holder = await asyncio.to_thread(self.registry.channel_holder, self.session_id)
        holding = holder is not None and holder.id == self.listener.id
        if holding and not self.holding:
            await asyncio.to_thread(self.registry.clear_wake_marks, self.session_id)
            self._boot = True
            logger.info("wake-ups for %s: %s holds the channel", self.session_id, self.kind)
        if not holding:
            self._unlisten()
        self.holding = holding
        return holding

    async def tick(self) -> None:
        """One round: the heartbeat when due, then a pass if something changed and this
        listener holds the channel."""
        assert self.listener is not None
        now = self.clock()
        if self._last_beat is None or now - self._last_beat >= self.heartbeat:
            self._last_beat = now
            kept = await self._quietly(
                asyncio.to_thread(self.registry.beat_listener, self.listener.id)
            )
            if kept is False:  # released under it (its session was removed): stand aside
                self.holding = False
                self._unlisten()
                return
            await self._quietly(self._check_holder())
        if not self.holding:
            self._dirty.clear()
            return
        self._listen()
        fed = self._feed is not None and self._feed.live
        # While the feed listens, every commit for this session marks the watcher dirty.
        current = self._version if fed else await self._quietly(self.writer.data_version())
        if (
            self._boot
            or self._failed
            or self._dirty.is_set()
            or current != self._version
            or (now - self._last_scan >= self.rescan)
        ):
            self._dirty.clear()
            self._failed = False
            holding = await self._quietly(self._check_holder())
            if not holding:
                # None: the registry could not say (try again soon); False: a newer
                # listener took the channel since the last beat.
                self._failed = holding is None
                return
            self._version = current
            self._last_scan = now
            outcome = await self._quietly(self.scan(self._boot))
            if outcome is None:
                self._failed = True  # cut short: what it was run for is looked at again
            else:
                # A wake that could not be written left recoveredWake rows: only
                # another boot pass covers them.
                self._boot = outcome

    async def run(self) -> None:
        try:
            # Subscribed before the first pass: no commit falls between the two.
            self._feed = self.writer.watch_mail(self.session_id, self._dirty.set)
            await self.start()
            while True:
                await self.tick()
                wait = min(self.interval, self.retry) if self._failed else self.interval
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._dirty.wait(), wait)
        finally:
            self._unlisten()
            feed, self._feed = self._feed, None
            if feed is not None:
                feed.close()
            # Synchronous on purpose: this runs while being cancelled.
            if self.listener is not None:
                with contextlib.suppress(StoreError):
                    self.registry.release_listener(self.listener.id)

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
