"""What the viewer's board view shows, without textual: pretty, sanitised JSON values,
one-line key summaries and ages, and the names of the projects that scope the board.

Project names are read read-only from TermAl's ``termal.sqlite`` (its projects) and
termal-tui's session registry (projects minted for sessions outside TermAl's), both
beside the coordination database (by the store: ``store.board.reader.project_names``);
a scope with no known name shows its id. Nothing here reads SQL or writes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, NamedTuple

from termal_tui.core.sanitize import cap, visible, visible_line
from termal_tui.core.vocabulary import age_words
from termal_tui.store.board.formats import dumps
from termal_tui.store.board.reader import project_names as read_project_names
from termal_tui.store.board.records import BoardHead, BoardScope
from termal_tui.views.notifiers import registry_path_for

INDENT: Final = "  "
PREVIEW_LINES: Final = 4  # a key's value in the list; the whole value on enter
ENTRY_LINES: Final = 2_000  # the whole-value pane: past this, a note says how many more


# ----------------------------------------------------------------------- values


def json_string(text: str) -> str:
    """A JSON string for a person: quotes, backslashes, newlines and tabs escaped as JSON
    does; every other control or invisible character as its visible stand-in (``␛``,
    ``⟨RLO⟩``), never a raw byte and never a silent ``\\u001b``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\n", "\\n").replace("\t", "\\t")
    return '"' + visible(escaped) + '"'


def pretty_json(value: Any, indent: str = "") -> str:
    """``value`` as indented JSON, strings through :func:`json_string`, numbers as
    serde_json writes them (as TermAl stores them); objects keep the stored order."""
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, dict) and value:
        inner = indent + INDENT
        items = [f"{inner}{json_string(str(k))}: {pretty_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and value:
        inner = indent + INDENT
        items = [f"{inner}{pretty_json(v, inner)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{indent}]"
    return dumps(value)


def value_text(head: BoardHead) -> str:
    """A head's value for display, every character visible: pretty JSON; a tombstone
    says so; a stored value that is not JSON is shown as its raw text, flagged."""
    if head.deleted:
        return "(deleted: tombstone at this revision)"
    if head.invalid:
        return "(stored value is not JSON) " + visible(head.value_json or "")
    return pretty_json(head.value)


class Cut(NamedTuple):
    text: str
    hidden_lines: int
    hidden_chars: int


def cut_value(text: str, max_lines: int, width: int, cut: Callable[[str, int], str] = cap) -> Cut:
    """The first ``max_lines`` lines of ``text``, each cut to ``width`` by ``cut`` (the
    viewer cuts to terminal cells; by default characters), and how much was left out
    (the whole value is one key press away)."""
    lines = text.split("\n")
    if len(lines) == max_lines + 1:
        max_lines += 1  # a note that one line is left out would take that line's place
    kept = lines[:max_lines]
    shown = [cut(line, width) for line in kept]
    hidden_chars = sum(
        len(a) - len(b) + (1 if b.endswith("…") else 0) for a, b in zip(kept, shown, strict=True)
    )
    return Cut("\n".join(shown), max(0, len(lines) - max_lines), hidden_chars)


# ------------------------------------------------------------------------ heads


def parse_board_time(text: str) -> datetime | None:
    """A board timestamp (``2026-07-30T12:34:56.123Z``) as an aware datetime."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def age_text(updated_at: str, now: datetime) -> str:
    moment = parse_board_time(updated_at)
    if moment is None:
        return visible_line(updated_at, 30)
    return age_words((now - moment).total_seconds())  # as rows and cards say it


def author_text(head: BoardHead, max_chars: int = 40) -> str:
    name = visible_line(head.author_name, max_chars)
    return name or visible_line(head.author_session_id, max_chars)


def head_line(
    head: BoardHead, now: datetime, room: int | None = None, measure: Callable[[str], int] = len
) -> str:
    """``rev 3 · gen 17 · planner · stamp abc · 5 min``: one key's facts after its name.
    With ``room`` (in what ``measure`` counts: the viewer passes terminal cells), the
    facts that do not fit give way (the generation, then the stamp, then the revision);
    who wrote it and how long ago stay."""
    rev = f"rev {head.revision:,}"
    gen = f"gen {head.updated_at_generation:,}"
    stamp = f"stamp {visible_line(head.state_stamp, 32)}" if head.state_stamp is not None else ""
    who, age = author_text(head), age_text(head.updated_at, now)
    for parts in ((rev, gen, who, stamp, age), (rev, who, stamp, age), (rev, who, age), (who, age)):
        line = " · ".join(part for part in parts if part)
        if room is None or measure(line) <= room:
            return line
    return line


def scope_title(scope: BoardScope, names: dict[str, str]) -> str:
    """The project's name (sanitised), or its scope id when no name is known."""
    name = names.get(scope.scope_id)
    return visible_line(name, 60) if name else visible_line(scope.scope_id, 60)


def scope_counts(scope: BoardScope) -> str:
    tombstones = f" · {scope.tombstone_count:,} tombstoned" if scope.tombstone_count else ""
    return f"gen {scope.generation:,} · {scope.live_count:,} live{tombstones}"


# --------------------------------------------------------------------- projects


def project_names(db_path: Path | str) -> dict[str, str]:
    """Scope id → project name: TermAl's projects win over termal-tui's minted ones
    (read by the store, read-only, from the files beside ``db_path``; for a
    ``postgresql://`` URL, from its registry and TermAl's state folder here)."""
    from termal_tui.store.urls import is_postgres_url

    if isinstance(db_path, str) and is_postgres_url(db_path):
        from termal_tui.store.board.reader import url_project_names

        return url_project_names(db_path)
    db_path = Path(db_path).expanduser()
    return read_project_names(db_path, registry_path_for(db_path))
