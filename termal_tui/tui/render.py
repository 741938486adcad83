"""Untrusted mailbox data → Textual ``Content`` (never markup) for cards, rows and dividers.

Every string from the database reaches the screen through :func:`line` or :func:`text`
(the sanitiser), never through markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from textual.content import Content

from termal_tui.formats import preview
from termal_tui.models import MailboxMessage, MailboxParticipant, MailboxSummary
from termal_tui.presentation import (
    format_time,
    is_processed,
    row_title,
    summary_title,
)
from termal_tui.sanitize import cap_lines, visible, visible_line

if TYPE_CHECKING:
    from termal_tui.review import ReviewEnvelope
    from termal_tui.thread import Gap

EXPANDED_BODY_LINES: Final = 40
UNREAD_GLYPH: Final = "●"
PROCESSED_GLYPH: Final = "✓"
SHORT_ID_CHARS: Final = 8
# Processed rows are drawn dim (SGR 2) in the muted colour: dimmer than unread rows in
# 256-colour and truecolour alike, and under NO_COLOR the glyph and word carry it.
PROCESSED_STYLE: Final = "$foreground 50%"


def line(value: str, style: str = "", max_chars: int | None = None) -> Content:
    safe = visible_line(value, max_chars)
    return Content.styled(safe, style) if style else Content(safe)


def short_id(identifier: str) -> str:
    """``mailbox-3fcb1a2e-…`` → ``3fcb1a2e``: the first 8 hex characters of the UUID."""
    tail = identifier.removeprefix("mailbox-message-").removeprefix("mailbox-")
    return visible_line(tail[:SHORT_ID_CHARS])


def card(summary: MailboxSummary, width: int = 78, problem: str | None = None) -> Content:
    """A compact two-line notification card for the mailbox index (``problem``: a short
    word from the health check, shown as a marker)."""
    if summary.unread_count:
        badge = Content.styled(f"{UNREAD_GLYPH} {summary.unread_count:,} unread", "bold $warning")
    else:
        badge = Content.styled(f"{PROCESSED_GLYPH} all read", "$success")
    when = format_time(summary.latest_message_at) if summary.latest_message_at else ""
    meta = Content.styled(
        f"  #{summary.latest_sequence:,} · {visible_line(when)} · {short_id(summary.id)}",
        "$foreground 65%",
    )
    if problem:  # the health check's worst finding: the glyph turns red, the word leads
        badge = Content.styled(f"⚠ {summary.unread_count:,} unread", "bold $error")
    head = Content.assemble(badge, "  ", line(summary_title(summary), "bold", 60), meta)
    preview_text = (
        summary.latest_message_preview or f"Mailbox notification #{summary.latest_sequence}"
    )
    room = max(10, width - 1)
    if not problem:
        return Content("\n").join([head, line(preview_text, "", room)])
    tag = f"{problem} · "
    second = Content.assemble(
        Content.styled(tag, "bold $error"), line(preview_text, "", max(10, room - len(tag)))
    )
    return Content("\n").join([head, second])


def participant_chip(participant: MailboxParticipant, latest: int) -> Content:
    caught_up = participant.processed_through >= latest
    glyph, style = (PROCESSED_GLYPH, "$success") if caught_up else (UNREAD_GLYPH, "$warning")
    chip = Content.assemble(
        Content.styled(glyph, style),
        " ",
        line(participant.display_name, "bold", 30),
        f" {min(participant.processed_through, latest):,}/{latest:,}",
    )
    if participant.departed:
        chip = chip + Content.styled(" departed", "$error")
    return chip


def participants_bar(summary: MailboxSummary, latest: int | None = None) -> Content:
    """Each participant's cursor against the latest sequence (never shown above it)."""
    top = max(
        [summary.latest_sequence if latest is None else latest]
        + [p.processed_through for p in summary.participants]
    )
    return Content("   ").join(participant_chip(p, top) for p in summary.participants)


def divider_line(participant: MailboxParticipant) -> Content:
    departed = " (departed)" if participant.departed else ""
    label = (
        f"{visible_line(participant.display_name, 40)}{departed} has processed to here "
        f"(#{participant.processed_through})"
    )
    return Content.styled(f"──── {label} ────", "bold $accent")


def gap_row(gap: Gap, dividers: list[MailboxParticipant] = ()) -> Content:  # type: ignore[assignment]
    lines = [divider_line(p) for p in dividers]
    lines.append(
        Content.styled(
            f"  … up to {gap.at_most:,} rows not loaded (#{gap.older + 1}–#{gap.newer - 1})"
            " — enter to load",
            "italic $accent",
        )
    )
    return Content("\n").join(lines)


def start_marker() -> Content:
    return Content.styled("  — start of mailbox —", "$foreground 65%")


def unreadable_row(message: MailboxMessage) -> Content:
    """A row another program wrote that cannot be shown as a message, marked in its place."""
    where = f"#{message.sequence}" if message.sequence >= 0 else "without a sequence"
    return Content.assemble(
        Content.styled(f"⚠ unreadable row {where}", "bold $error"),
        "  ",
        line(f"({message.unreadable})", "$error", 160),
    )


def review_envelope(message: MailboxMessage) -> ReviewEnvelope | None:
    """The structured review result a control row carries, or None if it does not parse."""
    if not message.is_control:
        return None
    from termal_tui.review import parse_envelope  # only control rows need it

    try:
        return parse_envelope(message.body)
    except ValueError:  # pydantic's ValidationError is one
        return None


def _finding_counts(envelope: ReviewEnvelope) -> str:
    counts: dict[str, int] = {}
    for finding in envelope.findings:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    order = ["Critical", "High", "Medium", "Low", "Note"]
    parts = [f"{counts[s]} {s}" for s in order if s in counts]
    return ", ".join(parts) if parts else "no findings"


def message_row(
    message: MailboxMessage,
    summary: MailboxSummary,
    expanded: bool,
    *,
    dividers: list[MailboxParticipant] = (),  # type: ignore[assignment]
    width: int = 118,
    body_lines: int = EXPANDED_BODY_LINES,
    processed: bool | None = None,
) -> Content:
    """One thread row: dividers above it, a head line, one line of title and preview
    filling ``width``, and when expanded the wake diagnostics and the body."""
    lines = [divider_line(p) for p in dividers]
    if message.unreadable:
        lines.append(unreadable_row(message))
        return Content("\n").join(lines)
    if processed is None:
        processed = is_processed(message, summary.participants)
    base = PROCESSED_STYLE if processed else ""
    if processed:
        status = Content.styled(f"{PROCESSED_GLYPH} Processed", PROCESSED_STYLE)
    else:
        status = Content.styled(f"{UNREAD_GLYPH} Unread", "bold $warning")
    marker = "▾" if expanded else "▸"
    lines.append(
        Content.assemble(
            Content.styled(f"{marker} #{message.sequence}", base or "bold"),
            "  ",
            line(message.sender_name, base, 24),
            Content.styled(" → ", base),
            line(message.target_name, base, 24),
            "  ",
            line(format_time(message.created_at), base or "$foreground 65%"),
            "  ",
            status,
        )
    )
    envelope = review_envelope(message)
    room = max(10, width - 4)
    if envelope is not None:
        title = f"Review result · {envelope.status} · {_finding_counts(envelope)}"
        rest = envelope.summary
    else:
        title = row_title(message)
        rest = preview(message.body)  # one line of the body after the title
        if rest.startswith(title):
            rest = rest[len(title) :].lstrip()
    title_content = line(title, base or "bold", room)
    summary_line = title_content
    remaining = room - len(title_content.plain) - 3
    if rest and remaining > 8:
        summary_line = Content.assemble(
            title_content,
            Content.styled(" — ", base or "$foreground 65%"),
            line(rest, base, remaining),
        )
    lines.append(Content("   ") + summary_line)
    if expanded:
        lines.extend(_details(message, envelope, body_lines))
    return Content("\n").join(lines)


def _details(
    message: MailboxMessage, envelope: ReviewEnvelope | None, body_lines: int
) -> list[Content]:
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
        ("Unread at append", str(message.unread_depth_at_append)),
        ("Mailbox id", message.mailbox_id),
        ("Message id", message.id),
        ("Idempotency key", message.idempotency_key),
    ]
    out = [
        Content.assemble(Content.styled(f"   {name:<17}", "$foreground 65%"), line(value, "", 200))
        for name, value in fields
    ]
    if envelope is not None:
        out.append(Content.styled("   Review result", "$foreground 65%"))
        out.append(Content("     ") + line(f"{envelope.status}: {envelope.summary}", "bold", 300))
        for finding in envelope.findings:
            where = finding.file or ""
            if finding.line is not None:
                where += f":{finding.line}"
            out.append(
                Content("     ")
                + line(
                    f"[{finding.severity}] {where} {finding.message}".replace("  ", " "), "", 300
                )
            )
        for command in envelope.commands_run:
            out.append(Content("     ") + line(f"$ {command.command} → {command.status}", "", 300))
        return out
    body, hidden = cap_lines(visible(message.body), max(3, body_lines))
    out.append(Content.styled("   Body", "$foreground 65%"))
    out.extend(Content("     ") + Content(body_line) for body_line in body.split("\n"))
    if hidden:
        out.append(
            Content.styled(
                f"     … {hidden} more lines — press f for the full body", "italic $accent"
            )
        )
    return out
