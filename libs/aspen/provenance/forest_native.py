"""Decode a BDD forest in compiled code: the restore of a query node's state.

A cold restore of a 1,000-node query node decodes millions of BDD nodes; in Python each costs
three varint reads and a ``dd.cudd`` ``ite`` call (≈2 µs). :func:`forest_decoder` returns a
decoder whose varint parsing and ``Cudd_bddIte`` calls run in the small C library
``forest.c`` (compiled by ``infra/install.sh`` next to this module), with the CUDD functions
bound through :mod:`aspen.provenance.cudd_native`. It decodes exactly what
:func:`aspen.provenance.bdd.decode_forest` decodes, and raises the same errors on bad bytes.

Without the compiled library (not built, or the package shipped as a zip to a cluster) or with
the pure-Python backend, :func:`forest_decoder` gives ``None`` and the portable decoder runs.

>>> from aspen.provenance.bdd import ProvenanceManager, encode_forest
>>> m = ProvenanceManager(backend="python")
>>> forest_decoder(m) is None
True
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path

from aspen.errors import ProvenanceError
from aspen.provenance.bdd import Formula, ProvenanceManager, _get_varint, _read_names
from aspen.provenance.cudd_native import cached_on, cudd_handle

__all__ = ["LIBRARY", "forest_decoder", "native_library"]

#: The compiled ``forest.c`` (built by ``infra/install.sh``).
LIBRARY = Path(__file__).with_name("_forest.so")

_I64 = ctypes.c_int64
_PTR = ctypes.c_void_p
_loaded: list[ctypes.CDLL | None] = []


def native_library() -> ctypes.CDLL | None:
    """The loaded ``_forest.so`` with its signatures bound, or None when it is not built."""
    if not _loaded:
        library = None
        if LIBRARY.is_file():
            try:
                library = ctypes.CDLL(str(LIBRARY))
            except OSError:
                library = None
        if library is not None:
            library.aspen_varints.argtypes = (ctypes.c_char_p, _I64, _I64, _I64, _PTR)
            library.aspen_varints.restype = _I64
            library.aspen_build.argtypes = (_PTR,) * 5 + (_I64, _PTR, _I64, _PTR)
            library.aspen_build.restype = _I64
            library.aspen_release.argtypes = (_PTR, _PTR, _PTR, _I64, _I64)
            library.aspen_release.restype = None
            library.aspen_mentions.argtypes = (_PTR,) * 6 + (_I64, _I64, _PTR, _I64, _PTR)
            library.aspen_mentions.restype = _I64
        _loaded.append(library)
    return _loaded[0]


def forest_decoder(manager: ProvenanceManager) -> Callable[[bytes], list[Formula]] | None:
    """A compiled decoder of :func:`~aspen.provenance.bdd.encode_forest` bytes into
    ``manager``, or None (pure-Python backend, or the library is not built)."""
    return cached_on(manager, "_aspen_forest_decoder", _bind)


def _bind(manager: ProvenanceManager) -> Callable[[bytes], list[Formula]] | None:
    library = native_library()
    handle = cudd_handle(manager)
    if library is None or handle is None:
        return None
    address = ctypes.cast
    ite = address(handle.library.Cudd_bddIte, _PTR).value
    ref = address(handle.library.Cudd_Ref, _PTR).value
    deref = address(handle.library.Cudd_RecursiveDeref, _PTR).value
    wrap = manager.bdd._add_int  # the inverse of int(f): a Function holding its own reference

    def pointer(formula: Formula) -> int:
        return int(formula) - 2  # dd.cudd: int(f) is the DdNode pointer plus 2

    def read(data: bytes, pos: int, count: int) -> tuple[ctypes.Array, int]:
        values = (_I64 * count)()
        end = library.aspen_varints(data, len(data), pos, count, values)
        if end < 0:
            raise ProvenanceError("truncated provenance bytes")
        return values, end

    def decode(data: bytes) -> list[Formula]:
        names, pos = _read_names(data, 1)
        n_nodes, pos = _get_varint(data, pos)
        nodes, pos = read(data, pos, 3 * n_nodes)
        n_roots, pos = _get_varint(data, pos)
        roots, pos = read(data, pos, n_roots)
        if pos != len(data):
            raise ProvenanceError("corrupt provenance forest bytes (trailing data)")
        if any(r >= n_nodes + 2 for r in roots):
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
