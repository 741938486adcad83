"""Moved to :mod:`termal_tui.views.thread` (the headless view models live in views/)."""

from termal_tui.views.thread import (
    Change,
    Gap,
    Item,
    Splice,
    StartMarker,
    ThreadModel,
    item_key,
    item_sequence,
)

__all__ = [
    "Change",
    "Gap",
    "Item",
    "Splice",
    "StartMarker",
    "ThreadModel",
    "item_key",
    "item_sequence",
]
