"""The store's PostgreSQL engine: the mailbox contract on a ``postgresql://`` URL.

``open_writer(url)`` and ``open_reader(url)`` (``termal_tui.store``) route here; the
SQLite path never imports this package (nor psycopg). Needs the ``postgres`` extra
(``pip install 'termal-tui[postgres]'``): without it, opening a URL fails in one
sentence that says so.
"""

from __future__ import annotations

from termal_tui.store.errors import StorageError

MISSING_DRIVER = (
    "a postgresql:// database needs the PostgreSQL driver: pip install 'termal-tui[postgres]'"
)


def require_driver() -> None:
    """One sentence instead of an ImportError when the extra is not installed."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise StorageError(MISSING_DRIVER) from None
