"""Which engine a database target names, and URLs made safe to show.

A target is a path (TermAl's SQLite file) or a ``postgresql://`` / ``postgres://`` URL.
This module imports nothing (not the driver): the SQLite path and the command line ask it
before anything is opened. A password never reaches a message or a log: every sentence
that names a URL names :func:`redact`'s form of it.
"""

from __future__ import annotations

import os
import re
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

POSTGRES_SCHEMES: Final = ("postgresql", "postgres")
_URL: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Query parameters that hold a secret (libpq's names).
_SECRET_PARAMETERS: Final = frozenset({"password", "sslpassword"})


def looks_like_url(target: object) -> bool:
    """``scheme://...``: never a relative path (a folder named ``postgresql:``)."""
    return isinstance(target, str) and _URL.match(target.strip()) is not None


def url_scheme(target: str) -> str:
    return target.strip().split(":", 1)[0].lower()


def is_postgres_url(target: str | os.PathLike[str]) -> bool:
    """A ``postgresql://`` or ``postgres://`` URL (the PostgreSQL engine's target)."""
    return looks_like_url(target) and url_scheme(str(target)) in POSTGRES_SCHEMES


def redact(url: str) -> str:
    """The URL as it may be shown: the password (in the authority or the query) is
    ``***``; anything that does not parse is reduced to its scheme."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        netloc = parts.netloc
    except ValueError:
        return f"{url_scheme(text)}://***"
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(key.lower() in _SECRET_PARAMETERS for key, _ in pairs):
            query = "&".join(
                f"{key}=***" if key.lower() in _SECRET_PARAMETERS else f"{key}={value}"
                for key, value in pairs
            )
    shown = f"{parts.scheme}://{netloc}{parts.path}"
    return f"{shown}?{query}" if query else shown


def without_secrets(url: str) -> str:
    """The URL with its password left out (of the authority and of the query): what may
    be written into a file or a command line, the password coming from ``~/.pgpass``,
    ``PGPASSFILE`` or ``PGPASSWORD`` where it is used."""
    text = url.strip()
    parts = urlsplit(text)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{host}"
    query = "&".join(
        part
        for part in parts.query.split("&")
        # libpq decodes a keyword's %-escapes too: ``pass%77ord`` is the password
        if part and unquote(part.split("=", 1)[0]).lower() not in _SECRET_PARAMETERS
    )
    kept = f"{parts.scheme}://{netloc}{parts.path}"
    return f"{kept}?{query}" if query else kept


def secrets_of(url: str) -> list[str]:
    """The secret strings a URL holds (to scrub from a driver's error text)."""
    found: list[str] = []
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return found
    if parts.password:
        found += [parts.password, unquote(parts.password)]
    found += [v for k, v in parse_qsl(parts.query) if k.lower() in _SECRET_PARAMETERS and v]
    return [secret for secret in found if secret]


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's message) with every secret of ``url`` replaced by ``***``."""
    for secret in secrets_of(url):
        text = text.replace(secret, "***")
    return text


def refuse_other_url(target: str | os.PathLike[str]) -> None:
    """A URL of another scheme is never opened as a relative path: one sentence."""
    if looks_like_url(target):
        from termal_tui.store.errors import ValidationError

        raise ValidationError(
            f"{redact(str(target))} is a {url_scheme(str(target))}:// URL; a database is a "
            "path to TermAl's SQLite file or a postgresql:// URL; nothing was created"
        )
