"""Mail signals across hubs: a notification sent inside the transaction that commits a
message, and one listening connection per writer that fans it out to the channel
watchers of this process.

An append runs :data:`NOTIFY_SQL` with the target session's id before its COMMIT:
PostgreSQL delivers a notification only when (and if) the transaction commits, to every
session that listens on the channel, on any host. A :class:`MailListener` holds one
connection of its own (``LISTEN``), reads the notifications as they come and calls the
subscribers of the session each names. It reconnects by itself after the server went
away; while it is not listening its subscriptions say so (:attr:`MailSubscription.live`
is false) and the watchers fall back to polling, and when it listens again every
subscriber is told to look once (a notification sent meanwhile was lost).

The payload is a session id (not a secret: it names a mailbox's participant, never a
body); PostgreSQL folds identical notifications of one transaction into one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Final

import psycopg

from termal_tui.store.postgres.connection import CONNECT_TIMEOUT_SECONDS
from termal_tui.store.registry.cache import IdentityCache

logger = logging.getLogger(__name__)

CHANNEL: Final = "termal_tui_mail"
NOTIFY_SQL: Final = b"SELECT pg_notify('termal_tui_mail', %s)"
# Changes of the registry that a hub may have remembered (``store/registry/cache.py``):
# sent inside the changing transaction; the payload says nothing.
REGISTRY_CHANNEL: Final = "termal_tui_registry"
NOTIFY_REGISTRY_SQL: Final = b"SELECT pg_notify('termal_tui_registry', '')"
# How long the listener waits before connecting again after losing its connection.
RECONNECT_SECONDS: Final = 1.0


async def notify_mail(conn: psycopg.AsyncConnection[Any], target_session_id: str) -> None:
    """Inside the committing transaction: wake the listeners of ``target_session_id``."""
    await conn.execute(NOTIFY_SQL, (target_session_id,))


class MailSubscription:
    """One subscriber's handle: :attr:`live` while every commit for its session is being
    signalled (polling would add nothing); :meth:`close` to stop."""

    def __init__(self, listener: MailListener, session_id: str, callback: Callable[[], None]):
        self._listener = listener
        self.session_id = session_id
        self.callback = callback

    @property
    def live(self) -> bool:
        return self._listener.listening

    def close(self) -> None:
        self._listener.unsubscribe(self)


class ChannelListener:
    """One connection that ``LISTEN``s on ``channel`` (started by :meth:`start`, stopped
    by :meth:`close`) and reconnects by itself after the server went away. Subclasses
    say what a notification, a (re)connection and a lost connection mean.
    ``connect`` opens its connection (tests count or refuse)."""

    channel: str = CHANNEL

    def __init__(
        self,
        url: str,
        *,
        reconnect: float = RECONNECT_SECONDS,
        connect: Callable[[], Any] | None = None,
    ) -> None:
        self._url = url
        self._reconnect = reconnect
        self._connect = connect or self._default_connect
        self._task: asyncio.Task[None] | None = None
        self.listening = False
        self.connections = 0  # how many times LISTEN was established
        self.received = 0  # notifications read

    async def _default_connect(self) -> psycopg.AsyncConnection[Any]:
        return await psycopg.AsyncConnection.connect(
            self._url,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
            application_name="termal-tui listener",
            # A connection whose peer vanished without closing it is noticed.
            keepalives=1,
            keepalives_idle=10,
            keepalives_interval=5,
            keepalives_count=3,
        )

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def _listening(self) -> None:
        """LISTEN is established (again): what was sent meanwhile was not heard."""

    def _lost(self) -> None:
        """The connection is gone: nothing is heard until it listens again."""

    def _note(self, payload: str) -> None:
        """One notification."""

    async def _run(self) -> None:
        while True:
            try:
                conn = await self._connect()
                try:
                    await conn.execute(f"LISTEN {self.channel}".encode())
                    self.listening = True
                    self.connections += 1
                    self._listening()
                    async for note in conn.notifies():
                        self.received += 1
                        self._note(note.payload)
                finally:
                    if self.listening:
                        self.listening = False
                        self._lost()
                    with contextlib.suppress(Exception):
                        await conn.close()
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, OSError) as error:
                logger.debug("%s listener: %s; listening again shortly", self.channel,
                             type(error).__name__)  # fmt: skip
            except Exception:  # never let the listener die: its users poll meanwhile
                logger.exception("%s listener failed; listening again shortly", self.channel)
            await asyncio.sleep(self._reconnect)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.listening:
            self.listening = False
            self._lost()


class MailListener(ChannelListener):
    """The one ``LISTEN`` connection of a writer (started with the first subscription,
    stopped by :meth:`close`): calls the subscribers of the session each notification
    names."""

    channel = CHANNEL

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, **options)
        self._subscribers: dict[str, set[MailSubscription]] = {}

    def subscribe(self, session_id: str, callback: Callable[[], None]) -> MailSubscription:
        """``callback()`` (on this loop) whenever mail for ``session_id`` commits, and
        once each time listening (re)starts."""
        subscription = MailSubscription(self, session_id, callback)
        self._subscribers.setdefault(session_id, set()).add(subscription)
        self.start()
        return subscription

    def unsubscribe(self, subscription: MailSubscription) -> None:
        group = self._subscribers.get(subscription.session_id)
        if group is not None:
            group.discard(subscription)
            if not group:
                del self._subscribers[subscription.session_id]

    def _listening(self) -> None:
        # What was sent while nobody listened: everyone looks once.
        for group in list(self._subscribers.values()):
            for subscription in list(group):
                subscription.callback()

    def _note(self, payload: str) -> None:
        for subscription in list(self._subscribers.get(payload, ())):
            subscription.callback()


class RegistryFeed(ChannelListener):
    """A hub's ear on the registry's channel: every announced change empties its
    :class:`~termal_tui.store.registry.cache.IdentityCache`, which is trusted only while
    this connection listens (emptied again each time it starts listening)."""

    channel = REGISTRY_CHANNEL

    def __init__(self, url: str, cache: IdentityCache, **options: Any) -> None:
        super().__init__(url, **options)
        self.cache = cache

    def _listening(self) -> None:
        self.cache.reset(live=True)

    def _lost(self) -> None:
        self.cache.reset(live=False)

    def _note(self, payload: str) -> None:
        self.cache.reset(live=True)
