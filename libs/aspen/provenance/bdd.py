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
from typing import Any

from aspen.errors import ProvenanceError

__all__ = [
    "BACKENDS", "Formula", "ProvenanceManager", "decode", "decode_forest", "default_backend",
    "encode", "encode_forest",
]

#: Backend name → ``dd`` module, in order of preference.
BACKENDS: dict[str, str] = {"cudd": "dd.cudd", "python": "dd.autoref"}

Formula = Any  # a ``dd`` Function of this manager


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
    imposes a global order (e.g. depth-first labeling of the link graph).
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
        """Set each deleted variable in ``names`` to false (design decision 1)."""
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
        return len(_node_list(formula)[1])

    def to_expr(self, formula: Formula) -> str:
        """A readable expression; for small formulas and debugging only (design decision 8)."""
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
            from aspen.provenance.forest_native import encode_each_native  # builds on this

            native = encode_each_native(self, formulas)
            if native is not None:
                return native
        return [encode(f) for f in formulas]

    def decode(self, data: bytes) -> Formula:
        """Rebuild a formula in this manager from :meth:`encode` bytes."""
        return decode(self, data)


# -- byte codec -------------------------------------------------------------------------------
_MAGIC = 0xA5
_FALSE_REF, _TRUE_REF = 0, 1


def _node_list(formula: Formula) -> tuple[list[str], list[tuple[int, int, int]], int]:
    """Children-first list of (var index, low ref, high ref) of a complement-free ROBDD."""
    names, nodes, roots = _forest_node_list([formula])
    return names, nodes, roots[0]


def _forest_node_list(
    formulas: Sequence[Formula],
) -> tuple[list[str], list[tuple[int, int, int]], list[int]]:
    """One children-first node list for many roots: a node shared by several is listed once."""
    names: list[str] = []
    name_index: dict[str, int] = {}
    nodes: list[tuple[int, int, int]] = []
    refs: dict[int, int] = {}
    if not formulas:
        return names, nodes, []
    bdd = formulas[0].bdd
    false, true = bdd.false, bdd.true

    def ref_of(u: Formula) -> int:
        if u == false:
            return _FALSE_REF
        if u == true:
            return _TRUE_REF
        key = int(u)
        found = refs.get(key)
        if found is not None:
            return found
        # iterative post-order to stay clear of the recursion limit on deep BDDs
        stack: list[tuple[Formula, bool]] = [(u, False)]
        while stack:
            node, expanded = stack.pop()
            nkey = int(node)
            if nkey in refs:
                continue
            low, high = node.low, node.high
            if node.negated:
                low, high = ~low, ~high
            if not expanded:
                stack.append((node, True))
                for child in (high, low):
                    if child != false and child != true and int(child) not in refs:
                        stack.append((child, False))
                continue
            name = node.var
            if name not in name_index:
                name_index[name] = len(names)
                names.append(name)
            nodes.append((name_index[name], _child_ref(low, refs, false, true),
                          _child_ref(high, refs, false, true)))
            refs[nkey] = len(nodes) + 1
        return refs[key]

    roots = [ref_of(f) for f in formulas]
    # list names top level first, so a fresh decoding manager declares them in the same order
    levels = bdd.var_levels
    ordered = sorted(names, key=levels.__getitem__)
    remap = {name_index[n]: i for i, n in enumerate(ordered)}
    return ordered, [(remap[v], lo, hi) for v, lo, hi in nodes], roots


def _child_ref(u: Formula, refs: dict[int, int], false: Formula, true: Formula) -> int:
    if u == false:
        return _FALSE_REF
    if u == true:
        return _TRUE_REF
    return refs[int(u)]


def _put_varint(out: bytearray, value: int) -> None:
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def _get_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise ProvenanceError("truncated provenance bytes")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def encode(formula: Formula) -> bytes:
    """Encode a formula as bytes: magic, variable names, nodes (var, low, high), root.

    References are varints: 0 = false, 1 = true, k + 2 = the k-th node. Names travel with the
    nodes, so the bytes decode in any manager, whatever its variable order.

    >>> m = ProvenanceManager(backend="python")
    >>> f = m.or_(m.var("x1"), m.var("x2"))
    >>> decode(m, encode(f)) == f
    True
    >>> len(encode(m.false)), len(encode(m.var("x1")))
    (4, 10)
    """
    native = _encode_native(_MAGIC, [formula], with_count=False)
    return native if native is not None else _portable_bytes(_MAGIC, [formula], with_count=False)


#: name → its length-prefixed UTF-8 bytes: the same few variable names head most encodings
_NAME_BYTES: dict[str, bytes] = {}
_NAME_BYTES_KEPT = 1 << 20


def _name_bytes(magic: int, names: list[str]) -> bytearray:
    """Magic byte and variable names: the head of every encoding."""
    out = bytearray([magic])
    _put_varint(out, len(names))
    known = _NAME_BYTES
    for name in names:
        piece = known.get(name)
        if piece is None:
            raw = name.encode()
            prefix = bytearray()
            _put_varint(prefix, len(raw))
            if len(known) >= _NAME_BYTES_KEPT:
                known.clear()
            piece = known[name] = bytes(prefix) + raw
        out += piece
    return out


def _encode_native(magic: int, formulas: list[Formula], *, with_count: bool) -> bytes | None:
    """The compiled walk's bytes (with CUDD and the library built), else None."""
    from aspen.provenance.forest_native import encode_native  # it builds on this module

    return encode_native(magic, formulas, with_count)


def _portable_bytes(magic: int, formulas: list[Formula], *, with_count: bool) -> bytes:
    """What :func:`_encode_native` gives, walked in Python (any backend)."""
    names, nodes, roots = _forest_node_list(formulas)
    out = _node_bytes(magic, names, nodes)
    if with_count:
        _put_varint(out, len(roots))
    for root in roots:
        _put_varint(out, root)
    return bytes(out)


def _node_bytes(magic: int, names: list[str], nodes: list[tuple[int, int, int]]) -> bytearray:
    """Magic byte, variable names, then the (var, low, high) node list, as varints."""
    out = _name_bytes(magic, names)
    _put_varint(out, len(nodes))
    for var_index, low, high in nodes:
        _put_varint(out, var_index)
        _put_varint(out, low)
        _put_varint(out, high)
    return out


def _read_names(data: bytes, pos: int) -> tuple[list[str], int]:
    """The variable names written by :func:`_node_bytes`, and the position after them."""
    n_names, pos = _get_varint(data, pos)
    names: list[str] = []
    for _ in range(n_names):
        length, pos = _get_varint(data, pos)
        if pos + length > len(data):
            raise ProvenanceError("truncated provenance bytes")
        try:
            names.append(data[pos : pos + length].decode())
        except UnicodeDecodeError as err:
            raise ProvenanceError("corrupt provenance bytes (variable name not UTF-8)") from err
        pos += length
    return names, pos


def decode(manager: ProvenanceManager, data: bytes) -> Formula:
    """Rebuild a formula encoded by :func:`encode` inside ``manager``.

    The bytes are parsed and checked completely before anything is declared in ``manager``;
    any defect (bad magic, truncation, invalid UTF-8 name, dangling reference, trailing bytes)
    raises :class:`ProvenanceError`.
    """
    if not data or data[0] != _MAGIC:
        raise ProvenanceError("not an Aspen provenance encoding (bad magic byte)")
    names, pos = _read_names(data, 1)
    n_nodes, pos = _get_varint(data, pos)
    nodes: list[tuple[int, int, int]] = []
    for _ in range(n_nodes):
        var_index, pos = _get_varint(data, pos)
        low, pos = _get_varint(data, pos)
        high, pos = _get_varint(data, pos)
        if var_index >= len(names) or low >= len(nodes) + 2 or high >= len(nodes) + 2:
            raise ProvenanceError("corrupt provenance bytes (dangling reference)")
        nodes.append((var_index, low, high))
    root, pos = _get_varint(data, pos)
    if root >= len(nodes) + 2:
        raise ProvenanceError("corrupt provenance bytes (bad root)")
    if pos != len(data):
        raise ProvenanceError("corrupt provenance bytes (trailing data)")
    table: list[Formula] = [manager.false, manager.true]
    variables = [manager.var(n) for n in names]
    bdd = manager.bdd
    for var_index, low, high in nodes:
        table.append(bdd.ite(variables[var_index], table[high], table[low]))
    return table[root]


_FOREST_MAGIC = 0xA6


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
    native = _encode_native(_FOREST_MAGIC, formulas, with_count=True)
    return native if native is not None else _portable_bytes(_FOREST_MAGIC, formulas,
                                                             with_count=True)


def decode_forest(manager: ProvenanceManager, data: bytes) -> list[Formula]:
    """Rebuild the formulas of :func:`encode_forest` bytes inside ``manager`` (with CUDD, by the
    compiled loop of :mod:`aspen.provenance.forest_native` when it is built)."""
    if not data or data[0] != _FOREST_MAGIC:
        raise ProvenanceError("not an Aspen provenance forest encoding (bad magic byte)")
    from aspen.provenance.forest_native import forest_decoder  # it builds on this module

    native = forest_decoder(manager)
    if native is not None:
        return native(data)
    names, pos = _read_names(data, 1)
    variables = [manager.var(n) for n in names]
    table: list[Formula] = [manager.false, manager.true]
    ite = manager.bdd.ite
    append = table.append
    n_nodes, pos = _get_varint(data, pos)
    roots: list[Formula] = []
    try:  # a node refers only to earlier ones: a later one is not in the table yet
        for _ in range(n_nodes):
            var_index, pos = _get_varint(data, pos)
            low, pos = _get_varint(data, pos)
            high, pos = _get_varint(data, pos)
            append(ite(variables[var_index], table[high], table[low]))
        n_roots, pos = _get_varint(data, pos)
        for _ in range(n_roots):
            root, pos = _get_varint(data, pos)
            roots.append(table[root])
    except IndexError as err:
        raise ProvenanceError("corrupt provenance forest bytes (dangling reference)") from err
    if pos != len(data):
        raise ProvenanceError("corrupt provenance forest bytes (trailing data)")
    return roots
