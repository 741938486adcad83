"""Session names: the key that makes names which read alike one name (UTS #39
confusables, case, width, invisible characters), in the rules and in the registry."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from termal_tui.agents.registry import Registry
from termal_tui.core.names import name_key, name_skeleton, same_name, validate_name
from termal_tui.core.sanitize import contains_terminal_escape
from termal_tui.store.errors import ConflictError, NotFoundError, ValidationError
from tests.helpers import ENGINES, sqlite_only

# Each pair reads alike: a mixed-script, whole-script, compatibility or case variant.
LOOK_ALIKES = [
    ("alice", "аlice"),  # Cyrillic а
    ("alice", "аlicе"),  # Cyrillic а and е
    ("bob", "bоb"),  # Cyrillic о
    ("bob", "bοb"),  # Greek ο
    ("bob", "bօb"),  # Armenian օ
    ("alice", "αlice"),  # Greek α
    ("coder", "соdеr"),  # Cyrillic с, о, е
    ("reviewer", "rеviеwеr"),
    ("paypal", "рaypal"),  # Cyrillic р
    ("scout", "ѕсоut"),  # Cyrillic ѕ, с, о
    ("joy", "јоy"),  # Cyrillic ј, о
    ("taxi", "tахі"),  # Cyrillic а, х, і
    ("alice", "ALICE"),
    ("alice", "Аlice"),  # Cyrillic capital А
    ("alice", "ＡＬＩＣＥ"),  # fullwidth
    ("alice", "ａｌｉｃｅ"),
    ("alice", "𝐚𝐥𝐢𝐜𝐞"),  # mathematical bold
    ("alice", "a\u200blice"),  # zero-width space (refused at registration; found on lookup)
    ("alice", "al\u00adice"),  # soft hyphen
    ("strasse", "Straße"),
    ("planner", "ｐｌａｎｎｅｒ"),
    ("deploy-bot", "deploy‐bot"),  # U+2010 HYPHEN
]

# Each pair reads alike only with case: the full skeleton, before folding, refuses them.
SKELETON_ONLY = [
    ("Ivan", "lvan"),  # capital I and small l
    ("agent1", "agentl"),  # digit one and small l
    ("bob0", "bobO"),  # zero and O
    ("tom", "torn"),  # m and rn
    ("ALICE", "ALlCE"),
]

# Each pair is two names: nothing above may merge them.
DISTINCT = [
    ("alice", "alicia"),
    ("bob", "rob"),
    ("coder", "codex"),
    ("café", "cafe"),  # an accent is visible
    ("naïve", "naive"),
    ("agent-1", "agent-2"),
    ("planner", "planer"),
    ("ваня", "ваня-2"),
    ("日本", "日本語"),
    ("alpha", "beta"),
    ("reviewer", "reviewers"),
    ("a_b", "a-b"),
    ("x.y", "x-y"),
]


@pytest.mark.parametrize(("plain", "variant"), LOOK_ALIKES)
def test_names_that_read_alike_share_one_key(plain: str, variant: str):
    assert plain != variant
    assert name_key(variant) == name_key(plain)
    assert same_name(plain, variant)


@pytest.mark.parametrize(("plain", "variant"), SKELETON_ONLY)
def test_ascii_look_alikes_share_a_skeleton_but_keep_their_keys(plain: str, variant: str):
    assert name_key(variant) != name_key(plain)  # an ASCII name's key is its lower case
    assert name_skeleton(variant) == name_skeleton(plain)
    assert same_name(plain, variant)


@pytest.mark.parametrize(("one", "other"), DISTINCT)
def test_names_that_read_differently_stay_two_names(one: str, other: str):
    assert name_key(one) != name_key(other)
    assert name_skeleton(one) != name_skeleton(other)
    assert not same_name(one, other)


@pytest.mark.parametrize(
    "name", ["planner", "Planner-2", "alice_bob", "x.y", "a b", "ab~!@$^&*()+=[]{};:',<>", "Z"]
)
def test_an_ascii_names_key_is_its_lower_case_as_before(name: str):
    assert name_key(name) == name.lower()


@pytest.mark.parametrize(
    "name",
    [p for pair in LOOK_ALIKES + SKELETON_ONLY + DISTINCT for p in pair]
    + ["Σίσυφος", "ǅemal", "ﬁle", "Ⅻ", "𝟘𝟙", "⑴", "㍱", "İstanbul", "ǈ", "ﬀ"],
)
def test_keys_and_skeletons_are_idempotent(name: str):
    assert name_key(name_key(name)) == name_key(name)
    assert name_skeleton(name_skeleton(name)) == name_skeleton(name)


def test_validate_name_still_refuses_what_it_refused():
    for bad in ["", "   ", "a/b", "a\\b", "a?b", "a#b", "a%b", "a\x01b", ".", "..", "session-1"]:
        with pytest.raises(ValidationError):
            validate_name(bad)
    for hidden in ["a\u200bb", "a\u202eb", "a\u2060b", "a\ufeffb"]:
        with pytest.raises(ValidationError, match="is not what it shows"):
            validate_name(hidden)
    with pytest.raises(ValidationError, match="at most 64"):
        validate_name("x" * 65)
    assert validate_name("  cafe\u0301 ") == "café"  # stored NFC, trimmed


def test_the_registry_module_re_exports_the_rules():
    import termal_tui.agents.registry as registry
    import termal_tui.core.names as names

    assert registry.name_key is names.name_key
    assert registry.validate_name is names.validate_name
    assert registry.name_skeleton is names.name_skeleton


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """The registry tests below run on both engines (a file, or PostgreSQL's tables)."""
    return str(request.param)


@pytest.fixture
def registry(db: Path | str) -> Registry:
    return Registry.beside(db)


@pytest.mark.parametrize(("plain", "variant"), LOOK_ALIKES)
def test_a_look_alike_of_a_live_name_is_refused_and_found_as_it(
    registry: Registry, plain: str, variant: str
):
    first = registry.add(plain)
    hidden = contains_terminal_escape(variant)  # refused before any look-alike test
    with pytest.raises(ValidationError if hidden else ConflictError):
        registry.add(variant)
    assert [s.id for s in registry.find_live_by_name(variant)] == [first.id]
    assert registry.resolve_own(variant).id == first.id
    assert registry.ensure(variant).id == first.id  # never a second session
    assert len(registry.sessions()) == 1


@pytest.mark.parametrize(("one", "other"), SKELETON_ONLY)
def test_an_ascii_look_alike_is_refused_at_registration(registry: Registry, one: str, other: str):
    registry.add(one)
    with pytest.raises(ConflictError):
        registry.add(other)
    assert [s.name for s in registry.sessions()] == [one]


def test_the_issues_names_are_refused_beside_alice_and_bob(registry: Registry):
    registry.add("alice")
    registry.add("bob")
    for spoof in ("аlice", "bоb"):  # Cyrillic а, о: `session add` accepted both before
        with pytest.raises(ConflictError):
            registry.add(spoof)
    assert sorted(s.name for s in registry.sessions()) == ["alice", "bob"]


@pytest.mark.parametrize(("one", "other"), DISTINCT)
def test_distinct_names_register_side_by_side(registry: Registry, one: str, other: str):
    a, b = registry.add(one), registry.add(other)
    assert a.id != b.id
    assert registry.resolve_own(one).id == a.id and registry.resolve_own(other).id == b.id


def test_a_removed_look_alike_frees_the_name(registry: Registry):
    registry.add("alice")
    registry.remove("аlice")  # found through the key
    assert registry.find_live_by_name("alice") == []
    again = registry.add("аlice")
    assert registry.resolve_own("alice").id == again.id
    with pytest.raises(NotFoundError):
        registry.resolve_own("alicia")


def test_the_hook_path_never_loads_the_confusables_table():
    code = (
        "import sys; from termal_tui.core.names import name_key, validate_name; "
        "name_key(validate_name('planner')); name_key('Planner-2'); "
        "print('termal_tui.core._confusables' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    code = code.replace("'Planner-2'", "'аlice'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_the_generated_table_keeps_ascii_out_of_the_key():
    from termal_tui.core import _confusables

    assert _confusables.__doc__ and "confusables.txt 17.0.0" in _confusables.__doc__
    assert all(code >= 0x80 for code in _confusables.KEY)  # an ASCII name's key: lower case
    assert _confusables.KEY[ord("а")] == "a" and _confusables.KEY[ord("ο")] == "o"
    for ascii_source, prototype in {"1": "l", "I": "l", "0": "O", "m": "rn", "|": "l"}.items():
        assert _confusables.SKELETON[ord(ascii_source)] == prototype


def test_ensure_says_why_a_look_alike_cannot_register(registry: Registry):
    registry.add("Ivan")
    with pytest.raises(ConflictError, match="names that read alike are one name"):
        registry.ensure("lvan")  # was an IndexError from the fallback lookup
    with pytest.raises(ConflictError, match="unique case-insensitively"):
        registry.add("IVAN")


@sqlite_only
def test_an_older_registry_gets_its_name_keys_recomputed(registry: Registry, db_path: Path):
    import sqlite3

    from termal_tui.store.registry.schema import REGISTRY_VERSION

    alice = registry.add("alice")
    cyr = registry.add("carol")
    path = registry.path
    # A version-5 file as the old rule left it: Cyrillic names kept their own keys, so
    # `аlice` could be registered beside `alice`.
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db, db:
        db.execute("UPDATE sessions SET name = 'аlice', name_key = 'аlice' WHERE id = ?", (cyr.id,))
        db.execute(
            "INSERT INTO sessions (id, name, name_key, created_at) "
            "VALUES ('session-000000000009', 'Ωmega', 'ωmega', '2026-01-01T00:00:00+00:00')"
        )
        db.execute("PRAGMA user_version = 5")
    reopened = Registry.beside(db_path)
    assert [s.id for s in reopened.find_live_by_name("alice")] == [alice.id]  # the older
    assert reopened.get(cyr.id) is not None  # the newer look-alike: still there by id
    assert [s.id for s in reopened.find_live_by_name("Ωmega")] == ["session-000000000009"]
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == REGISTRY_VERSION
        keys = dict(db.execute("SELECT id, name_key FROM sessions"))
    assert keys[alice.id] == "alice" and keys[cyr.id] == f"alice\x00{cyr.id}"
