"""Untrusted mailbox data → Textual ``Content`` (never markup) for cards, rows and dividers.

Every string from the database reaches the screen through :func:`line` or :func:`text`
(the sanitiser), never through markup.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Final

from textual.content import Content

from termal_tui.core.formats import preview
from termal_tui.core.models import MailboxMessage, MailboxParticipant, MailboxSummary
from termal_tui.core.sanitize import cap_lines, visible, visible_line
from termal_tui.core.vocabulary import (
    absolute_time,
    outcome_words,
    relative_age,
    unread_at_append_words,
    wake_words,
)
from termal_tui.tui.cells import cap_cells, cells, first_fit, fit, pad_cells, wrap_cells
from termal_tui.views.presentation import (
    behind_words,
    format_time,
    is_processed,
    latest_shown,
    row_title,
    summary_title,
)

if TYPE_CHECKING:
    from termal_tui.core.review import ReviewEnvelope
    from termal_tui.views.thread import Gap

EXPANDED_BODY_LINES: Final = 40
UNREAD_GLYPH: Final = "●"
PROCESSED_GLYPH: Final = "✓"
SHORT_ID_CHARS: Final = 8
# Processed rows are drawn in $termal-dim (legible.py): the bright text faded toward the
# background as far as it still reads 4.5:1 on every background, the cursor included, so
# dimmer than unread rows; under NO_COLOR the glyph and word carry it.
PROCESSED_STYLE: Final = "$termal-dim"


def line(value: str, style: str = "", max_chars: int | None = None) -> Content:
    safe = visible_line(value, max_chars)
    return Content.styled(safe, style) if style else Content(safe)


def short_id(identifier: str) -> str:
    """``mailbox-3fcb1a2e-…`` → ``3fcb1a2e``: the first 8 hex characters of the UUID."""
    tail = identifier.removeprefix("mailbox-message-").removeprefix("mailbox-")
    return visible_line(tail[:SHORT_ID_CHARS])


def card(
    summary: MailboxSummary,
    width: int = 78,
    problem: str | None = None,
    now: datetime | None = None,
    age: str | None = None,
) -> Content:
    """A compact two-line notification card for the mailbox index, in ``width`` cells
    (``problem``: a short word from the health check, shown as a marker and leading the
    second line; ``now``: ages are relative to it; ``age``: the age text already worked
    out, see :class:`~termal_tui.core.vocabulary.Ages`). The badge says who is behind
    (``● backend 22 · planner 10 unread``). Two lines at every width, neither wider than
    ``width`` cells (wide characters count two): on the first the short id gives way
    first, then who is behind (the total stays), then the age (whole: never ``335 d``
    without ``ago``), then the names are cut; the second keeps the problem's word."""
    when = age or ""
    if summary.latest_message_at and age is None:
        when = (
            relative_age(summary.latest_message_at, now)
            if now is not None
            else format_time(summary.latest_message_at)
        )
    room = max(10, width)
    title = visible_line(summary_title(summary))
    behind = (
        behind_words(summary, shorten=lambda name: cap_cells(name, 14))
        if summary.unread_count
        else ""
    )
    number = f"#{latest_shown(summary):,}"
    when = visible_line(when)
    full_meta = "  " + " · ".join(part for part in (number, when, short_id(summary.id)) if part)
    number_meta = f"  {number}"
    aged_meta = f"  {number} · {when}" if when else number_meta
    wanted = min(cells(title), 16)
    # Narrower: the short id goes first, then who is behind (the total stays), then
    # the age; the names keep at least 16 cells while they can.
    choices = [
        (behind, full_meta),
        (behind, aged_meta),
        ("", aged_meta),
        ("", number_meta),
    ]
    for named, meta_text in choices:
        badge = _badge(summary, problem, named)
        names_room = room - cells(badge) - 2 - cells(meta_text)
        if names_room >= wanted:
            break
    meta = Content.styled(meta_text, "$termal-muted")
    names = fit(title, min(60, max(1, names_room)), "bold")
    head = fit(Content.assemble(badge, "  ", names, meta), room)
    preview_text = visible_line(
        summary.latest_message_preview or f"Mailbox notification #{summary.latest_sequence:,}"
    )
    if not problem:
        return Content("\n").join([head, fit(preview_text, room)])
    tag = Content.styled(f"{problem} · ", "bold $termal-error")
    second = fit(Content.assemble(tag, preview_text), room)
    return Content("\n").join([head, second])


def _badge(summary: MailboxSummary, problem: str | None, behind: str) -> Content:
    """``● 32 unread``, ``● backend 22 · planner 10 unread``, ``✓ all read``; with a
    health finding the glyph turns to a red ⚠."""
    if not summary.unread_count:
        return Content.styled(f"{PROCESSED_GLYPH} all read", "$termal-success")
    counted = behind or f"{summary.unread_count:,}"
    if problem:
        return Content.styled(f"⚠ {counted} unread", "bold $termal-error")
    return Content.styled(f"{UNREAD_GLYPH} {counted} unread", "bold $termal-warning")


def participant_chip(
    participant: MailboxParticipant, latest: int, waiting: bool | None = None
) -> Content:
    """``● backend 96/140`` (warning: rows wait for it) or ``✓ reviewer 1/2`` (its cursor
    is below the latest row, but nothing above it is addressed to it). ``waiting``:
    what the thread knows; None: any cursor below the latest row counts."""
    caught_up = participant.processed_through >= latest if waiting is None else not waiting
    glyph, style = (
        (PROCESSED_GLYPH, "$termal-success") if caught_up else (UNREAD_GLYPH, "$termal-warning")
    )
    chip = Content.assemble(
        Content.styled(glyph, style),
        " ",
        Content.styled(cap_cells(visible_line(participant.display_name), 30), "bold"),
        f" {min(participant.processed_through, latest):,}/{latest:,}",
    )
    if participant.departed:
        chip = chip + Content.styled(" departed", "$termal-error")
    return chip


def participants_bar(
    summary: MailboxSummary,
    latest: int | None = None,
    waits_on: Callable[[MailboxParticipant], bool] | None = None,
) -> Content:
    """Each participant's cursor against the latest sequence (never shown above it);
    ``waits_on``: whether rows wait for a participant (see ``ThreadModel.waits_on``)."""
    top = max(
        [summary.latest_sequence if latest is None else latest]
        + [p.processed_through for p in summary.participants]
    )
    return Content("   ").join(
        participant_chip(p, top, waits_on(p) if waits_on is not None else None)
        for p in summary.participants
    )


def divider_line(participant: MailboxParticipant, width: int = 118) -> Content:
    """``──── planner has processed to here (#120) ────`` in ``width`` cells: narrower,
    the rules go, then the name is cut (the number stays)."""
    departed = " (departed)" if participant.departed else ""
    name = visible_line(participant.display_name)
    number = f"(#{participant.processed_through:,})"
    words = f"has processed to here {number}"
    name_room = max(4, width - cells(departed) - cells(words) - 1)
    label = f"{cap_cells(name, min(40, name_room))}{departed} {words}"
    return first_fit(
        width,
        Content.styled(f"──── {label} ────", "bold $termal-accent"),
        Content.styled(f"── {label}", "bold $termal-accent"),
        Content.styled(label, "bold $termal-accent"),
    )


def gap_row(gap: Gap, dividers: list[MailboxParticipant] = (), width: int = 118) -> Content:  # type: ignore[assignment]
    """The unloaded rows, split where a cursor inside them stands (``gap_parts``): a
    divider is drawn between the rows newer than the cursor and those at or below it.
    Narrower, the hint goes, then the range (the count stays)."""
    lines: list[Content] = []
    hint = " — enter to load"  # on the newest unloaded rows: enter reads from there down
    from termal_tui.views.thread import Gap, gap_parts  # the model loads with a tab

    for part in gap_parts(gap, dividers):
        if isinstance(part, Gap):
            count = f"  … up to {part.at_most:,} rows not loaded"
            span = f" (#{part.older + 1:,}–#{part.newer - 1:,})"
            forms = [count + span + hint, count + span, count] if hint else [count + span, count]
            lines.append(
                first_fit(width, *(Content.styled(form, "italic $termal-accent") for form in forms))
            )
            hint = ""
        else:
            lines.append(divider_line(part, width))
    return Content("\n").join(lines)


def start_marker() -> Content:
    return Content.styled("  — start of mailbox —", "$termal-muted")


def unreadable_row(message: MailboxMessage, width: int = 118) -> Content:
    """A row another program wrote that cannot be shown as a message, marked in its place
    (one line of ``width`` cells: the reason is cut)."""
    where = f"#{message.sequence:,}" if message.sequence >= 0 else "without a sequence"
    return fit(
        Content.assemble(
            Content.styled(f"⚠ unreadable row {where}", "bold $termal-error"),
            "  ",
            line(f"({message.unreadable})", "$termal-error", 160),
        ),
        width,
    )


def review_envelope(message: MailboxMessage) -> ReviewEnvelope | None:
    """The structured review result a control row carries, or None if it does not parse."""
    if not message.is_control:
        return None
    from termal_tui.core.review import parse_envelope  # only control rows need it

    try:
        return parse_envelope(message.body)
    except ValueError:  # pydantic's ValidationError is one
        return None


def review_lines(envelope: ReviewEnvelope) -> list[str]:
    """A review result read as a person would: the status and summary, each finding
    (``[High] store.py:12 message``), each command run. Untrusted: the caller makes each
    line visible (``line``/``visible``)."""
    lines = [f"{envelope.status}: {envelope.summary}"]
    for finding in envelope.findings:
        where = finding.file or ""
        if finding.line is not None:
            where += f":{finding.line}"
        lines.append(f"[{finding.severity}] {where} {finding.message}".replace("  ", " "))
    lines.extend(f"$ {command.command} → {command.status}" for command in envelope.commands_run)
    return lines


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
    now: datetime | None = None,
    age: str | None = None,
) -> Content:
    """One thread row: dividers above it, a head line, one line of title and preview
    filling ``width``, and when expanded the wake diagnostics and the body. ``now``:
    the head says how long ago it was sent (``3 min ago``). No line is wider than
    ``width``: names give way first, then the time; ``● Unread`` stays whole."""
    lines = [divider_line(p, width) for p in dividers]
    if message.unreadable:
        lines.append(unreadable_row(message, width))
        return Content("\n").join(lines)
    if processed is None:
        processed = is_processed(message, summary.participants)
    base = PROCESSED_STYLE if processed else ""
    if processed:
        status = Content.styled(f"{PROCESSED_GLYPH} Processed", PROCESSED_STYLE)
    else:
        status = Content.styled(f"{UNREAD_GLYPH} Unread", "bold $termal-warning")
    marker = "▾" if expanded else "▸"
    if age is not None:
        when = age
    elif now is not None:
        when = relative_age(message.created_at, now)
    else:
        when = format_time(message.created_at)
    number = f"{marker} #{message.sequence:,}"
    sender, target = visible_line(message.sender_name), visible_line(message.target_name)
    # Narrower: the names are cut (each to its half), then the time goes (whole).
    fixed = cells(number) + 2 + 3 + 2 + cells(status)
    names = 24
    if fixed + 2 * names + cells(when) + 2 > width:
        names = max(4, (width - fixed - cells(when) - 2) // 2)
    if fixed + 2 * names + cells(when) + 2 > width:  # still too narrow: the time goes
        when = ""
        names = max(4, (width - fixed) // 2)
    head: list[Content | str] = [
        Content.styled(number, base or "bold"),
        "  ",
        fit(sender, names, base),
        Content.styled(" → ", base),
        fit(target, names, base),
    ]
    if when:
        head += ["  ", fit(visible_line(when), width, base or "$termal-muted")]
    lines.append(fit(Content.assemble(*head, "  ", status), width))
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
    title = visible_line(title)
    title_content = fit(title, room, base or "bold")
    summary_line = title_content
    remaining = room - cells(title_content) - 3
    if rest and remaining > 8:
        summary_line = Content.assemble(
            title_content,
            Content.styled(" — ", base or "$termal-muted"),
            fit(visible_line(rest), remaining, base),
        )
    elif rest:  # no room for the rest: one ellipsis says there is more (the title cut)
        summary_line = fit(Content.styled(f"{title} …", base or "bold"), room)
    lines.append(Content("   ") + summary_line)
    if expanded:
        lines.extend(_details(message, envelope, body_lines, width))
    return Content("\n").join(lines)


LABEL_CELLS: Final = 20  # "   " + a 17-cell label: where a detail's text starts
BODY_INDENT: Final = 5


def wrap_under(text: str, room: int) -> list[str]:
    """``text`` in lines of at most ``room`` cells, at spaces where it can (the caller
    indents every piece alike, so a continuation starts under the text)."""
    return wrap_cells(text, room) or [""]


def _details(
    message: MailboxMessage, envelope: ReviewEnvelope | None, body_lines: int, width: int = 118
) -> list[Content]:
    fields = [
        ("Sequence", f"#{message.sequence:,}"),
        (
            "Route",
            f"{message.sender_name} ({message.sender_session_id}) → "
            f"{message.target_name} ({message.target_session_id})",
        ),
        ("Sent", f"{absolute_time(message.created_at)}  ({message.created_at})"),
        ("Wake now", wake_words(message.notification_state)),
        ("Wake at send", outcome_words(message.dispatch_outcome)),
        ("Topic", message.topic if message.topic is not None else "—"),
        ("State stamp", message.state_stamp if message.state_stamp is not None else "—"),
        ("Unread at send", unread_at_append_words(message.unread_depth_at_append)),
        ("Mailbox id", message.mailbox_id),
        ("Message id", message.id),
        ("Idempotency key", message.idempotency_key),
    ]
    out = [_detail(name, value, width) for name, value in fields]
    if envelope is not None:
        out.append(Content.styled("   Review result", "$termal-muted"))
        head, *rest = review_lines(envelope)
        room = max(10, width - BODY_INDENT)
        for index, text in enumerate([head, *rest]):
            style = "bold" if index == 0 else ""
            out.extend(
                Content(" " * BODY_INDENT) + Content.styled(piece, style)
                for piece in wrap_under(visible_line(text, 300), room)
            )
        return out
    body, hidden = cap_lines(visible(message.body), max(3, body_lines))
    out.append(Content.styled("   Body", "$termal-muted"))
    room = max(10, width - BODY_INDENT)
    out.extend(
        Content(" " * BODY_INDENT + piece)
        for body_line in body.split("\n")
        for piece in wrap_under(body_line, room)
    )
    if hidden:
        out.append(
            Content.styled(
                f"     … {hidden:,} more line{'s' if hidden != 1 else ''} — press f for the full body",
                "italic $termal-accent",
            )
        )
    return out


def _detail(name: str, value: str, width: int) -> Content:
    """``   Label            value``; a value longer than the row wraps under its own
    text (column 20), not under the label."""
    pieces = wrap_under(visible_line(value, 400), max(10, width - LABEL_CELLS))
    label = Content.styled(f"   {pad_cells(name, 17)}", "$termal-muted")
    rest = [Content(" " * LABEL_CELLS + piece) for piece in pieces[1:]]
    return Content("\n").join([Content.assemble(label, pieces[0]), *rest])
