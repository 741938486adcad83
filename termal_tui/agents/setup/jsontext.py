"""A JSON document edited in place: members and items found by their byte spans, so
only what we add, replace or delete changes and every other byte stays."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from termal_tui.agents.setup.common import SetupError


class JsonText:
    """A JSON document whose members can be replaced or added by their byte spans."""

    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.path = path
        try:
            self.value = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as error:
            raise SetupError(
                f"{path} is not plain JSON ({error.msg} at line {error.lineno}); "
                "fix it or edit it by hand"
            ) from None
        if not isinstance(self.value, dict):
            raise SetupError(f"{path} is not a JSON object")
        self.unit = _indent_unit(text)

    def _skip(self, at: int) -> int:
        while at < len(self.text) and self.text[at] in " \t\r\n":
            at += 1
        return at

    def _object_at(self, start: int) -> tuple[dict[str, tuple[int, int]], int]:
        """Members of the object at ``start``: key -> value span; and its ``}``."""
        decoder = json.JSONDecoder()
        at = self._skip(start)
        assert self.text[at] == "{"
        at = self._skip(at + 1)
        members: dict[str, tuple[int, int]] = {}
        if self.text[at] == "}":
            return members, at
        while True:
            key, at = decoder.raw_decode(self.text, at)
            at = self._skip(self._skip(at) + 1)  # past the colon
            _value, end = decoder.raw_decode(self.text, at)
            members[key] = (at, end)
            at = self._skip(end)
            if self.text[at] == "}":
                return members, at
            at = self._skip(at + 1)  # past the comma

    def _array_end(self, start: int) -> tuple[int, bool]:
        """The ``]`` of the array at ``start`` and whether it is empty."""
        _value, end = json.JSONDecoder().raw_decode(self.text, start)
        inner = self.text[start + 1 : end - 1]
        return end - 1, not inner.strip()

    def _locate(self, keys: Sequence[str]) -> int:
        """Where the value at ``keys`` (every one present) starts."""
        at = self._skip(0)
        for key in keys:
            members, _close = self._object_at(at)
            at = members[key][0]
        return at

    def _line_indent(self, at: int) -> str:
        line_start = self.text.rfind("\n", 0, at) + 1
        line = self.text[line_start:at]
        return line[: len(line) - len(line.lstrip())]

    def _render(self, value: Any, indent: str) -> str:
        rendered = json.dumps(value, indent=self.unit, ensure_ascii=False)
        return rendered.replace("\n", "\n" + indent)

    def _splice(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]
        self.value = json.loads(self.text)

    def get(self, keys: Sequence[str]) -> Any:
        value: Any = self.value
        for key in keys:
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
        return value

    def set(self, keys: Sequence[str], value: Any) -> None:
        """Set ``keys`` to ``value``: the existing value's span replaced, or a member
        added at the end of the deepest object that exists (parents created)."""
        if not self.text.strip():
            nested: Any = value
            for key in reversed(keys):
                nested = {key: nested}
            self.text = json.dumps(nested, indent=self.unit, ensure_ascii=False) + "\n"
            self.value = json.loads(self.text)
            return
        present = 0
        node: Any = self.value
        for key in keys[:-1]:
            child = node.get(key) if isinstance(node, dict) else None
            if not isinstance(child, dict):
                break
            node, present = child, present + 1
        if not isinstance(node, dict):
            raise SetupError(f"{self.path}: {'.'.join(keys[:present])} is not an object")
        if present == len(keys) - 1 and keys[-1] in node:
            start = self._locate(keys)
            _v, end = json.JSONDecoder().raw_decode(self.text, start)
            self._splice(start, end, self._render(value, self._line_indent(start)))
            return
        if present < len(keys) - 1 and keys[present] in node:
            raise SetupError(f"{self.path}: {'.'.join(keys[: present + 1])} is not an object")
        nested = value
        for key in reversed(keys[present + 1 :]):
            nested = {key: nested}
        self._add_member(keys[:present], keys[present], nested)

    def _add_member(self, parent: Sequence[str], key: str, value: Any) -> None:
        start = self._locate(parent)
        members, close = self._object_at(start)
        outer = self._line_indent(close) if self._closes_own_line(close) else ""
        if members:
            last_end = max(end for _s, end in members.values())
            first_start = min(s for s, _e in members.values())
            key_at = self.text.rfind('"', 0, first_start)
            key_at = self.text.rfind('"', 0, key_at)  # the opening quote of the key
            inner = self._line_indent(key_at)
            separator = "\n" if "\n" in self.text[start:first_start] else " "
            member = f"{json.dumps(key, ensure_ascii=False)}: {self._render(value, inner)}"
            if separator == "\n":
                self._splice(last_end, last_end, f",\n{inner}{member}")
            else:
                self._splice(last_end, last_end, f", {member}")
            return
        inner = outer + " " * self.unit
        member = f"{json.dumps(key, ensure_ascii=False)}: {self._render(value, inner)}"
        self._splice(start + 1, close, f"\n{inner}{member}\n{outer}")

    def _closes_own_line(self, at: int) -> bool:
        line_start = self.text.rfind("\n", 0, at) + 1
        return not self.text[line_start:at].strip()

    def append(self, keys: Sequence[str], item: Any) -> None:
        """Append ``item`` to the array at ``keys`` (which exists)."""
        start = self._locate(keys)
        close, empty = self._array_end(start)
        if empty:
            indent = self._line_indent(start)
            inner = indent + " " * self.unit
            self._splice(start + 1, close, f"\n{inner}{self._render(item, inner)}\n{indent}")
            return
        value_end = close
        while self.text[value_end - 1] in " \t\r\n":
            value_end -= 1
        previous_start = self._last_item_start(start, value_end)
        if "\n" in self.text[start:previous_start]:
            inner = self._line_indent(previous_start)
            self._splice(value_end, value_end, f",\n{inner}{self._render(item, inner)}")
        else:
            rendered = json.dumps(item, ensure_ascii=False)
            self._splice(value_end, value_end, f", {rendered}")

    def _last_item_start(self, start: int, value_end: int) -> int:
        decoder = json.JSONDecoder()
        at = self._skip(start + 1)
        last = at
        while at < value_end:
            last = at
            _v, end = decoder.raw_decode(self.text, at)
            at = self._skip(end)
            if self.text[at] == ",":
                at = self._skip(at + 1)
        return last

    def replace_string(self, keys: Sequence[str | int], new: str) -> None:
        """Replace the string at ``keys`` (objects by key, arrays by index)."""
        at = self._path_start(keys)
        _v, end = json.JSONDecoder().raw_decode(self.text, at)
        self._splice(at, end, json.dumps(new, ensure_ascii=False))

    # ------------------------------------------------------------ deleting

    def _member_span(self, parent: Sequence[str | int], key: str) -> tuple[int, int]:
        """The span to cut to delete ``key`` from the object at ``parent``: the member
        with the separator on one side, so the rest keeps its layout."""
        start = self._path_start(parent)
        decoder = json.JSONDecoder()
        at = self._skip(self._skip(start) + 1)
        spans: list[tuple[str, int, int]] = []
        while self.text[at] != "}":
            name, after_key = decoder.raw_decode(self.text, at)
            value_at = self._skip(self._skip(after_key) + 1)
            _value, end = decoder.raw_decode(self.text, value_at)
            spans.append((name, at, end))
            at = self._skip(end)
            if self.text[at] == ",":
                at = self._skip(at + 1)
        return self._cut([(s, e) for _n, s, e in spans], [n for n, _s, _e in spans].index(key))

    def _item_span(self, parent: Sequence[str | int], index: int) -> tuple[int, int]:
        start = self._skip(self._path_start(parent))
        decoder = json.JSONDecoder()
        at = self._skip(start + 1)
        spans: list[tuple[int, int]] = []
        while self.text[at] != "]":
            _value, end = decoder.raw_decode(self.text, at)
            spans.append((at, end))
            at = self._skip(end)
            if self.text[at] == ",":
                at = self._skip(at + 1)
        return self._cut(spans, index)

    def _cut(self, spans: list[tuple[int, int]], index: int) -> tuple[int, int]:
        start, end = spans[index]
        if len(spans) == 1:  # the only one: the container becomes empty
            before = start
            while before > 0 and self.text[before - 1] in " \t\r\n":
                before -= 1
            after = end
            while after < len(self.text) and self.text[after] in " \t\r\n":
                after += 1
            return before, after
        if index > 0:  # from the end of the one before: its comma goes with us
            return spans[index - 1][1], end
        return start, spans[1][0]

    def _path_start(self, keys: Sequence[str | int]) -> int:
        at = self._skip(0)
        decoder = json.JSONDecoder()
        for key in keys:
            if isinstance(key, str):
                members, _c = self._object_at(at)
                at = members[key][0]
            else:
                at = self._skip(at + 1)
                for _ in range(key):
                    _v, end = decoder.raw_decode(self.text, at)
                    at = self._skip(self._skip(end) + 1)
        return self._skip(at)

    def delete_member(self, parent: Sequence[str | int], key: str) -> None:
        start, end = self._member_span(parent, key)
        self._splice(start, end, "")

    def delete_item(self, parent: Sequence[str | int], index: int) -> None:
        start, end = self._item_span(parent, index)
        self._splice(start, end, "")


def _indent_unit(text: str) -> int:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(line) > len(stripped):
            return len(line) - len(stripped)
    return 2
