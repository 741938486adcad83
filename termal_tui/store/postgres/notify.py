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

logger = logging.getLogger(__name__)

CHANNEL: Final = "termal_tui_mail"
NOTIFY_SQL: Final = b"SELECT pg_notify('termal_tui_mail', %s)"
LISTEN_SQL: Final = b"LISTEN termal_tui_mail"
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


class MailListener:
    """The one ``LISTEN`` connection of a writer (started with the first subscription,
    stopped by :meth:`close`). ``connect`` opens its connection (tests count or refuse)."""

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
        self._subscribers: dict[str, set[MailSubscription]] = {}
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

    def subscribe(self, session_id: str, callback: Callable[[], None]) -> MailSubscription:
        """``callback()`` (on this loop) whenever mail for ``session_id`` commits, and
        once each time listening (re)starts."""
        subscription = MailSubscription(self, session_id, callback)
        self._subscribers.setdefault(session_id, set()).add(subscription)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return subscription

    def unsubscribe(self, subscription: MailSubscription) -> None:
        group = self._subscribers.get(subscription.session_id)
        if group is not None:
            group.discard(subscription)
            if not group:
                del self._subscribers[subscription.session_id]

    def _everyone(self) -> None:
        for group in list(self._subscribers.values()):
            for subscription in list(group):
                subscription.callback()

    async def _run(self) -> None:
        while True:
            try:
                conn = await self._connect()
                try:
                    await conn.execute(LISTEN_SQL)
                    self.listening = True
                    self.connections += 1
                    self._everyone()  # what was sent while nobody listened: look once
                    async for note in conn.notifies():
                        self.received += 1
                        for subscription in list(self._subscribers.get(note.payload, ())):
                            subscription.callback()
                finally:
                    self.listening = False
                    with contextlib.suppress(Exception):
                        await conn.close()
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, OSError) as error:
                logger.debug("mail listener: %s; listening again shortly", type(error).__name__)
            except Exception:  # never let the listener die: the watchers poll meanwhile
                logger.exception("mail listener failed; listening again shortly")
            await asyncio.sleep(self._reconnect)

    async def close(self) -> None:
        task, self._task = self._task, None
        self.listening = False
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
