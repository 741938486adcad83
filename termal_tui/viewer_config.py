"""The viewer's config file, ``$XDG_CONFIG_HOME/termal-tui/config.toml`` (headless).

Read with ``tomllib`` into a :class:`ViewerConfig`; every bad key or value is one
sentence in ``problems`` and leaves that setting at its default, so a broken file never
stops the viewer from starting. Key bindings are checked against the viewer's binding
ids (:func:`checked_keymap`); the theme chosen in the palette is remembered in a state
file of its own (:func:`remembered_theme`, :func:`remember_theme`).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

CONFIG_NAME: Final = "config.toml"
APP_DIR: Final = "termal-tui"
DEFAULT_INTERVAL: Final = 8.0
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
_KEY_NAME: Final = re.compile(r"^[^\s,]+$")


def _home_dir(variable: str, fallback: str, env: Mapping[str, str]) -> Path:
    value = env.get(variable, "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path(env.get("HOME") or Path.home()) / fallback


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return _home_dir("XDG_CONFIG_HOME", ".config", env) / APP_DIR / CONFIG_NAME


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return _home_dir("XDG_STATE_HOME", ".local/state", env) / APP_DIR


def default_export_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/termal-tui/exports`` (``~/.local/share/termal-tui/exports``)."""
    env = os.environ if env is None else env
    return _home_dir("XDG_DATA_HOME", ".local/share", env) / APP_DIR / "exports"


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


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number >= 0 and number == number and number != float("inf") else None


def _shown(path: Path) -> str:
    """``~/.config/termal-tui/config.toml``: short enough for a notification not to
    break it across lines."""
    home = Path.home()
    try:
        return "~/" + path.relative_to(home).as_posix() if path.is_relative_to(home) else str(path)
    except (ValueError, RuntimeError):
        return str(path)


def load_config(env: Mapping[str, str] | None = None, path: Path | None = None) -> ViewerConfig:
    """The config file's settings; a missing file is all defaults and no problem."""
    path = config_path(env) if path is None else path
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


def _apply(config: ViewerConfig, data: dict[str, Any]) -> None:
    bad = config.problems.append
    where = config.path.name
    for key in data:
        if key not in TOP_KEYS:
            bad(f"{where}: unknown key {key!r} ignored (known: {', '.join(TOP_KEYS)}).")
    if "theme" in data:
        if isinstance(data["theme"], str) and data["theme"].strip():
            config.theme = data["theme"].strip()
        else:
            bad(f'{where}: theme must be a theme name such as "textual-dark"; ignored.')
    if "interval" in data:
        seconds = _seconds(data["interval"])
        if seconds is None:
            bad(f"{where}: interval must be 0 (off) or a positive number of seconds; ignored.")
        else:
            config.interval = seconds
    if "export_dir" in data:
        value = data["export_dir"]
        if isinstance(value, str) and value.strip():
            config.export_dir = Path(os.path.expanduser(value.strip()))
        else:
            bad(f"{where}: export_dir must be a directory path; the default is used.")
    health = data.get("health", {})
    if not isinstance(health, dict):
        bad(f"{where}: [health] must be a table of seconds; ignored.")
        health = {}
    for key, value in health.items():
        if key not in HEALTH_KEYS:
            bad(f"{where}: unknown key health.{key} ignored (known: {', '.join(HEALTH_KEYS)}).")
            continue
        seconds = _seconds(value)
        if seconds is None:
            bad(f"{where}: health.{key} must be 0 or a positive number of seconds; ignored.")
        else:
            config.thresholds[HEALTH_KEYS[key]] = seconds
    keys = data.get("keys", {})
    if not isinstance(keys, dict):
        bad(f'{where}: [keys] must be a table of binding id = "key"; ignored.')
        keys = {}
    for binding_id, value in keys.items():
        names = [part.strip() for part in value.split(",")] if isinstance(value, str) else []
        if not names or not all(_KEY_NAME.match(name) for name in names):
            bad(f'{where}: keys.{binding_id} must be key names such as "ctrl+f"; ignored.')
        else:
            config.keys[binding_id] = ",".join(names)
    _apply_attention(config, data.get("attention", {}))


def _apply_attention(config: ViewerConfig, table: object) -> None:
    bad = config.problems.append
    where = config.path.name
    if not isinstance(table, dict):
        bad(f"{where}: [attention] must be a table; ignored.")
        return
    attention = config.attention
    for key, value in table.items():
        if key not in ATTENTION_KEYS:
            bad(
                f"{where}: unknown key attention.{key} ignored "
                f"(known: {', '.join(ATTENTION_KEYS)})."
            )
        elif key in ("bell", "desktop"):
            if isinstance(value, bool):
                setattr(attention, key, value)
            else:
                bad(f"{where}: attention.{key} must be true or false; ignored.")
        elif key == "watch":
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                attention.watch = tuple(value)
            else:
                bad(f"{where}: attention.watch must be a list of mailbox ids; ignored.")
        else:
            seconds = _seconds(value)
            if seconds is None:
                bad(f"{where}: attention.every must be a number of seconds; ignored.")
            else:
                attention.every = seconds


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


def remembered_theme(
    config_theme: str | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """The theme last chosen in the palette, unless the config file's ``theme`` was
    changed since (then the file's new choice wins)."""
    try:
        text = (state_dir(env) / "theme").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    chosen, _, over = text.partition("\n")
    if over.strip() != (config_theme or ""):
        return None  # the config file names another theme now
    return chosen.strip() or None


def remember_theme(
    theme: str, config_theme: str | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """Keep the palette's theme for the next start, with the config file's ``theme`` it
    was chosen over; a sentence if it could not be saved."""
    directory = state_dir(env)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "theme").write_text(f"{theme}\n{config_theme or ''}\n", encoding="utf-8")
    except OSError as error:
        return f"The theme could not be remembered in {directory} ({error.strerror})."
    return None
