"""The tab strip and the panes under it: which tabs are open, which one is shown.

:class:`TabStrip` is one widget that draws the tabs' labels and the bar under them as
two lines (Textual's ``TabbedContent`` is a tree of about a dozen widgets, each styled
and laid out, and a widget per tab: most of the first frame's cost besides the rows).
It looks like Textual's tabs (the active label bright over a highlighted stretch of the
bar, the others muted; the active label on the cursor while the strip has the focus);
when the labels are wider than the screen it shows whole tabs around the active one
with ``‹`` / ``›`` where more are hidden (a click there goes one tab further), and asks
for a tab with :class:`TabStrip.Activated` (a click, ←/→ while it has the focus): the
App decides what is shown. :class:`Panes` shows one of its children at a time.
"""

from __future__ import annotations

from typing import ClassVar, Final

from textual import events
from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.content import Content
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from termal_tui.tui.cells import cells

BAR: Final = "━"
HALF_BAR_LEFT: Final = "╺"  # the bar's right half: where a stretch starts after a gap
HALF_BAR_RIGHT: Final = "╸"  # its left half: where a stretch ends before a gap
LEFT_MARKER: Final = "‹ "  # more tabs to the left than the strip shows
RIGHT_MARKER: Final = " ›"
MARKER_CELLS: Final = 2


class Tab:
    """A tab on the strip: the pane it shows and its label."""

    __slots__ = ("label", "pane_id")

    def __init__(self, pane_id: str, label: Content) -> None:
        self.pane_id = pane_id
        self.label = label


class TabStrip(Widget, can_focus=True):
    """Tab labels on one line and the bar under them on the next."""

    ALLOW_SELECT = False
    DEFAULT_CSS = """
    TabStrip {
        width: 1fr;
        height: 2;
        pointer: pointer;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "step(-1)", "Previous tab", show=False),
        Binding("right", "step(1)", "Next tab", show=False),
    ]

    class Activated(Message):
        """A tab was chosen on the strip (clicked, or ←/→ while it has the focus)."""

        def __init__(self, strip: TabStrip, pane_id: str) -> None:
            super().__init__()
            self.strip = strip
            self.pane_id = pane_id

        @property
        def control(self) -> TabStrip:
            return self.strip

    def __init__(self, *tabs: tuple[str, Content], active: str = "", id: str | None = None):
        super().__init__(id=id)
        self._tabs = [Tab(pane_id, label) for pane_id, label in tabs]
        self._active = active or (self._tabs[0].pane_id if self._tabs else "")
        self._hover = ""  # the pane id of the label under the mouse

    # ---------------------------------------------------------------- tabs

    @property
    def active(self) -> str:
        return self._active

    @property
    def pane_ids(self) -> list[str]:
        return [tab.pane_id for tab in self._tabs]

    def label(self, pane_id: str) -> Content:
        return next(tab.label for tab in self._tabs if tab.pane_id == pane_id)

    def add_tab(self, pane_id: str, label: Content) -> None:
        self._tabs.append(Tab(pane_id, label))
        self.refresh()

    def remove_tab(self, pane_id: str) -> str:
        """Take the tab off the strip; returns the tab active now (when the active one
        goes, the one after it, else the one before, as Textual's tabs do)."""
        ids = self.pane_ids
        if pane_id not in ids:
            return self._active
        at = ids.index(pane_id)
        del self._tabs[at]
        if pane_id == self._active:
            rest = self.pane_ids
            self._active = rest[min(at, len(rest) - 1)] if rest else ""
        self.refresh()
        return self._active

    def relabel(self, pane_id: str, label: Content) -> None:
        for tab in self._tabs:
            if tab.pane_id == pane_id and tab.label != label:
                tab.label = label
                self.refresh()

    def activate(self, pane_id: str) -> None:
        if pane_id != self._active:
            self._active = pane_id
            self.refresh()

    def action_step(self, step: int) -> None:
        ids = self.pane_ids
        if len(ids) < 2:
            return
        at = ids.index(self._active) if self._active in ids else 0
        self.post_message(self.Activated(self, ids[(at + step) % len(ids)]))

    # -------------------------------------------------------------- drawing

    def spans(self) -> list[tuple[int, int, Tab]]:
        """Each tab's cells on the whole strip (before scrolling): ``(start, end, tab)``,
        its label padded by a cell each side."""
        spans = []
        x = 0
        for tab in self._tabs:
            width = cells(tab.label.plain) + 2
            spans.append((x, x + width, tab))
            x += width
        return spans

    def window(self) -> tuple[list[tuple[int, int, Tab]], bool, bool]:
        """The tabs drawn, each with the cells it takes on screen: all of them when
        they fit; else whole tabs around the active one, with ``‹`` / ``›`` saying
        more are hidden to the left / right (a label is never cut in two). Returns
        (drawn, more left, more right)."""
        spans = self.spans()
        width = self.size.width
        if not spans or spans[-1][1] <= width:
            return spans, False, False
        last = len(spans) - 1
        active = next(
            (k for k, (_s, _e, tab) in enumerate(spans) if tab.pane_id == self._active), 0
        )

        def fits(first: int, final: int) -> bool:
            markers = (MARKER_CELLS if first > 0 else 0) + (MARKER_CELLS if final < last else 0)
            return spans[final][1] - spans[first][0] + markers <= width

        first = final = active
        grown = True
        while grown:  # one to the right, then one to the left: the active tab centred
            grown = False
            for left, right in ((first, final + 1), (first - 1, final)):
                if left >= 0 and right <= last and fits(left, right):
                    first, final, grown = left, right, True
        shift = spans[first][0] - (MARKER_CELLS if first > 0 else 0)
        drawn = [(s - shift, e - shift, tab) for s, e, tab in spans[first : final + 1]]
        return drawn, first > 0, final < last

    def region_of(self, pane_id: str) -> tuple[int, int] | None:
        """The cells ``pane_id``'s label takes on screen, relative to the strip (None:
        not drawn now)."""
        drawn, _, _ = self.window()
        return next(((s, e) for s, e, tab in drawn if tab.pane_id == pane_id), None)

    def _styles(self) -> tuple[str, str, str, str, str]:
        """(inactive, hovered, active, highlight bar, bar) styles for now."""
        focused = self.has_focus
        if self.app.ansi_color:
            bar = "$border-blurred"
            return "dim", "not dim", "not dim bold", "$block-cursor-background", bar
        active = "$termal-text"
        if focused:
            text_style = self.app.theme_variables.get("block-cursor-text-style", "bold")
            extra = f"{text_style} " if text_style and text_style != "none" else ""
            active = f"{extra}$termal-cursor-text on $termal-cursor"
        bar = "$foreground 30%" if focused else "$foreground 10%"
        return "$termal-muted", "$termal-text", active, "$block-cursor-background", bar

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.visual_style
        if not width or y > 1:
            return Strip.blank(width, base.rich_style)
        drawn, more_left, more_right = self.window()
        total = max(drawn[-1][1] if drawn else 0, width)
        inactive, hovered, active, highlight, bar = self._styles()
        if y == 0:
            line = Content.styled(LEFT_MARKER, inactive) if more_left else Content("")
            for _start, _end, tab in drawn:
                if tab.pane_id == self._active:
                    style = active
                elif tab.pane_id == self._hover:
                    style = hovered
                else:
                    style = inactive
                line += (Content(" ") + tab.label + Content(" ")).stylize_before(style)
            if more_right:
                line = line.pad_right(width - MARKER_CELLS - line.cell_length)
                line += Content.styled(RIGHT_MARKER, inactive)
            line = line.pad_right(total - line.cell_length)
        else:
            stretch = next(((s, e) for s, e, t in drawn if t.pane_id == self._active), None)
            line = self._bar(total, stretch, highlight, bar)
        strip = Strip(line.render_segments(base))
        return strip.crop(0, width).adjust_cell_length(width, base.rich_style)

    @staticmethod
    def _bar(total: int, stretch: tuple[int, int] | None, highlight: str, bar: str) -> Content:
        """The line under the labels: highlighted under the active label (its padding
        left out), with half bars where the highlight meets the rest, as Textual's."""
        if stretch is None:
            return Content.styled(BAR * total, bar)
        start, end = stretch[0] + 1, stretch[1] - 1
        before = Content.styled(BAR * max(start - 1, 0) + (HALF_BAR_RIGHT if start else ""), bar)
        after_cells = total - end
        after = Content.styled(
            (HALF_BAR_LEFT + BAR * (after_cells - 1)) if after_cells > 0 else "", bar
        )
        return before + Content.styled(BAR * (end - start), highlight) + after

    # ---------------------------------------------------------------- mouse

    def _tab_at(self, x: int) -> str:
        """The tab under cell ``x``: a label, or the tab just beyond a ``‹`` / ``›``."""
        drawn, more_left, more_right = self.window()
        if not drawn:
            return ""
        ids = self.pane_ids
        if more_left and x < MARKER_CELLS:
            return ids[ids.index(drawn[0][2].pane_id) - 1]
        if more_right and x >= self.size.width - MARKER_CELLS:
            return ids[ids.index(drawn[-1][2].pane_id) + 1]
        return next((t.pane_id for s, e, t in drawn if s <= x < e), "")

    def on_mouse_move(self, event: events.MouseMove) -> None:
        hover = self._tab_at(event.x) if event.y == 0 else ""
        if hover != self._hover:
            self._hover = hover
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover:
            self._hover = ""
            self.refresh()

    def on_click(self, event: events.Click) -> None:
        pane_id = self._tab_at(event.x)
        if pane_id:
            self.post_message(self.Activated(self, pane_id))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


class Panes(Container):
    """The tabs' contents: one child shown (``display``), the others kept as they are."""

    DEFAULT_CSS = "Panes { height: 1fr; }"

    def __init__(self, *children: Widget, id: str | None = None) -> None:
        super().__init__(*children, id=id)
        self.shown = ""

    def show(self, child_id: str) -> None:
        self.shown = child_id
        for child in self.children:
            child.display = child.id == child_id
