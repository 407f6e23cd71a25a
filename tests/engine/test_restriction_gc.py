"""A deletion's restriction survives CUDD's garbage collection: the cube it cofactors by stays
referenced while the restriction lives (an unreferenced cube was freed by a collection during a
deletion, and the views then differed from scratch, or the cofactor failed)."""

from __future__ import annotations

import ctypes
import random
from typing import Any


def _cudd_garbage_collection(manager: Any) -> None:
    """Run CUDD's garbage collection now, as a node allocation under pressure does."""
    from aspen.provenance.cudd_native import cudd_handle

    handle = cudd_handle(manager)
    collect = handle.function("cuddGarbageCollect", (ctypes.c_void_p, ctypes.c_int), ctypes.c_int)
    collect(handle.manager, 1)


def test_a_restriction_survives_a_cudd_garbage_collection() -> None:
    from aspen.engine.support import restriction
    from aspen.provenance.bdd import ProvenanceManager

    manager = ProvenanceManager("cudd")
    xs = [manager.var(f"v{i}") for i in range(40)]
    formula = xs[0]
    for i in range(1, 40):
        formula = (formula & xs[i]) | xs[(i * 7) % 40] if i % 3 else formula | (xs[i] & xs[i - 1])
    dead = ["v3", "v5", "v11"]
    expected = manager.bdd.let(dict.fromkeys(dead, False), formula)
    rnd = random.Random(1)
    for _ in range(50):
        restrict = restriction(manager, dead)
        _cudd_garbage_collection(manager)
        allocated = []  # new nodes take the freed places
        for _ in range(300):
            a, b, c = rnd.sample(xs, 3)
            allocated.append((a & ~b) | (c & b & ~a))
        assert restrict(formula) == expected
