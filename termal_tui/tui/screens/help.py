"""The ``?`` help screen: every key (as the config file may have remapped it), every
state, marker and health word, in the viewer's one vocabulary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from termal_tui.core.vocabulary import FINDING_MEANING, FINDING_WORDS, WAKE_MEANING, WAKE_WORDS
from termal_tui.tui.cells import cells, pad_cells, wrap_cells
from termal_tui.tui.widgets.footer import FittingFooter

BOX_CELLS: Final = 104  # the help box's width (CSS below)
KEY_CELLS: Final = 22  # the key column from 80 columns up (14 below)
# (keys, what they do); ``{id}`` is the key of the binding with that id.
SECTIONS: Final = [
    (
        "Mailbox index",
        [
            ("↑/↓, enter / click", "choose a mailbox and open it in its own tab"),
            (
                "/",
                "filter the cards by participant name, session id or mailbox id (every "
                "mailbox, not only those loaded); escape clears the filter and leaves it",
            ),
            ("r", "refresh now (also automatic while the viewer runs)"),
        ],
    ),
    (
        "Mailbox tab (newest first; the footer shows what applies)",
        [
            ("↑/↓ PgUp/PgDn", "move through messages; PgDn reads a tall row page by page"),
            (
                "Home / End",
                # No-break spaces: the marker's words stay on one line when wrapped.
                "the newest row / the oldest (loads to —\u00a0start\u00a0of\u00a0mailbox\u00a0—)",
            ),
            ("enter / click", "expand or collapse a message (wake diagnostics, body)"),
            ("", "on a “… rows not loaded” row: load the next 50 there"),
            ("{older}", "older messages (also loaded when you reach the bottom)"),
            ("{full-body}", "full body of the highlighted message (Home / End inside)"),
            ("{show-new}", "show new messages announced above the thread"),
            ("{refresh}", "refresh now (also automatic every interval)"),
            ("{close-tab}", "close this tab"),
            ("{search}", "search bodies and topics (enter or ↓ to the results, enter jumps)"),
            ("{copy-body} / {copy-id}", "send the highlighted body / id to the clipboard (OSC 52)"),
            ("{export}", "export the loaded messages as JSONL (to the export directory)"),
            (
                "{hidden-rows}",
                "review results: the control-plane rows this view hides (as TermAl's views "
                "do), read-only",
            ),
        ],
    ),
    (
        "Tabs (the index and the mailbox tabs)",
        [
            ("{prev-tab} / {next-tab}", "previous / next tab (ctrl+left / ctrl+right too)"),
            ("{index}", "back to the mailbox index"),
        ],
    ),
    (
        "Health view and board",
        [
            ("↑/↓, enter", "health: open the first affected message of a finding"),
            ("", "board: a key's value and history; tab moves between projects and keys"),
            ("t", "board: show or hide tombstones (deleted keys), when there are any"),
            ("r / escape", "refresh now / back to the tabs"),
        ],
    ),
    (
        "Activity and sessions",
        [
            (
                "{activity}",
                "activity: what just happened anywhere, newest first; ● new since you looked",
            ),
            ("", "enter jumps to the message, mailbox or key; o older; space marks all seen"),
            (
                "f / s / m / c",
                "activity: cycle the kinds / only this session / this mailbox / clear",
            ),
            (
                "{sessions}",
                "sessions: one row per agent, most stuck first; enter shows its mailboxes",
            ),
        ],
    ),
    (
        "Everywhere",
        [
            ("{health}", "delivery health: stuck hand-offs, ranked"),
            ("{board}", "the coordination board: projects, keys, values, history"),
            ("{activity} / {sessions}", "the activity stream / one row per agent"),
            ("ctrl+p", "command palette: open a mailbox, #N jumps to a message at any depth"),
            ("{help} / {quit}", "this help / quit"),
        ],
    ),
    (
        "Rows and cards",
        [
            ("● Unread", "the target participant has not processed this message yet"),
            ("✓ Processed", "the target's processedThrough cursor covers it (drawn dimmer)"),
            ("▸ / ▾", "a collapsed / expanded row"),
            (
                "● backend 22 · planner 10 unread",
                "a card: who is behind, most unread first; ages (3 min ago) move on by "
                "themselves, the expanded row gives the time with its zone",
            ),
            ("✓ all read", "a card whose participants have processed every row"),
            (
                "● planner 120/140",
                "a participant chip above a tab's rows: its processedThrough cursor / the "
                "latest row; ● (yellow) while rows addressed to it lie above its cursor",
            ),
            ("✓ planner 140/140", "the chip of a participant with nothing left to process"),
            (
                "──── NAME has processed to here (#N) ────",
                "where a participant's cursor stands, when it is below the latest row",
            ),
            (
                "· N control-plane rows hidden (#N) · v shows",
                "review results stored between these rows, hidden as in TermAl",
            ),
            ("departed", "a participant that has left the mailbox"),
            ("▲ N new messages", "arrived while you read below the top; n shows them"),
            ("● Live ◌ Loading", "the tab re-reads every interval / is reading"),
            ("● Stale", "the last read failed; the reason follows and it keeps trying"),
            ("⏸ Paused ◼ Snapshot", "polling is off (--interval 0) / an immutable copy"),
        ],
    ),
    (
        "Wake at send (the receipt's outcome, fixed once decided)",
        [
            (
                "woken, never woken, queued behind a turn",
                "the words and values of the wake states above, as decided when the "
                "message was sent (the row's wake state may move on since)",
            ),
            (
                "not decided yet",
                "NULL: its writer is still finalizing the wake, or stopped before it did",
            ),
        ],
    ),
]


def key_text(spec: str, keys: Mapping[str, str]) -> str:
    """``{search}`` → the key bound to ``search`` (``/`` unless remapped)."""
    out = spec
    for binding_id, key in keys.items():
        out = out.replace("{" + binding_id + "}", key)
    return out


def _entry(key: str, what: str, width: int, key_cells: int) -> list[str]:
    """One entry, wrapped at ``width`` with its continuation under the text; a key wider
    than the key column has a line of its own."""
    indent = 2 + key_cells + 1
    wrapped = wrap_cells(what, max(10, width - indent))
    pad = " " * indent
    if cells(key) > key_cells:  # a key of its own, itself wrapped (under itself)
        keys = wrap_cells(key, max(10, width - 2))
        return [f"  {part}" for part in keys] + [pad + part for part in wrapped]
    return [f"  {pad_cells(key, key_cells)} {wrapped[0]}"] + [pad + part for part in wrapped[1:]]


def help_text(keys: Mapping[str, str], width: int = 100) -> str:
    """Every key, state, marker and word, no line wider than ``width``."""
    key_cells = KEY_CELLS if width >= 80 else 14
    lines = [
        *wrap_cells("termal-tui — a read-only viewer for TermAl agent mailboxes", width),
        "",
        *wrap_cells(
            "Nothing you do here changes the database: no cursor moves, no state changes.",
            width,
        ),
    ]
    sections = [
        *SECTIONS[:-1],
        (
            "Wake state of a row (plain words first, TermAl's value beside them)",
            [(word, f"{WAKE_MEANING[value]} ({value})") for value, word in WAKE_WORDS.items()],
        ),
        SECTIONS[-1],
        (
            "⚠ on cards and in the health view (◷ for lagging)",
            [(word, FINDING_MEANING[kind]) for kind, word in FINDING_WORDS.items()],
        ),
    ]
    for title, entries in sections:
        lines += ["", *wrap_cells(title, width)]
        for spec, what in entries:
            lines += _entry(key_text(spec, keys), what, width, key_cells)
    return "\n".join(lines) + "\n"


DEFAULT_KEYS: Final = {
    "older": "o",
    "full-body": "f",
    "show-new": "n",
    "refresh": "r",
    "close-tab": "w",
    "search": "/",
    "copy-body": "c",
    "copy-id": "C",
    "export": "e",
    "prev-tab": "[",
    "next-tab": "]",
    "index": "0",
    "health": "h",
    "board": "b",
    "activity": "a",
    "sessions": "s",
    "help": "?",
    "quit": "q",
    "hidden-rows": "v",
}
HELP_TEXT: Final = help_text(DEFAULT_KEYS)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 104; max-width: 100%; height: auto; max-height: 90%;  /* BOX_CELLS */
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="help-close")]

    def __init__(self, keys: Mapping[str, str] | None = None) -> None:
        """``keys``: binding id → key display, for the bindings a keymap changed."""
        super().__init__()
        self.keys = {**DEFAULT_KEYS, **(keys or {})}

    def compose(self) -> ComposeResult:
        # Wrapped at the width it will have (the box, its border, padding and scrollbar),
        # so the first layout measures the right height.
        width = min(BOX_CELLS, self.app.size.width or BOX_CELLS) - 6
        with VerticalScroll():
            yield HelpText(self.keys, width)
        yield FittingFooter()  # its own keys, not the tab's


class HelpText(Static):
    """The help, wrapped at its own width (again on every resize: a scrollbar coming or
    going changes it), so no phrase breaks to column 0."""

    def __init__(self, keys: Mapping[str, str], width: int = 100) -> None:
        self._width = max(30, width)
        super().__init__(Content(help_text(keys, self._width)))
        self.keys = keys

    def on_resize(self) -> None:
        width = max(30, self.size.width)
        if width != self._width:
            self._width = width
            self.update(Content(help_text(self.keys, width)))
            if self.parent is not None:  # its height changed with the wrapping
                self.parent.refresh(layout=True)
