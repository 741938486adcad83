"""What agents are told: TermAl's wake prompt (metadata only, never a body).

Everything in it that came from the database (names, ids) is untrusted: any control,
bidi, invisible or format character in it is shown as a visible stand-in, as the viewer
shows it, so a name cannot forge a second notification or reorder what the agent reads.
JSON escaping is not enough: the agent reads the decoded text.
"""

from __future__ import annotations

from termal_tui.core.models import UnreadWakeup
from termal_tui.core.sanitize import visible_line


def wake_prompt(wake: UnreadWakeup) -> str:
    """TermAl's compact wake-up prompt: metadata only, never the body (compat §1.8)."""
    return (
        "[TermAl mailbox notification]\n"
        f"Mailbox `{visible_line(wake.mailbox_id, 120)}` has {wake.unread_count} unread "
        f"message(s). Latest inbound: #{wake.sequence} from "
        f"{visible_line(wake.sender_name, 120)}.\n"
        "First use `termal_list_mailboxes` to obtain your current `processedThrough` cursor, "
        "then use `termal_read_mailbox` with this mailbox id to fetch durable message bodies. "
        "After processing, call `termal_acknowledge_mailbox` with that cursor as "
        "`expectedProcessedThrough`."
    )
