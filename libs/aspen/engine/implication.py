"""A fast implication test ``f ≤ g`` (f implies g) for the engine's absorption checks.

Absorption is the question every stateful operator asks of each derivation: is ``pv`` already
implied by the stored formula? ``(old | pv) == old`` answers it but builds the OR first (new nodes,
discarded when the answer is yes). CUDD's ``Cudd_bddLeq`` answers it without building anything and
stops at the first counterexample; ``dd.cudd`` (0.6) does not expose it (its ``<=`` builds
``g | ~f``), so for a CUDD manager it is called through ``ctypes`` on the loaded extension,
after checking the extension's object layout on live objects (the manager pointer read from a
``Function`` must equal the one read from its ``BDD``, and the node pointer must equal
``int(f) - 2``); if any check fails, or for the pure-Python backend, the OR test is used.

>>> from aspen.provenance import ProvenanceManager
>>> m = ProvenanceManager(backend="python")
>>> leq = implication_test(m)
>>> x, y = m.var("x"), m.var("y")
>>> leq(m.and_(x, y), x), leq(x, m.and_(x, y)), leq(m.false, x)
(True, False, True)
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.provenance.cudd_native import cudd_handle

__all__ = ["implication_test"]

Implies = Callable[[Formula, Formula], bool]


def _or_test(f: Formula, g: Formula) -> bool:
    return (f | g) == g


def _cudd_test(manager: ProvenanceManager) -> Implies | None:
    """``Cudd_bddLeq`` bound to ``manager``'s CUDD manager, or None if the layout is unknown."""
    handle = cudd_handle(manager)
    if handle is None:
        return None
    leq = handle.function("Cudd_bddLeq", (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p),
                          ctypes.c_int)
    mgr = handle.manager
    try:  # behavioural check on a few known pairs
        t, f = manager.bdd.true, manager.bdd.false
        for a, b, want in ((f, t, True), (t, f, False), (t, t, True), (f, f, True)):
            if bool(leq(mgr, int(a) - 2, int(b) - 2)) != want:
                return None
    except Exception:  # noqa: BLE001 - any surprise: use the portable test
        return None

    def implies(f: Formula, g: Formula) -> bool:
        return leq(mgr, int(f) - 2, int(g) - 2) == 1

    return implies


def implication_test(manager: ProvenanceManager) -> Implies:
    """A function ``leq(f, g)``: whether ``f`` implies ``g`` (both of ``manager``)."""
    cached = getattr(manager, "_aspen_implies", None)
    if cached is not None:
        return cached
    test = _cudd_test(manager) or _or_test
    try:
        manager._aspen_implies = test  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return test
