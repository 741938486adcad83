"""Full-body view for long messages: a read-only, scrollable, literal text area."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from termal_tui.core.models import MailboxMessage
from termal_tui.core.sanitize import visible, visible_line
from termal_tui.tui.render import review_envelope, review_lines
from termal_tui.tui.widgets.footer import FittingFooter


class BodyScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    BodyScreen { align: center middle; }
    BodyScreen > Vertical {
        width: 95%; height: 90%; border: round $accent; background: $surface;
    }
    BodyScreen #body-title { height: 1; padding: 0 1; text-style: bold; }
    BodyScreen TextArea { height: 1fr; }
    """
    # Its own footer (the tab's keys do nothing here). End/Home go to the last/first
    # line of the body, not of the current line (priority: the text area would take them).
    BINDINGS = [
        Binding("escape,q,f", "dismiss", "Close", id="body-close"),
        Binding("end,G", "last_line", "Last line", priority=True, id="body-end"),
        Binding("home,g", "first_line", "First line", priority=True, id="body-home"),
        Binding("pagedown", "page(1)", "PgDn", show=False),
        Binding("pageup", "page(-1)", "PgUp", show=False),
    ]

    def __init__(self, message: MailboxMessage) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        message = self.message
        title = (
            f"#{message.sequence:,}  {visible_line(message.sender_name)} → "
            f"{visible_line(message.target_name)}  ·  {len(message.body.encode()):,} bytes"
        )
        text = visible(message.body)
        envelope = review_envelope(message)
        if envelope is not None:  # a review result: read first, the stored JSON below it
            title = f"Review result {title}"
            read = "\n".join(visible_line(part) for part in review_lines(envelope))
            text = f"{read}\n\n— as stored (JSON) —\n{text}"
        with Vertical():
            yield Static(Content(title), id="body-title")
            yield TextArea(text, read_only=True, soft_wrap=True, id="full-body")
        yield FittingFooter()

    @property
    def text_area(self) -> TextArea:
        return self.query_one("#full-body", TextArea)

    def action_last_line(self) -> None:
        area = self.text_area
        area.move_cursor(area.document.end)
        area.scroll_end(animate=False)

    def action_first_line(self) -> None:
        area = self.text_area
        area.move_cursor((0, 0))
        area.scroll_home(animate=False)

    def action_page(self, direction: int) -> None:
        if direction > 0:
            self.text_area.action_cursor_page_down()
        else:
            self.text_area.action_cursor_page_up()
