"""A sender's nudge to a receiver's channel server: look now (it also polls).

Kept apart from ``wake.py`` so a send imports only this (no logging, no asyncio watcher).
"""

from __future__ import annotations

import contextlib
import os
import zlib
from pathlib import Path


def scope_of(path: Path | str) -> str:
    """A short, stable name for one registry (a file, or a PostgreSQL URL: its redacted
    form, no password), for abstract socket names (not a secret)."""
    if isinstance(path, str):
        from termal_tui.store.urls import redact

        return f"{zlib.crc32(redact(path).encode()):08x}"
    return f"{zlib.crc32(os.fsencode(path.resolve())):08x}"


def nudge_address(registry_path: Path | str, session_id: str) -> bytes:
    """A Linux abstract-namespace datagram address for one session's channel server
    (no file, no path-length limit; scoped to one registry: a file or a database). On
    PostgreSQL it reaches the holders on this host; others find the mail by polling."""
    return f"\0termal-tui/{scope_of(registry_path)}/{session_id}".encode()


def nudge(registry_path: Path | str, session_id: str) -> None:
    """Tell a session's channel server to look now (best effort)."""
    import socket

    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        sock.sendto(b"!", nudge_address(registry_path, session_id))
