"""The byte codec of provenance formulas: the format, and its portable (pure Python) encoder and
decoders, for any ``dd`` backend.

A formula's bytes list its BDD's nodes children first: a magic byte, the variable names, the
nodes as (variable, low, high) references, then the root. References are varints
(:mod:`aspen.provenance.varint`): 0 = false, 1 = true, k + 2 = the k-th node. Names travel
with the nodes, so the bytes decode in any manager, whatever its variable order. A *forest*
(:data:`FOREST_MAGIC`) lists many formulas' nodes at once, every shared node once, then the
count of roots and the roots. With CUDD the compiled walk of
:mod:`aspen.provenance.forest_native` writes and reads the same bytes;
:mod:`aspen.provenance.bdd` chooses between the two.

>>> from aspen.provenance.bdd import ProvenanceManager
>>> m = ProvenanceManager(backend="python")
>>> f = m.or_(m.var("x1"), m.var("x2"))
>>> data = portable_bytes(MAGIC, [f], with_count=False)
>>> data[0] == MAGIC, decode(m, data) == f
(True, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from aspen.errors import ProvenanceError
from aspen.provenance.varint import get_varint as _get_varint
from aspen.provenance.varint import put_varint as _put_varint
from aspen.provenance.varint import varint_array

if TYPE_CHECKING:
    from aspen.provenance.bdd import ProvenanceManager

__all__ = [
    "FOREST_MAGIC", "MAGIC", "Formula", "decode", "decode_forest_portable", "get_varint",
    "listed_order", "name_bytes", "name_layout", "name_occurrences", "names_order", "node_list",
    "portable_bytes", "read_names", "stored_order",
]

Formula = Any  # a ``dd`` Function of a :class:`~aspen.provenance.bdd.ProvenanceManager`

#: The first byte of one formula's encoding, and of a forest's.
MAGIC = 0xA5
FOREST_MAGIC = 0xA6
_FALSE_REF, _TRUE_REF = 0, 1
_WHAT = "provenance bytes"  # how a malformed varint's error names these bytes


def node_list(formula: Formula) -> tuple[list[str], list[tuple[int, int, int]], int]:
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


def get_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``data[pos]`` and the position after it (:mod:`aspen.provenance.varint`;
    ProvenanceError: truncated or malformed).

    >>> get_varint(bytes.fromhex("a5ac02"), 1)
    (300, 3)
    """
    return _get_varint(data, pos, _WHAT)


#: name → its length-prefixed UTF-8 bytes: the same few variable names head most encodings
_NAME_BYTES: dict[str, bytes] = {}
_NAME_BYTES_KEPT = 1 << 20


def name_bytes(magic: int, names: list[str]) -> bytearray:
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


def portable_bytes(magic: int, formulas: list[Formula], *, with_count: bool) -> bytes:
    """The bytes of ``formulas`` after the ``magic`` byte (``with_count``: the root count
    precedes the roots, as in a forest), walked in Python (any backend)."""
    names, nodes, roots = _forest_node_list(formulas)
    out = _node_bytes(magic, names, nodes)
    if with_count:
        _put_varint(out, len(roots))
    for root in roots:
        _put_varint(out, root)
    return bytes(out)


def _node_bytes(magic: int, names: list[str], nodes: list[tuple[int, int, int]]) -> bytearray:
    """Magic byte, variable names, then the (var, low, high) node list, as varints."""
    out = name_bytes(magic, names)
    _put_varint(out, len(nodes))
    for var_index, low, high in nodes:
        _put_varint(out, var_index)
        _put_varint(out, low)
        _put_varint(out, high)
    return out


def read_names(data: bytes, pos: int) -> tuple[list[str], int]:
    """The variable names written by :func:`_node_bytes`, and the position after them."""
    n_names, pos = get_varint(data, pos)
    names: list[str] = []
    for _ in range(n_names):
        length, pos = get_varint(data, pos)
        if pos + length > len(data):
            raise ProvenanceError("truncated provenance bytes")
        try:
            names.append(data[pos : pos + length].decode())
        except UnicodeDecodeError as err:
            raise ProvenanceError("corrupt provenance bytes (variable name not UTF-8)") from err
        pos += length
    return names, pos


def _varints_at(buf: Any, pos: Any, end: Any) -> tuple[Any, Any]:
    """The varint at each ``buf[pos]`` (numpy, every position at once) and the positions after
    them; ProvenanceError when one runs past its encoding's ``end``."""
    import numpy as np

    value = np.zeros(len(pos), dtype=np.uint64)
    going = np.ones(len(pos), dtype=bool)
    pos = pos.copy()
    for shift in range(0, 70, 7):
        if not going.any():
            return value, pos
        if (pos[going] >= end[going]).any():
            raise ProvenanceError("truncated provenance bytes")
        byte = buf[pos[going]].astype(np.uint64)
        value[going] |= (byte & np.uint64(0x7F)) << np.uint64(shift)
        pos[going] += 1
        going[going] = (byte & np.uint64(0x80)) != 0
    raise ProvenanceError("corrupt provenance bytes (varint longer than ten bytes)")


def name_occurrences(encodings: Sequence[bytes]) -> tuple[Any, Any, list[str]]:
    """Every encoding's variable names at once (:func:`read_names` of each, vectorised with
    numpy): ``(rows, ids, names)``, name ``names[ids[i]]`` occurring in encoding ``rows[i]``
    (in no particular order). Nothing past the names is read or checked.

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> a, b = m.var("a"), m.var("bb")
    >>> rows, ids, names = name_occurrences([m.encode(m.and_(a, b)), m.encode(b), m.encode(m.true)])
    >>> sorted((int(r), names[i]) for r, i in zip(rows, ids))
    [(0, 'a'), (0, 'bb'), (1, 'bb')]
    """
    rows, _places, ids, names, _after = name_layout(encodings)
    return rows, ids, names


def name_layout(encodings: Sequence[bytes]) -> tuple[Any, Any, Any, list[str], Any]:
    """:func:`name_occurrences` with where each name sits: ``(rows, places, ids, names,
    after)`` — name ``names[ids[i]]`` is the ``places[i]``-th name of encoding ``rows[i]``, and
    ``after[r]`` is where encoding ``r``'s node section starts (its node count), in the bytes
    of ``encodings`` joined.

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> rows, places, ids, names, after = name_layout([m.encode(m.var("ab")), m.encode(m.true)])
    >>> [names[i] for i in ids], places.tolist(), after.tolist()
    (['ab'], [0], [5, 12])
    """
    import numpy as np

    if not encodings:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, [], empty
    lengths = np.fromiter((len(data) for data in encodings), np.int64, len(encodings))
    buf = np.frombuffer(b"".join(encodings), np.uint8)
    end = np.cumsum(lengths)
    start = end - lengths
    if (lengths == 0).any() or (buf[start[lengths > 0]] != MAGIC).any():
        raise ProvenanceError("not an Aspen provenance encoding (bad magic byte)")
    count, pos = _varints_at(buf, start + 1, end)
    count = count.astype(np.int64)
    row_parts, at_parts, len_parts, place_parts = [], [], [], []
    active = np.flatnonzero(count > 0)
    k = 0
    while active.size:  # the k-th name of every encoding that has more than k
        size, after = _varints_at(buf, pos[active], end[active])
        size = size.astype(np.int64)
        if (after + size > end[active]).any():
            raise ProvenanceError("truncated provenance bytes")
        row_parts.append(active)
        place_parts.append(np.full(len(active), k, np.int64))
        at_parts.append(after)
        len_parts.append(size)
        pos[active] = after + size
        k += 1
        active = active[count[active] > k]
    if not row_parts:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, [], pos
    rows = np.concatenate(row_parts)
    places = np.concatenate(place_parts)
    at = np.concatenate(at_parts)
    size = np.concatenate(len_parts)
    ids = np.empty(len(rows), np.int64)
    names: list[str] = []
    for length in np.unique(size).tolist():  # names of one length compared as fixed bytes
        which = np.flatnonzero(size == length)
        if length == 0:
            cells = np.zeros((len(which), 1), np.uint8)
        else:
            cells = buf[at[which, None] + np.arange(length)]
        cells = np.ascontiguousarray(cells).view(np.dtype((np.void, cells.shape[1]))).ravel()
        unique, inverse = np.unique(cells, return_inverse=True)
        ids[which] = inverse.ravel() + len(names)
        for raw in unique:
            data = bytes(raw)[:length]
            try:
                names.append(data.decode())
            except UnicodeDecodeError as err:
                raise ProvenanceError(
                    "corrupt provenance bytes (variable name not UTF-8)") from err
    return rows, places, ids, names, pos


def listed_order(rows: Any, places: Any, ids: Any, names: list[str]) -> list[str]:
    """A variable order (top first) that keeps every encoding's name list in its order, from
    :func:`name_layout`'s arrays: an encoding lists its names in its writer's level order, so
    consecutive names are (above, below) pairs, and any linear extension of their union lets
    every node list rebuild node by node. Pairs from encodings written under different orders
    may form a cycle, broken at an arbitrary pair (any order is correct; only speed depends on
    it).

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> x, y, z = m.var("x"), m.var("y"), m.var("z")
    >>> listed_order(*name_layout([m.encode(m.and_(y, z)), m.encode(m.and_(x, y))])[:4])
    ['x', 'y', 'z']
    """
    import graphlib

    import numpy as np

    if not names:
        return []
    order = np.lexsort((places, rows))
    in_row, named = rows[order], ids[order]
    same = in_row[1:] == in_row[:-1]
    width = len(names)
    pairs = np.unique(named[:-1][same] * width + named[1:][same]).tolist()
    above: dict[int, set[int]] = {k: set() for k in range(width)}
    for pair in pairs:
        above[pair % width].add(pair // width)
    while True:
        try:
            return [names[k] for k in graphlib.TopologicalSorter(above).static_order()]
        except graphlib.CycleError as err:
            cycle = err.args[1]
            above[cycle[1]].discard(cycle[0])


def names_order(encodings: Sequence[bytes]) -> list[str]:
    """:func:`listed_order` of ``encodings``: a variable order under which every one of them
    rebuilds node by node, from their name lists alone (read at once, no node is parsed).

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> x, y = m.var("x"), m.var("y")
    >>> names_order([m.encode(m.or_(x, y))])
    ['x', 'y']
    """
    return listed_order(*name_layout(encodings)[:4])


def decode(manager: ProvenanceManager, data: bytes) -> Formula:
    """Rebuild a formula encoded by :func:`aspen.provenance.bdd.encode` inside ``manager``.

    The bytes are parsed and checked completely before anything is declared in ``manager``;
    any defect (bad magic, truncation, invalid UTF-8 name, dangling reference, trailing bytes)
    raises :class:`ProvenanceError`.
    """
    if not data or data[0] != MAGIC:
        raise ProvenanceError("not an Aspen provenance encoding (bad magic byte)")
    names, pos = read_names(data, 1)
    n_nodes, pos = _get_varint(data, pos, _WHAT)
    nodes: list[tuple[int, int, int]] = []
    for _ in range(n_nodes):
        var_index, pos = _get_varint(data, pos, _WHAT)
        low, pos = _get_varint(data, pos, _WHAT)
        high, pos = _get_varint(data, pos, _WHAT)
        if var_index >= len(names) or low >= len(nodes) + 2 or high >= len(nodes) + 2:
            raise ProvenanceError("corrupt provenance bytes (dangling reference)")
        nodes.append((var_index, low, high))
    root, pos = _get_varint(data, pos, _WHAT)
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


def decode_forest_portable(manager: ProvenanceManager, data: bytes) -> list[Formula]:
    """Rebuild the formulas of forest bytes inside ``manager``, in Python (any backend); the
    caller has checked the magic byte (:func:`aspen.provenance.bdd.decode_forest`)."""
    names, pos = read_names(data, 1)
    variables = [manager.var(n) for n in names]
    table: list[Formula] = [manager.false, manager.true]
    ite = manager.bdd.ite
    append = table.append
    n_nodes, pos = _get_varint(data, pos, _WHAT)
    roots: list[Formula] = []
    try:  # a node refers only to earlier ones: a later one is not in the table yet
        for _ in range(n_nodes):
            var_index, pos = _get_varint(data, pos, _WHAT)
            low, pos = _get_varint(data, pos, _WHAT)
            high, pos = _get_varint(data, pos, _WHAT)
            append(ite(variables[var_index], table[high], table[low]))
        n_roots, pos = _get_varint(data, pos, _WHAT)
        for _ in range(n_roots):
            root, pos = _get_varint(data, pos, _WHAT)
            roots.append(table[root])
    except IndexError as err:
        raise ProvenanceError("corrupt provenance forest bytes (dangling reference)") from err
    if pos != len(data):
        raise ProvenanceError("corrupt provenance forest bytes (trailing data)")
    return roots


def stored_order(encodings: Iterable[bytes], min_bytes: int = 0) -> list[str]:
    """A variable order (top first) under which every formula of ``encodings`` (bytes of
    :func:`aspen.provenance.bdd.encode`) keeps the node list it was stored with.

    In a stored node list a node's variable sits above its children's, so the union of those
    (parent, child) pairs over all formulas is a partial order; any linear extension of it lets
    a decoder rebuild each node in one step. Decoding under another order rebuilds the function
    from scratch, which for a region formula stored with a million nodes takes minutes. Formulas
    stored under different orders can make the pairs cyclic; the cycle is then broken at an
    arbitrary pair (any order is correct, only the decoding speed depends on it). Encodings
    shorter than ``min_bytes`` are left out: a small formula rebuilds quickly in any order, and
    most of a view's formulas are small.

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> x, y, z = m.var("x"), m.var("y"), m.var("z")
    >>> stored_order([m.encode(m.or_(x, m.and_(y, z))), m.encode(y)])
    ['x', 'y', 'z']
    """
    import graphlib

    import numpy as np

    below: dict[str, set[str]] = {}  # variable → the variables directly above it
    for data in encodings:
        if not data or data[0] != MAGIC:
            raise ProvenanceError("not an Aspen provenance encoding (bad magic byte)")
        if len(data) < min_bytes:  # small: rebuilt quickly in any order
            continue
        names, pos = read_names(data, 1)
        for name in names:
            below.setdefault(name, set())
        n_nodes, pos = get_varint(data, pos)
        if n_nodes == 0:
            continue
        values = varint_array(data, pos, _WHAT)
        if values.size != 3 * n_nodes + 1:
            raise ProvenanceError("corrupt provenance bytes (node count)")
        nodes = values[: 3 * n_nodes].reshape(n_nodes, 3)
        var = nodes[:, 0]
        if var.max() >= len(names):
            raise ProvenanceError("corrupt provenance bytes (dangling reference)")
        pairs = []
        for column in (1, 2):
            child = nodes[:, column]
            inner = child >= 2
            if (child[inner] - 2 >= n_nodes).any():
                raise ProvenanceError("corrupt provenance bytes (dangling reference)")
            pairs.append(np.stack([var[inner], var[child[inner] - 2]], axis=1))
        both = np.concatenate(pairs)
        for pair in np.unique(both[:, 0] * len(names) + both[:, 1]).tolist():
            below[names[pair % len(names)]].add(names[pair // len(names)])
    while True:
        try:
            return list(graphlib.TopologicalSorter(below).static_order())
        except graphlib.CycleError as err:
            cycle = err.args[1]
            below[cycle[1]].discard(cycle[0])
