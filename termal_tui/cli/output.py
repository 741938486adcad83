"""Writing what agents read: delivered means written."""

from __future__ import annotations

import sys


def print_flushed(text: str) -> None:
    """Write and flush stdout; a broken pipe raises, leaving the wakes recoverable."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError as error:
        raise OSError("standard output is closed") from error
