"""Encode and decode a BDD forest in compiled code: messages and query node state.

A cold restore of a 1,000-node query node decodes millions of BDD nodes; in Python each costs
three varint reads and a ``dd.cudd`` ``ite`` call (≈2 µs). :func:`forest_decoder` returns a
decoder whose varint parsing and ``Cudd_bddIte`` calls run in the small C library
``forest.c`` (compiled by ``infra/install.sh`` next to this module), with the CUDD functions
bound through :mod:`aspen.provenance.cudd_native`. It decodes exactly what
:func:`aspen.provenance.bdd.decode_forest` decodes, and raises the same errors on bad bytes.

Encoding is the mirror image. A message bundle or a state dump lists every BDD node under its
formulas once, children first; in Python that walk costs a few microseconds per node and was
most of a round's time once formulas grew large. :func:`encode_native` walks the CUDD nodes in
the same library (``aspen_forest_nodes``) and writes the varints there (``aspen_forest_bytes``),
producing the same bytes as :func:`aspen.provenance.bdd.encode_forest`'s portable walk.

Without the compiled library (not built, or the package shipped as a zip to a cluster) or with
the pure-Python backend, :func:`forest_decoder` gives ``None`` and the portable decoder runs.

>>> from aspen.provenance.bdd import ProvenanceManager, encode_forest
>>> m = ProvenanceManager(backend="python")
>>> forest_decoder(m) is None
True
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from aspen.errors import ProvenanceError
from aspen.provenance.codec import (
    MAGIC,
    Formula,
    get_varint,
    listed_order,
    name_bytes,
    name_layout,
    read_names,
)
from aspen.provenance.cudd_native import cached_on, cudd_handle

if TYPE_CHECKING:
    from aspen.provenance.bdd import ProvenanceManager

__all__ = ["LIBRARY", "decode_each_native", "encode_each_native", "encode_native",
           "forest_decoder", "native_library"]

#: The compiled ``forest.c`` (built by ``infra/install.sh``).
LIBRARY = Path(__file__).with_name("_forest.so")

_I64 = ctypes.c_int64
_PTR = ctypes.c_void_p
_loaded: list[ctypes.CDLL | None] = []


def native_library() -> ctypes.CDLL | None:
    """The loaded ``_forest.so`` with its signatures bound, or None when it is not built (or
    is a stale build without every function: the portable code runs then)."""
    if not _loaded:
        library = None
        if LIBRARY.is_file():
            try:
                library = _bound(ctypes.CDLL(str(LIBRARY)))
            except (OSError, AttributeError):
                library = None
        _loaded.append(library)
    return _loaded[0]


def _bound(library: ctypes.CDLL) -> ctypes.CDLL:
    signatures = {
        "aspen_varints": ((ctypes.c_char_p, _I64, _I64, _I64, _PTR), _I64),
        "aspen_build": ((_PTR,) * 5 + (_I64, _PTR, _I64, _PTR), _I64),
        "aspen_release": ((_PTR, _PTR, _PTR, _I64, _I64), None),
        "aspen_mentions": ((_PTR,) * 6 + (_I64, _I64, _PTR, _I64, _PTR), _I64),
        "aspen_forest_nodes": ((_PTR,) * 4 + (_I64, _I64, _PTR, _I64) + (_PTR,) * 3, _I64),
        "aspen_forest_bytes": ((_PTR, _I64, _PTR, _PTR, _I64, _I64, _PTR), _I64),
        "aspen_encode_each": ((_PTR,) * 6 + (_I64, _I64, _PTR, _I64) + (_PTR,) * 2
                              + (_I64, _PTR), _I64),
        "aspen_decode_each": ((_PTR,) * 5 + (ctypes.c_char_p,) + (_PTR,) * 5
                              + (_I64, _PTR, _PTR, _PTR), _I64),
    }
    for name, (argtypes, restype) in signatures.items():
        function = getattr(library, name)
        function.argtypes = argtypes
        function.restype = restype
    return library


def forest_decoder(manager: ProvenanceManager) -> Callable[[bytes], list[Formula]] | None:
    """A compiled decoder of :func:`~aspen.provenance.bdd.encode_forest` bytes into
    ``manager``, or None (pure-Python backend, or the library is not built)."""
    return cached_on(manager, "_aspen_forest_decoder", _bind)


def _build_calls(handle: Any) -> tuple[int, int, int]:
    """The addresses of CUDD's ``ite``, ``Ref`` and ``RecursiveDeref`` that the compiled
    builders call."""
    def address(function: Any) -> int:
        return ctypes.cast(function, _PTR).value  # type: ignore[return-value]

    library = handle.library
    return (address(library.Cudd_bddIte), address(library.Cudd_Ref),
            address(library.Cudd_RecursiveDeref))


def _bind(manager: ProvenanceManager) -> Callable[[bytes], list[Formula]] | None:
    library = native_library()
    handle = cudd_handle(manager)
    if library is None or handle is None:
        return None
    ite, ref, deref = _build_calls(handle)
    wrap = manager.bdd._add_int  # the inverse of int(f): a Function holding its own reference

    def pointer(formula: Formula) -> int:
        return int(formula) - 2  # dd.cudd: int(f) is the DdNode pointer plus 2

    def read(data: bytes, pos: int, count: int) -> tuple[ctypes.Array, int]:
        if count > len(data) - pos:  # a varint takes a byte at least: allocate no more
            raise ProvenanceError("truncated provenance bytes")
        values = (_I64 * count)()
        end = library.aspen_varints(data, len(data), pos, count, values)
        if end < 0:
            raise ProvenanceError("truncated provenance bytes")
        return values, end

    def decode(data: bytes) -> list[Formula]:
        names, pos = read_names(data, 1)
        n_nodes, pos = get_varint(data, pos)
        nodes, pos = read(data, pos, 3 * n_nodes)
        n_roots, pos = get_varint(data, pos)
        roots, pos = read(data, pos, n_roots)
        if pos != len(data):
            raise ProvenanceError("corrupt provenance forest bytes (trailing data)")
        if n_roots and max(roots) >= n_nodes + 2:
            raise ProvenanceError("corrupt provenance forest bytes (bad root)")
        variables = (_PTR * max(len(names), 1))(*[pointer(manager.var(n)) for n in names])
        table = (_PTR * (n_nodes + 2))(pointer(manager.false), pointer(manager.true))
        status = library.aspen_build(handle.manager, ite, ref, deref, variables, len(names),
                                     nodes, n_nodes, table)
        if status == -1:
            raise ProvenanceError("corrupt provenance forest bytes (dangling reference)")
        if status < 0:
            raise ProvenanceError("CUDD ran out of memory decoding a provenance forest")
        try:
            return [wrap(table[r] + 2) for r in roots]
        finally:
            library.aspen_release(handle.manager, deref, table, 2, n_nodes + 2)

    return decode


def decode_each_native(manager: ProvenanceManager,
                       encodings: Sequence[bytes]) -> list[Formula] | None:
    """Many one-formula encodings (:func:`~aspen.provenance.bdd.encode` bytes) decoded in one
    compiled call — a view's rows: their names read at once (:func:`name_layout`), every row
    rebuilt node by node in C — or None (pure-Python backend, or the library is not built).
    Raises :class:`ProvenanceError` on corrupt bytes, as the portable decoder does.

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> decode_each_native(m, [m.encode(m.var("x"))]) is None  # not CUDD: the portable code
    True
    """
    import numpy as np

    library = native_library()
    handle = cudd_handle(manager)
    if library is None or handle is None:
        return None
    if not encodings:
        return []
    rows, places, ids, names, after = name_layout(encodings)
    # new variables declared so that each row's node list rebuilds node by node
    manager.declare_in_order(listed_order(rows, places, ids, names))
    order = np.lexsort((places, rows))  # each row's names in its own order
    counts = np.bincount(rows, minlength=len(encodings)).astype(np.int64)
    starts = (np.cumsum(counts) - counts).astype(np.int64)
    flat_ids = np.ascontiguousarray(ids[order], np.int64)
    ends = np.cumsum(np.fromiter(map(len, encodings), np.int64, len(encodings)))
    after = np.ascontiguousarray(after, np.int64)
    ite, ref, deref = _build_calls(handle)
    variables = (_PTR * max(len(names), 1))(*[int(manager.var(n)) - 2 for n in names])
    out = (_PTR * len(encodings))()

    def pointer_of(array: Any) -> int:
        return array.ctypes.data

    status = library.aspen_decode_each(
        handle.manager, ite, ref, deref, variables, b"".join(encodings), pointer_of(after),
        pointer_of(ends), pointer_of(starts), pointer_of(counts), pointer_of(flat_ids),
        len(encodings), int(manager.false) - 2, int(manager.true) - 2, out)
    done = len(encodings) if status == 0 else (status + 2**63 if status < -2**62
                                              else -1 - status)
    wrap = manager.bdd._add_int  # a Function holding its own reference
    try:
        formulas = [wrap(out[r] + 2) for r in range(done)]
    finally:
        library.aspen_release(handle.manager, deref, out, 0, done)
    if status == 0:
        return formulas
    if status < -2**62:
        raise ProvenanceError("CUDD ran out of memory decoding provenance")
    raise ProvenanceError(f"corrupt provenance bytes (row {done})")


Encoder = Callable[[int, Sequence[Formula], bool], bytes]
_encoder: list[Encoder | None] = []


def encode_native(magic: int, formulas: Sequence[Formula], with_count: bool) -> bytes | None:
    """``formulas`` (of one ``dd.cudd`` manager) in the byte format of
    :func:`~aspen.provenance.bdd.encode_forest` (``with_count``: the root count precedes the
    roots) or :func:`~aspen.provenance.bdd.encode` (one formula, no count), after the ``magic``
    byte; None when the compiled walk does not apply (the pure-Python backend, or the library
    is not built).

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> encode_native(0xA6, [m.true], True) is None
    True
    """
    if not _encoder:
        _encoder.append(_bind_encoder())
    encoder = _encoder[0]
    if encoder is None or not formulas or type(formulas[0]) is not _cudd_function():
        return None
    return encoder(magic, formulas, with_count)


def _cudd_function() -> type | None:
    try:
        import dd.cudd as cudd_module
    except ImportError:
        return None
    return cudd_module.Function


def _bind_encoder() -> Encoder | None:
    library = native_library()
    try:  # any dd.cudd manager: the layout and the CUDD library are the same for all of them
        import dd.cudd as cudd_module

        handle = cudd_handle(SimpleNamespace(bdd=cudd_module.BDD()))
    except Exception:  # noqa: BLE001 - dd.cudd is missing or fails: use the portable walk
        handle = None
    if library is None or handle is None:
        return None
    walk = [ctypes.cast(getattr(handle.library, name), _PTR).value
            for name in ("Cudd_NodeReadIndex", "Cudd_T", "Cudd_E")]
    sharing_size = handle.function("Cudd_SharingSize", (_PTR, ctypes.c_int), ctypes.c_int)

    def encode(magic: int, formulas: Sequence[Formula], with_count: bool) -> bytes:
        bdd = formulas[0].bdd
        n_roots = len(formulas)
        roots = (_PTR * n_roots)(*[int(f) - 2 for f in formulas])
        # a CUDD node may be listed twice (reached regular and complemented), constants never
        shared = sharing_size(roots, n_roots)
        if shared < 0:
            raise MemoryError("CUDD ran out of memory sizing a provenance forest")
        capacity = 2 * shared
        n_indices = bdd._number_of_cudd_vars()
        nodes = (_I64 * (3 * capacity))()
        root_refs = (_I64 * n_roots)()
        local = (_I64 * max(min(n_indices, capacity), 1))()  # a variable per node at most
        n_local = _I64()
        n_nodes = library.aspen_forest_nodes(*walk, roots, n_roots, n_indices, nodes, capacity,
                                             root_refs, local, ctypes.byref(n_local))
        if n_nodes in (-2, -3):  # cannot happen: a CUDD node is listed at most twice, and
            # Cudd_ReadSize bounds the variable indices
            raise ProvenanceError("a provenance forest does not match its CUDD manager")
        if n_nodes < 0:
            raise MemoryError("out of memory encoding a provenance forest")
        # variables top level first, so a fresh decoding manager declares them in that order
        index_name, level_of = bdd._var_with_index, bdd.level_of_var
        names = [index_name[index] for index in local[: n_local.value]]
        levels = [level_of(name) for name in names]
        order = sorted(range(len(names)), key=levels.__getitem__)
        ranks = [0] * len(names)
        for position, variable in enumerate(order):
            ranks[variable] = position
        rank = (_I64 * max(len(names), 1))(*ranks)
        out = (ctypes.c_uint8 * (30 * n_nodes + 10 * (n_roots + 2)))()
        written = library.aspen_forest_bytes(nodes, n_nodes, rank, root_refs, n_roots,
                                             int(with_count), out)
        head = name_bytes(magic, [names[i] for i in order])
        return bytes(head) + ctypes.string_at(out, written)

    return encode


EachEncoder = Callable[[Sequence[Formula]], list[bytes]]


def encode_each_native(manager: ProvenanceManager, formulas: Sequence[Formula]
                       ) -> list[bytes] | None:
    """``[encode(f) for f in formulas]`` (:func:`~aspen.provenance.bdd.encode`: each formula
    on its own) in one call of the compiled walk, for the many small formulas of a view's
    changed rows; None when it does not apply (the pure-Python backend, or the library is not
    built).

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> encode_each_native(m, [m.true]) is None
    True
    """
    encoder = cached_on(manager, "_aspen_forest_encode_each", _bind_each)
    return None if encoder is None else encoder(formulas)


def _bind_each(manager: ProvenanceManager) -> EachEncoder | None:
    library = native_library()
    handle = cudd_handle(manager)
    if library is None or handle is None:
        return None
    walk = [ctypes.cast(getattr(handle.library, name), _PTR).value
            for name in ("Cudd_NodeReadIndex", "Cudd_T", "Cudd_E", "Cudd_ReadPerm")]
    bdd = manager.bdd
    head = name_bytes(MAGIC, [])  # the head of a formula without variables
    sizes = [1 << 16, 1 << 12]  # the output buffers' sizes, kept across calls as they grow

    def encode_each(formulas: Sequence[Formula]) -> list[bytes]:
        count = len(formulas)
        roots = (_PTR * max(count, 1))(*[int(f) - 2 for f in formulas])
        ends, var_ends = (_I64 * max(count, 1))(), (_I64 * max(count, 1))()
        n_indices = bdd._number_of_cudd_vars()
        index_name = bdd._var_with_index
        encoded: list[bytes] = []
        while len(encoded) < count:
            first = len(encoded)
            out = (ctypes.c_uint8 * sizes[0])()
            variables = (_I64 * sizes[1])()
            done = library.aspen_encode_each(
                *walk, handle.manager, ctypes.byref(roots, first * ctypes.sizeof(_PTR)),
                count - first, n_indices, out, sizes[0], ends, variables, sizes[1], var_ends)
            if done == -3:  # cannot happen: Cudd_ReadSize bounds the variable indices
                raise ProvenanceError("a provenance formula does not match its CUDD manager")
            if done < 0:
                raise MemoryError("out of memory encoding provenance formulas")
            if done == 0:  # the next formula does not fit: larger buffers
                sizes[0], sizes[1] = 2 * sizes[0], 2 * sizes[1]
                continue
            body = ctypes.string_at(out, ends[done - 1])
            names = [index_name[index] for index in variables[: var_ends[done - 1]]]
            start = var_start = 0
            for k in range(done):
                end, var_end = ends[k], var_ends[k]
                prefix = (name_bytes(MAGIC, names[var_start:var_end]) if var_end > var_start
                          else head)
                encoded.append(bytes(prefix) + body[start:end])
                start, var_start = end, var_end
        return encoded

    return encode_each
