"""``termal-tui setup claude|codex``, ``setup --check`` and ``setup --remove``: one
command per agent, one to see whether it will work, one to take it away."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from termal_tui.cli.common import (
    EXIT_CONFLICT,
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    CommandError,
    add_db,
    db_target,
    local_db_path,
)

if TYPE_CHECKING:
    from termal_tui.agents.setup import Client, Report


def describe(_name: str, _line: str) -> str:
    return (
        "Connect Claude Code or Codex CLI to a session in one step: write (or merge into) "
        "the client's MCP server config and its session-start, prompt and stop hooks, with "
        "the full path of this termal-tui. Claude Code: the project's .mcp.json and "
        ".claude/settings.json. Codex: ~/.codex/config.toml and ~/.codex/hooks.json "
        "($CODEX_HOME), or the project's .codex/ with --project. Nothing of yours is "
        "replaced: other servers and hooks keep their bytes, and an entry of ours that "
        "says something else is named and left (exit 4) unless --force. Running it again "
        "changes nothing. The database path is written whenever the client would open "
        "another by default (neither client passes TERMAL_HOME to its server). "
        "`setup --check` says, per client, whether the config, the hooks and the session "
        "line up, and starts the server as the client would (its environment, its command "
        "line) for an MCP handshake (exit 3 when something is missing or fails). "
        "`setup --remove` undoes what setup wrote: a file it created is removed, a file it "
        "edited gets its exact bytes back when nothing else changed since, otherwise only "
        "our entries are taken out."
    )


def configure(parser: argparse.ArgumentParser, _name: str) -> None:
    parser.add_argument(
        "client", nargs="?", choices=("claude", "codex"), help="the agent to connect"
    )
    parser.add_argument(
        "--session",
        metavar="NAME",
        help="the agent's session (default: the project directory's name)",
    )
    parser.add_argument(
        "--project",
        metavar="DIR",
        help="the project (Claude Code: default the current directory; Codex: write the "
        "project's .codex/ instead of ~/.codex)",
    )
    parser.add_argument(
        "--channel",
        action="store_true",
        help="Claude Code: serve with --channel (push wake-ups; launch claude with "
        "--dangerously-load-development-channels server:termal)",
    )
    add_db(parser)
    parser.add_argument(
        "--dry-run", action="store_true", help="print the changes as a diff; write nothing"
    )
    parser.add_argument(
        "--force", action="store_true", help="replace an entry of ours that says otherwise"
    )
    parser.add_argument(
        "--register",
        action="store_true",
        help="register the session if it is new (otherwise it must be registered already)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="report whether each client's config, hooks and session line up, and start "
        "its server as the client would; write nothing",
    )
    parser.add_argument(
        "--remove",
        action="store_true",
        help="undo what setup wrote for the client (both clients without one); with "
        "--dry-run, print it as a diff",
    )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.check and args.remove:
        parser.error("give one of --check and --remove")
    if args.check:
        if args.dry_run or args.force or args.register or args.channel:
            parser.error(
                "--check writes nothing: it takes no --dry-run, --force, --register or --channel"
            )
        if args.db_option:
            parser.error(
                "--check takes no --db: it checks the database each client's config makes "
                "its server open"
            )
        return _check(args)
    if args.remove:
        if args.force or args.register or args.channel or args.session or args.db_option:
            parser.error(
                "--remove takes only a client, --project and --dry-run: it undoes what "
                "setup wrote, whatever session that was"
            )
        return _remove(args)
    if args.client is None:
        parser.error("name the client (claude or codex), or pass --check")
    if args.channel and args.client == "codex":
        parser.error(
            "--channel is for Claude Code (Codex has no channels; its wakes come from the hooks)"
        )
    return _setup(args, parser)


def _project(args: argparse.Namespace) -> Path | None:
    if args.project is None:
        return None
    project = Path(args.project).expanduser()
    if not project.is_dir():
        raise CommandError(f"--project {args.project} is not a directory", EXIT_NOT_FOUND)
    return project.absolute()


def _explicit_db(args: argparse.Namespace) -> Path | str | None:
    """The ``--db`` given: a path made absolute, or a ``postgresql://`` URL as it will
    be written — without its password (a config file, and the server's command line
    every user of the host can read): the agent's side gives it through ``~/.pgpass``,
    ``PGPASSFILE`` or ``PGPASSWORD``."""
    if not args.db_option:
        return None
    target = db_target(args)  # checked; warns of a password on this command line
    if isinstance(target, str):
        from termal_tui.store.urls import secrets_of, without_secrets

        if secrets_of(target):
            print(
                "note: the URL's password is not written into the client's config (its "
                "server's command line is in the process list): give it to the agent "
                "through ~/.pgpass, PGPASSFILE or PGPASSWORD in the client's environment",
                file=sys.stderr,
            )
        return without_secrets(target)
    return target.absolute()


def _records() -> Path:
    """Where setup keeps what each file was before it (termal-tui's own directory)."""
    return local_db_path().parent / "setup"


def _setup(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from termal_tui.agents import setup
    from termal_tui.agents.registry import validate_name
    from termal_tui.store.errors import ValidationError

    project = _project(args)
    raw = args.session or (project or Path.cwd()).absolute().name
    try:
        session = validate_name(raw)
    except ValidationError as error:
        hint = "" if args.session else " (the project directory's name; pass --session NAME)"
        raise CommandError(f"{error}{hint}", EXIT_INVALID) from None
    target = setup.Target(
        client=args.client,
        session=session,
        command=setup.termal_command(),
        db=setup.db_to_write(args.client, _explicit_db(args), os.environ),
        channel=args.channel,
    )
    files = setup.files_for(args.client, project)
    try:
        planned = setup.plan(target, files, force=args.force)
    except setup.SetupError as error:
        raise CommandError(str(error), EXIT_INVALID) from None
    registered = _registration(args, parser, session, dry_run=True)
    if planned.conflicts:
        for conflict in planned.conflicts:
            print(f"conflict: {conflict}; left as it is (--force replaces it)", file=sys.stderr)
        print("nothing written", file=sys.stderr)
        return EXIT_CONFLICT
    if args.dry_run:
        for file_plan in planned.plans:
            if file_plan.changed:
                sys.stdout.write(file_plan.diff())
        if registered == "new":
            print(f"would register {session}")
        if not planned.changed and registered != "new":
            print(f"nothing to change: {args.client} is already set up for session {session}")
        else:
            print("dry run: nothing written")
        if registered == "missing":
            _not_registered(session)
        return EXIT_OK
    if registered == "new":
        _registration(args, parser, session, dry_run=False)
    try:
        setup.write(planned, _records())
    except setup.SetupError as error:  # pragma: no cover - conflicts are handled above
        raise CommandError(str(error), EXIT_INVALID) from None
    except OSError as error:
        raise CommandError(
            f"cannot write {error.filename or 'a config file'}: {error.strerror or error}",
            EXIT_FAILED,
        ) from None
    for file_plan in planned.plans:
        for change in file_plan.changes:
            print(f"{file_plan.path}: {change}")
    if not planned.changed:
        paths = ", ".join(str(p.path) for p in planned.plans)
        print(f"nothing to change: {args.client} is already set up for session {session} ({paths})")
    if registered == "missing":
        _not_registered(session)
    if target.db is not None and not args.db_option and planned.changed:
        print(
            f"note: wrote --db {target.db}: {'Claude Code' if args.client == 'claude' else 'Codex'}"
            " does not pass TERMAL_HOME to its server, which would open another database",
            file=sys.stderr,
        )
    if args.client == "claude" and planned.plans[0].changed:
        print(
            f"note: Claude Code asks once, on its next start in {files.config.parent}, before "
            f"it starts the project's {setup.SERVER_NAME} server",
            file=sys.stderr,
        )
    if args.client == "codex" and project is not None and not setup.codex_trusts(project):
        print(
            f"note: Codex reads {files.config} only once it trusts {project} (it asks on "
            "its first start there)",
            file=sys.stderr,
        )
    return EXIT_OK


def _not_registered(session: str) -> None:
    print(
        f"note: session {session} is not registered yet: run "
        f"`termal-tui session add {shlex.quote(session)}` or setup again with --register "
        "(its server and hooks refuse an unregistered name)",
        file=sys.stderr,
    )


def _registration(
    args: argparse.Namespace, parser: argparse.ArgumentParser, session: str, *, dry_run: bool
) -> str:
    """``"known"``, ``"new"`` (registered now; with ``dry_run``, would be) or ``"missing"``."""
    import asyncio

    from termal_tui.agents.registry import registry_path_for
    from termal_tui.cli.agents import mailbox_database, registry_for

    # The one check of the database and its registry (a URL: as given, password and all).
    path = mailbox_database(args, parser)
    registry = registry_for(path)
    known = isinstance(path, str) or registry_path_for(path).exists()
    if known and registry.find_live_by_name(session):
        return "known"
    if not args.register:
        return "missing"
    if dry_run:
        return "new"
    # An existing file must be a coordination database before a registry is made beside
    # it; on PostgreSQL the registry is in the database itself (as `session add`).
    if isinstance(path, Path) and path.exists() and path.stat().st_size:
        from termal_tui.store.reader import open_reader

        async def check() -> None:
            async with open_reader(path):
                pass

        asyncio.run(check())
    workdir = str(_project(args) or Path.cwd())
    created = registry.ensure(session, "Claude" if args.client == "claude" else "Codex", workdir)
    print(f"registered {created.name} ({created.id})")
    return "new"


def _check(args: argparse.Namespace) -> int:
    from termal_tui.agents import setup

    project = _project(args)
    clients: tuple[Client, ...] = (args.client,) if args.client else setup.CLIENTS
    reports: list[Report] = []
    for client in clients:
        files = setup.files_for(client, project)
        trusted = setup.codex_trusts(project) if client == "codex" and project else None
        reports.append(setup.check(client, files, session_exists=_session_id, trusted=trusted))
    plugin = setup.claude_plugin(project) if "claude" in clients else None
    failing = False
    for report in reports:
        named = args.client is not None
        if not report.present and report.client == "claude" and plugin is not None:
            continue  # set up by the plugin: reported below
        if not report.present and not named:
            print(f"{report.client}: not set up ({report.files.config}, {report.files.hooks})")
            continue
        state = "ok" if report.ok else "incomplete"
        print(f"{report.client}: {state}")
        for finding in report.findings:
            mark = "ok  " if finding.ok else "FAIL"
            print(f"  {mark} {finding.part:<8} {finding.text}")
        failing = failing or not report.ok
    if plugin is not None:
        failing = _check_plugin(plugin, reports, args) or failing
    if plugin is None and not any(r.present for r in reports) and args.client is None:
        print("no client is set up yet: termal-tui setup claude|codex --session NAME")
        return EXIT_NOT_FOUND
    return EXIT_NOT_FOUND if failing else EXIT_OK


def _check_plugin(
    plugin: tuple[str, dict[str, Any]], reports: list[Report], args: argparse.Namespace
) -> bool:
    """Report the enabled Claude Code plugin; True when something is wrong."""
    plugin_id, options = plugin
    session = options.get("session")
    print(f"claude: the plugin {plugin_id} is enabled")
    wrong = False
    if not isinstance(session, str) or not session:
        print(
            f"  FAIL session  missing: set its session option (claude plugin install "
            f"{plugin_id} --config session=NAME, or /plugin configure)"
        )
        wrong = True
    else:
        from termal_tui.agents import setup

        given = options.get("db")
        # Its server gets Claude Code's environment (no TERMAL_HOME); its hooks all of it.
        server_default = setup.default_db_in(setup.client_env("claude", None, os.environ))
        hooks_default = setup.default_db_in(os.environ)
        if isinstance(given, str) and given:
            db: Path | str | None = setup.as_database(given)
        else:
            db = server_default
            if server_default != hooks_default:
                print(
                    f"  FAIL database its server opens {server_default} (Claude Code does not "
                    f"pass TERMAL_HOME on) and its hooks {hooks_default}: set its db option "
                    f"(claude plugin install {plugin_id} --config db={hooks_default})"
                )
                wrong = True
        known = _session_id(db, session) if db is not None else None
        if known:
            print(f"  ok   session  {session} is registered ({known}) in {db}")
        else:
            print(
                f"  FAIL session  missing: {session} is not registered in {db} "
                f"(termal-tui session add {shlex.quote(session)})"
            )
            wrong = True
    if any(r.client == "claude" and r.present for r in reports):
        print(
            "  FAIL twice    the project is set up too (setup claude): the agent gets two "
            "termal servers and every hook twice; use one of them"
        )
        wrong = True
    return wrong


def _remove(args: argparse.Namespace) -> int:
    from termal_tui.agents import setup

    project = _project(args)
    clients: tuple[Client, ...] = (args.client,) if args.client else setup.CLIENTS
    records = _records()
    removals = []
    for client in clients:
        try:
            removals.append(setup.plan_removal(client, setup.files_for(client, project), records))
        except setup.SetupError as error:
            raise CommandError(str(error), EXIT_INVALID) from None
    for removal in removals:
        if args.dry_run:
            for file_plan in removal.plans:
                if file_plan.changed:
                    sys.stdout.write(file_plan.diff())
        else:
            try:
                setup.apply_removal(removal)
            except OSError as error:
                raise CommandError(
                    f"cannot write {error.filename or 'a config file'}: {error.strerror or error}",
                    EXIT_FAILED,
                ) from None
        for file_plan in removal.plans:
            for change in file_plan.changes:
                print(f"{file_plan.path}: {'(dry run) ' if args.dry_run else ''}{change}")
        if not removal.changed:
            paths = ", ".join(str(p) for p in (removal.files.config, removal.files.hooks))
            print(f"{removal.client}: nothing of ours to remove ({paths})")
    if args.dry_run:
        print("dry run: nothing written")
    return EXIT_OK


def _session_id(db: Path | str, name: str) -> str | None:
    """The live session's id, read from the registry beside ``db`` or in the
    PostgreSQL database ``db`` names (never created)."""
    from termal_tui.agents.registry import registry_path_for
    from termal_tui.cli.agents import registry_for

    if isinstance(db, Path) and not registry_path_for(db).exists():
        return None
    try:
        found = registry_for(db).find_live_by_name(name)
    except Exception:  # a registry we cannot read is reported as "not registered"
        return None
    return found[0].id if found else None


__all__ = ["configure", "describe", "run"]
