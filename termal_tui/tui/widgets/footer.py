"""A compact footer that fits its width: when the keys on offer do not fit, the least
needed are left out (copy id first, the essentials last), never cut mid-label."""

from __future__ import annotations

from typing import Final

from rich.cells import cell_len
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

# Left out first → last; actions not named here are kept.
DROP_ORDER: Final = (
    "copy_id",
    "export",
    "copy_body",
    "app.quit",
    "quit",
    "search",
    "refresh",
    "close",
    "app.show_index",
    "show_index",
    "previous_tab",  # ctrl+← / ctrl+→ and the palette reach the tabs too
    "filter",
    "app.health",
    "health",
    "full_body",
)
KEEP: Final = frozenset({"app.help", "help", "dismiss", "app.pop_screen"})  # kept last
PALETTE_CELLS: Final = 13  # "▏^p palette" docked right, and a spare cell


class FittingFooter(Footer):
    """``Footer(compact=True)`` that hides what does not fit, least needed first."""

    def __init__(self) -> None:
        super().__init__(compact=True)

    async def recompose(self) -> None:
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
        for action in DROP_ORDER:
            if total <= width:
                break
            for key in keys:
                if key.action == action and shown[id(key)]:
                    shown[id(key)] = False
                    total -= cells(key)
        for key in reversed(keys[1:]):  # still too wide: the last keys go, never a cut
            if total <= width:
                break
            if shown[id(key)] and key.action not in KEEP:
                shown[id(key)] = False
                total -= cells(key)
        for key in keys:
            key.display = shown[id(key)]
