"""Is anyone listening? Unread mail for a session nothing can wake is a finding of its own
(doctor and the health view), read from the registry without changing it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from termal_tui.agents.registry import Registry
from termal_tui.store import open_reader, open_writer
from termal_tui.views.findings import Thresholds, health_report, utc_now
from termal_tui.views.notifiers import read_notifiers, registry_path_for


async def _mail_for_bob(db: Path) -> tuple[Registry, str]:
    registry = Registry.beside(db)
    alice, bob = registry.add("alice"), registry.add("bob")
    async with open_writer(db) as writer:
        await writer.append(
            sender_session_id=alice.id,
            sender_name="alice",
            target_session_id=bob.id,
            target_name="bob",
            body="are you there?",
            idempotency_key="k",
        )
    return registry, bob.id


async def _kinds(db: Path, later: float = 3600.0) -> list[tuple[str, str]]:
    async with open_reader(db) as reader:
        report = await health_report(
            reader, now=utc_now() + timedelta(seconds=later), thresholds=Thresholds()
        )
    return [(f.kind, f.display_name) for f in report.findings]


async def test_mail_for_a_session_with_no_channel_and_no_hook_is_no_notifier(db_path):
    await _mail_for_bob(db_path)
    # Counted once: not also "never woken" or "lagging".
    assert await _kinds(db_path) == [("no-notifier", "bob")]


async def test_a_live_channel_server_is_a_notifier(db_path):
    registry, bob = await _mail_for_bob(db_path)
    registry.heartbeat(bob, os.getpid())
    kinds = await _kinds(db_path, later=1.0)  # the heartbeat is fresh (1 s later)
    assert ("no-notifier", "bob") not in kinds


async def test_without_a_registry_no_session_is_judged(db_path):
    opened, _bob = await _mail_for_bob(db_path)
    opened.close()
    registry_path_for(db_path).unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{registry_path_for(db_path)}{suffix}").unlink(missing_ok=True)
    kinds = [kind for kind, _ in await _kinds(db_path)]
    assert "no-notifier" not in kinds and "never-woken" in kinds


async def test_reading_notifiers_changes_nothing(db_path):
    opened, _bob = await _mail_for_bob(db_path)
    opened.close()  # the last connection: SQLite checkpoints and removes the sidecars
    registry = registry_path_for(db_path)
    assert not Path(f"{registry}-wal").exists()
    before = sorted(os.listdir(registry.parent)), registry.read_bytes()
    found = read_notifiers(db_path, time.time())
    assert found is not None and {n.name for n in found.values()} == {"alice", "bob"}
    assert (sorted(os.listdir(registry.parent)), registry.read_bytes()) == before


def test_doctor_reports_no_notifier_and_exits_1(db_path):
    asyncio.run(_mail_for_bob(db_path))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "termal_tui",
            "doctor",
            "--db",
            str(db_path),
            "--json",
            "--no-notifier-after",
            "0",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    (finding,) = json.loads(done.stdout)["findings"]
    assert finding["kind"] == "no-notifier" and finding["displayName"] == "bob"
    assert "nothing is listening" in finding["summary"]


async def test_a_hook_that_ran_lately_is_a_notifier(db_path, monkeypatch):
    import io

    from termal_tui.cli import main

    registry, _bob = await _mail_for_bob(db_path)
    registry.close()
    monkeypatch.setattr("sys.stdin", io.StringIO("{}"))
    assert await asyncio.to_thread(
        main, ["hook", "stop", "--session", "bob", "--db", str(db_path)]
    ) in (0,)
    kinds = await _kinds(db_path, later=60.0)  # a minute later: the hook ran recently
    assert ("no-notifier", "bob") not in kinds
    kinds = await _kinds(db_path, later=3600.0)  # an hour later: nobody since
    assert ("no-notifier", "bob") in kinds
