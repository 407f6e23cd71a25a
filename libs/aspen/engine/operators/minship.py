"""MinShip (Liu et al. 2008, Algorithm 3), lazy mode made complete under variable deletions.

* The first derivation of a tuple is shipped at once (``B_sent[t] := pv``).
* A later derivation absorbed by ``B_sent[t]`` is dropped; otherwise it is OR-ed into the buffer
  ``P_ins[t]``.
* **Eager** mode ships the whole buffer when it holds ``batch_size`` (W) tuples and whenever the
  runtime's timer calls :meth:`flush`. **Lazy** mode ships a buffered alternative only when it is
  needed: on a variable deletion ``B_sent`` and ``P_ins`` are restricted, and for each tuple whose
  ``B_sent`` changed while ``P_ins`` still holds an alternative, ``INS(t, P_ins[t])`` is shipped
  (and folded into ``B_sent``). Alternatives go before deletions (decision 5). :meth:`flush`
  ships everything in either mode (exact provenance downstream).
* Every shipped batch also updates ``B_sent`` (the pseudocode omits it; the text of §5 says so).

>>> from aspen.provenance import ProvenanceManager
>>> from aspen.engine.records import Update
>>> m = ProvenanceManager(backend="python")
>>> ms = MinShip(m, mode="lazy")
>>> len(ms.process("in", Update.ins("r", ("a", "c"), m.var("p1"))))   # first: shipped
1
>>> ms.process("in", Update.ins("r", ("a", "c"), m.var("p2")))          # buffered
[]
>>> [u.op for u in ms.delete_vars(frozenset({"p1"}))]                  # alternative, then the DEL
['INS', 'DEL']
"""

from __future__ import annotations

from typing import Any

from aspen.engine.operators.base import FormulaCodec, Operator
from aspen.engine.operators.store import ProvenanceStore
from aspen.engine.records import INS, Update
from aspen.errors import EngineError
from aspen.provenance.bdd import ProvenanceManager

__all__ = ["MinShip", "MODES"]

MODES = ("lazy", "eager")


class MinShip(Operator):
    """Minimal provenance shipping for one output stream (the destination is the router's job)."""

    kind = "minship"

    def __init__(self, manager: ProvenanceManager, mode: str = "lazy",
                 batch_size: int | None = None) -> None:
        super().__init__(manager)
        if mode not in MODES:
            raise EngineError(f"unknown MinShip mode {mode!r}; choose one of {list(MODES)}")
        if batch_size is not None and batch_size < 1:
            raise EngineError(f"MinShip batch size must be at least 1, not {batch_size}")
        self.mode = mode
        self.batch_size = batch_size
        self.sent = ProvenanceStore(manager)      # B_sent
        self.buffered = ProvenanceStore(manager)  # P_ins
        #: the relation of the tuples this stream ships (the first one's), and the tuples of
        #: another relation, if any: a plan's stream carries one relation, so no dict entry per
        #: tuple (what a tuple → relation map cost: one entry per shipped tuple)
        self.relation: str | None = None
        self.others: dict[tuple, str] = {}

    def process(self, port: str, update: Update) -> list[Update]:
        values = update.tuple
        if update.op == INS:
            pv = update.pv
            if pv == self.manager.false:
                return []
            self._note(values, update.relation)
            sent = self.sent.get(values)
            if sent is None:
                self.sent.set(values, pv)
                return [update]
            if self.sent.implies(pv, sent):
                return []  # absorbed by what was already shipped
            self.buffered.add(values, pv)
            if self.mode == "eager" and self.batch_size and len(self.buffered) >= self.batch_size:
                return self.flush()
            return []
        if update.deleted:
            return self.delete_vars(update.deleted)
        # retraction: forget the tuple and forward the retraction
        self.sent.pop(values)
        self.buffered.pop(values)
        self._forget(values)
        return [update]

    def _note(self, values: tuple, relation: str) -> None:
        """Remember that ``values`` is a tuple of ``relation``."""
        if self.relation is None:
            self.relation = relation
        if relation == self.relation:
            if self.others:
                self.others.pop(values, None)
        else:
            self.others[values] = relation

    def _relation_of(self, values: tuple) -> str:
        return self.others.get(values, self.relation or "")

    def _forget(self, values: tuple) -> None:
        if self.others:
            self.others.pop(values, None)

    def process_batch(self, updates: list[tuple[str, Update]]) -> list[Update]:
        """Consume updates delivered together. The derivations of a tuple not shipped before
        are OR-ed into **one** first shipment (as if they had arrived as one message); every
        other derivation goes through :meth:`process` one by one (absorbed by ``B_sent``, or
        buffered)."""
        out: list[Update] = []
        first: dict[tuple, int] = {}  # tuple → index in ``out`` of its first shipment
        sent = self.sent
        implies = sent.implies
        false = self.manager.false
        process = self.process
        for port, update in updates:
            values = update.tuple
            if update.op == INS:
                pv = update.pv
                if pv == false:
                    continue
                index = first.get(values)
                if index is not None:
                    shipped = out[index]
                    if not implies(pv, shipped.pv):
                        merged = shipped.pv | pv
                        out[index] = Update(INS, shipped.relation, values, merged)
                        sent.set(values, merged)
                    continue
                if values not in sent:
                    if update.relation != self.relation or self.others:
                        self._note(values, update.relation)
                    sent.set(values, pv)
                    first[values] = len(out)
                    out.append(update)
                    continue
            elif update.deleted:
                first.clear()
            else:
                first.pop(values, None)
            emitted = process(port, update)
            if emitted:
                out.extend(emitted)
        return out

    def delete_vars(self, dead: frozenset[str]) -> list[Update]:
        dead = frozenset(dead)
        false = self.manager.false
        changed = self.sent.restrict(dead)
        self.buffered.restrict(dead)
        alternatives: list[Update] = []
        deletions: list[Update] = []
        for values, _old, new in changed:
            relation = self._relation_of(values)
            alt = self.buffered.pop(values)
            if alt is not None:
                self.sent.add(values, alt)
                alternatives.append(self._ins(relation, values, alt))
            elif new == false:
                self._forget(values)
            deletions.append(self._del(relation, values, dead))
        return alternatives + deletions

    def flush(self) -> list[Update]:
        out: list[Update] = []
        for values, pv in list(self.buffered.items()):
            self.sent.add(values, pv)
            out.append(self._ins(self._relation_of(values), values, pv))
        self.buffered.clear()
        return out

    def pending(self) -> int:
        return len(self.buffered)

    def stores(self):
        return (self.sent, self.buffered)

    def formulas(self):
        yield from self.sent.items()
        yield from self.buffered.items()

    def dump_state(self, codec: FormulaCodec) -> Any:
        return {
            "sent": codec.dump_map(self.sent.items()),
            "buffered": codec.dump_map(self.buffered.items()),
            "relation": self.relation,
            "relations": self.others,  # pickled before the next update
        }

    def load_state(self, state: Any, codec: FormulaCodec) -> None:
        for values, f in codec.load_map(state["sent"]):
            self.sent.set(values, f)
        for values, f in codec.load_map(state["buffered"]):
            self.buffered.set(values, f)
        self.relation = state.get("relation")  # absent in states of version 2: all in "relations"
        self.others.update(state["relations"])
