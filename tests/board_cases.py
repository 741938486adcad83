"""The coordination-board cases asked of TermAl (through termal-oracle) and of us.

Each op is a termal-oracle board op plus a ``case`` label (removed before the oracle
sees it). ``{"op": "sql", ...}`` steps change the file directly between ops, as
TermAl's own board tests seed their limit fixtures. The answers TermAl gave are
recorded by tests/fixtures/make_board_fixtures.py; the tests replay every case here.
"""

from __future__ import annotations

from typing import Any

MAIN = "project-main"
OTHER = "project-other"
ALICE = ("session-alice", "Alice")
BOB = ("session-bob", "Bob")

_MISSING: Any = object()


def board_set(
    case: str,
    key: str,
    expected: int,
    value: Any = _MISSING,
    *,
    idem: str,
    scope: str = MAIN,
    author: tuple[str, str] = ALICE,
    **extra: Any,
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "case": case,
        "op": "boardSet",
        "scope": scope,
        "authorSessionId": author[0],
        "authorName": author[1],
        "key": key,
        "expectedRevision": expected,
        "idempotencyKey": idem,
    }
    if value is not _MISSING:
        op["value"] = value
    op.update(extra)
    return op


def board_get(case: str, key: str, scope: str = MAIN) -> dict[str, Any]:
    return {"case": case, "op": "boardGet", "scope": scope, "key": key}


def board_list(case: str, scope: str = MAIN, **query: Any) -> dict[str, Any]:
    return {"case": case, "op": "boardList", "scope": scope, **query}


def delete_scope(case: str, scope: str) -> dict[str, Any]:
    return {"case": case, "op": "boardDeleteScope", "scope": scope}


def sql(case: str, statement: str, params: list[Any] | None = None) -> dict[str, Any]:
    return {"case": case, "op": "sql", "sql": statement, "params": params or []}


GATE = {"state": "open", "owner": {"z": 1, "a": [True, None]}}
TRICKY_VALUE = {
    "numbers": [0, -1, 0.1, 1.0, 100.0, 1e15, 1e16, 1e21, 1e-5, 1e-7, 2.5e-300, 1.5e300],
    "integers": [18446744073709551615, -9223372036854775808, 18446744073709551616],
    "text": 'é ü 中 😀 \u0000\u001f\u007f\u2028 "quoted" \\ / \b\f\n\r\t',
    "Zebra": {"é": 1, "e": 2, "Z": 3, "ä": 4, "": 5},
    "empty": [[], {}],
}
DRIFT = [
    2.314798511616978e295,
    6.200559677426849e226,
    4.685030186991029e-108,
    -2.8365364845507917e-28,
]
KEY_GRAMMAR_CASES = [
    "",
    ".leading",
    "trailing.",
    "two..dots",
    "Upper.case",
    "_leading",
    "-leading",
    "a.-b",
    "a b",
    "a/b",
    "ключ",
    "one.two.three.four.five.six.seven.eight.nine",
    "k" * 129,
]


def _main_ops() -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = [
        # --- create, replay, idempotency before CAS
        board_set("create", "status.gate", 0, GATE, idem="gate-1", stateStamp="tree-1"),
        board_set("exact replay", "status.gate", 0, GATE, idem="gate-1", stateStamp="tree-1"),
        board_set(
            "replay with object keys in another order",
            "status.gate",
            0,
            {"owner": {"a": [True, None], "z": 1}, "state": "open"},
            idem="gate-1",
            stateStamp="tree-1",
        ),
        board_set("same key, other value", "status.gate", 0, {"x": 1}, idem="gate-1"),
        board_set("same key, other board key", "status.other", 0, GATE, idem="gate-1"),
        board_set("same key, no state stamp", "status.gate", 0, GATE, idem="gate-1"),
        board_set("same key, other stamp", "status.gate", 0, GATE, idem="gate-1", stateStamp="t2"),
        board_set("same key, other revision", "status.gate", 1, GATE, idem="gate-1"),
        board_set(
            "same key, as a delete", "status.gate", 0, idem="gate-1", delete=True, stateStamp="x"
        ),
        board_set(
            "another author's same key is its own namespace",
            "status.gate",
            0,
            GATE,
            idem="gate-1",
            author=BOB,
            stateStamp="tree-1",
        ),
        board_set("padded key is another key", "status.gate", 0, GATE, idem=" gate-1 "),
        # --- updates and CAS
        board_set("update at the exact revision", "status.gate", 1, "closed", idem="gate-2"),
        board_set("stale update", "status.gate", 1, "stale", idem="gate-3"),
        board_set("update ahead of the head", "status.gate", 9, "ahead", idem="gate-4"),
        board_set("update a never-created key", "never.created", 3, 1, idem="never-1"),
        board_set(
            "u64 max on a never-created key", "never.created", 18446744073709551615, 1, idem="n2"
        ),
        board_set("u64 max on a live key", "status.gate", 18446744073709551615, 1, idem="n3"),
        board_set("null is a value", "rulings.active", 0, None, idem="rulings-1"),
        board_set("null replay", "rulings.active", 0, None, idem="rulings-1"),
        board_get("get a null value", "rulings.active"),
        board_set("tricky JSON", "json.tricky", 0, TRICKY_VALUE, idem="tricky-1", stateStamp="é"),
        board_set("tricky replay", "json.tricky", 0, TRICKY_VALUE, idem="tricky-1", stateStamp="é"),
        board_get("tricky read back", "json.tricky"),
        board_set("4096-byte value", "size.max", 0, "x" * 4094, idem="size-1"),
        board_set("4097-byte value", "size.over", 0, "x" * 4095, idem="size-2"),
        board_set("multi-byte over the limit", "size.over", 0, "é" * 2047, idem="size-3"),
        board_set("depth 32", "depth.max", 0, _nested(32), idem="depth-1"),
        board_set("depth 33", "depth.over", 0, _nested(33), idem="depth-2"),
        board_set("depth 33 of objects", "depth.over", 0, _nested_objects(33), idem="depth-3"),
        # --- delete, tombstones, restore
        board_set("delete at the live revision", "status.gate", 2, idem="gate-del", delete=True),
        board_get("get a tombstone", "status.gate"),
        board_set("create over a tombstone (ABA)", "status.gate", 0, "again", idem="gate-aba"),
        board_set("delete at the tombstone revision", "status.gate", 3, idem="gd2", delete=True),
        board_set(
            "delete a tombstone at another revision", "status.gate", 1, idem="gd3", delete=True
        ),
        board_set("delete a never-created key", "never.created", 0, idem="gd4", delete=True),
        board_set("delete a never-created key at 2", "never.created", 2, idem="gd5", delete=True),
        board_set("restore at the tombstone revision", "status.gate", 3, {"r": 1}, idem="gate-r"),
        board_set("replay the delete", "status.gate", 2, idem="gate-del", delete=True),
        board_set(
            "replay the first create", "status.gate", 0, GATE, idem="gate-1", stateStamp="tree-1"
        ),
        board_set(
            "delete with a stamp", "rulings.active", 1, idem="rd", delete=True, stateStamp="why"
        ),
        board_set("restore with null", "rulings.active", 2, None, idem="rr"),
        # --- route checks and validation
        board_set("value and delete", "status.gate", 4, 1, idem="v1", delete=True),
        board_set("neither value nor delete", "status.gate", 4, idem="v2"),
        board_set("value and delete false", "status.gate", 4, 5, idem="v3", delete=False),
        board_set("empty idempotency key", "ok.key", 0, 1, idem=""),
        board_set("blank idempotency key", "ok.key", 0, 1, idem=" \u3000 "),
        board_set("256-byte idempotency key", "ok.key", 0, 1, idem="k" * 256),
        board_set("257-byte idempotency key", "ok.key", 0, 1, idem="k" * 257),
        board_set("control in idempotency key", "ok.key", 0, 1, idem="a\u0085b"),
        board_set("empty state stamp", "ok.key", 0, 1, idem="s1", stateStamp=""),
        board_set("256-byte state stamp", "ok.stamp", 0, 1, idem="s2", stateStamp="s" * 256),
        board_set("257-byte state stamp", "ok.key", 0, 1, idem="s3", stateStamp="s" * 257),
        board_set("control in state stamp", "ok.key", 0, 1, idem="s4", stateStamp="a\tb"),
        board_set("blank author id", "ok.key", 0, 1, idem="a1", authorSessionId="  "),
        board_set("control in author id", "ok.key", 0, 1, idem="a2", authorSessionId="s\u0000"),
        board_set("257-byte author id", "ok.key", 0, 1, idem="a3", authorSessionId="s" * 257),
        board_set(
            "raw blank author name", "ok.key", 0, 1, idem="a4", rawAuthorName=True, authorName=" "
        ),
        board_set(
            "raw control author name",
            "ok.key",
            0,
            1,
            idem="a5",
            rawAuthorName=True,
            authorName="a\nb",
        ),
        board_set("blank scope", "ok.key", 0, 1, idem="c1", scope="\u2003"),
        board_set("control in scope", "ok.key", 0, 1, idem="c2", scope="p\u009f"),
        board_set("257-byte scope", "ok.key", 0, 1, idem="c3", scope="p" * 257),
        board_set("scope checked before key", "Bad", 0, 1, idem="", scope=" "),
        board_set("key checked before author", "Bad", 0, 1, idem="", authorSessionId=" "),
        board_set("text checked before value", "ok.key", 0, "x" * 5000, idem=""),
        # --- the route's author-name snapshot
        board_set("author name trimmed", "author.a", 0, 1, idem="n1", authorName="  Alice \n"),
        board_set("author controls", "author.b", 0, 1, idem="n2", authorName="\u0007 bob\u0001x "),
        board_set("author blank", "author.c", 0, 1, idem="n3", authorName=" \t\u0001 "),
        board_set("author 256 bytes", "author.d", 0, 1, idem="n4", authorName="é" * 200),
        board_set("author 256 bytes ascii", "author.e", 0, 1, idem="n5", authorName="x" * 300),
        board_set("author name not hashed", "author.e", 0, 1, idem="n5", authorName="Other"),
        # --- listing
        board_list("list everything"),
        board_list("list one", limit=1),
        board_list("continue", afterKey="author.a", limit=2, snapshotGeneration=_GEN),
        board_list(
            "continue to the end", afterKey="rulings.active", limit=200, snapshotGeneration=_GEN
        ),
        board_list("known generation", knownGeneration=_GEN),
        board_list("known and snapshot", knownGeneration=_GEN, snapshotGeneration=_GEN),
        board_list("stale known generation", knownGeneration=1, limit=2),
        board_list("stale snapshot on a first page", snapshotGeneration=1),
        board_list("after key without snapshot", afterKey="a"),
        board_list(
            "after key with known", afterKey="a", snapshotGeneration=_GEN, knownGeneration=1
        ),
        board_list("after key and known, no snapshot", afterKey="a", knownGeneration=1),
        board_list("bad after key", afterKey="A", snapshotGeneration=_GEN),
        board_list("limit 0", limit=0),
        board_list("limit 201", limit=201),
        board_list("limit 200", limit=200),
        board_list("blank scope", scope=" "),
        board_list("never-written scope", scope="project-none"),
        board_list("never-written scope, known 0", scope="project-none", knownGeneration=0),
        board_list("never-written scope, snapshot 1", scope="project-none", snapshotGeneration=1),
        board_get("never-written scope", "a", scope="project-none"),
        board_get("bad key", "Bad"),
        board_get("blank scope", "a", scope=""),
        board_set("write between pages", "status.gate", 4, {"r": 2}, idem="gate-r2"),
        board_list("continuation after a write", afterKey="author.a", snapshotGeneration=_GEN),
        board_get("get shows both generations", "author.a"),
        # --- key order is byte order
        board_set("key a-b", "a-b", 0, 1, idem="o1"),
        board_set("key a.b", "a.b", 0, 1, idem="o2"),
        board_set("key a_b", "a_b", 0, 1, idem="o3"),
        board_set("key a0", "a0", 0, 1, idem="o4"),
        board_set("key a", "a", 0, 1, idem="o5"),
        board_set("eight segments", "a.b.c.d.e.f.g.h", 0, 1, idem="o6"),
        board_set("128-byte key", "k" * 128, 0, 1, idem="o7"),
        board_list("byte order", limit=7),
    ]
    ops += [
        board_set(f"invalid key {key!r}", key, 0, True, idem=f"bad-key-{n}")
        for n, key in enumerate(KEY_GRAMMAR_CASES)
    ]
    # --- history: 103 updates keep the last 100 revisions; a delete purges them.
    ops.append(board_set("history seed", "gate.round", 0, 0, idem="round-0"))
    ops += [
        board_set(f"history update {n}", "gate.round", n, n, idem=f"round-{n}")
        for n in range(1, 104)
    ]
    ops += [
        board_set("history key delete", "hist.key", 0, "a", idem="h1"),
        board_set("history key 2", "hist.key", 1, "b", idem="h2"),
        board_set("history key delete", "hist.key", 2, idem="h3", delete=True),
        board_set("history key restore", "hist.key", 3, "c", idem="h4"),
        board_set("history key 5", "hist.key", 4, "d", idem="h5", stateStamp="s5"),
    ]
    # --- TermAl re-parses what it stored (serde_json's fast float parser) for the receipt
    # and again for history, so some floats move a unit in the last place each time.
    ops += [
        board_set("floats drift through the parser", "float.drift", 0, DRIFT, idem="drift-1"),
        board_set("drifted floats into history", "float.drift", 1, "next", idem="drift-2"),
        board_set("drift replay", "float.drift", 0, DRIFT, idem="drift-1"),
    ]
    # --- scopes are isolated; project deletion fences a scope for good
    ops += [
        board_set("other scope, same key", "status.gate", 0, "other", idem="gate-1", scope=OTHER),
        board_get("other scope reads its own", "status.gate", scope=OTHER),
        board_list("other scope lists its own", scope=OTHER),
        delete_scope("delete a scope", OTHER),
        delete_scope("delete it again", OTHER),
        board_get("get in a deleted scope", "status.gate", scope=OTHER),
        board_list("list a deleted scope", scope=OTHER),
        board_list("list a deleted scope, known 0", scope=OTHER, knownGeneration=0),
        board_set("stale writer after deletion", "status.gate", 1, "x", idem="late", scope=OTHER),
        board_set("replay after deletion", "status.gate", 0, "other", idem="gate-1", scope=OTHER),
        delete_scope("delete a never-used scope", "project-never"),
        board_set("write to a fenced never-used scope", "a", 0, 1, idem="f", scope="project-never"),
        board_get("main scope survives", "status.gate"),
    ]
    # --- read back everything (also read through our reader on TermAl's file)
    ops += read_back_ops()
    return ops


_GEN = "$generation"
"""Stands for the main scope's generation at that point (resolved while running)."""


def read_back_ops() -> list[dict[str, Any]]:
    keys = [
        "a",
        "a-b",
        "a.b",
        "a.b.c.d.e.f.g.h",
        "a0",
        "a_b",
        "author.a",
        "author.b",
        "author.c",
        "author.d",
        "author.e",
        "depth.max",
        "float.drift",
        "gate.round",
        "hist.key",
        "json.tricky",
        "k" * 128,
        "ok.key",
        "ok.stamp",
        "rulings.active",
        "size.max",
        "status.gate",
        "never.created",
    ]
    ops = [board_get(f"read back {key[:20]}", key) for key in keys]
    ops += [
        board_list("read back page 1", limit=8),
        board_list("read back page 2", limit=8, afterKey="author.b", snapshotGeneration=_GEN),
        board_list("read back page 3", limit=8, afterKey="json.tricky", snapshotGeneration=_GEN),
        board_list("read back all"),
    ]
    return ops


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _nested_objects(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = {f"k{level}": value}
    return value


MAIN_OPS = _main_ops()

SEED_TIME = "2026-07-26T00:00:00Z"


def _seed_heads(scope: str, prefix: str, count: int, value_sql: str, start: int = 0) -> str:
    return (
        "WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?) "
        "INSERT INTO coordination_board_entries(scope_id, key, revision, generation, value_json, "
        "author_session_id, author_name, updated_at, state_stamp) "
        f"SELECT '{scope}', printf('{prefix}.%d', i), 1, i + 1, {value_sql}, 'session-seed', "
        f"'Seed', '{SEED_TIME}', NULL FROM n"
    )


def _scope_row(scope: str, generation: int) -> dict[str, Any]:
    return sql(
        f"seed scope {scope}",
        "INSERT INTO coordination_board_scopes(scope_id, generation) VALUES(?, ?)",
        [scope, generation],
    )


LIMIT_OPS: list[dict[str, Any]] = [
    # 512 live keys: a 513th is refused; a delete frees a slot.
    _scope_row("project-live", 512),
    sql("seed 512 live keys", _seed_heads("project-live", "live", 512, "'true'"), [0, 512]),
    board_set("513th live key", "new.key", 0, True, idem="over", scope="project-live"),
    board_set(
        "absent delete in a full scope", "never.x", 0, idem="d0", scope="project-live", delete=True
    ),
    board_set("update in a full scope", "live.7", 1, False, idem="u7", scope="project-live"),
    board_set("free a slot", "live.0", 1, idem="free", scope="project-live", delete=True),
    board_set("use the freed slot", "new.key", 0, True, idem="use", scope="project-live"),
    board_set("full again", "new.other", 0, True, idem="over2", scope="project-live"),
    board_set("restore into a full scope", "live.0", 2, 1, idem="restore", scope="project-live"),
    board_list("list a full scope", scope="project-live", limit=3),
    # 512 tombstones take no live capacity.
    _scope_row("project-tomb", 512),
    sql("seed 512 tombstones", _seed_heads("project-tomb", "retired", 512, "NULL"), [0, 512]),
    board_set(
        "absent delete among tombstones", "never.x", 0, idem="d", scope="project-tomb", delete=True
    ),
    board_set("new key beside 512 tombstones", "new.key", 0, True, idem="n", scope="project-tomb"),
    board_get("a seeded tombstone", "retired.0", scope="project-tomb"),
    board_list("tombstones are not listed", scope="project-tomb"),
    # 4096 distinct names: a new one is refused; a tombstone can be restored.
    _scope_row("project-distinct", 4096),
    sql(
        "seed 4096 tombstones", _seed_heads("project-distinct", "retired", 4096, "NULL"), [0, 4096]
    ),
    board_set("4097th name", "brand.new", 0, True, idem="b", scope="project-distinct"),
    board_set(
        "delete of a new name at the cap",
        "brand.new",
        0,
        idem="bd",
        scope="project-distinct",
        delete=True,
    ),
    board_set("restore at the cap", "retired.0", 1, "back", idem="r", scope="project-distinct"),
    # Receipts: the 4096 newest by insertion survive; the oldest replays as CAS.
    board_set(
        "first receipt", "retention.original", 0, True, idem="original", scope="project-receipts"
    ),
    sql(
        "the oldest receipt gets a future timestamp",
        "UPDATE coordination_board_idempotency SET created_at = '2999-01-01T00:00:00Z' "
        "WHERE scope_id = 'project-receipts' AND idempotency_key = 'original'",
    ),
    sql(
        "4095 synthetic receipts from the past",
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 4095) "
        "INSERT INTO coordination_board_idempotency(scope_id, author_session_id, "
        "idempotency_key, request_hash, receipt_json, created_at) SELECT 'project-receipts', "
        "'synthetic-author', printf('synthetic-%d', i), printf('hash-%d', i), '{}', "
        "'2000-01-01T00:00:00Z' FROM n",
    ),
    board_set(
        "the write that trims", "retention.latest", 0, True, idem="latest", scope="project-receipts"
    ),
    board_set(
        "expired replay is CAS",
        "retention.original",
        0,
        True,
        idem="original",
        scope="project-receipts",
    ),
    board_set(
        "newest replays", "retention.latest", 0, True, idem="latest", scope="project-receipts"
    ),
    board_set(
        "a synthetic receipt with another hash",
        "x",
        0,
        1,
        idem="synthetic-5",
        scope="project-receipts",
        author=("synthetic-author", "S"),
    ),
    sql(
        "a synthetic receipt with our hash but no receipt body",
        "UPDATE coordination_board_idempotency SET request_hash = ? "
        "WHERE idempotency_key = 'synthetic-6'",
        ["$hash:project-receipts|y|0|1|"],
    ),
    board_set(
        "a receipt that does not decode",
        "y",
        0,
        1,
        idem="synthetic-6",
        scope="project-receipts",
        author=("synthetic-author", "S"),
    ),
]


# ------------------------------------------------------------- a file termal-tui writes


def fixed_clock(start_ns: int = 1_785_412_800_123_456_789) -> Any:
    """Deterministic nanoseconds for our writer (from 2026-07-30T12:00:00.123Z): the same
    file every time, every write its own millisecond."""
    state = {"now": start_ns}

    def clock() -> int:
        state["now"] += 1_234_567_891
        return state["now"]

    return clock


OURS = "project-ours"
OURS_GONE = "project-ours-gone"
OURS_WRITE_OPS: list[dict[str, Any]] = [
    board_set("ours create", "status.gate", 0, GATE, idem="w1", scope=OURS, stateStamp="tree-1"),
    board_set("ours update", "status.gate", 1, {"state": "closed"}, idem="w2", scope=OURS),
    board_set("ours update 2", "status.gate", 2, [1, 2.5, 1e16], idem="w3", scope=OURS),
    board_set("ours tricky", "json.tricky", 0, TRICKY_VALUE, idem="w4", scope=OURS, stateStamp="é"),
    board_set("ours null", "rulings.active", 0, None, idem="w5", scope=OURS, author=BOB),
    board_set("ours to delete", "freeze.old", 0, "x", idem="w6", scope=OURS),
    board_set("ours history", "freeze.old", 1, "y", idem="w7", scope=OURS),
    board_set("ours delete", "freeze.old", 2, idem="w8", scope=OURS, delete=True, stateStamp="d"),
    board_set("ours restore", "hist.key", 0, "a", idem="w9", scope=OURS),
    board_set("ours restore 2", "hist.key", 1, idem="w10", scope=OURS, delete=True),
    board_set("ours restore 3", "hist.key", 2, "b", idem="w11", scope=OURS),
    board_set(
        "ours author",
        "activity.rust-suite",
        0,
        {"holder": "x"},
        idem="w12",
        scope=OURS,
        authorName="  Bob\u0007the builder  ",
    ),
    board_set("ours conflict", "status.gate", 0, 1, idem="w13", scope=OURS),
    board_set("ours gone scope", "a", 0, 1, idem="w14", scope=OURS_GONE),
    delete_scope("ours delete a scope", OURS_GONE),
    board_set("ours other scope", "status.gate", 0, "other", idem="w1", scope=OTHER),
]
_OURS_KEYS = [
    "activity.rust-suite",
    "freeze.old",
    "hist.key",
    "json.tricky",
    "rulings.active",
    "status.gate",
    "never.created",
]
OURS_READ_OPS: list[dict[str, Any]] = [
    *(board_get(f"termal reads {key}", key, scope=OURS) for key in _OURS_KEYS),
    board_get("termal reads the other scope", "status.gate", scope=OTHER),
    board_get("termal reads the deleted scope", "a", scope=OURS_GONE),
    board_list("termal lists", scope=OURS),
    board_list("termal lists a page", scope=OURS, limit=2),
    board_list(
        "termal continues", scope=OURS, limit=2, afterKey="freeze.old", snapshotGeneration=_GEN
    ),
    board_list("termal known", scope=OURS, knownGeneration=_GEN),
    # TermAl replays our writes: our receipts and request hashes are its own.
    *(
        dict(op, case=f"termal replays {op['case']}")
        for op in OURS_WRITE_OPS
        if op["op"] == "boardSet"
    ),
    board_set("termal: changed intent", "status.gate", 3, "z", idem="w3", scope=OURS),
    board_set("termal: create over our tombstone", "freeze.old", 0, 1, idem="t1", scope=OURS),
    board_set("termal: restore our tombstone", "freeze.old", 3, "back", idem="t2", scope=OURS),
    board_set("termal: update our head", "status.gate", 3, "next", idem="t3", scope=OURS),
    board_list("termal lists after writing", scope=OURS),
]
