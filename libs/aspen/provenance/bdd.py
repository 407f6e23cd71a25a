"""A BDD manager for absorption provenance over ``dd``.

The CUDD binding (``dd.cudd``) is used when it imports; otherwise the pure-Python
``dd.autoref`` backend is chosen automatically. Provenance formulas are monotone Boolean
functions over base-tuple variables; the operations the engine needs are AND, OR,
restrict-to-false (a deletion) and the false test.

>>> m = ProvenanceManager(backend="python")
>>> p1, p2, p3 = m.var("p1"), m.var("p2"), m.var("p3")
>>> f = m.or_(m.and_(p1, p2), m.and_(p1, m.and_(p2, p3)))   # absorption: p1p2 + p1p2p3 = p1p2
>>> f == m.and_(p1, p2)
True
>>> m.is_false(m.restrict_false(f, ["p2"]))
True
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence

from aspen.errors import ProvenanceError
from aspen.provenance.codec import (
    FOREST_MAGIC,
    MAGIC,
    Formula,
    decode,
    decode_forest_portable,
    names_order,
    node_list,
    portable_bytes,
)
from aspen.provenance.forest_native import (
    decode_each_native,
    encode_each_native,
    encode_native,
    forest_decoder,
)

__all__ = [
    "BACKENDS", "Formula", "ProvenanceManager", "decode", "decode_forest", "default_backend",
    "encode", "encode_forest",
]

#: Backend name → ``dd`` module, in order of preference.
BACKENDS: dict[str, str] = {"cudd": "dd.cudd", "python": "dd.autoref"}

def default_backend() -> str:
    """The fastest backend that imports here: ``"cudd"`` or ``"python"``.

    >>> default_backend() in BACKENDS
    True
    """
    try:
        importlib.import_module(BACKENDS["cudd"])
    except ImportError:
        return "python"
    return "cudd"


class ProvenanceManager:
    """One BDD manager: variables, AND/OR, restriction and size.

    Variables are declared on first use, at the bottom of the current order; :meth:`set_order`
    imposes a global order (e.g. depth-first labeling of the link graph); :meth:`place` declares
    new variables where a maintained order (:mod:`aspen.provenance.placement`) puts them.
    """

    def __init__(self, backend: str | None = None) -> None:
        self.backend = backend or default_backend()
        if self.backend not in BACKENDS:
            raise ProvenanceError(
                f"unknown BDD backend {self.backend!r}; choose one of {sorted(BACKENDS)}"
            )
        module = importlib.import_module(BACKENDS[self.backend])
        self.bdd = module.BDD()
        self.true: Formula = self.bdd.true
        self.false: Formula = self.bdd.false

    # -- variables ---------------------------------------------------------------------------
    def var(self, name: str) -> Formula:
        """The formula of base variable ``name`` (declared if new)."""
        if name not in self.bdd.vars:
            self.bdd.declare(name)
        return self.bdd.var(name)

    def has_var(self, name: str) -> bool:
        """Whether ``name`` is declared in this manager."""
        return name in self.bdd.vars

    @property
    def order(self) -> list[str]:
        """Declared variables, top level first."""
        levels = self.bdd.var_levels
        return sorted(levels, key=levels.__getitem__)

    def set_order(self, names: Sequence[str]) -> None:
        """Reorder so that ``names`` come first, in this order; other variables keep theirs.

        Reordering never changes a function, only its size.
        """
        for name in names:
            if name not in self.bdd.vars:
                self.bdd.declare(name)
        named = set(names)
        rest = [v for v in self.order if v not in named]
        self.bdd.reorder({v: i for i, v in enumerate([*names, *rest])})

    def place(self, order: Sequence[str]) -> bool:
        """Make the manager's order agree with ``order`` (names, top first); True if declared
        variables had to move.

        When the declared names of ``order`` already stand in that relative order, only the
        missing ones are declared, each right below its predecessor in ``order`` (CUDD inserts
        a level; the pure-Python backend declares and reorders): nothing stored is rebuilt.
        Otherwise the whole order is imposed with :meth:`set_order` (CUDD shuffles). Names not
        in ``order`` (dead variables) keep their relative places. One pass over ``order``
        when nothing changed.

        >>> m = ProvenanceManager(backend="python")
        >>> _ = m.var("a"), m.var("c")
        >>> m.place(["a", "b", "c"]), m.order
        (False, ['a', 'b', 'c'])
        >>> m.place(["c", "a"]), m.order
        (True, ['c', 'a', 'b'])
        """
        bdd = self.bdd
        declared = bdd.vars
        level_of = bdd.level_of_var
        last = -1
        missing = False
        for name in order:
            if name in declared:
                level = level_of(name)
                if level < last:
                    self.set_order(order)
                    return True
                last = level
            else:
                missing = True
        if not missing:
            return False
        insert_var = getattr(bdd, "insert_var", None)
        if insert_var is not None:  # CUDD: a new level right below the predecessor
            above = -1
            for name in order:
                if name in declared:
                    above = level_of(name)
                else:
                    above += 1
                    insert_var(name, above)
            return False
        # dd.autoref has no insert_var: declare at the bottom, then one reorder
        after: dict[str | None, list[str]] = {}
        anchor: str | None = None
        for name in order:
            if name in declared:
                anchor = name
            else:
                after.setdefault(anchor, []).append(name)
        full = list(after.get(None, ()))
        for name in self.order:
            full.append(name)
            full.extend(after.get(name, ()))
        for name in full:
            if name not in declared:
                bdd.declare(name)
        bdd.reorder({name: i for i, name in enumerate(full)})
        return False

    # -- algebra -----------------------------------------------------------------------------
    def and_(self, a: Formula, b: Formula) -> Formula:
        """Conjunction (a join of two derivations)."""
        return a & b

    def or_(self, a: Formula, b: Formula) -> Formula:
        """Disjunction (union, alternative derivations); absorption is automatic."""
        return a | b

    def conj(self, formulas: Iterable[Formula]) -> Formula:
        """AND of many formulas (``true`` for none)."""
        out = self.true
        for f in formulas:
            out = out & f
        return out

    def disj(self, formulas: Iterable[Formula]) -> Formula:
        """OR of many formulas (``false`` for none)."""
        out = self.false
        for f in formulas:
            out = out | f
        return out

    def restrict_false(self, formula: Formula, names: Iterable[str]) -> Formula:
        """Set each deleted variable in ``names`` to false (decision 1, docs/architecture.md)."""
        values = {n: False for n in names if n in self.bdd.vars}
        if not values:
            return formula
        return self.bdd.let(values, formula)

    def restrict(self, formula: Formula, values: dict[str, bool]) -> Formula:
        """Substitute constants for variables."""
        values = {n: v for n, v in values.items() if n in self.bdd.vars}
        return self.bdd.let(values, formula) if values else formula

    def is_false(self, formula: Formula) -> bool:
        """Whether the formula is the constant false (the tuple is not derivable)."""
        return formula == self.false

    def is_true(self, formula: Formula) -> bool:
        """Whether the formula is the constant true."""
        return formula == self.true

    def support(self, formula: Formula) -> set[str]:
        """The variables the formula depends on."""
        return set(self.bdd.support(formula))

    def evaluate(self, formula: Formula, true_vars: set[str]) -> bool:
        """Evaluate with exactly ``true_vars`` true and every other variable false."""
        values = {v: (v in true_vars) for v in self.support(formula)}
        result = self.bdd.let(values, formula) if values else formula
        return result == self.true

    def node_count(self, formula: Formula) -> int:
        """Decision nodes of the classic (complement-free) ROBDD of the formula."""
        return len(node_list(formula)[1])

    def to_expr(self, formula: Formula) -> str:
        """A readable expression; for small formulas and debugging only (decision 8: the byte
        codec, not this, is what leaves a process)."""
        return self.bdd.to_expr(formula)

    # -- codec ---------------------------------------------------------------------------
    def encode(self, formula: Formula) -> bytes:
        """Encode as a compact node list carrying variable names (see :func:`encode`)."""
        return encode(formula)

    def encode_each(self, formulas: Sequence[Formula]) -> list[bytes]:
        """``[self.encode(f) for f in formulas]``, in one compiled call when CUDD runs (a
        view's changed rows: many small formulas, each encoded on its own).

        >>> m = ProvenanceManager(backend="python")
        >>> x = m.var("x")
        >>> m.encode_each([x, m.false]) == [m.encode(x), m.encode(m.false)]
        True
        """
        if formulas:
            native = encode_each_native(self, formulas)
            if native is not None:
                return native
        return [encode(f) for f in formulas]

    def decode(self, data: bytes) -> Formula:
        """Rebuild a formula in this manager from :meth:`encode` bytes."""
        return decode(self, data)

    def decode_each(self, encodings: Sequence[bytes]) -> list[Formula]:
        """``[self.decode(d) for d in encodings]``; with CUDD, all of them in one compiled call
        (:func:`~aspen.provenance.forest_native.decode_each_native`).

        >>> m = ProvenanceManager(backend="python")
        >>> x, y = m.var("x"), m.var("y")
        >>> m.decode_each([m.encode(m.or_(x, y)), m.encode(m.true)]) == [m.or_(x, y), m.true]
        True
        """
        many = decode_each_native(self, encodings)
        if many is not None:
            return many
        if encodings:  # new variables where every row's node list rebuilds node by node
            self.declare_in_order(names_order(encodings))
        native = forest_decoder(self)
        if native is None:
            return [decode(self, data) for data in encodings]
        return [native(_as_forest(data))[0] for data in encodings]

    def declare_in_order(self, names: Sequence[str]) -> None:
        """Declare the new ones of ``names``, in this order, at the bottom of the current order
        (declared variables keep their levels): with :func:`~aspen.provenance.codec.names_order`
        before decoding, stored node lists rebuild node by node.

        >>> m = ProvenanceManager(backend="python")
        >>> _ = m.var("b")
        >>> m.declare_in_order(["a", "b", "c"])
        >>> m.order
        ['b', 'a', 'c']
        """
        for name in names:
            self.var(name)

    def fix_order(self) -> None:
        """Turn CUDD's dynamic reordering off: a reorder in the middle of decoding makes every
        later node a full ``ite`` under a new order (minutes for a large stored formula)."""
        self.bdd.configure(reordering=False)


# -- byte codec (the format and its portable walk: aspen.provenance.codec) ---------------------
def encode(formula: Formula) -> bytes:
    """Encode a formula as bytes (the format: :mod:`aspen.provenance.codec`); with CUDD, walked
    in compiled code by :mod:`aspen.provenance.forest_native`.

    References are varints: 0 = false, 1 = true, k + 2 = the k-th node. Names travel with the
    nodes, so the bytes decode in any manager, whatever its variable order.

    >>> m = ProvenanceManager(backend="python")
    >>> f = m.or_(m.var("x1"), m.var("x2"))
    >>> decode(m, encode(f)) == f
    True
    >>> len(encode(m.false)), len(encode(m.var("x1")))
    (4, 10)
    """
    native = encode_native(MAGIC, [formula], False)
    return native if native is not None else portable_bytes(MAGIC, [formula], with_count=False)


def encode_forest(formulas: Sequence[Formula]) -> bytes:
    """Encode many formulas at once, every shared BDD node once (operator state dumps and
    message bundles; with CUDD, walked in compiled code by
    :mod:`aspen.provenance.forest_native`).

    >>> m = ProvenanceManager(backend="python")
    >>> x, y = m.var("x"), m.var("y")
    >>> fs = [m.or_(x, y), m.and_(x, y), x, m.false]
    >>> decode_forest(m, encode_forest(fs)) == fs
    True
    """
    formulas = list(formulas)
    native = encode_native(FOREST_MAGIC, formulas, True)
    return native if native is not None else portable_bytes(FOREST_MAGIC, formulas,
                                                            with_count=True)


def _as_forest(data: bytes) -> bytes:
    """One formula's bytes as a one-root forest's: the forest magic byte, and the root count 1
    before the root (the last varint)."""
    if not data or data[0] != MAGIC:
        raise ProvenanceError("not an Aspen provenance encoding (bad magic byte)")
    start = len(data) - 1  # the root's first byte: after the last byte with no continuation bit
    while start > 1 and data[start - 1] & 0x80:
        start -= 1
    return bytes([FOREST_MAGIC]) + data[1:start] + b"\x01" + data[start:]


def decode_forest(manager: ProvenanceManager, data: bytes) -> list[Formula]:
    """Rebuild the formulas of :func:`encode_forest` bytes inside ``manager`` (with CUDD, by the
    compiled loop of :mod:`aspen.provenance.forest_native` when it is built)."""
    if not data or data[0] != FOREST_MAGIC:
        raise ProvenanceError("not an Aspen provenance forest encoding (bad magic byte)")
    native = forest_decoder(manager)
    if native is not None:
        return native(data)
    return decode_forest_portable(manager, data)
