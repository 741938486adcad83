"""The coordination board in agents' hands: TermAl's three board tools over MCP (names,
descriptions and schemas from TermAl's source), two agents on one project coordinating
through them case by case against TermAl's own answers, the bridge's checks, safe replay
and receipt checks, and which project a session's board is (TermAl's termal.sqlite
projects, --project, the git top-level minted once in the registry)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from termal_tui.agents.board_tools import (
    BOARD_SET_OUTCOME_UNKNOWN,
    BOARD_TOOL_NAMES,
    BoardToolError,
    BoardTools,
    carries_safe_replay_clause,
    json_equal,
)
from termal_tui.agents.catalog import termal_fields, termal_tools
from termal_tui.agents.mcp_server import tool_catalog
from termal_tui.agents.projects import (
    NO_PROJECT,
    REMOTE_PROJECT,
    ProjectResolver,
    git_toplevel,
    read_termal_projects,
)
from termal_tui.agents.registry import REGISTRY_VERSION, Registry
from termal_tui.agents.tools import TOOL_NAMES, replay_delay
from termal_tui.core.errors import ErrorKind
from termal_tui.store.board import BoardSetReceipt
from termal_tui.store.board.writer import open_board_writer
from termal_tui.store.errors import CommitOutcomeUnknownError, RetryableError
from tests.agents.test_e2e import EXE, ToolFailure, agent, senders, wait_for, wake_barrier
from tests.fixtures.extract_termal_tools import extract
from tests.helpers import ENGINES, digest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PACKAGE = Path(__file__).resolve().parents[2] / "termal_tui" / "agents"
MIRROR = Path("/work/.mirror/grlap+TermAl/repo")
ORACLE = Path(
    os.environ.get("TERMAL_ORACLE", "/tmp/board-helper/oracle-build/target/release/termal-oracle")
)
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
REASONS = {400: "Bad Request", 404: "Not Found", 409: "Conflict", 422: "Unprocessable Entity"}
WRITE_CLAUSE = (
    "no coordination board write was committed by this operation, so retry the same request"
)


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def make_repo(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path


# --------------------------------------------------------------------- the catalog


def test_the_catalog_is_termals_six_mailbox_then_three_board_tools():
    board = json.loads((FIXTURES / "termal_board_tools.json").read_text())
    mailbox = json.loads((FIXTURES / "termal_mailbox_tools.json").read_text())
    assert [t["name"] for t in board] == list(BOARD_TOOL_NAMES)
    assert termal_tools() == mailbox + board  # the server's copies are TermAl's, exactly
    listed = tool_catalog()
    assert [t["name"] for t in listed] == [t["name"] for t in mailbox + board]
    for ours_, termal in zip(listed, mailbox + board, strict=True):  # TermAl's words kept
        assert ours_["description"] == termal["description"]
        assert ours_["inputSchema"].get("required") == termal["inputSchema"].get("required")
        for argument, schema in termal["inputSchema"]["properties"].items():
            assert ours_["inputSchema"]["properties"][argument].items() >= schema.items()
    assert json.loads((PACKAGE / "termal_board_tools.json").read_text()) == board
    assert board[2]["inputSchema"]["required"] == ["key", "expectedRevision", "idempotencyKey"]
    assert board[2]["inputSchema"]["properties"]["value"] == {}  # any JSON, null included
    assert "Writes NEVER wake peers" in board[2]["description"]


@pytest.mark.skipif(not MIRROR.exists(), reason="needs TermAl's source (a mirror)")
def test_the_fixtures_are_what_termals_source_says():
    source = subprocess.run(
        ["git", "-C", str(MIRROR), "show", "HEAD:src/delegation_mcp.rs"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert extract(source, BOARD_TOOL_NAMES) == json.loads(
        (FIXTURES / "termal_board_tools.json").read_text()
    )
    assert extract(source, TOOL_NAMES) == json.loads(
        (FIXTURES / "termal_mailbox_tools.json").read_text()
    )


# --------------------------------------------------------------------- two agents over MCP


def termal_expected(answer: dict[str, Any], ids: dict[str, str]) -> Any:
    """TermAl's recorded answer with its stand-in ids replaced by this run's."""
    text = json.dumps(answer, ensure_ascii=False)
    for stand_in, real in ids.items():
        text = text.replace(stand_in, real)
    return json.loads(STAMP.sub("<time>", text))


def ours(value: Any) -> Any:
    return json.loads(STAMP.sub("<time>", json.dumps(value, ensure_ascii=False)))


def session_add(
    db: Path | str | None, name: str, cwd: Path, env: dict[str, str] | None = None
) -> str:
    """``session add`` on ``db`` (None: the local registry of ``env``'s $TERMAL_HOME)."""
    done = subprocess.run(
        [EXE, "session", "add", name, *(["--db", str(db)] if db is not None else [])],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=os.environ | (env or {}),
        timeout=60,
        check=True,
    )
    return re.search(r"\((session-[0-9a-f]+)\)", done.stdout).group(1)  # type: ignore[union-attr]


@pytest.mark.parametrize("engine", ENGINES)
async def test_two_agents_on_one_project_coordinate_through_the_board(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
):
    """Alice and Bob, registered in two directories of one git repository, each with their
    own ``termal-tui mcp``: every call of TermAl's two-agent scenario answers what TermAl's
    routes answered (results, statuses, sentences, ``detail``), board writes wake nobody,
    and TermAl's code then reads the board they wrote. On PostgreSQL the board is the
    database's and the sessions are the local registry's (``$TERMAL_HOME``)."""
    repo = make_repo(tmp_path / "work" / "shop")
    (repo / "crates" / "core").mkdir(parents=True)
    state = tmp_path / "state" / "coordination.sqlite"
    db: Path | str = state
    env: dict[str, str] | None = None
    if engine == "postgres":
        db = str(request.getfixturevalue("pg_url"))
        env = {"TERMAL_HOME": str(state.parent)}
    registered = db
    alice_id = session_add(registered, "alice", repo, env)
    bob_id = session_add(registered, "bob", repo / "crates" / "core", env)
    calls = jsonl(FIXTURES / "termal_board_agents" / "calls.jsonl")
    answers = jsonl(FIXTURES / "termal_board_agents" / "answers.jsonl")

    async with (
        agent(db, "alice", channel=False, env=env) as alice,  # type: ignore[arg-type]
        # (bob has a wake channel, on either engine: a board write must not use it)
        agent(db, "bob", channel=True, env=env) as bob,  # type: ignore[arg-type]
    ):
        listed = await alice.client.list_tools()
        names = [tool.name for tool in listed.tools]
        assert names == [*TOOL_NAMES, *BOARD_TOOL_NAMES]
        empty = await alice.call("termal_board_list", {})  # the project is minted here, once
        assert empty == {"generation": 0, "entries": [], "unchanged": False}  # no nextCall
        registry = Registry.beside(db)
        (project,) = registry.registered_projects()
        assert (project.root_path, project.name) == (str(repo.resolve()), "shop")
        ids = {"session-alice": alice_id, "session-bob": bob_id, "project-shared": project.id}
        by_name = {"alice": alice, "bob": bob}
        for call, answer in zip(calls, answers, strict=True):
            caller = by_name[call["as"]]
            expected = termal_expected(answer, ids)
            if answer["ok"]:
                got = await caller.call(call["tool"], call["arguments"])
                # TermAl's fields exactly; termal-tui's additions (nextCall, notes) beside
                assert ours(termal_fields(call["tool"], got)) == expected["result"], call["case"]
                if "nextAfterKey" in got:
                    assert got["nextCall"] == {
                        "name": "termal_board_list",
                        "arguments": {
                            "afterKey": got["nextAfterKey"],
                            "snapshotGeneration": got["generation"],
                            **(
                                {"limit": call["arguments"]["limit"]}
                                if "limit" in call["arguments"]
                                else {}
                            ),
                        },
                    }
            else:
                with pytest.raises(ToolFailure) as failure:
                    await caller.call(call["tool"], call["arguments"])
                error = expected["error"]
                shown = f"termal-tui board store returned {error['status']} "
                shown += f"{REASONS[error['status']]}: {error['message']}"
                assert STAMP.sub("<time>", str(failure.value)) == shown, call["case"]
        # A board write never wakes anyone: the first wake bob gets is the mail that came
        # after them all (see wake_barrier).
        await wake_barrier(db, "bob")
        await wait_for(lambda: bob.events, timeout=5.0)
        assert senders(bob) == ["carol"]
        final = termal_fields("termal_board_list", await bob.call("termal_board_list", {}))

    if ORACLE.exists() and engine == "sqlite":  # TermAl's own code reads what they wrote
        copy = tmp_path / "termal" / "coordination.sqlite"
        copy.parent.mkdir()
        shutil.copy(db, copy)
        op = json.dumps({"op": "boardList", "scope": project.id})
        done = subprocess.run(
            [str(ORACLE), str(copy), "--no-bootstrap"],
            input=op + "\n",
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        termal = json.loads(done.stdout.splitlines()[1])
        assert termal["ok"] and termal["result"] == final


async def test_the_bridge_checks_before_anything_reaches_the_store(tmp_path: Path):
    """TermAl's bridge-side wording (no ``store returned`` prefix: its bridge refuses
    these itself), over a real MCP session."""
    repo = make_repo(tmp_path / "repo")
    db = tmp_path / "state" / "coordination.sqlite"
    session_add(db, "alice", repo)
    async with agent(db, "alice", channel=False) as alice:
        shape = (
            "key must be 1-128 bytes of lowercase alphanumerics, `.`, `_`, or `-`, and must "
            "not be `.` or `..`"
        )
        cases = [
            ("termal_board_get", {"key": "Status.Gate"}, shape),
            ("termal_board_get", {"key": ".."}, shape),
            ("termal_board_get", {}, "key is required"),
            ("termal_board_get", {"key": "   "}, "key is required"),
            (
                "termal_board_list",
                {"afterKey": "a/b"},
                shape.replace("key must", "afterKey must"),
            ),
            ("termal_board_list", {"limit": -1}, "limit must be a non-negative integer"),
            (
                "termal_board_list",
                {"knownGeneration": 1.0},
                "knownGeneration must be a non-negative integer",
            ),
            (
                "termal_board_set",
                {"key": "a", "idempotencyKey": "k"},
                "expectedRevision must be a non-negative integer",
            ),
            (
                "termal_board_set",
                {"key": "a", "expectedRevision": 0, "value": 1},
                "idempotencyKey is required",
            ),
            (
                "termal_board_set",
                {
                    "key": "a",
                    "expectedRevision": 0,
                    "value": 1,
                    "idempotencyKey": "k",
                    "stateStamp": "  ",
                },
                "stateStamp must be a non-empty string",
            ),
        ]
        for tool, arguments, message in cases:
            with pytest.raises(ToolFailure) as failure:
                await alice.call(tool, arguments)
            assert str(failure.value) == message, (tool, arguments)
        # stateStamp is kept exactly (TermAl hashes it); idempotencyKey is trimmed.
        receipt = await alice.call(
            "termal_board_set",
            {
                "key": "a",
                "expectedRevision": 0,
                "value": 18446744073709551616,
                "idempotencyKey": "  k  ",
                "stateStamp": " tree ",
            },
        )
        assert receipt["stateStamp"] == " tree "
        assert receipt["value"] == 1.8446744073709552e19  # beyond u64: serde's f64
        again = await alice.call(
            "termal_board_set",
            {
                "key": "a",
                "expectedRevision": 0,
                "value": 18446744073709551616,
                "idempotencyKey": "k",
                "stateStamp": " tree ",
            },
        )
        assert again["duplicate"] is True


# --------------------------------------------------------------------- in process


class Stub:
    """A board writer that answers what a test scripts."""

    def __init__(self, path: Path, answers: list[Any]) -> None:
        self.path = path
        self.answers = answers
        self.calls = 0

    async def _next(self) -> Any:
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def set(self, *args: Any, **kwargs: Any) -> Any:
        return await self._next()

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        return await self._next()

    async def list(self, *args: Any, **kwargs: Any) -> Any:
        return await self._next()


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Registry, str]:
    repo = make_repo(tmp_path / "repo")
    db = tmp_path / "state" / "coordination.sqlite"
    db.parent.mkdir()
    registry = Registry.beside(db)
    return db, registry, registry.add("alice", workdir=str(repo)).id


def stub_tools(world: tuple[Path, Registry, str], answers: list[Any]) -> tuple[BoardTools, list]:
    db, registry, me = world
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    tools = BoardTools(
        Stub(db, answers),  # type: ignore[arg-type]
        registry,
        me,
        db_path=db,
        sleep=sleep,
        clock=lambda: 0.0,
    )
    return tools, slept


def receipt(**changes: Any) -> BoardSetReceipt:
    base = BoardSetReceipt(
        key="status.gate",
        revision=1,
        prior_revision=0,
        generation=1,
        value={"state": "open"},
        deleted=False,
        author_session_id="",
        author_name="alice",
        updated_at="2026-12-01T00:00:00.000Z",
        state_stamp=None,
        duplicate=False,
    )
    return base._replace(**changes)


def busy(clause: str = WRITE_CLAUSE) -> RetryableError:
    return RetryableError(
        f"coordination board storage is temporarily busy while beginning coordination "
        f"board update; {clause}"
    )


async def test_busy_with_the_no_commit_clause_is_replayed_on_termals_schedule(world):
    me = world[2]
    tools, slept = stub_tools(world, [busy(), busy(), receipt(author_session_id=me)])
    got = await tools.set(
        "status.gate", expected_revision=0, idempotency_key="k", value={"state": "open"}
    )
    assert got.revision == 1 and tools.writer.calls == 3  # type: ignore[attr-defined]
    assert slept == [replay_delay(me, 1, 0.2), replay_delay(me, 2, 0.2)]


async def test_five_attempts_at_most_then_the_busy_sentence_itself(world):
    tools, slept = stub_tools(world, [busy() for _ in range(6)])
    with pytest.raises(BoardToolError) as failure:
        await tools.list()
    assert tools.writer.calls == 5 and len(slept) == 4  # type: ignore[attr-defined]
    assert failure.value.status == 503
    assert str(failure.value).startswith("termal-tui board store returned 503 Service")
    assert str(failure.value).endswith(WRITE_CLAUSE)


async def test_a_503_without_a_safe_clause_is_not_replayed(world):
    tools, slept = stub_tools(world, [RetryableError("busy; a write was committed, so retry")])
    with pytest.raises(BoardToolError):
        await tools.get("status.gate")
    assert tools.writer.calls == 1 and slept == []  # type: ignore[attr-defined]


def test_termals_safe_replay_clauses_are_matched_structurally():
    assert carries_safe_replay_clause(f"busy; {WRITE_CLAUSE}")
    assert carries_safe_replay_clause(
        "x;  no mutation was attempted by this read operation, so retry the same request "
    )
    assert not carries_safe_replay_clause(
        "a coordination board write was committed by this operation, so retry the same request"
    )
    assert not carries_safe_replay_clause("busy, so retry the same request")


@pytest.mark.parametrize(
    ("changes", "mismatch"),
    [
        ({"key": "other"}, "receipt key `other` != requested `status.gate`"),
        ({"author_session_id": "session-x"}, "receipt author `session-x` != caller `{me}`"),
        ({"prior_revision": 1, "revision": 2}, "receipt priorRevision 1 != expectedRevision 0"),
        ({"revision": 5}, "receipt revision 5 is not priorRevision 0 + 1"),
        ({"deleted": True}, "receipt deleted=true != requested delete=false"),
        ({"value": {"state": "shut"}}, "receipt value differs from the requested value"),
        ({"value": {"state": "open", "n": 1}}, "receipt value differs from the requested value"),
        ({"state_stamp": "t"}, 'receipt stateStamp Some("t") != requested None'),
    ],
)
async def test_a_receipt_that_does_not_correlate_is_an_unknown_outcome(world, changes, mismatch):
    me = world[2]
    tools, _slept = stub_tools(world, [receipt(author_session_id=me)._replace(**changes)])
    with pytest.raises(BoardToolError) as failure:
        await tools.set(
            "status.gate", expected_revision=0, idempotency_key="k", value={"state": "open"}
        )
    assert failure.value.kind is ErrorKind.UNKNOWN_OUTCOME
    assert str(failure.value) == (
        f"{BOARD_SET_OUTCOME_UNKNOWN}: coordination board receipt does not correlate with "
        f"the request ({mismatch.format(me=me)})"
    )


async def test_a_delete_receipt_must_carry_null(world):
    me = world[2]
    bad = receipt(author_session_id=me, deleted=True, revision=3, prior_revision=2)
    tools, _slept = stub_tools(world, [bad])
    with pytest.raises(BoardToolError) as failure:
        await tools.set("status.gate", expected_revision=2, idempotency_key="k", delete=True)
    assert str(failure.value).endswith("(receipt claims deletion but carries a non-null value)")


async def test_a_commit_of_unknown_outcome_says_retry_with_the_same_key(world):
    tools, _slept = stub_tools(world, [CommitOutcomeUnknownError("disk I/O error at COMMIT")])
    with pytest.raises(BoardToolError) as failure:
        await tools.set("a", expected_revision=0, idempotency_key="k", value=1)
    assert failure.value.kind is ErrorKind.UNKNOWN_OUTCOME
    assert str(failure.value) == f"{BOARD_SET_OUTCOME_UNKNOWN}: disk I/O error at COMMIT"
    assert "retry the exact same request with the SAME idempotencyKey" in str(
        failure.value
    ).replace("Retry", "retry")
    tools, _slept = stub_tools(world, [CommitOutcomeUnknownError("disk I/O error")])
    with pytest.raises(BoardToolError) as failure:  # a read's failure is what it is
        await tools.get("a")
    assert failure.value.status == 500


def test_receipt_values_compare_as_serde_values():
    assert json_equal({"a": [1, None]}, {"a": [1, None]})
    assert not json_equal(1, 1.0) and not json_equal(True, 1) and not json_equal(0, False)
    assert json_equal(-0.0, 0.0) and not json_equal([1], [1, 2])


async def test_a_session_without_a_project_gets_termals_rejection(tmp_path: Path):
    db = tmp_path / "coordination.sqlite"
    registry = Registry.beside(db)
    loose = tmp_path / "loose"
    loose.mkdir()
    nowhere = registry.add("nowhere", workdir=str(loose)).id
    homeless = registry.add("homeless").id
    async with open_board_writer(db) as writer:
        for session_id in (nowhere, homeless):
            tools = BoardTools(writer, registry, session_id)
            with pytest.raises(BoardToolError) as failure:
                await tools.call("termal_board_list", {})
            assert str(failure.value) == (
                f"termal-tui board store returned 400 Bad Request: {NO_PROJECT}"
            )
            assert NO_PROJECT == (
                "session has no project; the coordination board is scoped to a project"
            )
        registry.remove("nowhere")
        with pytest.raises(BoardToolError) as failure:
            await BoardTools(writer, registry, nowhere).get("a")
        assert (
            str(failure.value) == "termal-tui board store returned 404 Not Found: session not found"
        )
        with pytest.raises(BoardToolError) as failure:
            await BoardTools(writer, registry, homeless).call("termal_board_watch", {})
        assert str(failure.value) == "unknown TermAl delegation MCP tool `termal_board_watch`"


# --------------------------------------------------------------------- projects


def termal_state(path: Path, projects: list[dict[str, Any]]) -> Path:
    """A termal.sqlite as TermAl's persist.rs lays it out (meta, app_state with the
    metadataState blob); only what the project read needs."""
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES('schema_version', '2');"
        "CREATE TABLE app_state (key TEXT PRIMARY KEY, value_json TEXT NOT NULL);"
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, value_json TEXT NOT NULL);"
    )
    state = {
        "revision": 3,
        "nextProjectNumber": len(projects) + 1,
        "nextSessionNumber": 1,
        "nextMessageNumber": 1,
        "projects": projects,
        "sessions": [],
    }
    db.execute("INSERT INTO app_state VALUES('metadataState', ?)", (json.dumps(state),))
    db.commit()
    db.close()
    return path


def project(pid: str, name: str, root: Path, remote: str = "local") -> dict[str, Any]:
    return {"id": pid, "name": name, "rootPath": str(root), "remoteId": remote}


def test_a_session_in_a_termal_projects_tree_shares_that_projects_board(tmp_path: Path):
    outer = make_repo(tmp_path / "mono")
    inner = outer / "services" / "api"
    inner.mkdir(parents=True)
    remote_root = tmp_path / "far"
    remote_root.mkdir()
    db = tmp_path / "state" / "coordination.sqlite"
    db.parent.mkdir()
    state = termal_state(
        db.with_name("termal.sqlite"),
        [
            project("project-3f0c-outer", "mono", outer),
            project("project-9a1d-inner", "api", inner),
            project("project-remote", "far", remote_root, remote="ssh-box"),
        ],
    )
    before = digest(state)
    registry = Registry.beside(db)
    resolver = ProjectResolver(db, registry)
    deep = registry.add("deep", workdir=str(inner / "src"))
    top = registry.add("top", workdir=str(outer / "docs"))
    assert resolver.for_session(deep).id == "project-9a1d-inner"  # the deepest root
    found = resolver.for_session(top)
    assert (found.id, found.name, found.source) == ("project-3f0c-outer", "mono", "termal")
    assert registry.registered_projects() == []  # nothing minted: TermAl's project is used
    with pytest.raises(Exception) as remote:
        resolver.for_reference("project-remote")
    assert str(remote.value) == REMOTE_PROJECT
    with pytest.raises(Exception) as unknown:
        resolver.for_reference("project-nope")
    assert str(unknown.value) == "unknown project `project-nope`"
    # TermAl's file is only read: same bytes, no sidecars.
    assert digest(state) == before
    assert not any(Path(f"{state}{s}").exists() for s in ("-wal", "-shm", "-journal"))


def test_termals_projects_are_read_through_its_locks_while_it_runs(tmp_path: Path):
    state = termal_state(tmp_path / "termal.sqlite", [project("project-1", "a", tmp_path)])
    live = sqlite3.connect(state)
    live.execute("PRAGMA journal_mode = WAL")
    live.execute("UPDATE meta SET value = '2'")
    live.commit()  # TermAl running: its -wal and -shm exist
    assert [p.id for p in read_termal_projects(state)] == ["project-1"]
    live.close()
    assert read_termal_projects(tmp_path / "absent.sqlite") == []


def test_outside_termals_projects_the_git_top_level_is_minted_once(tmp_path: Path):
    db = tmp_path / "state" / "coordination.sqlite"
    db.parent.mkdir()
    one = make_repo(tmp_path / "a" / "repo")
    two = make_repo(tmp_path / "b" / "repo")
    (one / "pkg").mkdir()
    registry = Registry.beside(db)
    resolver = ProjectResolver(db, registry)
    first = resolver.for_session(registry.add("s1", workdir=str(one / "pkg")))
    second = resolver.for_session(registry.add("s2", workdir=str(one)))
    assert first == second and re.fullmatch(
        r"project-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", first.id
    )
    assert (first.name, first.root_path, first.source) == ("repo", str(one), "termal-tui")
    other = resolver.for_session(registry.add("s3", workdir=str(two)))
    assert other.name == "repo 2" and other.id != first.id  # TermAl's name de-duplication
    registry.close()
    again = ProjectResolver(db, Registry.beside(db))  # kept across processes
    assert again.for_workdir(str(one)) == first
    assert git_toplevel(tmp_path) is None


def test_project_binds_a_session_by_id_or_path(tmp_path: Path):
    db = tmp_path / "state" / "coordination.sqlite"
    db.parent.mkdir()
    repo = make_repo(tmp_path / "repo")
    elsewhere = tmp_path / "notes"
    elsewhere.mkdir()
    registry = Registry.beside(db)
    resolver = ProjectResolver(db, registry)
    session = registry.add("s", workdir=str(repo))
    by_path = resolver.for_session(session, str(elsewhere))
    assert by_path.root_path == str(elsewhere) and by_path.name == "notes"
    assert resolver.for_session(session) == by_path  # the binding is kept
    home = resolver.for_workdir(str(repo))
    assert home is not None
    assert resolver.for_session(session, home.id) == home
    assert resolver.for_session(session) == home
    with pytest.raises(Exception, match="no such directory"):
        resolver.for_reference(str(tmp_path / "missing"))


def test_a_version_1_registry_is_migrated_in_place(tmp_path: Path):
    path = tmp_path / "termal-tui-sessions.sqlite"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL, name_key TEXT NOT "
        "NULL, agent TEXT, workdir TEXT, created_at TEXT NOT NULL, removed_at TEXT, "
        "turn_started_at TEXT, channel_pid INTEGER, channel_seen_at REAL);"
        "CREATE TABLE wake_marks (session_id TEXT NOT NULL, mailbox_id TEXT NOT NULL, "
        "pending INTEGER NOT NULL, seen_through INTEGER NOT NULL, updated_at TEXT NOT NULL, "
        "PRIMARY KEY (session_id, mailbox_id));"
        "INSERT INTO sessions(id, name, name_key, created_at) VALUES('session-0a', 'old', "
        "'old', '2026-01-01T00:00:00Z');"
        "PRAGMA user_version = 1;"
    )
    old.close()
    registry = Registry(path)
    assert [s.name for s in registry.sessions()] == ["old"]
    made = registry.project_for_root(str(tmp_path), "here")
    assert registry.registered_project(made.id) == made
    registry.close()
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA user_version").fetchone()[0] == REGISTRY_VERSION == 7
    tables = {row[0] for row in check.execute("SELECT name FROM sqlite_master")}
    assert {"projects", "session_projects", "sessions", "wake_marks", "session_tokens"} <= tables


def test_project_resolution_loads_no_asyncio_nor_anything_heavy():
    """Hooks may resolve a project one day: it must cost what the hook path costs."""
    code = "import sys, termal_tui.agents.projects; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    heavy = {"asyncio", "aiosqlite", "pydantic", "mcp", "uuid", "dataclasses", "inspect"}
    assert not {m for m in loaded if m.split(".")[0] in heavy}


def test_mcp_refuses_an_unknown_project_before_serving(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    db = tmp_path / "state" / "coordination.sqlite"
    session_add(db, "alice", repo)
    done = subprocess.run(
        [EXE, "mcp", "--session", "alice", str(db), "--project", "project-nope"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert done.returncode == 8
    assert done.stderr.strip() == (
        "termal-tui: error: termal-tui board store returned 400 Bad Request: unknown project "
        "`project-nope`"
    )
    assert Registry.beside(db).bound_project(Registry.beside(db).sessions()[0].id) is None
