"""Reading Aspen's own pickled state without letting the bytes run code.

The engine's states (``engine_state``, ``node_state`` and its journals, ``variable_order``, the
round protocol's fact payloads) are pickles Aspen writes into the lake. A lake is named by a
user, so its bytes are input: a crafted pickle could name any callable (``os.system``) and
have it called on load. :func:`loads` resolves only what a state is made of — plain builtin
containers and scalars, a few standard-library types, and *classes* (never functions) defined
in the modules of :data:`STATE_MODULES` — and refuses anything else with :class:`StateError`.

>>> import pickle
>>> from aspen.engine.batch import BaseFact
>>> loads(pickle.dumps({"facts": [BaseFact("link", ("a", "b", 1.0), "v1")]}), "state")["facts"]
[BaseFact(relation='link', values=('a', 'b', 1.0), var='v1')]
>>> import os
>>> loads(pickle.dumps(os.getcwd), "state")
Traceback (most recent call last):
...
aspen.errors.StateError: cannot read state: it names posix.getcwd, which no Aspen state holds
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
from collections.abc import Iterable
from typing import Any

from aspen.errors import StateError

__all__ = ["STATE_MODULES", "loads"]

#: Packages whose classes a state may hold (the engine's records, operators' state objects,
#: the provenance placement, the round protocol's inputs).
STATE_MODULES: tuple[str, ...] = ("aspen.engine", "aspen.provenance", "aspen.runtime",
                                  "aspen.optimizer", "aspen.views")
#: Builtins a state may name: containers and scalar types, nothing that calls out.
_BUILTINS = frozenset({"set", "frozenset", "dict", "list", "tuple", "slice", "range",
                       "bytearray", "complex", "int", "float", "str", "bytes", "bool",
                       "object"})
#: Standard-library types a state may hold.
_STDLIB = frozenset({("collections", "deque"), ("collections", "OrderedDict"),
                     ("collections", "defaultdict"), ("collections", "Counter"),
                     ("copyreg", "_reconstructor"), ("random", "Random"),
                     ("datetime", "datetime"), ("datetime", "date"),
                     ("datetime", "timedelta"), ("datetime", "timezone"),
                     ("decimal", "Decimal")})


class _StateUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the names of :data:`STATE_MODULES` classes and the
    allowed builtins and standard types."""

    def __init__(self, stream: io.BytesIO, modules: tuple[str, ...], renames: dict[str, str]):
        super().__init__(stream)
        self._modules = modules
        self._renames = renames

    def find_class(self, module: str, name: str) -> Any:
        module = self._renames.get(module, module)
        if (module, name) in _compat_pickle.NAME_MAPPING:  # protocols 0-2 use Python 2 names
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        if (module == "builtins" and name in _BUILTINS) or (module, name) in _STDLIB:
            return super().find_class(module, name)
        if any(module == m or module.startswith(m + ".") for m in self._modules):
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        raise pickle.UnpicklingError(f"it names {module}.{name}, which no Aspen state holds")


def loads(data: bytes, what: str, modules: Iterable[str] = STATE_MODULES,
          renames: dict[str, str] | None = None) -> Any:
    """The object pickled in ``data``, read through the allow-list; :class:`StateError`
    (``cannot read WHAT: …``) for bytes that are no Aspen state.

    ``renames`` maps a module's former name to its current one (states written before a
    module moved keep loading).

    >>> loads(b"not a pickle", "node state")
    Traceback (most recent call last):
    ...
    aspen.errors.StateError: cannot read node state: invalid load key, 'n'.
    """
    unpickler = _StateUnpickler(io.BytesIO(data), tuple(modules), renames or {})
    try:
        return unpickler.load()
    except Exception as err:  # noqa: BLE001 - any unpickling failure is a bad state
        raise StateError(f"cannot read {what}: {err}") from None


def load_all(data: bytes, what: str, renames: dict[str, str] | None = None) -> list[Any]:
    """Every object pickled one after another in ``data`` (an append-only journal).

    >>> load_all(pickle.dumps(1) + pickle.dumps((2, 3)), "journal")
    [1, (2, 3)]
    """
    stream, out = io.BytesIO(data), []
    while stream.tell() < len(data):
        unpickler = _StateUnpickler(stream, STATE_MODULES, renames or {})
        try:
            out.append(unpickler.load())
        except Exception as err:  # noqa: BLE001 - any unpickling failure is a bad state
            raise StateError(f"cannot read {what}: {err}") from None
    return out
