"""The store's contract tests run on both engines: every test that takes ``db`` or
``writer`` runs once on a SQLite file and once on a fresh PostgreSQL database. A test
about the SQLite file itself says so with ``@sqlite_only`` (``tests.helpers``)."""

from __future__ import annotations

import pytest

from tests.helpers import ENGINES


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)
