"""A screen closed before it is mounted (its key pressed twice in one terminal read, or
escape queued behind the key that opened it) still gets its Mount: it must neither
query children that were never built (``NoMatches '#events'`` stopped the viewer) nor
subscribe to the live source (nothing would ever close that subscription). Likewise a
tab closed as it opens."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from termal_tui.tui.app import MailboxApp
from termal_tui.tui.messages import CloseRequested
from tests.viewer_support import app_for, mailbox_between, settle


def _search(app: MailboxApp) -> None:
    view = app.active_view()
    assert view is not None
    view.action_search()


OPENERS: dict[str, Callable[[MailboxApp], None]] = {
    "activity": MailboxApp.action_activity,
    "sessions": MailboxApp.action_sessions,
    "board": MailboxApp.action_board,
    "health": MailboxApp.action_health,
    "help": MailboxApp.action_help,
    "search": _search,
}


@pytest.mark.parametrize("close", ["pop", "dismiss"])
@pytest.mark.parametrize("screen", sorted(OPENERS))
async def test_a_screen_closed_before_it_mounts_leaves_the_viewer_running(demo, screen, close):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.open_mailbox(mailbox_between(app, "planner", "backend"))
        await settle(app, pilot)
        subscribers = len(app.live._subscribers)
        base = app.screen
        OPENERS[screen](app)  # pushed, not yet mounted ...
        if close == "pop":
            app.pop_screen()  # ... and closed at once
        else:
            app.screen.dismiss(None)
        await pilot.pause()
        await settle(app, pilot)
        assert app.is_running
        assert app.screen is base
        assert len(app.live._subscribers) == subscribers  # nothing left subscribed


async def test_a_board_key_screen_closed_before_it_mounts(demo):
    from termal_tui.store.board.records import BoardHead
    from termal_tui.tui.screens.board import BoardKeyScreen

    head = BoardHead("status", 1, 1, "ok", False, "s-1", "planner", "2026-11-30T12:00:00Z", None)
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        subscribers = len(app.live._subscribers)
        app.push_screen(BoardKeyScreen(app.live, "project-1", "p", head))
        app.pop_screen()
        await pilot.pause()
        await settle(app, pilot)
        assert app.is_running
        assert len(app.live._subscribers) == subscribers


async def test_a_tab_closed_as_it_opens(demo):
    app = app_for(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        subscribers = len(app.live._subscribers)
        mailbox = mailbox_between(app, "planner", "backend")
        app.open_mailbox(mailbox)
        app.post_message(CloseRequested(mailbox))
        await pilot.pause()
        await settle(app, pilot)
        assert app.is_running and app.active_view() is None
        assert len(app.live._subscribers) == subscribers
