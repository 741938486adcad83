"""A compact footer that fits its width: when the keys on offer do not fit, the least
needed are left out (copy id first; search and quit last, help never), never cut
mid-label."""

from __future__ import annotations

from typing import Final

from rich.cells import cell_len
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

# Left out first → last; then any other key (the rightmost first); then LAST.
DROP_ORDER: Final = (
    "copy_id",
    "export",
    "copy_body",
    "refresh",  # r still works; the palette has "Refresh now"
    "app.show_index",
    "show_index",  # [ ] reaches the index too
    "close",
    "previous_tab",  # ctrl+← / ctrl+→ and the palette reach the tabs too
    "full_body",  # enter expands the row in place
    "app.board",
    "board",
    "app.health",
    "health",
)
# Search and quit stay while anything else can give way (at 80 columns a tab hid them).
LAST: Final = ("filter", "search", "app.quit", "quit")
KEEP: Final = frozenset({"app.help", "help", "dismiss", "app.pop_screen"})  # never left out
PALETTE_CELLS: Final = 13  # "▏^p palette" docked right, and a spare cell


class FittingFooter(Footer):
    """``Footer(compact=True)`` that hides what does not fit, least needed first."""

    def __init__(self) -> None:
        super().__init__(compact=True)
        self._shown: tuple[object, ...] | None = None

    def keys_on_offer(self) -> tuple[object, ...]:
        """What ``compose`` would yield, as plain values: every focus move and every
        ``refresh_bindings`` asks the footer to recompose, and most of them change
        nothing it shows (rebuilding a dozen keys' widgets and styles each time was the
        largest single cost of opening a tab)."""
        if not self._bindings_ready or not self.is_attached:
            return ()
        app = self.app
        return tuple(
            (
                binding.key,
                app.get_key_display(binding),
                binding.description,
                binding.action,
                enabled,
                tooltip,
                None if binding.group is None else binding.group.description,
            )
            for (_node, binding, enabled, tooltip) in self.screen.active_bindings.values()
            if binding.show or binding.key == app.COMMAND_PALETTE_BINDING
        )

    async def recompose(self) -> None:
        shown = self.keys_on_offer()
        if shown and shown == self._shown:
            return
        self._shown = shown
        await super().recompose()
        self.fit()

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        keys = [key for key in self.query(FooterKey) if "-command-palette" not in key.classes]
        if not keys:
            return
        width = (self.size.width or self.app.size.width) - PALETTE_CELLS

        def cells(key: FooterKey) -> int:
            return cell_len(key.key_display) + 1 + cell_len(key.description) + 1

        shown = {id(key): True for key in keys}
        total = sum(cells(key) for key in keys)

        def drop(key: FooterKey) -> None:
            nonlocal total
            if shown[id(key)] and total > width:
                shown[id(key)] = False
                total -= cells(key)

        for action in DROP_ORDER:
            for key in keys:
                if key.action == action:
                    drop(key)
        for key in reversed(keys[1:]):  # still too wide: the last keys go, never a cut
            if key.action not in KEEP and key.action not in LAST:
                drop(key)
        for action in LAST:
            for key in keys:
                if key.action == action:
                    drop(key)
        for key in keys:
            key.display = shown[id(key)]
