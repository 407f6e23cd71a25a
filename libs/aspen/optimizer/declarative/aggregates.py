"""Min and max aggregates that keep every input, and the sorted entries under them.

A stateful min (or max) over deltas cannot forget its inputs: when the minimum is deleted or
raised, the next best must be at hand (Liu 2016, §4.3). :class:`SortedEntries` keeps
``id → value`` sorted by ``(value, id)`` (the id breaks ties, so the order is total and
deterministic) and answers range queries — the plans whose cost lies above or below a threshold,
which the incremental bound cases need. :class:`MinAggregate` and :class:`MaxAggregate` report
each change of their result as an ``(old, new)`` update delta.

The four cases of incremental aggregate selection (§4.3.1), on a min aggregate:

>>> best = MinAggregate()
>>> best.upsert(1, 5.0), best.upsert(2, 7.0)          # 1. insertion: min(c, current)
(((inf, -1), (5.0, 1)), None)
>>> best.delete(1)                                    # 2. deletion of the min: next best
((5.0, 1), (7.0, 2))
>>> _ = best.upsert(3, 6.0)
>>> best.upsert(3, 9.0)                                # 3. raise of the min: min(c', next best)
((6.0, 3), (7.0, 2))
>>> best.upsert(3, 1.0)                               # 4. lowering: min(c', current)
((7.0, 2), (1.0, 3))
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator

__all__ = ["EMPTY_MAX", "EMPTY_MIN", "MaxAggregate", "MinAggregate", "SortedEntries"]

Entry = tuple[float, int]
#: What an empty min aggregate reports: no plan, infinitely expensive.
EMPTY_MIN: Entry = (float("inf"), -1)
#: What an empty max aggregate reports: no bound given, minus infinity.
EMPTY_MAX: Entry = (float("-inf"), -1)


class SortedEntries:
    """``id → value`` entries, sorted by ``(value, id)``.

    >>> s = SortedEntries()
    >>> for i, v in enumerate((3.0, 1.0, 2.0)):
    ...     s.put(i, v)
    >>> s.first(), s.last(), s.ids_above(1.0), s.ids_upto(2.0)
    ((1.0, 1), (3.0, 0), [0, 2], [1, 2])
    """

    __slots__ = ("_order", "_value")

    def __init__(self) -> None:
        self._value: dict[int, float] = {}
        self._order: list[Entry] = []

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, ident: int) -> bool:
        return ident in self._value

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._order)

    def get(self, ident: int) -> float | None:
        """The value of ``ident``, or None."""
        return self._value.get(ident)

    def put(self, ident: int, value: float) -> None:
        """Insert ``ident`` or move it to ``value``."""
        old = self._value.get(ident)
        if old is not None:
            if old == value:
                return
            del self._order[bisect_left(self._order, (old, ident))]
        self._value[ident] = value
        insort(self._order, (value, ident))

    def discard(self, ident: int) -> None:
        """Remove ``ident`` if present."""
        old = self._value.pop(ident, None)
        if old is not None:
            del self._order[bisect_left(self._order, (old, ident))]

    def first(self) -> Entry | None:
        """The smallest ``(value, id)``, or None when empty."""
        return self._order[0] if self._order else None

    def last(self) -> Entry | None:
        """The largest ``(value, id)``, or None when empty."""
        return self._order[-1] if self._order else None

    def ids_above(self, value: float) -> list[int]:
        """The ids whose value is greater than ``value``, largest first."""
        start = bisect_right(self._order, (value, float("inf")))
        return [ident for _v, ident in reversed(self._order[start:])]

    def ids_upto(self, value: float) -> list[int]:
        """The ids whose value is at most ``value``, smallest first."""
        stop = bisect_right(self._order, (value, float("inf")))
        return [ident for _v, ident in self._order[:stop]]

    def ids_after(self, entry: Entry) -> list[int]:
        """The ids whose ``(value, id)`` is greater than ``entry``."""
        return [ident for _v, ident in self._order[bisect_right(self._order, entry):]]

    def ids_through(self, entry: Entry) -> list[int]:
        """The ids whose ``(value, id)`` is at most ``entry``."""
        return [ident for _v, ident in self._order[:bisect_right(self._order, entry)]]


class _Aggregate(SortedEntries):
    """An aggregate over sorted entries: :meth:`upsert` and :meth:`delete` return
    ``(old, new)`` when :meth:`best` changes, else None (a deleted best: the next replaces it)."""

    __slots__ = ()

    def best(self) -> Entry:  # pragma: no cover - each aggregate defines its own
        raise NotImplementedError

    def upsert(self, ident: int, value: float) -> tuple[Entry, Entry] | None:
        """Insert or update one input."""
        old = self.best()
        self.put(ident, value)
        new = self.best()
        return None if new == old else (old, new)

    def delete(self, ident: int) -> tuple[Entry, Entry] | None:
        """Delete one input."""
        old = self.best()
        self.discard(ident)
        new = self.best()
        return None if new == old else (old, new)


class MinAggregate(_Aggregate):
    """``min`` over its entries; :meth:`upsert` and :meth:`delete` return ``(old, new)`` when
    the minimum ``(value, id)`` changes, else None."""

    __slots__ = ()

    def best(self) -> Entry:
        """The minimum ``(value, id)``, :data:`EMPTY_MIN` when empty."""
        return self._order[0] if self._order else EMPTY_MIN



class MaxAggregate(_Aggregate):
    """``max`` over its entries, as :class:`MinAggregate` for the minimum (MaxBound, rule r3).

    >>> m = MaxAggregate()
    >>> m.upsert(7, 2.0), m.upsert(8, 1.0), m.delete(7)
    (((-inf, -1), (2.0, 7)), None, ((2.0, 7), (1.0, 8)))
    """

    __slots__ = ()

    def best(self) -> Entry:
        """The maximum ``(value, id)``, :data:`EMPTY_MAX` when empty."""
        return self._order[-1] if self._order else EMPTY_MAX

