"""The support of a formula (the variables it mentions) as the keys of the deletion index.

A deletion restricts only the entries whose formula may mention a dead variable; the stores
find them through an index variable → entries, built from formula supports
(:class:`~aspen.engine.operators.store.ProvenanceStore`). Building it is the bulk of the first
deletion after a large build (every entry's support, tens of millions of variables at 1,000
nodes), and ``dd.cudd``'s ``support`` turns each variable into its Python name. For a CUDD
manager this module calls ``Cudd_SupportIndices`` instead (:mod:`aspen.provenance.cudd_native`) and
keys the index by CUDD variable index (stable under reordering), several times faster
(measurements: docs/performance.md). With the pure-Python backend the keys are the names.

>>> from aspen.provenance import ProvenanceManager
>>> m = ProvenanceManager(backend="python")
>>> keys = support_keys(m)
>>> f = m.and_(m.var("x"), m.var("y"))
>>> sorted(keys.of_formula(f)) == sorted(keys.of_names(["x", "y"]))
True
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.provenance.cudd_native import cached_on, cudd_handle
from aspen.provenance.forest_native import native_library

__all__ = ["MentionScan", "SupportKeys", "mention_scanner", "restriction", "support_keys"]

#: ``scan(formulas, names)``: for each formula, whether it mentions one of the named variables.
MentionScan = Callable[[Sequence[Formula], Iterable[str]], list[bool]]


@dataclass(frozen=True)
class SupportKeys:
    """How a manager names the variables of the deletion index."""

    #: the index keys of the variables ``formula`` mentions
    of_formula: Callable[[Formula], Iterable[Hashable]]
    #: the index keys of the named variables (unknown names are left out)
    of_names: Callable[[Iterable[str]], list[Hashable]]


def support_keys(manager: ProvenanceManager) -> SupportKeys:
    """The :class:`SupportKeys` of ``manager`` (CUDD indices when the native call is bound)."""
    cached = getattr(manager, "_aspen_support_keys", None)
    if cached is not None:
        return cached
    keys = _cudd_keys(manager)
    if keys is None:  # not cached on the manager: its closures would hold the manager
        return _name_keys(manager)
    try:
        manager._aspen_support_keys = keys  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return keys


def _name_keys(manager: ProvenanceManager) -> SupportKeys:
    def of_names(names: Iterable[str]) -> list[Hashable]:
        return [name for name in names if manager.has_var(name)]

    return SupportKeys(manager.bdd.support, of_names)


def _cudd_keys(manager: ProvenanceManager) -> SupportKeys | None:
    handle = cudd_handle(manager)
    if handle is None:
        return None
    int_array = ctypes.POINTER(ctypes.c_int)
    try:
        indices_of = handle.function("Cudd_SupportIndices",
                                     (ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(int_array)),
                                     ctypes.c_int)
        free = ctypes.CDLL(None).free
        free.argtypes = (ctypes.c_void_p,)
        free.restype = None
    except (AttributeError, OSError):
        return None
    mgr = handle.manager
    out = int_array()
    out_ref = ctypes.byref(out)
    index_of_var = manager.bdd._index_of_var  # name → CUDD index

    def of_formula(formula: Formula) -> list[int]:
        count = indices_of(mgr, int(formula) - 2, out_ref)
        if count < 0:
            raise MemoryError("CUDD ran out of memory computing a support")
        indices = out[:count] if count else []
        free(out)
        return indices

    def of_names(names: Iterable[str]) -> list[Hashable]:
        return [index_of_var[name] for name in names if name in index_of_var]

    # behavioural check without declaring variables: constants have an empty support (the
    # engine's tests, which run on CUDD, check real supports through every deletion)
    if of_formula(manager.true) or of_formula(manager.false):
        return None
    return SupportKeys(of_formula, of_names)


def mention_scanner(manager: ProvenanceManager) -> MentionScan | None:
    """A compiled :data:`MentionScan` for a CUDD ``manager`` (one walk over the formulas' shared
    BDD nodes, none below the lowest named variable), or None (pure-Python backend, or the
    compiled library is not built). A freshly restored node finds the entries a deletion
    touches with it, instead of indexing every entry's support first.

    >>> from aspen.provenance import ProvenanceManager
    >>> mention_scanner(ProvenanceManager(backend="python")) is None
    True
    """
    return cached_on(manager, "_aspen_mention_scanner", _bind_scanner)


def _bind_scanner(manager: ProvenanceManager) -> MentionScan | None:
    library, handle = native_library(), cudd_handle(manager)
    if library is None or handle is None:
        return None
    bound = [ctypes.cast(getattr(handle.library, name), ctypes.c_void_p).value
             for name in ("Cudd_NodeReadIndex", "Cudd_T", "Cudd_E", "Cudd_ReadPerm")]
    bdd = manager.bdd
    index_of_var = bdd._index_of_var

    def scan(formulas: Sequence[Formula], names: Iterable[str]) -> list[bool]:
        named = [name for name in names if name in index_of_var]
        if not named or not formulas:
            return [False] * len(formulas)
        indices = [index_of_var[name] for name in named]
        dead = (ctypes.c_uint8 * (max(indices) + 1))()
        for index in indices:
            dead[index] = 1
        deepest = max(bdd.level_of_var(name) for name in named)
        roots = (ctypes.c_void_p * len(formulas))(*[int(f) - 2 for f in formulas])
        out = (ctypes.c_uint8 * len(formulas))()
        if library.aspen_mentions(handle.manager, *bound, dead, len(dead), deepest, roots,
                                  len(formulas), out) < 0:
            raise MemoryError("out of memory scanning formulas for dead variables")
        return [bool(flag) for flag in out]

    return scan


def restriction(manager: ProvenanceManager, dead: Iterable[str]) -> Callable[[Formula], Formula]:
    """A function ``f ↦ f[dead := false]`` (decision 1), built once per deletion.

    ``dd.cudd``'s ``let`` builds the cube of the assignment again on every call (an array as long
    as the manager has variables); for a CUDD manager the cube is built once here and each
    formula is cofactored by ``Cudd_Cofactor`` through ``ctypes`` (its result is referenced by
    ``BDD._add_int``, as ``let`` does, before any other CUDD call can collect it).

    >>> from aspen.provenance import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> f = m.or_(m.and_(m.var("x"), m.var("y")), m.var("z"))
    >>> restriction(m, ["z"])(f) == m.and_(m.var("x"), m.var("y"))
    True
    """
    values = {name: False for name in dead if manager.has_var(name)}
    bdd = manager.bdd
    handle = cudd_handle(manager)
    if handle is None or not values:
        return lambda formula: bdd.let(values, formula) if values else formula
    cofactor = handle.cofactor
    cube = bdd.cube(values)
    mgr, cube_node, add_int = handle.manager, int(cube) - 2, bdd._add_int

    def restrict(formula: Formula, _cube: Formula = cube) -> Formula:
        # ``_cube`` holds the cube's CUDD reference for as long as ``restrict`` lives: with no
        # reference, a garbage collection during the deletion would free the node it cofactors by
        node = cofactor(mgr, int(formula) - 2, cube_node)
        if not node:
            raise MemoryError("CUDD could not cofactor a formula")
        return add_int(node + 2)

    return restrict

