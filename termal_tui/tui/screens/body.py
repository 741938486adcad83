"""Full-body view for long messages: a read-only, scrollable, literal text area."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from termal_tui.models import MailboxMessage
from termal_tui.sanitize import visible, visible_line


class BodyScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    BodyScreen { align: center middle; }
    BodyScreen > Vertical {
        width: 95%; height: 90%; border: round $accent; background: $surface;
    }
    BodyScreen #body-title { height: 1; padding: 0 1; text-style: bold; }
    BodyScreen TextArea { height: 1fr; }
    """
    BINDINGS = [Binding("escape,q,f", "dismiss", "Close")]

    def __init__(self, message: MailboxMessage) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        message = self.message
        title = (
            f"#{message.sequence}  {visible_line(message.sender_name)} → "
            f"{visible_line(message.target_name)}  ·  {len(message.body.encode())} bytes  ·  esc to close"
        )
        with Vertical():
            yield Static(Content(title), id="body-title")
            yield TextArea(visible(message.body), read_only=True, soft_wrap=True, id="full-body")
