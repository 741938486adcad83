"""What every command shares: the exit-code table, the database path and its one check,
parser construction (coloured help, loaded only when help is printed) and the one place
where a failure becomes one sentence and an exit code.

Nothing here imports the store, textual or rich at module level: hooks start through it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

# ------------------------------------------------------------------ exit codes
# The codes live beside the one error table (``termal_tui/core/errors.py``), which maps every
# error kind to one of them; they are re-exported here for the commands.
from termal_tui.core.errors import (
    EXIT_BUSY,
    EXIT_CONFLICT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_STUCK,
    EXIT_UNKNOWN,
    EXIT_USAGE,
    TermalError,
    exit_code_of,
)

__all__ = [
    "EXIT_BUSY",
    "EXIT_CONFLICT",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_STUCK",
    "EXIT_UNKNOWN",
    "EXIT_USAGE",
]

EXIT_TABLE = """\
exit codes (every command):
  0  done (doctor: nothing is stuck)
  1  doctor: something is stuck
  2  usage: the command line is wrong
  3  not found: no such database, session, mailbox or message
  4  conflict: key reused for other content, or the cursor moved
  5  busy: nothing was committed; run the same command again
  6  outcome unknown: run the exact same command again
  7  storage or internal failure (disk full, I/O, permissions)
  8  invalid: the request was refused, or the file is not ours
130  interrupted
141  the reader of the output closed it (| head); what was done stands"""


class CommandError(Exception):
    """A failure with its exit code; ``str()`` is the sentence shown."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def fail(message: str, code: int) -> int:
    """One sentence on stderr (anything quoted from outside made visible and capped)."""
    from termal_tui.core.sanitize import visible_line

    print(f"termal-tui: error: {visible_line(message, 500)}", file=sys.stderr)
    return code


def exit_code_for(error: BaseException) -> int:
    """The table's code for a failure of any layer: a command's own code, else its
    kind's (``termal_tui/core/errors.py``); anything without a kind is a failure (7)."""
    if isinstance(error, CommandError):
        return error.code
    return exit_code_of(error)


def guarded(run: Callable[[], int]) -> int:
    """Run a command: every failure is one sentence and the table's code, never a traceback."""
    try:
        return run()
    except SystemExit as exit_:  # a usage error found after parsing (parser.error)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _reader_gone()
    except Exception as error:
        known = isinstance(error, CommandError | TermalError)
        text = str(error) if known else f"unexpected failure ({type(error).__name__}: {error})"
        return fail(text, exit_code_for(error))


EXIT_PIPE = 128 + 13  # as a process killed by SIGPIPE, which a shell's pipefail knows


def _reader_gone() -> int:
    """Whoever read our output closed it (``| head``): stop quietly, as ``cat`` does. The
    rest of what would have been written goes nowhere, so the interpreter's last flush
    does not complain either. What the command did stands; only its output is lost."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_PIPE


# ------------------------------------------------------------------ parsers


def _formatter(prog: str) -> argparse.HelpFormatter:
    """Coloured help where the terminal supports it: rich-argparse, imported only when
    help or a usage error is printed to a terminal (into a pipe or with ``NO_COLOR``
    there is no colour to show, and rich costs ~80 ms to import)."""
    stream = sys.stdout
    if os.environ.get("NO_COLOR") or not (hasattr(stream, "isatty") and stream.isatty()):
        return argparse.RawDescriptionHelpFormatter(prog, width=_width())
    try:
        from rich_argparse import RawDescriptionRichHelpFormatter
    except ImportError:  # pragma: no cover - a dependency, but never fatal for help
        return argparse.RawDescriptionHelpFormatter(prog, width=_width())

    class Plain(RawDescriptionRichHelpFormatter):
        # Help is plain text: `termal-tui[mcp]` must not be read as console markup.
        help_markup = False
        text_markup = False

    return Plain(prog, width=_width())


def _width() -> int:
    from termal_tui.cli.table import terminal_width

    return max(40, min(terminal_width(), 100))


class Parser(argparse.ArgumentParser):
    """argparse with the table's usage code and a sentence that names the command.

    argparse builds a formatter for every ``add_argument`` (to check metavars): the
    coloured one is built only while help or usage is actually being printed.
    """

    _printing = False

    def _get_formatter(self) -> argparse.HelpFormatter:
        if self._printing:
            return _formatter(self.prog)
        return argparse.HelpFormatter(self.prog, width=80)  # a width: no shutil import

    def _coloured(self, text: Callable[[], str]) -> str:
        self._printing = True
        try:
            return text()
        finally:
            self._printing = False

    def format_help(self) -> str:
        return self._coloured(super().format_help)

    def format_usage(self) -> str:
        return self._coloured(super().format_usage)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def wrap(text: str, width: int = 78) -> str:
    """Fill each paragraph with a line wider than ``width`` (help is laid out raw)."""
    import textwrap

    paragraphs = text.split("\n\n")
    return "\n\n".join(
        textwrap.fill(" ".join(p.split()), width) if max(map(len, p.splitlines())) > width else p
        for p in paragraphs
    )


def make_parser(prog: str, description: str, epilog: str = EXIT_TABLE) -> Parser:
    return Parser(
        prog=prog,
        description=wrap(description),
        epilog=epilog,
        allow_abbrev=False,
    )


def subparsers(parser: argparse.ArgumentParser, dest: str) -> Any:
    """Sub-commands whose parsers are :class:`Parser` with the same formatter."""
    return parser.add_subparsers(dest=dest, required=True, parser_class=Parser, metavar="ACTION")


def add_subparser(sub: Any, name: str, help_text: str, epilog: str = EXIT_TABLE) -> Parser:
    parser: Parser = sub.add_parser(
        name,
        help=help_text,
        description=wrap(help_text),
        epilog=epilog,
        allow_abbrev=False,
    )
    return parser


def whole_number(minimum: int, rule: str) -> Callable[[str], int]:
    """An argparse type for an integer of at least ``minimum``; ``rule`` is the sentence
    shown when the value breaks it."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(rule)
        return value

    return parse


# ------------------------------------------------------------------ the database


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def refuse_url(given: str, where: str, command: str | None = None) -> None:
    """A database that looks like a URL is never taken for a relative path (which would
    create a folder named ``postgresql:`` with a SQLite file in it): one sentence, exit 2.
    This is for the commands that open only a file; a ``postgresql://`` URL is named as
    not yet supported by ``command``."""
    if not _URL.match(given.strip()):
        return
    from termal_tui.store.urls import is_postgres_url, redact, url_scheme

    scheme, shown = url_scheme(given), redact(given)
    if is_postgres_url(given):
        who = f"`{command}`" if command else "this command"
        if command == "termal-tui":
            who = "the viewer (`termal-tui DB`)"
        raise CommandError(
            f"PostgreSQL is not yet supported for {who}: {where} is a {scheme}:// URL "
            f"({shown}); give TermAl's SQLite file (a path); nothing was created",
            EXIT_USAGE,
        )
    raise CommandError(
        f"{where} is a {scheme}:// URL ({shown}), and a database is TermAl's SQLite file "
        "(a path) or a postgresql:// URL; nothing was created",
        EXIT_USAGE,
    )


_WARNED: set[str] = set()  # URLs warned of in this command (it may ask twice)


def begin_command() -> None:
    """A new command begins (``main()``): what it warns of is said again, as a new process
    would (a test or an embedding program may run several in one process)."""
    _WARNED.clear()


def warn_password_in_argv(url: str) -> None:
    """A password written in a URL on the command line can be read by every user of this
    host (the process list) for as long as the command runs: say so, once, on stderr."""
    from termal_tui.store.urls import secrets_of

    if secrets_of(url) and url not in _WARNED:
        _WARNED.add(url)
        print(
            "termal-tui: warning: the database URL on the command line holds a password, "
            "which every user of this host can read in the process list; give it through "
            "PGPASSWORD, ~/.pgpass or ?passfile= instead",
            file=sys.stderr,
            flush=True,
        )


def check_url(url: str, where: str) -> str:
    """A ``postgresql://`` URL the driver can be given, or one sentence (exit 2); the
    password is never shown."""
    from urllib.parse import urlsplit

    from termal_tui.store.urls import redact

    text = url.strip()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  # a port that is not a number raises here
    except ValueError as error:
        raise CommandError(
            f"{where} is not a valid postgresql:// URL ({redact(text)}: {error}); nothing "
            "was opened",
            EXIT_USAGE,
        ) from None
    if parts.fragment:
        raise CommandError(
            f"{where} is not a valid postgresql:// URL ({redact(text)}: it has a #fragment); "
            "nothing was opened",
            EXIT_USAGE,
        )
    return text


def default_db_path(command: str | None = None) -> Path:
    home = os.environ.get("TERMAL_HOME")
    if home:
        refuse_url(home, "$TERMAL_HOME", command)
    return local_db_path()


def local_db_path() -> Path:
    """The file in the local state directory ($TERMAL_HOME when it is a path, else
    ~/.termal): the default database, and where the session registry lives."""
    home = os.environ.get("TERMAL_HOME")
    local = Path(home).expanduser() if home and not _URL.match(home.strip()) else None
    base = local if local is not None else Path.home() / ".termal"
    return base / "coordination.sqlite"


DB_HELP = (
    "coordination database (default: $TERMAL_HOME/coordination.sqlite, else "
    "~/.termal/coordination.sqlite)"
)


def add_db(parser: argparse.ArgumentParser, *, positional: bool = False) -> None:
    """``--db PATH`` on every command; the documented positional ``DB`` where it has one."""
    if positional:
        parser.add_argument("db", nargs="?", metavar="DB", help=DB_HELP)
        parser.add_argument("--db", dest="db_option", metavar="PATH", help="the same as DB")
    else:
        parser.add_argument("--db", dest="db_option", metavar="PATH", help=DB_HELP)


def _given(args: argparse.Namespace, parser: argparse.ArgumentParser | None) -> str | None:
    positional = getattr(args, "db", None)
    option = getattr(args, "db_option", None)
    if positional and option and Path(positional) != Path(option):
        message = "give the database once: DB or --db, not two different paths"
        if parser is not None:
            parser.error(message)
        raise CommandError(message, EXIT_USAGE)
    return positional or option  # type: ignore[no-any-return]


def db_path(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> Path:
    """The database a command was given (``DB`` or ``--db``), else the default: a path
    (this command opens only TermAl's SQLite file; a URL is refused in one sentence)."""
    command = parser.prog if parser is not None else None
    given = _given(args, parser)
    if given:
        refuse_url(given, "the database", command)
    return Path(given).expanduser() if given else default_db_path(command)


def db_target(
    args: argparse.Namespace, parser: argparse.ArgumentParser | None = None
) -> Path | str:
    """As :func:`db_path`, for the commands that also take a ``postgresql://`` URL (in
    ``DB``, ``--db`` or ``$TERMAL_HOME``): the URL itself, or a path."""
    from termal_tui.store.urls import is_postgres_url

    given = _given(args, parser)
    if given and is_postgres_url(given):
        url = check_url(given, "the database")
        warn_password_in_argv(url)
        return url
    home = os.environ.get("TERMAL_HOME")
    if not given and home and is_postgres_url(home):
        return check_url(home, "$TERMAL_HOME")
    return db_path(args, parser)


def check_database(path: Path, *, writing: bool = False, may_create: bool = False) -> bool:
    """The one check every command makes of its database path before anything opens it.

    A file that exists must be a regular SQLite file (not a directory, FIFO or device,
    checked by its header without blocking); when ``writing``, it is checked as every
    file we write is (``sqlite.check_before_write``: no symlink, and a coordination
    database or empty). A missing file is ``NotFoundError`` unless ``may_create`` (a
    writer that bootstraps TermAl's schema on first use). Returns whether it exists.
    Readers check the schema when they open it, before reading anything.
    """
    from termal_tui.store.errors import NotFoundError
    from termal_tui.store.sqlite import check_before_write, display_path, inspect_database_file

    if not writing and path.is_symlink() and not path.exists():
        raise NotFoundError(f"{display_path(path)} is a symlink to nothing")
    if not os.path.lexists(path) and not may_create:
        raise NotFoundError(f"{display_path(path)} does not exist")
    if writing:
        return check_before_write(path, prepare=False)
    inspect_database_file(path)
    return True
