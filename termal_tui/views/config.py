"""The viewer's config file, ``$XDG_CONFIG_HOME/termal-tui/config.toml`` (headless).

Read with ``tomllib`` and validated against a declared schema (:func:`_schema`: msgspec
types with their constraints, and the one sentence each key's problem reads as) into a
:class:`ViewerConfig`; every bad key or value is one sentence in ``problems`` and leaves
that setting at its default, so a broken file never stops the viewer from starting. Key
bindings are checked against the viewer's binding ids (:func:`checked_keymap`); the
theme chosen in the palette is remembered in a state file of its own
(:func:`remembered_theme`, :func:`remember_theme`).

The directories are platformdirs' XDG ones on every platform (``~/.config``,
``~/.local/state``, ``~/.local/share`` unless ``$XDG_*_HOME`` names an absolute path),
as they always were here. msgspec is imported only when there is a file to validate:
a viewer without a config file pays nothing for it.
"""

from __future__ import annotations

import functools
import os
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, get_args, get_origin

CONFIG_NAME: Final = "config.toml"
APP_DIR: Final = "termal-tui"
DEFAULT_ATTENTION_EVERY: Final = 60.0

# [health] key → Thresholds field (the CLI's --never-woken-after etc.).
HEALTH_KEYS: Final = {
    "never_woken_after": "never_woken",
    "unprocessed_after": "woken_unprocessed",
    "lagging_after": "lagging",
    "no_notifier_after": "no_notifier",
}
TOP_KEYS: Final = ("theme", "interval", "export_dir", "health", "keys", "attention")
ATTENTION_KEYS: Final = ("bell", "desktop", "watch", "every")


@functools.cache
def _dirs() -> Any:
    """platformdirs' XDG layout on every platform (macOS too: where the files always
    were). Imported on first use: the viewer has it loaded already (textual uses it);
    anything else that imports this module does not pay for it."""
    from platformdirs.unix import Unix

    return Unix(APP_DIR)


def config_path() -> Path:
    return Path(_dirs().user_config_dir) / CONFIG_NAME


def state_dir() -> Path:
    return Path(_dirs().user_state_dir)


def default_export_dir() -> Path:
    """``$XDG_DATA_HOME/termal-tui/exports`` (``~/.local/share/termal-tui/exports``)."""
    return Path(_dirs().user_data_dir) / "exports"


@dataclass
class Attention:
    """Opt-in signals while the viewer is not focused."""

    bell: bool = False
    desktop: bool = False  # OSC 9 and OSC 777 desktop notifications
    watch: tuple[str, ...] = ()  # mailbox ids; empty: every mailbox
    every: float = DEFAULT_ATTENTION_EVERY  # at most one signal per this many seconds

    @property
    def enabled(self) -> bool:
        return self.bell or self.desktop


@dataclass
class ViewerConfig:
    path: Path
    theme: str | None = None
    interval: float | None = None  # None: the CLI's default
    export_dir: Path | None = None  # None: default_export_dir()
    thresholds: dict[str, float] = field(default_factory=dict)  # Thresholds field → s
    keys: dict[str, str] = field(default_factory=dict)  # binding id → keys
    attention: Attention = field(default_factory=Attention)
    problems: list[str] = field(default_factory=list)


def _shown(path: Path) -> str:
    """``~/.config/termal-tui/config.toml``: short enough for a notification not to
    break it across lines."""
    home = Path.home()
    try:
        return "~/" + path.relative_to(home).as_posix() if path.is_relative_to(home) else str(path)
    except (ValueError, RuntimeError):
        return str(path)


def load_config(path: Path | None = None) -> ViewerConfig:
    """The config file's settings; a missing file is all defaults and no problem."""
    path = config_path() if path is None else path
    config = ViewerConfig(path=path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return config
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "it is not UTF-8 text"
        config.problems.append(f"{_shown(path)} could not be read ({reason}); using the defaults.")
        return config
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        config.problems.append(f"{_shown(path)} is not valid TOML ({error}); using the defaults.")
        return config
    _apply(config, data)
    return config


# ------------------------------------------------------------------ the declared schema


@functools.cache
def _schema() -> tuple[type[Any], dict[str, str]]:
    """The file's schema, declared: each key's type and constraint (msgspec), and the one
    sentence a bad value of it reads as (``{key}``: the key). Built on first use, so
    msgspec is imported only when a config file exists."""
    from typing import Annotated

    import msgspec
    from msgspec import Meta

    # 0 (off) or a positive, finite number of seconds; a boolean is not a number.
    seconds = Annotated[float, Meta(ge=0, le=sys.float_info.max)]
    # Text with something in it (the value is used stripped).
    text = Annotated[str, Meta(pattern=r"\S")]
    # Comma-separated key names, each without whitespace (spaces around commas are fine).
    key_names = Annotated[str, Meta(pattern=r"\A\s*[^\s,]+\s*(?:,\s*[^\s,]+\s*)*\Z")]

    # (Built with defstruct: this module's annotations are strings, unresolvable here.)
    health = msgspec.defstruct("Health", [(key, seconds | None, None) for key in HEALTH_KEYS])
    attention = msgspec.defstruct(
        "AttentionTable",
        [
            ("bell", bool, False),
            ("desktop", bool, False),
            ("watch", tuple[str, ...], ()),
            ("every", seconds, DEFAULT_ATTENTION_EVERY),
        ],
    )
    schema = msgspec.defstruct(
        "ConfigFile",
        [
            ("theme", text | None, None),
            ("interval", seconds | None, None),
            ("export_dir", text | None, None),
            ("health", health, msgspec.field(default_factory=health)),
            ("keys", dict[str, key_names], msgspec.field(default_factory=dict)),
            ("attention", attention, msgspec.field(default_factory=attention)),
        ],
    )
    problems = {
        "theme": 'theme must be a theme name such as "textual-dark"; ignored.',
        "interval": "interval must be 0 (off) or a positive number of seconds; ignored.",
        "export_dir": "export_dir must be a directory path; the default is used.",
        "health": "[health] must be a table of seconds; ignored.",
        "health.*": "health.{key} must be 0 or a positive number of seconds; ignored.",
        "keys": '[keys] must be a table of binding id = "key"; ignored.',
        "keys.*": 'keys.{key} must be key names such as "ctrl+f"; ignored.',
        "attention": "[attention] must be a table; ignored.",
        "attention.bell": "attention.bell must be true or false; ignored.",
        "attention.desktop": "attention.desktop must be true or false; ignored.",
        "attention.watch": "attention.watch must be a list of mailbox ids; ignored.",
        "attention.every": "attention.every must be a number of seconds; ignored.",
    }
    return schema, problems


def _validated(data: dict[str, Any], where: str) -> tuple[Any, list[str]]:
    """``data`` checked against the schema key by key: each unknown key and each bad
    value is one sentence, and only that key falls back to its default. Unknown top-level
    keys come first, then the settings in the schema's order (tables in the file's)."""
    import msgspec
    from msgspec import Struct

    schema, sentences = _schema()
    problems: list[str] = []

    def table(values: dict[str, Any], struct: type[Any], prefix: str) -> Any:
        fields = {f.name: f.type for f in msgspec.structs.fields(struct)}
        known = ", ".join(fields)
        if not prefix:  # the file's own keys: the unknown ones first
            unknown = [key for key in values if key not in fields]
            problems.extend(f"unknown key {key!r} ignored (known: {known})." for key in unknown)
            values = {key: values[key] for key in fields if key in values}
        accepted: dict[str, Any] = {}
        for key, value in values.items():
            if key not in fields:
                problems.append(f"unknown key {prefix}{key} ignored (known: {known}).")
                continue
            kind = fields[key]
            sentence = sentences.get(prefix + key) or sentences[prefix + "*"]
            if get_origin(kind) is dict or (isinstance(kind, type) and issubclass(kind, Struct)):
                if not isinstance(value, dict):  # a table that is not one
                    problems.append(sentence)
                elif get_origin(kind) is dict:  # binding id → keys: each entry on its own
                    accepted[key] = entries(value, get_args(kind)[1], sentences[f"{key}.*"])
                else:
                    accepted[key] = table(value, kind, f"{key}.")
                continue
            try:
                accepted[key] = msgspec.convert(value, kind)
            except msgspec.ValidationError:
                problems.append(sentence.format(key=key))
        return msgspec.convert(accepted, struct)

    def entries(values: dict[str, Any], kind: Any, sentence: str) -> dict[str, Any]:
        accepted = {}
        for key, value in values.items():
            try:
                accepted[key] = msgspec.convert(value, kind)
            except msgspec.ValidationError:
                problems.append(sentence.format(key=key))
        return accepted

    return table(data, schema, ""), [f"{where}: {problem}" for problem in problems]


def _apply(config: ViewerConfig, data: dict[str, Any]) -> None:
    settings, problems = _validated(data, config.path.name)
    config.problems.extend(problems)
    if settings.theme is not None:
        config.theme = settings.theme.strip()
    config.interval = settings.interval
    if settings.export_dir is not None:
        config.export_dir = Path(os.path.expanduser(settings.export_dir.strip()))
    for key, threshold in HEALTH_KEYS.items():
        seconds = getattr(settings.health, key)
        if seconds is not None:
            config.thresholds[threshold] = seconds
    for binding_id, value in settings.keys.items():
        config.keys[binding_id] = ",".join(part.strip() for part in value.split(","))
    table = settings.attention
    config.attention = Attention(table.bell, table.desktop, table.watch, table.every)


def normalize_key(key: str) -> str:
    """Textual's long key names for the few characters people type short."""
    return {"?": "question_mark", "/": "slash", "[": "left_square_bracket"}.get(key, key)


def checked_keymap(
    keys: Mapping[str, str], bindings: Mapping[str, tuple[str, str]]
) -> tuple[dict[str, str], list[str]]:
    """``keys`` (binding id → keys) checked against the viewer's ``bindings`` (binding id
    → (scope, default keys)): unknown ids and keys already taken in the same scope (or by
    an app-wide binding) are one sentence each, and those bindings keep their defaults."""
    problems: list[str] = []
    accepted: dict[str, str] = {}
    listed = False  # the known ids are listed once, with the first unknown one
    for binding_id, wanted in keys.items():
        if binding_id not in bindings:
            known = "" if listed else f" (known: {', '.join(sorted(bindings))})"
            listed = True
            problems.append(f"keys.{binding_id}: no binding has that id{known}; the defaults stay.")
            continue
        accepted[binding_id] = ",".join(normalize_key(k) for k in wanted.split(","))

    def keys_of(binding_id: str) -> set[str]:
        text = accepted.get(binding_id, bindings[binding_id][1])
        return {normalize_key(k.strip()) for k in text.split(",")}

    for binding_id in list(accepted):
        scope = bindings[binding_id][0]
        mine = keys_of(binding_id)
        for other, (other_scope, _default) in bindings.items():
            if other == binding_id or (scope != other_scope and "app" not in (scope, other_scope)):
                continue
            taken = mine & keys_of(other)
            if taken:
                problems.append(
                    f"keys.{binding_id}: {', '.join(sorted(taken))} is already {other}'s key;"
                    f" {binding_id} keeps its default."
                )
                del accepted[binding_id]
                break
    return accepted, problems


def remembered_theme(config_theme: str | None = None) -> str | None:
    """The theme last chosen in the palette, unless the config file's ``theme`` was
    changed since (then the file's new choice wins)."""
    try:
        text = (state_dir() / "theme").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    chosen, _, over = text.partition("\n")
    if over.strip() != (config_theme or ""):
        return None  # the config file names another theme now
    return chosen.strip() or None


def remember_theme(theme: str, config_theme: str | None = None) -> str | None:
    """Keep the palette's theme for the next start, with the config file's ``theme`` it
    was chosen over; a sentence if it could not be saved."""
    directory = state_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "theme").write_text(f"{theme}\n{config_theme or ''}\n", encoding="utf-8")
    except OSError as error:
        return f"The theme could not be remembered in {directory} ({error.strerror})."
    return None
