"""Find and load the compiled core (``_core.so``, built from ``libs/aspen_core`` by
``infra/install.sh``) and bind it to the CUDD library of a manager.

The core is a Rust ``cdylib`` with a C ABI; like ``forest.c`` it links no CUDD: the CUDD
functions it calls are handed over as pointers bound from the loaded ``dd.cudd`` extension
(:mod:`aspen.provenance.cudd_native`). :func:`core_available` says whether a manager can use it
(a ``dd.cudd`` manager and a built library).

>>> from aspen.provenance import ProvenanceManager
>>> core_available(ProvenanceManager(backend="python"))
False
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aspen.provenance.cudd_native import cudd_handle

if TYPE_CHECKING:
    from aspen.provenance.bdd import ProvenanceManager

__all__ = ["ERRORS", "LIBRARY", "CoreBinding", "bind_core", "core_available", "core_library"]

#: The compiled core, next to this module.
LIBRARY = Path(__file__).with_name("_core.so")

#: The core's error codes (negative returns) and what they mean, for one-line messages.
ERRORS: dict[int, str] = {
    -1: "CUDD ran out of memory in the compiled core; the closure is incomplete: rebuild it",
    -2: "the compiled core was called with a bad argument",
    -3: "the compiled core failed earlier (out of memory); the closure is incomplete: rebuild it",
    -4: "the compiled core hit an internal error; the closure is incomplete: rebuild it",
}

_PTR = ctypes.c_void_p
_I64 = ctypes.c_int64
_INT = ctypes.c_int
_U64 = ctypes.c_uint64

_SIGNATURES: dict[str, tuple[tuple[Any, ...], Any]] = {
    "aspen_core_new": ((_PTR,) * 10, _PTR),
    "aspen_core_free": ((_PTR,), None),
    "aspen_core_add_links": ((_PTR, _I64, _PTR, _PTR), _I64),
    "aspen_core_set": ((_PTR, _INT, _I64, _PTR, _PTR), _I64),
    "aspen_core_run": ((_PTR,), _I64),
    "aspen_core_index": ((_PTR,), _I64),
    "aspen_core_delete": ((_PTR, _PTR, _I64, _PTR), _I64),
    "aspen_core_len": ((_PTR, _INT), _I64),
    "aspen_core_get": ((_PTR, _INT, _U64), _PTR),
    "aspen_core_items": ((_PTR, _INT, _PTR, _PTR, _I64), _I64),
    "aspen_core_track": ((_PTR, _INT), _I64),
    "aspen_core_journal_len": ((_PTR,), _I64),
    "aspen_core_take_journal": ((_PTR, _PTR, _PTR, _I64), _I64),
    "aspen_core_stats": ((_PTR, _PTR, _I64), _I64),
    "aspen_core_set_lazy": ((_PTR, _INT), _I64),
    "aspen_core_flush": ((_PTR,), _I64),
    "aspen_core_alternatives": ((_PTR,), _I64),
    "aspen_core_buffered": ((_PTR, _PTR, _PTR, _I64), _I64),
    "aspen_core_targets": ((_PTR, _I64, _PTR), _I64),
    "aspen_paths_new": ((_PTR,) * 10, _PTR),
    "aspen_paths_free": ((_PTR,), None),
    "aspen_paths_add_links": ((_PTR, _I64, _PTR, _PTR, _PTR, _PTR), _I64),
    "aspen_paths_run": ((_PTR,), _I64),
    "aspen_paths_index": ((_PTR,), _I64),
    "aspen_paths_delete": ((_PTR, _PTR, _I64, _PTR), _I64),
    "aspen_paths_len": ((_PTR, _INT), _I64),
    "aspen_paths_rows": ((_PTR, _INT, _PTR, _PTR, _PTR, _PTR, _PTR, _PTR, _I64), _I64),
    "aspen_paths_cells": ((_PTR, _I64, _PTR, _PTR, _I64), _I64),
    "aspen_paths_links": ((_PTR, _PTR, _PTR, _PTR, _PTR, _I64), _I64),
    "aspen_paths_track": ((_PTR, _INT), _I64),
    "aspen_paths_stats": ((_PTR, _PTR, _I64), _I64),
    "aspen_paths_minima": ((_PTR, _INT, _PTR, _PTR, _PTR, _I64), _I64),
}

_loaded: list[ctypes.CDLL | None] = []


def core_library() -> ctypes.CDLL | None:
    """The loaded ``_core.so`` with its signatures bound, or None when it is not built (or is
    a stale build without every function)."""
    if not _loaded:
        library = None
        if LIBRARY.is_file():
            try:
                library = ctypes.CDLL(str(LIBRARY))
                for name, (argtypes, restype) in _SIGNATURES.items():
                    function = getattr(library, name)
                    function.argtypes = argtypes
                    function.restype = restype
            except (OSError, AttributeError):
                library = None
        _loaded.append(library)
    return _loaded[0]


@dataclass(frozen=True)
class CoreBinding:
    """The loaded core and the CUDD side of one manager: the ``DdManager *`` and the
    addresses of the CUDD functions the core calls, in :func:`aspen_core_new`'s order."""

    library: Any
    manager: int
    functions: tuple[int, ...]


def bind_core(manager: ProvenanceManager) -> CoreBinding | None:
    """The :class:`CoreBinding` of ``manager``, or None (pure-Python backend, or the core is
    not built)."""
    library = core_library()
    handle = cudd_handle(manager)
    if library is None or handle is None:
        return None
    try:
        functions = tuple(
            ctypes.cast(getattr(handle.library, name), _PTR).value or 0
            for name in ("Cudd_bddAnd", "Cudd_bddOr", "Cudd_bddLeq", "Cudd_bddLeqUnless",
                         "Cudd_Cofactor", "Cudd_Ref", "Cudd_RecursiveDeref",
                         "Cudd_SupportIndices"))
    except AttributeError:
        return None
    if not all(functions):
        return None
    return CoreBinding(library, handle.manager, functions)


def core_available(manager: ProvenanceManager) -> bool:
    """Whether the compiled core can serve ``manager`` (a ``dd.cudd`` manager, library built)."""
    return bind_core(manager) is not None
