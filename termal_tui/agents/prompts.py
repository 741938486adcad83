"""What agents are told: TermAl's wake prompt (metadata only, never a body)."""

from __future__ import annotations

from termal_tui.models import UnreadWakeup


def wake_prompt(wake: UnreadWakeup) -> str:
    """TermAl's compact wake-up prompt: metadata only, never the body (compat §1.8)."""
    return (
        "[TermAl mailbox notification]\n"
        f"Mailbox `{wake.mailbox_id}` has {wake.unread_count} unread message(s). "
        f"Latest inbound: #{wake.sequence} from {wake.sender_name}.\n"
        "First use `termal_list_mailboxes` to obtain your current `processedThrough` cursor, "
        "then use `termal_read_mailbox` with this mailbox id to fetch durable message bodies. "
        "After processing, call `termal_acknowledge_mailbox` with that cursor as "
        "`expectedProcessedThrough`."
    )
