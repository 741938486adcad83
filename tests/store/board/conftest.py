"""The coordination board is on SQLite alone for now (its PostgreSQL engine comes
later): its tests pin the engine instead of inheriting both from ``tests/store``."""

from __future__ import annotations

import pytest


@pytest.fixture
def engine() -> str:
    return "sqlite"
