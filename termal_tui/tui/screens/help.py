"""The ``?`` help screen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

HELP_TEXT = """\
termal-tui — a read-only viewer for TermAl agent mailboxes

Nothing you do here changes the database: no cursor moves, no state changes.

Mailbox index
  ↑/↓, enter / click     choose a mailbox and open it in its own tab
  r                      refresh now (also automatic while the index is shown)

Mailbox tab (newest first; the footer shows what applies)
  ↑/↓ PgUp/PgDn          move through messages; PgDn reads a tall row page by page
  enter / click          expand or collapse a message (wake diagnostics, body);
                         on a "… rows not loaded" row: load the next 50 there
  o                      older messages (also loaded when you reach the bottom)
  f                      full body of the highlighted message
  n                      show new messages announced above the thread
  r                      refresh now (also automatic every few seconds)
  w                      close this tab
  /                      search bodies and topics (enter on a result jumps there)
  c / C                  copy the highlighted body / id to the clipboard
  e                      export the loaded messages as JSONL (file named in a note)

Everywhere
  [ / ]                  previous / next tab   (ctrl+left / ctrl+right too)
  0                      back to the mailbox index
  h                      delivery health: stuck hand-offs, ranked (from the index)
  ctrl+p                 command palette: open a mailbox, jump to #N at any depth

Shading
  ● Unread      the target participant has not processed this message yet
  ✓ Processed   the target's processedThrough cursor covers it (drawn dimmer)
  ──── NAME has processed to here (#N) ────   where a lagging participant stands

  ?  this help      q  quit
"""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 84; max-width: 100%; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Content(HELP_TEXT))
