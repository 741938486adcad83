"""The title bar: the palette's icon at the left, the screen's title and subtitle in the
middle, as Textual's ``Header`` draws them, in one widget (``Header`` is four: the bar,
the icon, the title and the clock's space, each styled and laid out).

A click on the icon opens the command palette; a click elsewhere makes the bar three
lines tall and back, as ``Header`` does.
"""

from __future__ import annotations

from typing import Final

from textual import events
from textual.content import Content
from textual.strip import Strip
from textual.widget import Widget

ICON: Final = "⭘"
ICON_CELLS: Final = 8  # Header's icon: 8 cells, padded a cell each side
CLOCK_CELLS: Final = 10  # Header's space for a clock at the right (kept blank)


class TitleBar(Widget):
    """``⭘      title — subtitle`` on one line (three when clicked)."""

    ALLOW_SELECT = False
    DEFAULT_CSS = """
    TitleBar {
        dock: top;
        width: 100%;
        height: 1;
        background: $panel;
        color: $foreground;
    }
    TitleBar.-tall { height: 3; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._hover_icon = False

    def on_mount(self) -> None:
        self.watch(self.app, "title", self._retitle, init=False)
        self.watch(self.app, "sub_title", self._retitle, init=False)
        self.watch(self.screen, "title", self._retitle, init=False)
        self.watch(self.screen, "sub_title", self._retitle, init=False)

    def _retitle(self) -> None:
        self.refresh()

    def title_content(self) -> Content:
        """The screen's title (else the app's) and subtitle, as ``App.format_title``."""
        screen = self.screen
        title = screen.title if screen.title is not None else self.app.title
        sub_title = screen.sub_title if screen.sub_title is not None else self.app.sub_title
        return self.app.format_title(title, sub_title)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.visual_style
        middle = self.size.height // 2
        if y != middle or not width:
            line = Content("").pad_right(width)
            if self._hover_icon:
                line = line.stylize("on $foreground 10%", 0, ICON_CELLS)
            return Strip(line.render_segments(base)).adjust_cell_length(width, base.rich_style)
        room = max(width - ICON_CELLS - CLOCK_CELLS, 0)
        title = self.title_content().truncate(room, ellipsis=True)
        centred = title.center(room) if title.cell_length < room else title
        icon = Content(f" {ICON}").pad_right(ICON_CELLS - 2)
        if self._hover_icon:
            icon = icon.stylize("on $foreground 10%")
        line = icon + centred.pad_right(room - centred.cell_length)
        line = line.pad_right(max(width - line.cell_length, 0))
        strip = Strip(line.render_segments(base))
        return strip.crop(0, width).adjust_cell_length(width, base.rich_style)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        hover = event.x < ICON_CELLS
        if hover != self._hover_icon:
            self._hover_icon = hover
            self.tooltip = "Open the command palette" if hover else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover_icon:
            self._hover_icon = False
            self.tooltip = None
            self.refresh()

    async def on_click(self, event: events.Click) -> None:
        event.stop()
        if event.x < ICON_CELLS and self.app.ENABLE_COMMAND_PALETTE:
            await self.run_action("app.command_palette")
        else:
            self.toggle_class("-tall")
