"""Untrusted mailbox data → Textual ``Content`` (never markup) for cards, rows and dividers."""

from __future__ import annotations

from typing import Final

from textual.content import Content

from termal_tui.models import MailboxMessage, MailboxSummary
from termal_tui.presentation import (
    Divider,
    first_sentence,
    format_time,
    is_processed,
    row_title,
    summary_title,
)
from termal_tui.sanitize import cap_lines, visible, visible_line

EXPANDED_BODY_LINES: Final = 40
UNREAD_GLYPH: Final = "●"
PROCESSED_GLYPH: Final = "✓"


def text(value: str, style: str = "") -> Content:
    """Literal content: agent text is escaped for controls and never parsed as markup."""
    return Content.styled(visible(value), style) if style else Content(visible(value))


def line(value: str, style: str = "", max_chars: int | None = None) -> Content:
    safe = visible_line(value, max_chars)
    return Content.styled(safe, style) if style else Content(safe)


def card(summary: MailboxSummary) -> Content:
    """A compact notification card for the mailbox index."""
    if summary.unread_count:
        badge = Content.styled(f"{UNREAD_GLYPH} {summary.unread_count} unread", "bold $warning")
    else:
        badge = Content.styled(f"{PROCESSED_GLYPH} all read", "$success")
    preview = summary.latest_message_preview or f"Mailbox notification #{summary.latest_sequence}"
    when = format_time(summary.latest_message_at) if summary.latest_message_at else ""
    return Content("\n").join(
        [
            Content.assemble(badge, "  ", line(summary_title(summary), "bold", 80)),
            line(preview, "", 160),
            Content.styled(
                f"{visible_line(summary.id)} · latest #{summary.latest_sequence} · "
                f"{visible_line(when)}",
                "$text-muted",
            ),
        ]
    )


def participants_bar(summary: MailboxSummary) -> Content:
    parts: list[Content] = []
    for participant in summary.participants:
        caught_up = participant.processed_through >= summary.latest_sequence
        glyph, style = (PROCESSED_GLYPH, "$success") if caught_up else (UNREAD_GLYPH, "$warning")
        label = "caught up" if caught_up else "lagging"
        chip = Content.assemble(
            Content.styled(glyph, style),
            " ",
            line(participant.display_name, "bold", 40),
            f" {participant.processed_through}/{summary.latest_sequence} {label}",
        )
        if participant.departed:
            chip = chip + Content.styled(" (departed)", "$error")
        parts.append(chip)
    return Content("   ").join(parts)


def divider(item: Divider) -> Content:
    return Content.styled(f"──── {visible_line(item.label)} ────", "bold $accent")


def unreadable_row(message: MailboxMessage) -> Content:
    """A row another program wrote that cannot be shown as a message, marked in its place."""
    where = f"#{message.sequence}" if message.sequence >= 0 else "without a sequence"
    return Content.assemble(
        Content.styled(f"⚠ unreadable row {where}", "bold $error"),
        "  ",
        line(f"({message.unreadable})", "$error", 160),
    )


def message_row(message: MailboxMessage, summary: MailboxSummary, expanded: bool) -> Content:
    if message.unreadable:
        return unreadable_row(message)
    processed = is_processed(message, summary.participants)
    if processed:
        status = Content.styled(f"{PROCESSED_GLYPH} Processed", "$text-muted")
        base = "$text-muted"
    else:
        status = Content.styled(f"{UNREAD_GLYPH} Unread", "bold $warning")
        base = ""
    marker = "▾" if expanded else "▸"
    head = Content.assemble(
        Content.styled(f"{marker} #{message.sequence}", "bold"),
        "  ",
        line(message.sender_name, base, 30),
        " → ",
        line(message.target_name, base, 30),
        "  ",
        line(format_time(message.created_at), "$text-muted"),
        "  ",
        status,
    )
    title = row_title(message)
    sentence = first_sentence(message.body)
    summary_line = line(title, "bold" if not processed else "$text-muted", 100)
    if sentence and sentence != title:
        summary_line = (
            summary_line + Content.styled(" — ", "$text-muted") + line(sentence, base, 120)
        )
    lines = [head, Content("   ") + summary_line]
    if expanded:
        lines.extend(_details(message))
    return Content("\n").join(lines)


def _details(message: MailboxMessage) -> list[Content]:
    fields = [
        ("Sequence", f"#{message.sequence}"),
        (
            "Route",
            f"{message.sender_name} ({message.sender_session_id}) → "
            f"{message.target_name} ({message.target_session_id})",
        ),
        ("Sent", f"{format_time(message.created_at)}  ({message.created_at})"),
        ("Wake state", message.notification_state),
        ("Dispatch outcome", message.dispatch_outcome or "not finalized (NULL)"),
        ("Topic", message.topic if message.topic is not None else "—"),
        ("State stamp", message.state_stamp if message.state_stamp is not None else "—"),
        ("Unread depth at append", str(message.unread_depth_at_append)),
        ("Message id", message.id),
        ("Idempotency key", message.idempotency_key),
    ]
    out = [
        Content.assemble(Content.styled(f"   {name:<23}", "$text-muted"), line(value, "", 200))
        for name, value in fields
    ]
    body, hidden = cap_lines(visible(message.body), EXPANDED_BODY_LINES)
    out.append(Content.styled("   Body", "$text-muted"))
    out.extend(Content("     ") + Content(body_line) for body_line in body.split("\n"))
    if hidden:
        out.append(
            Content.styled(
                f"     … {hidden} more lines — press f for the full body", "italic $accent"
            )
        )
    return out
