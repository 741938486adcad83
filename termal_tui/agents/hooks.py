"""The hook adapter: what a Claude Code or Codex hook does at a prompt, a stop and a
session start, over the same wake passes as the channel server (``wake.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from termal_tui.agents.prompts import wake_prompt
from termal_tui.agents.registry import Registry, Session
from termal_tui.core.models import UnreadWakeup

if TYPE_CHECKING:
    from termal_tui.store.lifecycle import LifecycleWriter

HOOK_EVENTS = ("prompt", "stop", "session-start")


def parse_hook_input(text: str) -> dict[str, Any]:
    """The hook's JSON on stdin (absent or malformed input is an empty object)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def hook_output(
    event: str, prompts: list[str], unread_waiting: bool, stop_active: bool
) -> dict[str, Any] | None:
    """What a Claude Code hook prints: context for prompt/session-start, block for stop."""
    text = "\n\n".join(prompts)
    if event == "stop":
        if prompts:
            return {"decision": "block", "reason": text}
        if unread_waiting and not stop_active:
            return {
                "decision": "block",
                "reason": "Unread mailbox messages are waiting: call termal_list_mailboxes, "
                "read them with termal_read_mailbox and acknowledge what you processed with "
                "termal_acknowledge_mailbox before stopping.",
            }
        return None
    if not prompts:
        return None
    name = "SessionStart" if event == "session-start" else "UserPromptSubmit"
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}


def prepare_wakes(
    writer: LifecycleWriter, session_id: str, *, boot: bool = False
) -> list[tuple[UnreadWakeup, str]]:
    """The wakes of one recovery pass, their rows marked ``recoveredWake`` (as
    ``wake.prepare_wakes``, on the synchronous lifecycle writer)."""
    prepared = []
    for wake in writer.wakeups_for_session(session_id, boot=boot, queued=True):
        writer.mark_recovered_through(session_id, wake.mailbox_id, wake.sequence, boot=boot)
        prepared.append((wake, wake_prompt(wake)))
    return prepared


def run_hook(
    path: Path | str,
    registry: Registry,
    event: str,
    session: str,
    payload: dict[str, Any],
    write: Callable[[str], None],
    *,
    register: bool = False,
) -> None:
    """One hook run: record the turn, prepare the wakes, ``write`` the one JSON document,
    then mark the wakes delivered (a document that could not be written leaves them
    recoverable: ``write`` raises). Synchronous: a hook must not pay for asyncio.

    The session must be registered (``session add``), unless ``register`` says to
    register a new name: a typo must not create a peer."""
    from termal_tui.store.lifecycle import open_lifecycle_writer

    def begin() -> Session:
        # A prompt starts a turn; a new session starts idle (closing a turn an agent
        # that died mid-turn left open).
        me = registry.ensure(session) if register else registry.resolve_own(session)
        registry.hook_ran(me.id)  # someone is listening (doctor's "no notifier")
        if event in ("prompt", "session-start"):
            registry.set_turn(me.id, event == "prompt")
        return me

    if isinstance(path, Path) and not path.exists():  # no mail yet: nothing to say
        me = begin()
        if event == "stop":
            registry.set_turn(me.id, False)
        return
    with open_lifecycle_writer(path) as writer:  # first: a bad path is refused first
        me = begin()
        # Hook output is one JSON document: every wake is prepared (recoveredWake) first
        # and delivered only once that document is out.
        prepared = prepare_wakes(writer, me.id, boot=event == "session-start")
        prompts = [prompt for _wake, prompt in prepared]
        unread = bool(prompts) or bool(writer.wakeups_for_session(me.id, boot=True))
        output = hook_output(event, prompts, unread, bool(payload.get("stop_hook_active")))
        if output is not None:
            write(json.dumps(output, ensure_ascii=False) + "\n")
        for wake, _prompt in prepared:
            writer.mark_delivered_through(me.id, wake.mailbox_id, wake.sequence)
    if event == "stop" and output is None:
        registry.set_turn(me.id, False)
