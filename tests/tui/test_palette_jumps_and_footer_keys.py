"""The palette offers only the jumps a mailbox holds, and the footer: Search and Quit stay
at narrow widths, it is redrawn only when the keys on offer change, and a key that does
nothing on the index says where it works."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.viewer_support import app_for, demo_copy, mailbox_between, open_view, settle


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    return demo_copy(tmp_path_factory.mktemp("demo"))


async def test_a_jump_on_the_index_is_offered_in_the_mailboxes_that_hold_it(demo_db):
    from termal_tui.tui.commands import MailboxCommands

    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        provider = MailboxCommands(app.screen)
        hits = [hit async for hit in provider.search("#5")]
        assert hits, "#5 on the index answered nothing (No matches found)"
        assert all(str(hit.text).startswith("Jump to #5 in ") for hit in hits)
        # A number no mailbox holds: how to jump, not silence.
        (hint,) = [hit async for hit in provider.search("#99999999")]
        assert "open a mailbox first" in str(hint.text)
        target = mailbox_between(app, "planner", "backend")
        (chosen,) = [h for h in hits if target in str(h.help)]
        chosen.command()
        await settle(app, pilot)
        view = app.active_view()
        assert view is not None and view.mailbox_id == target
        assert view.highlighted_message().sequence == 5


async def test_a_jump_beyond_the_latest_is_not_offered(demo_db):
    from termal_tui.tui.commands import MailboxCommands

    app = app_for(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        view = await open_view(app, pilot, "planner", "backend")
        latest = view.model.latest_sequence
        provider = MailboxCommands(app.screen)
        beyond = latest + 60
        (hit,) = [hit async for hit in provider.search(f"#{beyond}")]
        text = str(hit.text)
        assert f"Jump to #{beyond}" not in text
        assert f"latest is #{latest:,}" in text
        hit.command()
        await settle(app, pilot)
        assert view.highlighted_message().sequence == latest


@pytest.mark.parametrize("width", [60, 80])
async def test_search_and_quit_stay_in_a_narrow_footer(demo_db, width):
    """At 80 columns a tab's footer hid ``/ Search`` and ``q Quit`` (copy, export,
    refresh and the tab keys give way first now); the index keeps ``/`` and ``q`` too."""
    from rich.cells import cell_len

    from termal_tui.tui.widgets.footer import PALETTE_CELLS, FittingFooter, FooterKey

    def shown() -> list[FooterKey]:
        return app.screen.query_one(FittingFooter).shown_keys()

    def fits(keys: list[FooterKey]) -> bool:
        used = sum(cell_len(k.key_display) + 2 + cell_len(k.description) for k in keys)
        return used <= width - PALETTE_CELLS

    app = app_for(demo_db)
    async with app.run_test(size=(width, 24)) as pilot:
        await settle(app, pilot)
        on_index = shown()
        assert {"filter", "app.quit", "help"} <= {k.action for k in on_index}
        assert fits(on_index)
        await open_view(app, pilot, "planner", "backend")
        await pilot.pause()
        in_tab = shown()
        assert {"search", "app.quit", "help"} <= {k.action for k in in_tab}
        assert fits(in_tab)


async def test_the_footer_is_redrawn_only_when_the_keys_on_offer_change(demo_db, monkeypatch):
    """Every focus move and refresh_bindings asked the footer to rebuild its keys, which
    was the largest single cost of opening a tab: the same keys are not drawn again."""
    from termal_tui.tui.widgets.footer import FittingFooter

    app = app_for(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot)
        footer = app.screen.query_one(FittingFooter)
        drawn: list[int] = []
        original = footer.render
        monkeypatch.setattr(footer, "render", lambda: drawn.append(1) or original())
        for _ in range(3):
            app.screen.refresh_bindings()
            await pilot.pause()
        assert not drawn  # the same keys: nothing drawn again
        await open_view(app, pilot, "planner", "backend")
        await pilot.pause()
        assert drawn
        assert "search" in {key.action for key in footer.shown_keys()}


async def test_a_tabs_key_on_the_index_says_what_it_does_and_where(demo_db):
    """o, f, e, c pressed on the index did nothing and said nothing."""
    app = app_for(demo_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.active_view() is None

        def said() -> list[str]:
            return [n.message for n in app._notifications]

        before = len(said())
        for key, words in (
            ("o", "o loads older messages in a mailbox tab: open one with enter."),
            ("f", "whole body in a mailbox tab"),
            ("e", "exports the mailbox"),
            ("c", "copies the highlighted message's body in a mailbox tab"),
        ):
            await pilot.press(key)
            await pilot.pause()
            new = said()[before:]
            assert len(new) == 1 and words in new[0], (key, new)
            before = len(said())
        await pilot.press("r", "h")  # the index's own keys: no hint
        await pilot.pause()
        assert not [m for m in said()[before:] if "mailbox tab" in m]
        assert app.active_view() is None
