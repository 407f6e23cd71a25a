"""Fixtures of the engine's tests: ``m``, a CUDD manager the compiled core can run on (a test
module may define its own ``m``, as the operators' tests do with the Python backend)."""

from __future__ import annotations

import pytest

from aspen.engine.native import core_available
from aspen.provenance import ProvenanceManager


@pytest.fixture
def m() -> ProvenanceManager:
    manager = ProvenanceManager(backend="cudd")
    assert core_available(manager), "make setup builds libs/aspen/engine/native/_core.so"
    return manager
