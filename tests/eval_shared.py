"""Helpers for evaluation tests: the shared data sets beside the repository.

Kept out of conftest.py so it does not collide with the project's fixtures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_file(relative: str) -> Path:
    """The path of a shared data file, or skip the test when it is absent."""
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"shared data {relative} not found under {SHARED_DATA}")
    return path
