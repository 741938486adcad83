"""Typed messages shared by the index and the App. Attributes down, messages up.

Each mailbox view's own results are typed messages in ``widgets/mailbox_view.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from termal_tui.models import MailboxSummary


@dataclass
class IndexLoaded(Message):
    summaries: list[MailboxSummary]


@dataclass
class OpenMailbox(Message):
    mailbox_id: str
