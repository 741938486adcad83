"""The config file, the keymap check, attention bytes and the one vocabulary, headless
(no terminal): everything read from a temporary XDG directory."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from termal_tui.cli.viewer import configure, settings_from
from termal_tui.core.vocabulary import (
    FINDING_WORDS,
    absolute_time,
    age_words,
    outcome_words,
    relative_age,
    wake_words,
)
from termal_tui.views.attention import Watch, desktop_notification, signal_bytes, window_title
from termal_tui.views.config import (
    checked_keymap,
    config_path,
    default_export_dir,
    load_config,
    remember_theme,
    remembered_theme,
)

EVERY_KEY = """\
theme = "gruvbox"
interval = 3
export_dir = "~/exports"

[health]
never_woken_after = 60
unprocessed_after = 600
lagging_after = 1800
no_notifier_after = 90

[keys]
search = "ctrl+f"
help = "?"

[attention]
bell = true
desktop = true
watch = ["mailbox-1"]
every = 30
"""


@pytest.fixture
def xdg_home(tmp_path, monkeypatch) -> Path:
    """A home of its own, no XDG variables: the defaults under it."""
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def write_config(root: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "config"))
    monkeypatch.setenv("HOME", str(root / "home"))
    path = config_path()
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_config_file_reads_every_key(tmp_path, monkeypatch):
    write_config(tmp_path, EVERY_KEY, monkeypatch)
    config = load_config()
    assert config.path == tmp_path / "config" / "termal-tui" / "config.toml"
    assert config.problems == []
    assert config.theme == "gruvbox" and config.interval == 3.0
    assert config.export_dir == Path("~/exports").expanduser()
    assert config.thresholds == {
        "never_woken": 60.0,
        "woken_unprocessed": 600.0,
        "lagging": 1800.0,
        "no_notifier": 90.0,
    }
    assert config.keys == {"search": "ctrl+f", "help": "?"}
    attention = config.attention
    assert attention.bell and attention.desktop and attention.enabled
    assert attention.watch == ("mailbox-1",) and attention.every == 30.0


def test_no_config_file_is_all_defaults_and_no_problem(xdg_home):
    config = load_config()
    assert config.path == xdg_home / ".config" / "termal-tui" / "config.toml"
    assert config.problems == [] and config.theme is None and config.keys == {}
    assert not config.attention.enabled
    # Exports go to a data directory, never the working directory.
    assert default_export_dir() == xdg_home / ".local" / "share" / "termal-tui" / "exports"


def test_a_broken_config_file_is_one_sentence_and_the_defaults(tmp_path, monkeypatch):
    write_config(tmp_path, 'theme = "unterminated\ninterval = 3\n', monkeypatch)
    config = load_config()
    (problem,) = config.problems
    assert "is not valid TOML" in problem and problem.endswith("using the defaults.")
    assert "\n" not in problem and "Traceback" not in problem
    assert config.theme is None and config.interval is None


def test_each_bad_key_is_one_sentence_and_keeps_its_default(tmp_path, monkeypatch):
    write_config(
        tmp_path,
        'interval = -1\ncolour = "red"\n[health]\nlagging_after = "soon"\nnope = 1\n'
        "[keys]\nsearch = 3\n[attention]\nbell = 'yes'\n",
        monkeypatch,
    )
    config = load_config()
    assert len(config.problems) == 6, config.problems
    assert config.interval is None and config.thresholds == {} and config.keys == {}
    assert not config.attention.bell
    assert all(p.count(".") >= 1 and "\n" not in p for p in config.problems)


def test_a_number_too_big_for_a_float_is_a_sentence_not_a_traceback(tmp_path, monkeypatch):
    # tomllib reads any integer; float() of this one raised OverflowError out of the
    # hand-written check.
    write_config(tmp_path, f"interval = 1{'0' * 400}\n[health]\nlagging_after = nan\n", monkeypatch)
    config = load_config()
    assert config.problems == [
        "config.toml: interval must be 0 (off) or a positive number of seconds; ignored.",
        "config.toml: health.lagging_after must be 0 or a positive number of seconds; ignored.",
    ]
    assert config.interval is None and config.thresholds == {}


def test_problems_list_unknown_keys_first_then_the_settings_in_order(tmp_path, monkeypatch):
    write_config(
        tmp_path,
        'keys = 1\ninterval = "x"\nzeta = 1\n[attention]\nwatch = [1]\nloud = true\n',
        monkeypatch,
    )
    assert load_config().problems == [
        "config.toml: unknown key 'zeta' ignored "
        "(known: theme, interval, export_dir, health, keys, attention).",
        "config.toml: interval must be 0 (off) or a positive number of seconds; ignored.",
        'config.toml: [keys] must be a table of binding id = "key"; ignored.',
        "config.toml: attention.watch must be a list of mailbox ids; ignored.",
        "config.toml: unknown key attention.loud ignored (known: bell, desktop, watch, every).",
    ]


def test_xdg_variables_are_used_only_when_absolute(xdg_home, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/config")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert config_path() == xdg_home / ".config" / "termal-tui" / "config.toml"
    assert remember_theme("nord") is None
    assert (tmp_path / "state" / "termal-tui" / "theme").read_text() == "nord\n\n"


def test_without_a_config_file_the_schema_library_is_never_imported(tmp_path):
    code = (
        "import sys; from termal_tui.views.config import load_config; "
        "config = load_config(); print(config.problems, 'msgspec' in sys.modules)"
    )
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "none")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["[]", "False"], out.stderr


def test_the_keymap_refuses_unknown_ids_and_collisions_and_keeps_the_defaults():
    bindings = {
        "search": ("tab", "slash"),
        "refresh": ("tab", "r"),
        "help": ("app", "question_mark"),
        "filter": ("index", "slash"),
    }
    keymap, problems = checked_keymap(
        {"search": "ctrl+f", "refresh": "?", "nothing": "x", "filter": "f"}, bindings
    )
    assert keymap == {"search": "ctrl+f", "filter": "f"}
    assert len(problems) == 2
    unknown = next(p for p in problems if p.startswith("keys.nothing"))
    assert "no binding has that id" in unknown and "the defaults stay" in unknown
    taken = next(p for p in problems if p.startswith("keys.refresh"))
    assert "already help's key" in taken and "keeps its default" in taken


def test_a_swap_of_two_keys_is_no_collision():
    bindings = {"older": ("tab", "o"), "show-new": ("tab", "n")}
    keymap, problems = checked_keymap({"older": "n", "show-new": "o"}, bindings)
    assert problems == [] and keymap == {"older": "n", "show-new": "o"}


def test_the_command_line_overrides_the_config_file(tmp_path, monkeypatch):
    write_config(tmp_path, "interval = 3\n[health]\nlagging_after = 1800\n", monkeypatch)
    config = load_config()
    parser = argparse.ArgumentParser()
    configure(parser, "termal-tui")
    interval, thresholds = settings_from(parser.parse_args([]), config)
    assert interval == 3.0 and thresholds.lagging == 1800.0
    assert thresholds.never_woken == 120.0  # neither given: the default
    args = parser.parse_args(["--interval", "1", "--lagging-after", "60"])
    interval, thresholds = settings_from(args, config)
    assert interval == 1.0 and thresholds.lagging == 60.0
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    nothing = load_config()
    assert settings_from(parser.parse_args([]), nothing)[0] == 8.0


def test_the_theme_is_remembered_in_the_state_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert remembered_theme() is None
    assert remember_theme("nord") is None
    assert remembered_theme() == "nord"
    assert (tmp_path / "state" / "termal-tui" / "theme").read_text() == "nord\n\n"
    # Chosen over the config file's gruvbox: kept while the file still says gruvbox,
    # and the file wins once it names another theme.
    assert remember_theme("nord", "gruvbox") is None
    assert remembered_theme("gruvbox") == "nord"
    assert remembered_theme("dracula") is None
    # A file from before (one line, no config theme) still reads.
    (tmp_path / "state" / "termal-tui" / "theme").write_text("nord\n")
    assert remembered_theme() == "nord"


# ------------------------------------------------------------------ attention


def test_attention_reports_new_mail_and_new_stuck_hand_offs_once():
    clock = [0.0]
    watch = Watch(every=60, clock=lambda: clock[0])
    assert watch.changes({"m1": (5, "a ⇄ b")}) == []  # the first read only records
    assert watch.changes({"m1": (7, "a ⇄ b")}) == ["2 new messages in a ⇄ b"]
    assert watch.changes({"m1": (7, "a ⇄ b")}, [("m1", "never woken")]) == [
        "stuck hand-off in a ⇄ b: never woken"
    ]
    assert watch.changes({"m1": (7, "a ⇄ b")}, [("m1", "never woken")]) == []
    assert watch.due() and not watch.due()  # rate-limited
    clock[0] = 61
    assert watch.due()


def test_attention_watches_only_the_mailboxes_named():
    watch = Watch(mailboxes=("m2",))
    watch.changes({"m1": (1, "x"), "m2": (1, "y")})
    assert watch.changes({"m1": (9, "x"), "m2": (2, "y")}) == ["1 new message in y"]


def test_attention_bytes_are_sanitised():
    hostile = "evil\x1b]52;c;AAAA\x07 name; with\x9c"
    sent = desktop_notification("termal-tui", hostile)
    assert sent.startswith("\x1b]777;notify;termal-tui;") and "\x1b]9;termal-tui: " in sent
    # Exactly our own four escape/terminator bytes: none from the agent's text.
    assert sent.count("\x1b") == 2 and sent.count("\x07") == 2 and "\x9c" not in sent
    assert "␛" in sent and "name, with" in sent  # visible, and no extra OSC 777 field
    assert signal_bytes(["x"], bell=True, desktop=False) == "\a"
    assert signal_bytes([], bell=True, desktop=True) == ""
    assert window_title(1221, 2) == "\x1b]2;termal-tui · 1,221 unread · 2 mailboxes stuck\x07"
    assert window_title(3, 1) == "\x1b]2;termal-tui · 3 unread · 1 mailbox stuck\x07"
    assert window_title(9, 100, more=True).endswith("· 100+ mailboxes stuck\x07")


# ----------------------------------------------------------------- vocabulary


def test_wake_states_read_as_plain_words_with_termal_s_value_beside_them():
    assert wake_words("durableButNotWoken") == "never woken (durableButNotWoken)"
    assert wake_words("deliveredToIdleSession") == "woken (deliveredToIdleSession)"
    assert wake_words("madeUp\x1b") == "madeUp␛"
    assert outcome_words(None).startswith("not decided yet (NULL")
    assert set(FINDING_WORDS) == {
        "receiver-gone",
        "no-notifier",
        "never-woken",
        "woken-unprocessed",
        "lagging",
    }
    assert FINDING_WORDS["no-notifier"] == "nobody listening"


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (2, "just now"),
        (45, "45 s ago"),
        (180, "3 min ago"),
        (5 * 3600, "5 h ago"),
        (3 * 86400, "3 d ago"),
    ],
)
def test_ages_are_relative(seconds, words):
    assert age_words(seconds) == words
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    stamp = (now - timedelta(seconds=seconds)).isoformat()
    assert relative_age(stamp, now) == words


def test_the_absolute_time_carries_its_zone(monkeypatch):
    import time

    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        assert absolute_time("2026-11-30T12:00:00+00:00") == "2026-11-30 13:00:00 CET (UTC+01:00)"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
