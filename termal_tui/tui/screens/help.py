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
from textual.widgets import Footer, Static

from termal_tui.vocabulary import FINDING_MEANING, FINDING_WORDS, WAKE_MEANING, WAKE_WORDS

KEY_CELLS: Final = 22
# (keys, what they do); ``{id}`` is the key of the binding with that id.
SECTIONS: Final = [
    (
        "Mailbox index",
        [
            ("↑/↓, enter / click", "choose a mailbox and open it in its own tab"),
            ("/", "filter the cards by name or id; escape clears the filter and leaves it"),
            ("r", "refresh now (also automatic while the index is shown)"),
        ],
    ),
    (
        "Mailbox tab (newest first; the footer shows what applies)",
        [
            ("↑/↓ PgUp/PgDn", "move through messages; PgDn reads a tall row page by page"),
            ("Home / End", "the newest row / the oldest (loads to — start of mailbox —)"),
            ("enter / click", "expand or collapse a message (wake diagnostics, body)"),
            ("", "on a “… rows not loaded” row: load the next 50 there"),
            ("{older}", "older messages (also loaded when you reach the bottom)"),
            ("{full-body}", "full body of the highlighted message (Home / End inside)"),
            ("{show-new}", "show new messages announced above the thread"),
            ("{refresh}", "refresh now (also automatic every few seconds)"),
            ("{close-tab}", "close this tab"),
            ("{search}", "search bodies and topics (enter or ↓ to the results, enter jumps)"),
            ("{copy-body} / {copy-id}", "send the highlighted body / id to the clipboard (OSC 52)"),
            ("{export}", "export the loaded messages as JSONL (to the export directory)"),
        ],
    ),
    (
        "Everywhere",
        [
            ("{prev-tab} / {next-tab}", "previous / next tab   (ctrl+left / ctrl+right too)"),
            ("{index}", "back to the mailbox index"),
            ("{health}", "delivery health: stuck hand-offs, ranked"),
            ("{board}", "the coordination board: projects, keys, values, history"),
            ("ctrl+p", "command palette: open a mailbox, #N jumps to a message at any depth"),
            ("{help} / {quit}", "this help / quit"),
        ],
    ),
]


def key_text(spec: str, keys: Mapping[str, str]) -> str:
    """``{search}`` → the key bound to ``search`` (``/`` unless remapped)."""
    out = spec
    for binding_id, key in keys.items():
        out = out.replace("{" + binding_id + "}", key)
    return out


def help_text(keys: Mapping[str, str]) -> str:
    lines = [
        "termal-tui — a read-only viewer for TermAl agent mailboxes",
        "",
        "Nothing you do here changes the database: no cursor moves, no state changes.",
    ]
    for title, entries in SECTIONS:
        lines += ["", title]
        for spec, what in entries:
            lines.append(f"  {key_text(spec, keys):<{KEY_CELLS}} {what}")
    lines += [
        "",
        "Rows and cards",
        f"  {'● Unread':<{KEY_CELLS}} the target participant has not processed this message yet",
        f"  {'✓ Processed':<{KEY_CELLS}} the target's processedThrough cursor covers it (dimmer)",
        f"  {'▸ / ▾':<{KEY_CELLS}} a collapsed / expanded row",
        f"  {'● backend 22 · planner 10 unread':<{KEY_CELLS}}",
        f"  {'':<{KEY_CELLS}} a card: who is behind, most unread first; ages move on by themselves",
        f"  {'──── NAME has processed to here (#N) ────':<{KEY_CELLS}}",
        f"  {'':<{KEY_CELLS}} where a lagging participant's cursor stands",
        f"  {'▲ N new messages':<{KEY_CELLS}} arrived while you read below the top; n shows them",
        f"  {'● Live ◌ Loading':<{KEY_CELLS}} the tab re-reads every interval / is reading",
        f"  {'● Stale':<{KEY_CELLS}} the last read failed; the reason follows, it keeps trying",
        f"  {'⏸ Paused ◼ Snapshot':<{KEY_CELLS}} polling is off (--interval 0) / an immutable copy",
        "",
        "Wake state of a row (plain words first, TermAl's value beside them)",
    ]
    for value, word in WAKE_WORDS.items():
        lines.append(f"  {word:<{KEY_CELLS}} {WAKE_MEANING[value]} ({value})")
    lines += ["", "⚠ on cards and in the health view (◷ for lagging)"]
    for kind, word in FINDING_WORDS.items():
        lines.append(f"  {word:<{KEY_CELLS}} {FINDING_MEANING[kind]}")
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
    "help": "?",
    "quit": "q",
}
HELP_TEXT: Final = help_text(DEFAULT_KEYS)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 104; max-width: 100%; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="help-close")]

    def __init__(self, keys: Mapping[str, str] | None = None) -> None:
        """``keys``: binding id → key display, for the bindings a keymap changed."""
        super().__init__()
        self.keys = {**DEFAULT_KEYS, **(keys or {})}

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Content(help_text(self.keys)))
        yield Footer(compact=True)  # its own keys, not the tab's
