"""Fixtures shared by the dashboard tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def empty_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lake root where nothing has been written yet (``ASPEN_LAKE`` points at it)."""
    lake = tmp_path / "no-lake-here"
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    return lake
