"""The footer: the keys on offer on one line, fitted to its width (when they do not fit,
the least needed are left out: copy id first; search and quit last, help never; never
cut mid-label), and the palette's key at the right.

One widget that renders one line (Textual's ``Footer`` is a container with a widget per
key, each styled and laid out, rebuilt whenever the keys change: most of the cost of a
frame's chrome). It follows the screen's bindings as ``Footer`` does, looks the same
(``key description``, the palette after a thin bar), and a click on a key presses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from textual import events
from textual.content import Content
from textual.widget import Widget

from termal_tui.tui.cells import cells

if TYPE_CHECKING:
    from textual.screen import Screen

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

KEY_STYLE: Final = "bold $footer-key-foreground on $footer-key-background"
DESCRIPTION_STYLE: Final = "$footer-description-foreground on $footer-description-background"
HOVER_KEY_STYLE: Final = "bold $footer-key-foreground on $block-hover-background"
HOVER_DESCRIPTION_STYLE: Final = "$footer-description-foreground on $block-hover-background"
BAR_STYLE: Final = "$foreground 20%"


class FooterKey(NamedTuple):
    """One key on offer, as the footer draws it (``key_display description``)."""

    key: str
    key_display: str
    description: str
    action: str
    enabled: bool = True
    tooltip: str = ""

    @property
    def cells(self) -> int:
        """Cells it takes, with the one-cell gap after it."""
        label = cells(self.key_display)
        return label + (1 + cells(self.description) if self.description else 0) + 1


def fitted(keys: list[FooterKey], width: int) -> list[FooterKey]:
    """The keys that fit in ``width`` cells, least needed left out first."""
    shown = dict.fromkeys(range(len(keys)), True)
    total = sum(key.cells for key in keys)

    def drop(index: int) -> None:
        nonlocal total
        if shown[index] and total > width:
            shown[index] = False
            total -= keys[index].cells

    for action in DROP_ORDER:
        for index, key in enumerate(keys):
            if key.action == action:
                drop(index)
    for index in reversed(range(1, len(keys))):  # still too wide: the last go, never a cut
        if keys[index].action not in KEEP and keys[index].action not in LAST:
            drop(index)
    for action in LAST:
        for index, key in enumerate(keys):
            if key.action == action:
                drop(index)
    return [key for index, key in enumerate(keys) if shown[index]]


class FittingFooter(Widget, can_focus=False):
    """The screen's keys on one line, least needed left out when narrow."""

    ALLOW_SELECT = False
    DEFAULT_CSS = """
    FittingFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self._offered: tuple[tuple[FooterKey, ...], FooterKey | None] | None = None
        self._spans: list[tuple[int, int, FooterKey]] = []  # drawn: (start, end, key)
        self._hover: FooterKey | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if not self.is_attached or screen is not self.screen:
            return
        offered = self._read_keys()
        if offered != self._offered:  # most focus moves change nothing shown here
            self._offered = offered
            self.refresh()

    def _read_keys(self) -> tuple[tuple[FooterKey, ...], FooterKey | None]:
        """What the screen offers: one key per action (its first binding), and the
        palette's key apart."""
        app = self.app
        keys: dict[str, FooterKey] = {}
        palette: FooterKey | None = None
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            is_palette = binding.key == app.COMMAND_PALETTE_BINDING
            if not binding.show and not is_palette:
                continue
            key = FooterKey(
                binding.key,
                app.get_key_display(binding),
                binding.description,
                binding.action,
                enabled,
                tooltip or (binding.description if is_palette else ""),
            )
            if is_palette:
                if app.ENABLE_COMMAND_PALETTE:
                    palette = key
            elif binding.action not in keys:
                keys[binding.action] = key
        return tuple(keys.values()), palette

    def keys_on_offer(self) -> tuple[FooterKey, ...]:
        """Every key the screen offers now (before fitting), palette excluded."""
        if self._offered is None:
            if not self.is_attached:
                return ()
            self._offered = self._read_keys()
        return self._offered[0]

    def shown_keys(self) -> list[FooterKey]:
        """The keys drawn at the current width (palette excluded)."""
        width = (self.size.width or self.app.size.width) - PALETTE_CELLS
        return fitted(list(self.keys_on_offer()), width)

    def render(self) -> Content:
        width = self.size.width
        if not width:
            return Content("")
        self.keys_on_offer()
        assert self._offered is not None
        palette = self._offered[1]
        line = Content("")
        spans: list[tuple[int, int, FooterKey]] = []
        x = 0
        for key in self.shown_keys():
            piece = self._drawn(key)
            spans.append((x, x + piece.cell_length, key))
            x += piece.cell_length + 1
            line += piece + Content(" ")
        if palette is not None:
            tail = self._drawn(palette)
            start = width - 1 - tail.cell_length  # a cell after it, as after every key
            if start - 1 >= line.cell_length:
                line = line.pad_right(start - 1 - line.cell_length)
                line += Content.styled("▏", BAR_STYLE) + tail
                spans.append((start, start + tail.cell_length, palette))
        self._spans = spans
        return line

    def _drawn(self, key: FooterKey) -> Content:
        """``key description``: the key bold, hovered on the hover colour, dim when it
        does nothing here."""
        hover = key == self._hover
        piece = Content.styled(key.key_display, HOVER_KEY_STYLE if hover else KEY_STYLE)
        if key.description:
            style = HOVER_DESCRIPTION_STYLE if hover else DESCRIPTION_STYLE
            piece += Content.styled(f" {key.description}", style)
        return piece.stylize("dim") if not key.enabled else piece

    # ---------------------------------------------------------------- mouse

    def _key_at(self, x: int) -> FooterKey | None:
        return next((key for start, end, key in self._spans if start <= x < end), None)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        key = self._key_at(event.x)
        if key != self._hover:
            self._hover = key
            self.tooltip = key.tooltip if key is not None and key.tooltip else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        key = self._key_at(event.x)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()
