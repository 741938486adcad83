"""An ``OptionList`` that changes in place: splice, re-render one row, keep its position.

``OptionList`` re-measures every option when one prompt changes or one option is
removed (its line cache is cleared), which costs seconds at 20,000 rows. ``ThreadList``
updates its line cache for just the rows that changed and shifts the rest, so a poll,
an expansion or a page costs what changed, not what is loaded. It relies on
``OptionList`` internals of the exactly pinned Textual version (tests cover it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from termal_tui.tui.cells import cells

if TYPE_CHECKING:
    from textual.css.styles import RulesMap


class RowOption(Option):
    """An option that knows the thread item (message, gap or marker) it shows."""

    def __init__(self, prompt: Content, key: str, item: object, disabled: bool = False) -> None:
        super().__init__(prompt, id=key, disabled=disabled)
        self.item = item


class ThreadList(OptionList):
    """The thread's rows, updated incrementally."""

    # The footer names what enter does on the highlighted row (check_action hides the
    # other one; the key falls through to the binding that applies).
    BINDINGS = [
        Binding("enter", "expand", "Expand", id="expand"),
        Binding("enter", "collapse", "Collapse", id="collapse"),
        Binding("enter", "load_gap", "Load rows", id="load-gap"),
    ]

    # Whether a row (by key) is expanded: the view that owns the list tells.
    is_expanded: Callable[[str], bool] = staticmethod(lambda _key: False)

    class EndRequested(Message):
        """End was pressed: the view loads down to ``— start of mailbox —``."""

    def action_last(self) -> None:
        self.post_message(self.EndRequested())

    def _highlighted_item(self) -> object:
        option = self.highlighted_option
        return option.item if isinstance(option, RowOption) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("expand", "collapse", "load_gap"):
            item = self._highlighted_item()
            if action == "load_gap":
                return type(item).__name__ == "Gap"
            if type(item).__name__ != "MailboxMessage":
                return False
            return self.is_expanded(getattr(item, "id", "")) == (action == "collapse")
        return super().check_action(action, parameters)

    def action_cursor_down(self) -> None:
        """Down, never round to the newest row from the oldest (the place reached by End
        or by reading down is kept)."""
        if self._enabled_beyond(1):
            super().action_cursor_down()

    def action_cursor_up(self) -> None:
        """Up, never round from the newest row to the oldest."""
        if self._enabled_beyond(-1):
            super().action_cursor_up()

    def _enabled_beyond(self, step: int) -> bool:
        index = self.highlighted
        if index is None:
            return True
        options = self._options
        index += step
        while 0 <= index < len(options):
            if not options[index].disabled:
                return True
            index += step
        return False

    def action_expand(self) -> None:
        self.action_select()

    def action_collapse(self) -> None:
        self.action_select()

    def action_load_gap(self) -> None:
        self.action_select()

    def _room(self) -> int:
        """Cells a row's text has (the list's width less the option's padding)."""
        padding = self.get_component_styles("option-list--option").padding
        width = self.scrollable_content_region.width - self._get_left_gutter_width()
        return width - padding.width

    def _measure(self, option: Option, room: int | None = None) -> int:
        room = self._room() if room is None else room
        prompt = option.prompt
        if isinstance(prompt, Content):
            # Rows are cut to the width they were rendered at: when no line is wider
            # than the room, the height is the line count (no wrapping to compute).
            lines = prompt.plain.split("\n")
            if all((len(line) <= room and line.isascii()) or cells(line) <= room for line in lines):
                return len(lines) + int(option._divider)
        styles = cast("RulesMap", self.styles)  # what OptionList passes, typed
        return self._get_visual(option).get_height(styles, room) + int(option._divider)

    def _update_lines(self) -> None:
        """OptionList's, measuring the rows not measured yet with :meth:`_measure` (a
        row that fits is as tall as its lines) instead of wrapping each one: the first
        page's rows were each wrapped just to be counted when the first one was
        highlighted."""
        if not self.scrollable_content_region:
            return
        cache = self._line_cache
        lines = cache.lines
        options = self._options
        room = self._room()
        for index in range(lines[-1][0] + 1 if lines else 0, len(options)):
            cache.index_to_line[index] = len(lines)
            height = self._measure(options[index], room)
            cache.heights[index] = height
            lines.extend((index, line) for line in range(height))
        width = self.scrollable_content_region.width - self._get_left_gutter_width()
        last_divider = bool(options) and options[-1]._divider
        virtual_size = Size(width, len(lines) - (1 if last_divider else 0))
        if virtual_size != self.virtual_size:
            self.virtual_size = virtual_size
            self._scroll_update(virtual_size)

    def _on_resize(self, event: events.Resize) -> None:  # type: ignore[override]
        """Keep the measured heights on a resize (OptionList's handler, prevented here,
        clears them and measures every row again: seconds at 20,000 rows). The view
        re-renders the rows at the new width, nearest first, and each replaced row is
        measured again."""
        event.prevent_default()
        self._option_render_cache.clear()
        self.refresh()

    def _measured(self) -> bool:
        return bool(self.scrollable_content_region) and bool(self._line_cache.lines)

    def splice(self, index: int, count: int, options: Sequence[Option]) -> None:
        """Replace ``count`` options at ``index`` with ``options``; measure only those."""
        removed = self._options[index : index + count]
        for option in removed:
            if option._id is not None:
                self._id_to_option.pop(option._id, None)
        for option in options:
            if option._id is not None:
                self._id_to_option[option._id] = option
        appending = index == len(self._options) and count == 0
        self._options[index : index + count] = list(options)
        if appending:
            for offset, option in enumerate(options):
                self._option_to_index[option] = index + offset
        else:
            self._option_to_index = {option: i for i, option in enumerate(self._options)}
        self._option_render_cache.clear()  # rendered strips carry option indexes
        shift = len(options) - count
        highlighted = self.highlighted
        cache = self._line_cache
        measured_to = cache.lines[-1][0] if cache.lines else -1
        if self._measured() and index <= measured_to + 1:
            start_line = cache.index_to_line.get(index, len(cache.lines))
            end_line = (
                cache.index_to_line.get(index + count, len(cache.lines))
                if index + count <= measured_to
                else len(cache.lines)
            )
            new_lines: list[tuple[int, int]] = []
            heights: dict[int, int] = {}
            room = self._room()
            for offset, option in enumerate(options):
                height = self._measure(option, room)
                heights[index + offset] = height
                new_lines.extend((index + offset, n) for n in range(height))
            if appending and start_line == len(cache.lines):
                line = len(cache.lines)
                cache.lines.extend(new_lines)
                for i in range(index, index + len(options)):
                    cache.heights[i] = heights[i]
                    cache.index_to_line[i] = line
                    line += heights[i]
            else:
                tail = cache.lines[end_line:]
                if shift:
                    tail = [(i + shift, n) for i, n in tail]
                cache.lines[start_line:] = new_lines + tail
                line_shift = len(new_lines) - (end_line - start_line)
                old_heights, old_index = cache.heights, cache.index_to_line
                cache.heights = {i: h for i, h in old_heights.items() if i < index}
                cache.index_to_line = {i: n for i, n in old_index.items() if i < index}
                line = start_line
                for i in range(index, index + len(options)):
                    cache.heights[i] = heights[i]
                    cache.index_to_line[i] = line
                    line += heights[i]
                for i, height in old_heights.items():
                    if i >= index + count:
                        cache.heights[i + shift] = height
                        cache.index_to_line[i + shift] = old_index[i] + line_shift
        elif self._measured():
            pass  # beyond what is measured: measured lazily by _update_lines
        else:
            cache.clear()
        if highlighted is not None and self._options:
            if highlighted >= index + count:
                self.highlighted = highlighted + shift
            elif highlighted >= index:
                self.highlighted = min(index, len(self._options) - 1)
        elif self._options and highlighted is None:
            self.highlighted = 0
        self.refresh(layout=self.styles.auto_dimensions)
        self._update_lines()

    def replace_rows(self, prompts: dict[str, Content]) -> None:
        """New prompts for existing rows; heights re-measured for those rows only."""
        cache = self._line_cache
        for key, prompt in prompts.items():
            option = self._id_to_option.get(key)
            if option is None:
                continue
            index = self._option_to_index[option]
            option._set_prompt(prompt)
            if not self._measured() or index not in cache.heights:
                continue
            height = self._measure(option)
            old = cache.heights[index]
            if height != old:
                start = cache.index_to_line[index]
                cache.lines[start : start + old] = [(index, n) for n in range(height)]
                cache.heights[index] = height
                delta = height - old
                for later in range(index + 1, len(self._options)):
                    if later in cache.index_to_line:
                        cache.index_to_line[later] += delta
        self._option_render_cache.clear()
        self.refresh()
        self._update_lines()

    def action_page_down(self) -> None:
        """A row taller than the screen is read page by page before the highlight moves."""
        span = self._highlighted_span()
        if span is not None:
            _top, bottom = span
            height = self.scrollable_content_region.height
            if bottom > self.scroll_y + height:
                self.scroll_to(y=min(bottom - height, self.scroll_y + height), animate=False)
                return
        super().action_page_down()

    def action_page_up(self) -> None:
        span = self._highlighted_span()
        if span is not None:
            top, _ = span
            if top < self.scroll_y:
                height = self.scrollable_content_region.height
                self.scroll_to(y=max(top, self.scroll_y - height), animate=False)
                return
        super().action_page_up()

    def reveal_highlight(self) -> None:
        """The highlighted row in view: whole when it fits, else from its first line
        (an expanded row taller than the list is read from its head down)."""
        span = self._highlighted_span()
        if span is None:
            return
        top, bottom = span
        self.scroll_to_highlight(top=bottom - top > self.scrollable_content_region.height)

    def _highlighted_span(self) -> tuple[int, int] | None:
        index = self.highlighted
        if index is None:
            return None
        self._update_lines()
        top = self._line_cache.index_to_line.get(index)
        height = self._line_cache.heights.get(index)
        return None if top is None or height is None else (top, top + height)
