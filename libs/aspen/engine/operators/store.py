"""Provenance state shared by the stateful operators: tuple → formula, indexed by variable.

A deletion touches only the tuples whose formula may mention a dead variable (design.md "Known
performance risk"): the index maps each variable to a *superset* of the tuples mentioning it
(supports only grow between restrictions; stale entries are skipped).

>>> from aspen.provenance import ProvenanceManager
>>> m = ProvenanceManager(backend="python")
>>> s = ProvenanceStore(m)
>>> s.add(("a", "b"), m.var("p1"))[0] is None
True
>>> _ = s.add(("a", "c"), m.and_(m.var("p1"), m.var("p2")))
>>> sorted(t for t, _, new in s.restrict({"p2"}) if m.is_false(new))
[('a', 'c')]
>>> sorted(s)
[('a', 'b')]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from aspen.engine.implication import implication_test
from aspen.provenance.bdd import Formula, ProvenanceManager

__all__ = ["ProvenanceStore"]


class ProvenanceStore:
    """A map tuple → non-false formula with a variable → tuples index."""

    __slots__ = ("manager", "data", "index", "dirty", "implies")

    def __init__(self, manager: ProvenanceManager) -> None:
        self.manager = manager
        self.implies = implication_test(manager)
        self.data: dict[tuple, Formula] = {}
        self.index: dict[str, set[tuple]] = {}
        self.dirty: set[tuple] = set()  # changed since the index was last brought up to date

    # -- mapping protocol ---------------------------------------------------------------------
    def __contains__(self, key: object) -> bool:
        return key in self.data

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.data)

    def __getitem__(self, key: tuple) -> Formula:
        return self.data[key]

    def get(self, key: tuple) -> Formula | None:
        return self.data.get(key)

    def items(self) -> Iterable[tuple[tuple, Formula]]:
        return self.data.items()

    # -- updates ------------------------------------------------------------------------------
    def _refresh_index(self) -> None:
        """Index the supports of the entries changed since the last restriction (lazily: a
        build ORs many derivations into one entry; its support is computed once)."""
        index = self.index
        support = self.manager.bdd.support
        data = self.data
        for key in self.dirty:
            formula = data.get(key)
            if formula is None:
                continue
            for name in support(formula):
                bucket = index.get(name)
                if bucket is None:
                    index[name] = {key}
                else:
                    bucket.add(key)
        self.dirty.clear()

    def add(self, key: tuple, pv: Formula) -> tuple[Formula | None, Formula]:
        """OR ``pv`` into the entry of ``key``; return (old or None, new)."""
        old = self.data.get(key)
        if old is None:
            self.data[key] = pv
            self.dirty.add(key)
            return None, pv
        if self.implies(pv, old):
            return old, old  # absorbed (tested without building the OR)
        new = old | pv
        self.data[key] = new
        self.dirty.add(key)
        return old, new

    def set(self, key: tuple, formula: Formula) -> None:
        """Replace the entry of ``key`` (``formula`` must not be false)."""
        self.data[key] = formula
        self.dirty.add(key)

    def pop(self, key: tuple) -> Formula | None:
        """Remove and return the entry of ``key`` (index entries go stale, harmlessly)."""
        return self.data.pop(key, None)

    def clear(self) -> None:
        self.data.clear()
        self.index.clear()
        self.dirty.clear()

    def restrict(self, dead: Iterable[str]) -> list[tuple[tuple, Formula, Formula]]:
        """Set the ``dead`` variables to false everywhere (decision 1).

        Returns (key, old, new) for every entry that changed; entries that became false are
        removed from the store (``new`` is then the false formula).
        """
        if self.dirty:
            self._refresh_index()
        dead = [name for name in dead if name in self.index]
        if not dead:
            return []
        keys: set[tuple] = set()
        for name in dead:
            keys |= self.index.pop(name)
        manager = self.manager
        values = {name: False for name in dead}
        let = manager.bdd.let
        false = manager.false
        changed: list[tuple[tuple, Formula, Formula]] = []
        data = self.data
        for key in keys:
            old = data.get(key)
            if old is None:
                continue
            new = let(values, old)
            if new == old:
                continue
            if new == false:
                del data[key]
            else:
                data[key] = new
            changed.append((key, old, new))
        return changed
