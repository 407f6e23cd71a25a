"""CUDD functions that ``dd.cudd`` (0.6) does not expose, called through ``ctypes``.

The loaded ``dd.cudd`` extension carries the whole CUDD library, so its symbols can be bound
with ``ctypes``; what is needed besides is the ``DdManager *`` of a ``dd.cudd.BDD`` and the
``DdNode *`` of a ``Function``, read from the extension's object layout. The layout is checked on
live objects before use (the manager pointer read from a ``Function`` must equal the one read
from its ``BDD``, and the node pointer must equal ``int(f) - 2``); any mismatch, or the
pure-Python backend, gives ``None`` and the callers fall back to portable code.

>>> from aspen.provenance import ProvenanceManager
>>> cudd_handle(ProvenanceManager(backend="python")) is None
True
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from aspen.provenance.bdd import ProvenanceManager

__all__ = ["CuddHandle", "cached_on", "cudd_handle"]

T = TypeVar("T")

_WORD = ctypes.sizeof(ctypes.c_void_p)


def _read_word(address: int, offset: int) -> int:
    return ctypes.c_void_p.from_address(address + offset).value or 0


@dataclass(frozen=True)
class CuddHandle:
    """The CUDD library of a manager and its ``DdManager *`` (a node is ``int(f) - 2``)."""

    library: Any
    manager: int

    @cached_property
    def cofactor(self) -> Any:
        """``Cudd_Cofactor(manager, f, cube) -> DdNode *`` (unreferenced; NULL on failure)."""
        return self.function("Cudd_Cofactor", (ctypes.c_void_p,) * 3, ctypes.c_void_p)

    def function(self, name: str, argtypes: Sequence[Any], restype: Any) -> Any:
        """Bind the CUDD function ``name`` with its C signature."""
        func = getattr(self.library, name)
        func.argtypes = tuple(argtypes)
        func.restype = restype
        return func


_UNSET = object()


def cached_on(manager: ProvenanceManager, attribute: str,
              build: Callable[[ProvenanceManager], T]) -> T:
    """``build(manager)``, computed once and kept on ``manager`` as ``attribute`` (a binding
    that lives as long as the manager; None is kept too).

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> cached_on(m, "_aspen_example", lambda _m: []) is cached_on(m, "_aspen_example", list)
    True
    """
    cached = getattr(manager, attribute, _UNSET)
    if cached is not _UNSET:
        return cached
    value = build(manager)
    try:
        setattr(manager, attribute, value)
    except AttributeError:
        pass
    return value


def cudd_handle(manager: ProvenanceManager) -> CuddHandle | None:
    """The checked :class:`CuddHandle` of ``manager``'s ``dd.cudd`` BDD, or None."""
    return cached_on(manager, "_aspen_cudd_handle", _probe)


def _probe(manager: ProvenanceManager) -> CuddHandle | None:
    try:
        import dd.cudd as cudd_module

        bdd = manager.bdd
        if not isinstance(bdd, cudd_module.BDD):
            return None
        probe = bdd.true
        # cdef class BDD: PyObject_HEAD, vtab, DdManager *manager, ...
        # cdef class Function: PyObject_HEAD, vtab, __weakref__, BDD bdd, DdManager *manager, node
        head = 2 * _WORD
        mgr = _read_word(id(bdd), head + _WORD)
        if _read_word(id(probe), head + 2 * _WORD) != id(bdd):
            return None
        if mgr == 0 or _read_word(id(probe), head + 3 * _WORD) != mgr:
            return None
        if _read_word(id(probe), head + 4 * _WORD) != int(probe) - 2:
            return None
        return CuddHandle(ctypes.CDLL(cudd_module.__file__), mgr)
    except Exception:  # noqa: BLE001 - any surprise: use the portable code
        return None
