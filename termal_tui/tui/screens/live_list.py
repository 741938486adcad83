"""What the activity and sessions views share: a status line over one list, fed by the
one live source.

A :class:`LiveListScreen` subscribes to the source while mounted (each event arrives as
a :class:`~termal_tui.tui.messages.LiveChanged` message), focuses its list, reads once
on mount, and words the source's state the same way on every such screen: waiting for
the file, live since the last good read, or stale with the reason.
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import OptionList, Static

from termal_tui.core.sanitize import visible_line
from termal_tui.tui.messages import follow_live
from termal_tui.tui.screens.mounting import popped_before_mount
from termal_tui.tui.widgets.footer import FittingFooter
from termal_tui.views.live import LiveSource, Subscription

ResultType = TypeVar("ResultType")


class LiveListScreen(Screen[ResultType], Generic[ResultType]):
    """A status line (``#{NAME}-status``), a list (``#{LIST_ID}``) and the footer."""

    NAME: ClassVar[str]  # "activity": the title's last word, and the status line's id
    LIST_ID: ClassVar[str]  # the list's id (make_list gives it)
    READING: ClassVar[str]  # what the status line says before the first read

    def __init__(self, source: LiveSource) -> None:
        super().__init__()
        self.source = source
        self._subscription: Subscription | None = None
        self._problem = ""  # the last read's failure, said under the state

    def make_list(self) -> OptionList:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Content(self.READING), id=f"{self.NAME}-status")
            yield self.make_list()
        yield FittingFooter()

    def on_mount(self) -> None:
        if popped_before_mount(self):
            return
        self.title = f"termal-tui (read-only) — {self.NAME}"
        self._subscription = follow_live(self, self.source)
        self.query_one(f"#{self.LIST_ID}", OptionList).focus()
        self.reload()

    def on_unmount(self) -> None:
        if self._subscription is not None:
            self._subscription.close()

    def reload(self) -> object:
        """Read everything again (a worker, in the screens)."""
        raise NotImplementedError

    def live_state(self) -> Content:
        """Waiting for the file, ``● Live`` or ``● Stale`` with the last good read."""
        status = self.source.status
        now = self.source.clock.now()
        if status.phase == "missing":
            return Content.styled("◌ Waiting for the file", "bold $termal-warning")
        if status.live:
            return Content.styled(f"● Live {status.good_time(now)}", "bold $termal-success")
        return Content.styled(f"● Stale {status.good_time(now)}", "bold $termal-error")

    def with_problem(self, line: Content) -> Content:
        """``line``, and under it why the last read failed or the source is not live."""
        status = self.source.status
        problem = self._problem or ("" if status.live else status.reason)
        if problem:
            line += Content("\n") + Content.styled(visible_line(problem, 200), "$termal-error")
        return line
