"""Typed messages posted by the viewer's I/O workers. Attributes down, messages up."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from termal_tui.models import MailboxMessage, MailboxSummary


@dataclass
class IndexLoaded(Message):
    summaries: list[MailboxSummary]


@dataclass
class IndexFailed(Message):
    error: str


@dataclass
class ThreadLoaded(Message):
    """First page, an older page, or a refresh delta for one mailbox view."""

    summary: MailboxSummary
    messages: list[MailboxMessage]
    has_older: bool | None
    kind: str  # "first" | "older" | "refresh"


@dataclass
class ThreadFailed(Message):
    error: str
    missing: bool = False


@dataclass
class OpenMailbox(Message):
    mailbox_id: str
