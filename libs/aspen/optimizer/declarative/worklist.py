"""The dataflow's worklist of pending deltas, drained in a chosen order (Liu 2016, §4.1).

The seed puts no constraint on the order in which enumeration, costing and pruning deltas are
processed; the result must not depend on it (only the amount pruned does). ``fifo`` explores
breadth-first, ``lifo`` depth-first (as a top-down optimizer does), ``random`` in a seeded
random order (the order-independence tests).

>>> w = Worklist("lifo")
>>> for item in ("a", "b", "c"):
...     w.push(item)
>>> [w.pop() for _ in range(len(w))]
['c', 'b', 'a']

A worklist pickles as its order, random state and items (the optimizer's saved state):

>>> import pickle
>>> w.push("d"); pickle.loads(pickle.dumps(w)).pop()
'd'
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from aspen.errors import ConfigError

__all__ = ["ORDERS", "Worklist"]

#: The processing orders a :class:`Worklist` supports.
ORDERS: tuple[str, ...] = ("fifo", "lifo", "random")

T = TypeVar("T")


class Worklist(Generic[T]):
    """A bag of pending items with ``push``/``pop`` in ``fifo``, ``lifo`` or ``random`` order
    (``push`` and ``pop`` are the container's own methods where the order allows: the
    dataflow calls them once per delta).

    >>> w = Worklist("fifo")
    >>> w.push(1); w.push(2)
    >>> w.pop(), bool(w)
    (1, True)
    """

    def __init__(self, order: str = "fifo", seed: int = 0) -> None:
        if order not in ORDERS:
            raise ConfigError(f"unknown worklist order {order!r}; known: {', '.join(ORDERS)}")
        self.order = order
        self._rng = random.Random(seed)
        self._items: deque[T] | list[T] = deque() if order == "fifo" else []
        self._bind()

    def _bind(self) -> None:
        self.push: Callable[[T], None]
        self.pop: Callable[[], T]
        items = self._items
        if isinstance(items, deque):
            self.push, self.pop = items.append, items.popleft
        else:
            self.push = items.append
            self.pop = items.pop if self.order == "lifo" else self._pop_random

    def __getstate__(self) -> dict[str, object]:
        # the bound push/pop are rebuilt on loading: the saved state holds data only
        return {"order": self.order, "rng": self._rng.getstate(), "items": list(self._items)}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.order = str(state["order"])
        self._rng = random.Random()
        self._rng.setstate(state["rng"])  # type: ignore[arg-type]
        items = list(state["items"])  # type: ignore[call-overload]
        self._items = deque(items) if self.order == "fifo" else items
        self._bind()

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def _pop_random(self) -> T:
        # swap a random item to the end, then take it from there
        items = self._items
        assert isinstance(items, list)
        i = self._rng.randrange(len(items))
        items[i], items[-1] = items[-1], items[i]
        return items.pop()
