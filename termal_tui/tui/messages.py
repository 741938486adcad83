"""Typed messages the viewer's workers and widgets post. Attributes down, messages up.

Every worker posts one of these with its result; a worker that fails becomes a
:class:`ReadFailed` (built by :func:`read_failed`), which its widget shows in one
visible "Stale" state. Each mailbox view's own page results live in
``widgets/mailbox_view.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.message import Message
from textual.worker import Worker, WorkerState

from termal_tui.core.models import MailboxSummary
from termal_tui.store.errors import NotFoundError, StoreError

if TYPE_CHECKING:
    from textual.message_pump import MessagePump

    from termal_tui.core.models import MailboxMessage
    from termal_tui.views.findings import HealthReport
    from termal_tui.views.live import LiveEvent, LiveSource, Subscription


class ReadFailed(Message):
    """A worker's read failed: ``error`` is one sentence a human can act on."""

    def __init__(self, error: str, missing: bool = False) -> None:
        self.error = error
        self.missing = missing
        super().__init__()


def read_failed(error: BaseException | None) -> ReadFailed:
    """The one translation of a worker's exception into what the widget shows."""
    if isinstance(error, StoreError):
        return ReadFailed(str(error), isinstance(error, NotFoundError))
    name = type(error).__name__ if error is not None else "Error"
    return ReadFailed(f"unexpected error: {name}: {error}")


class WorkerFailures:
    """Mixed into a widget or screen (before its Textual base): a worker of it that fails
    becomes one typed :class:`ReadFailed` (see :func:`read_failed`), which the widget
    shows in its one failed state."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            event.stop()
            cast("MessagePump", self).post_message(read_failed(event.worker.error))


class LiveChanged(Message):
    """The live source's news (``views.live.LiveEvent``), posted to a widget or screen
    that subscribed with :func:`follow_live`: handle it in ``on_live_changed``."""

    def __init__(self, event: LiveEvent) -> None:
        self.event = event
        super().__init__()


def follow_live(pump: MessagePump, source: LiveSource) -> Subscription:
    """Subscribe ``pump`` (a widget or screen) to a ``LiveSource``: each event arrives
    as a :class:`LiveChanged` message in its own queue. Returns the subscription (close
    it on unmount)."""
    return source.subscribe(lambda event: pump.post_message(LiveChanged(event)))


class IndexLoaded(Message):
    """The index's cards, newest activity first: the first pages (``more``: others
    follow as the reader scrolls); ``appended``: one more page below the loaded ones."""

    def __init__(
        self,
        summaries: list[MailboxSummary],
        more: bool = False,
        appended: bool = False,
        empty_reason: str = "",
    ) -> None:
        self.summaries = summaries
        self.more = more
        self.appended = appended
        self.empty_reason = empty_reason  # with no summaries: why this view lists none
        super().__init__()


class MatchesLoaded(Message):
    """The store's cards matching the index filter (a paged index)."""

    def __init__(
        self,
        needle: str,
        summaries: list[MailboxSummary],
        more: bool,
        count: int | None,
        append: bool = False,
    ) -> None:
        self.needle = needle
        self.summaries = summaries
        self.more = more
        self.count = count
        self.append = append
        super().__init__()


class IndexUnchanged(Message):
    """A poll of the index found nothing committed since its last read."""


class IndexTotals(Message):
    """Every mailbox the index would list, and their unread rows (read apart from the
    cards, which are paged)."""

    def __init__(self, mailboxes: int, unread: int) -> None:
        self.mailboxes = mailboxes
        self.unread = unread
        super().__init__()


class MarkersLoaded(Message):
    """The index's health markers: mailbox id → a word for its worst finding."""

    def __init__(self, problems: dict[str, str]) -> None:
        self.problems = problems
        super().__init__()


class OpenMailbox(Message):
    def __init__(self, mailbox_id: str) -> None:
        self.mailbox_id = mailbox_id
        super().__init__()


class HealthLoaded(Message):
    def __init__(self, report: HealthReport) -> None:
        self.report = report
        super().__init__()


class SearchProgress(Message):
    """One keyset step of a search: the rows it found and where the next step starts
    (``before`` is None when the whole mailbox has been searched). ``scan`` numbers the
    search, so that a superseded one's late steps are dropped."""

    def __init__(
        self,
        scan: int,
        needle: str,
        found: list[MailboxMessage],
        before: int | None,
    ) -> None:
        self.scan = scan
        self.needle = needle
        self.found = found
        self.before = before
        super().__init__()


class TitleKnown(Message):
    """A mailbox view knows its participants' names: the tab can be titled with them."""

    def __init__(self, mailbox_id: str, title: str) -> None:
        super().__init__()
        self.mailbox_id = mailbox_id
        self.title = title


class CloseRequested(Message):
    """A mailbox view asks the App to close its tab."""

    def __init__(self, mailbox_id: str) -> None:
        super().__init__()
        self.mailbox_id = mailbox_id
