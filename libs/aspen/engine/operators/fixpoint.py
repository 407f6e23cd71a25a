"""Fixpoint (Liu et al. 2008, Algorithm 1, errata fixed): a recursive view's provenance at a node.

* INS of a new tuple: store its provenance, emit it.
* INS of a known tuple: OR the derivation in; if it was absorbed (P unchanged) emit nothing,
  otherwise emit the *incoming derivation* (decision 3: monotone, no ``P ∧ ¬old``).
* A variable deletion (from the base stream, the recursive stream or the broadcast, decision 2)
  restricts every stored formula; tuples whose formula becomes false leave the view and a DEL is
  emitted. A retraction (DEL with no dead variables, from AggSel) removes that tuple.

>>> from aspen.provenance import ProvenanceManager
>>> from aspen.engine.records import Update
>>> m = ProvenanceManager(backend="python")
>>> fp = Fixpoint(m, "reachable")
>>> p1, p2 = m.var("p1"), m.var("p2")
>>> len(fp.process("base", Update.ins("reachable", ("a", "b"), p1)))
1
>>> fp.process("rec", Update.ins("reachable", ("a", "b"), m.and_(p1, p2)))  # absorbed
[]
"""

from __future__ import annotations

from typing import Any

from aspen.engine.operators.base import FormulaCodec, Operator
from aspen.engine.operators.store import ProvenanceStore
from aspen.engine.records import INS, Update
from aspen.provenance.bdd import Formula, ProvenanceManager

__all__ = ["Fixpoint"]


class Fixpoint(Operator):
    """The map tuple → absorption provenance of the derivable tuples of ``relation``."""

    kind = "fixpoint"

    def __init__(self, manager: ProvenanceManager, relation: str) -> None:
        super().__init__(manager)
        self.relation = relation
        self.store = ProvenanceStore(manager)

    def process(self, port: str, update: Update) -> list[Update]:
        if update.op == INS:
            pv = update.pv
            if pv == self.manager.false:
                return []
            old, new = self.store.add(update.tuple, pv)
            if old is not None and new == old:
                return []  # absorbed: this is what makes the fixpoint terminate
            return [self._ins(self.relation, update.tuple, pv)]
        if update.deleted:
            return self.delete_vars(update.deleted)
        if self.store.pop(update.tuple) is not None:  # retraction
            return [self._del(self.relation, update.tuple)]
        return []

    def process_batch(self, updates: list[tuple[str, Update]]) -> list[Update]:
        """Consume updates delivered together: every derivation is OR-ed into the state in
        arrival order, and each tuple whose formula changed is emitted **once**, at the place of
        its first change, with its accumulated formula (the OR of derivations, so monotone and
        exact: decision 3 per batch, semi-naive by rounds). Retractions and variable deletions
        are handled as in :meth:`process`, in order."""
        out: list[Update] = []
        pending: dict[tuple, int] = {}  # tuple → index in ``out`` of its INS for this batch
        store = self.store
        data = store.data
        dirty = store.dirty
        implies = self.store.implies
        false = self.manager.false
        relation = self.relation
        for port, update in updates:
            values = update.tuple
            if update.op == INS:
                pv = update.pv
                old = data.get(values)
                if old is None:
                    if pv == false:
                        continue
                    new = pv
                    if store.journal is not None:
                        store.note_new(values)
                else:
                    if implies(pv, old):
                        continue  # absorbed
                    new = old | pv
                data[values] = new
                if dirty is not None:
                    dirty.add(values)
                index = pending.get(values)
                if index is None:
                    pending[values] = len(out)
                    out.append(Update(INS, relation, values, new))
                else:
                    out[index] = Update(INS, relation, values, new)
                continue
            if update.deleted:
                pending.clear()
            else:
                pending.pop(values, None)
            out.extend(self.process(port, update))
            dirty = store.dirty  # a deletion may have built the index (None → a set)
        return out

    def delete_vars(self, dead: frozenset[str]) -> list[Update]:
        false = self.manager.false
        return [
            self._del(self.relation, key, frozenset(dead))
            for key, _old, new in self.store.restrict(dead)
            if new == false
        ]

    def get(self, key: tuple) -> Formula | None:
        """The provenance of ``key`` (None when it is not in the view)."""
        return self.store.get(key)

    def stores(self):
        return (self.store,)

    def formulas(self):
        return self.store.items()

    def dump_state(self, codec: FormulaCodec) -> Any:
        return codec.dump_map(self.store.items())

    def load_state(self, state: Any, codec: FormulaCodec) -> None:
        for key, f in codec.load_map(state):
            self.store.set(key, f)
