"""Whether a message's dispatch outcome is still being finalized, knowable from any process.

The contract: an exact retry of an append whose original has not recorded its
dispatch outcome waits for that finalization (without the writer slot, within the
request deadline) and then fails retryable, while after a crash or restart a pending
outcome with no live finalizer resolves to ``durableButNotWoken``. A finalizer in
another process (a client that restarted its MCP server, a second server for the same
agent) must be visible too, and must stop being visible the moment its process dies
(``kill -9`` included), with nothing to clean up.

A finalizer claims a message by binding a Linux abstract-namespace datagram socket
named after the database and the message (no file; the kernel drops it with the
process). Anyone asks "is it alive?" by connecting to that name: refused means no
finalizer. Elsewhere (no abstract namespace) claims are no-ops and only the
in-process wait applies, as before.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import socket

SUPPORTED: Final = sys.platform.startswith("linux")


def _address(path: Path, message_id: str) -> bytes:
    scope = f"{zlib.crc32(os.fsencode(os.path.realpath(path))):08x}"
    # Abstract names are at most 107 bytes; message ids are ~50.
    return f"\0termal-tui-finalizer/{scope}/{message_id}".encode()[:107]


class FinalizerClaims:
    """The claims one writer holds (one socket per message being finalized)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._held: dict[str, socket.socket] = {}

    def claim(self, message_id: str) -> None:
        """Claim ``message_id`` (call before the COMMIT that makes it visible)."""
        if not SUPPORTED or message_id in self._held:
            return
        import socket

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind(_address(self.path, message_id))
        except OSError:
            sock.close()  # claimed already (a retry in this process): nothing to hold
            return
        self._held[message_id] = sock

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    def release(self, message_id: str) -> None:
        sock = self._held.pop(message_id, None)
        if sock is not None:
            sock.close()

    def release_all(self) -> None:
        for message_id in list(self._held):
            self.release(message_id)


def finalizer_alive(path: Path, message_id: str) -> bool:
    """True while some live process holds the claim on ``message_id``."""
    if not SUPPORTED:
        return False
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(_address(path, message_id))
        except OSError as error:
            if error.errno in (errno.ECONNREFUSED, errno.ENOENT):
                return False
            return False  # anything else: treat as no finalizer (never wait forever)
        with contextlib.suppress(OSError):
            probe.close()
        return True
