"""A screen that leaves the stack before it is mounted (its key pressed twice in one
read, or a closing key queued behind the opening one) still gets its ``Mount`` event,
but its children were never built and it will never be shown: its ``on_mount`` must
do nothing — no query (``NoMatches``), no subscription to the live source (nothing
would ever close it)."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen


def popped_before_mount(screen: Screen[Any]) -> bool:
    """True when ``screen`` is no longer on the app's stack as it mounts."""
    return screen not in screen.app.screen_stack
