"""What every kernel of the compiled core shares on the Python side: it is started over one
CUDD manager, node names are interned as ``u32`` ids, every call's code is checked, and its
handle is freed once (on :meth:`NativeKernel.close`, on leaving a ``with`` or when collected).

>>> from aspen.provenance import ProvenanceManager
>>> from aspen.errors import EngineError
>>> try:
...     NativeKernel(ProvenanceManager(backend="python"))
... except EngineError as err:
...     print(str(err)[:34])
the compiled core is not available
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from typing import Any

from aspen.engine.native.library import ERRORS, bind_core
from aspen.errors import EngineError
from aspen.provenance.bdd import ProvenanceManager

__all__ = ["NativeKernel"]

#: Node ids are u32: the largest one a kernel hands out.
MAX_ID = 0xFFFFFFFE


class NativeKernel:
    """A kernel of the compiled core behind its handle. A subclass names the C functions that
    create and free its kernel (:attr:`new_function`, :attr:`free_function`)."""

    new_function = ""
    free_function = ""

    def __init__(self, manager: ProvenanceManager) -> None:
        binding = bind_core(manager)
        if binding is None:
            raise EngineError(
                "the compiled core is not available (pure-Python BDD backend, or "
                "libs/aspen/engine/native/_core.so not built: run `make setup`)")
        self.manager = manager
        self._lib = binding.library
        self._wrap = manager.bdd._add_int  # a Function holding its own reference
        self._index_of_var: dict[str, int] = manager.bdd._index_of_var
        self._ids: dict[Any, int] = {}
        self._names: list[Any] = []
        self._handle: int | None = None
        handle = getattr(self._lib, self.new_function)(binding.manager, *binding.functions,
                                                       int(manager.false) - 2)
        if not handle:
            raise EngineError("the compiled core could not be started (a CUDD function is "
                              "missing from the loaded dd.cudd)")
        self._handle = handle

    def _id(self, name: Any) -> int:
        """The kernel's id of node ``name`` (interned on first sight)."""
        node = self._ids.get(name)
        if node is None:
            node = len(self._names)
            if node > MAX_ID:
                raise EngineError("the compiled core holds at most 2**32 - 1 node ids")
            self._ids[name] = node
            self._names.append(name)
        return node

    def _live(self) -> int:
        if self._handle is None:
            raise EngineError(f"this {type(self).__name__} is closed")
        return self._handle

    @staticmethod
    def _check(code: int) -> int:
        if code < 0:
            raise EngineError(ERRORS.get(code, f"the compiled core failed (code {code})"))
        return code

    def _delete(self, function: str, dead: Iterable[str]) -> int:
        """Call the kernel's deletion ``function`` with the ``dead`` variables (their indices and
        the cube of their negations); names the manager never declared are ignored."""
        handle = self._live()
        index_of = self._index_of_var
        names = sorted({name for name in dead if name in index_of})
        if not names:
            return 0
        cube = self.manager.bdd.cube({name: False for name in names})  # held during the call
        indices = (ctypes.c_int * len(names))(*[index_of[name] for name in names])
        return self._check(getattr(self._lib, function)(handle, indices, len(names),
                                                        int(cube) - 2))

    def close(self) -> None:
        """Release every CUDD reference the kernel holds and free it (idempotent)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            getattr(self._lib, self.free_function)(handle)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to release into
            pass

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
