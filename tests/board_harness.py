"""Runs termal-oracle's board operations against our board store, answering in the
oracle's own shape, so TermAl's recorded answers compare case by case.

Ops (see shared/tools/termal-oracle/README.md): ``boardList``, ``boardGet``,
``boardSet``, ``boardDeleteScope``. Our answers are ``{"ok": true, "result", "status"}``
or ``{"ok": false, "error": {"kind", "status", "message", "detail"?}}``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from termal_tui.store.board import dumps, loads, request_hash
from termal_tui.store.board.reader import BoardReader
from termal_tui.store.board.writer import BoardWriter
from termal_tui.store.errors import StoreError
from tests.helpers import is_url, rows

KINDS = {
    400: "Validation",
    404: "NotFound",
    409: "Conflict",
    422: "Unprocessable",
    503: "Retryable",
}
BOARD_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
ORACLE_ONLY = ("i", "op", "case")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Requests, one per line, parsed as TermAl's routes parse them (serde_json: ``-0``,
    big integers, its fast float parser)."""
    return [loads(line) for line in path.read_text().split("\n") if line.strip()]


def read_answers(path: Path) -> list[dict[str, Any]]:
    """TermAl's answers, one per line, parsed exactly: they are serde_json's text of the
    doubles TermAl holds, so the nearest double is the one it printed."""
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def write_jsonl(path: Path, items: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items))


def error_answer(error: StoreError) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": KINDS.get(error.http_status, "Internal"),
        "status": error.http_status,
        "message": str(error),
    }
    if error.detail is not None:
        body["detail"] = error.detail
    return {"ok": False, "error": body}


async def run_op(store: BoardWriter | BoardReader, op: dict[str, Any]) -> dict[str, Any]:
    name = op["op"]
    try:
        if name == "boardList":
            page = await store.list(
                op["scope"],
                after_key=op.get("afterKey"),
                limit=op.get("limit"),
                snapshot_generation=op.get("snapshotGeneration"),
                known_generation=op.get("knownGeneration"),
            )
            return {"ok": True, "result": page.to_wire(), "status": 200}
        if name == "boardGet":
            found = await store.get(op["scope"], op["key"])
            return {"ok": True, "result": found.to_wire(), "status": 200}
        assert isinstance(store, BoardWriter) or hasattr(store, "set"), f"{name} needs the writer"
        if name == "boardSet":
            extra = {"value": op["value"]} if "value" in op else {}
            receipt = await store.set(
                op["scope"],
                op["key"],
                expected_revision=op["expectedRevision"],
                author_session_id=op["authorSessionId"],
                author_name=op["authorName"],
                idempotency_key=op["idempotencyKey"],
                delete=op.get("delete", False),
                state_stamp=op.get("stateStamp"),
                raw_author_name=op.get("rawAuthorName", False),
                **extra,
            )
            return {"ok": True, "result": receipt.to_wire(), "status": receipt.http_status}
        if name == "boardDeleteScope":
            return {"ok": True, "result": {"deleted": await store.delete_scope(op["scope"])}}
    except StoreError as error:
        return error_answer(error)
    raise AssertionError(f"unknown op {name}")


def oracle_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """An oracle line without its bookkeeping (index, op name)."""
    return {key: value for key, value in answer.items() if key not in ORACLE_ONLY}


def comparable(answer: dict[str, Any], *, timestamps: bool = True) -> str:
    """serde-exact text of an answer (so 1 and 1.0 differ); with ``timestamps=False``
    every board timestamp (which TermAl takes from its own clock) reads ``<ts>``."""
    text = dumps(oracle_answer(answer), sort_keys=True)
    return text if timestamps else BOARD_TIMESTAMP.sub("<ts>", text)


BOARD_DUMP_TABLES = (
    "coordination_board_scopes",
    "coordination_board_entries",
    "coordination_board_history",
    "coordination_board_idempotency",
    "coordination_board_deleted_scopes",
)


def board_dump(target: Path | str, *, timestamps: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """Every board row, in a stable order (insertion order for receipts, as retention
    uses: SQLite's rowid, PostgreSQL's insertion_order, which is not a TermAl column)."""
    postgres = is_url(target)
    dump = {}
    for table in BOARD_DUMP_TABLES:
        order = "1, 2, 3"
        if table == "coordination_board_idempotency":
            order = "insertion_order" if postgres else "rowid"
        if table in ("coordination_board_scopes", "coordination_board_deleted_scopes"):
            order = "1"
        if postgres:
            columns = (
                "scope_id, author_session_id, idempotency_key, request_hash, receipt_json, "
                "created_at"
                if table == "coordination_board_idempotency"
                else "*"
            )
            found = rows(target, f"SELECT {columns} FROM {table} ORDER BY {order}")
        else:
            db = sqlite3.connect(target)
            try:
                found = db.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            finally:
                db.close()
        if not timestamps:
            found = [
                tuple(
                    BOARD_TIMESTAMP.sub("<ts>", cell) if isinstance(cell, str) else cell
                    for cell in row
                )
                for row in found
            ]
        dump[table] = found
    return dump


GENERATION = "$generation"
HASH_PREFIX = "$hash:"


def resolve(op: dict[str, Any], steps: SqlSteps | PgSqlSteps) -> dict[str, Any]:
    """The op as sent: ``$generation`` is the op's scope's generation in the file now;
    ``$hash:scope|key|revision|canonical|stamp`` is TermAl's request hash of that."""
    out = {}
    for name, value in op.items():
        if value == GENERATION:
            value = steps.generation(op["scope"])
        out[name] = value
    if op.get("op") == "sql":
        params = []
        for param in op["params"]:
            if isinstance(param, str) and param.startswith(HASH_PREFIX):
                scope, key, revision, canonical, stamp = param[len(HASH_PREFIX) :].split("|")
                param = request_hash(scope, key, int(revision), canonical, stamp or None)
            params.append(param)
        out["params"] = params
    return out


class SqlSteps:
    """Runs ``sql`` steps on one connection kept open until :meth:`close`.

    Kept open on purpose: TermAl's file hardening opens and closes the database and
    its sidecars with plain file descriptors after SQLite has opened them, which drops
    that process's POSIX locks. A second process that closes its last connection then
    believes it is alone, checkpoints and deletes the -wal, and TermAl's connections
    answer "database disk image is malformed". So the seeding connection is closed
    only after the oracle has exited.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = sqlite3.connect(self.path)
        return self._db

    def run(self, op: dict[str, Any]) -> dict[str, Any]:
        db = self._connection()
        with db:
            changed = db.execute(op["sql"], op["params"]).rowcount
        return {"ok": True, "sql": changed}

    def generation(self, scope: str) -> int:
        row = (
            self._connection()
            .execute(
                "SELECT generation FROM coordination_board_scopes WHERE scope_id = ?", (scope,)
            )
            .fetchone()
        )
        return 0 if row is None else row[0]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class PgSqlSteps:
    """``sql`` steps on a PostgreSQL database: the same statements, with PostgreSQL's
    placeholders and ``format`` for SQLite's ``printf``."""

    def __init__(self, url: str) -> None:
        self.url = url

    @staticmethod
    def translate(statement: str) -> str:
        typed = statement.replace("(SELECT ? UNION", "(SELECT ?::integer UNION")
        return typed.replace("?", "%s").replace("printf('", "format('").replace("%d'", "%%s'")

    def run(self, op: dict[str, Any]) -> dict[str, Any]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as db:
            cursor = db.execute(self.translate(op["sql"]).encode(), op["params"])
            # Python's sqlite3 counts no rows for a statement that starts with WITH.
            changed = -1 if op["sql"].lstrip().upper().startswith("WITH") else cursor.rowcount
            return {"ok": True, "sql": changed}

    def generation(self, scope: str) -> int:
        found = rows(
            self.url,
            "SELECT generation FROM coordination_board_scopes WHERE scope_id = ?",
            (scope,),
        )
        return 0 if not found else int(found[0][0])

    def close(self) -> None:
        pass


def steps_for(target: Path | str) -> SqlSteps | PgSqlSteps:
    return PgSqlSteps(str(target)) if is_url(target) else SqlSteps(Path(target))


async def run_ours(writer: Any, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every op through our writer (``sql`` steps on its database), answers in oracle
    shape."""
    answers = []
    steps = steps_for(getattr(writer, "url", writer.path))
    try:
        for op in ops:
            sent = resolve(op, steps)
            if sent["op"] == "sql":
                answers.append(steps.run(sent))
            else:
                answers.append(await run_op(writer, sent))
    finally:
        steps.close()
    return answers
