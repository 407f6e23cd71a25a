"""Streaming aggregate selection, AggSel (Liu et al. 2008, Algorithm 4, with decisions 6 and 1).

Per group (the grouping columns) AggSel keeps **every** derivable tuple seen (``H``), their
provenance (``P``), and for each MIN/MAX aggregate the best value and **all tuples tied with it**.
An insertion is forwarded iff it is (or ties) a best for at least one aggregate — this includes a
new derivation (provenance-only change) of a current best; anything else is pruned. A tuple that
stops being best for every aggregate is retracted (``DEL`` with no dead variables) when
``emit_retractions`` is on. A variable deletion restricts ``P``; when a best dies the next best
tuples are promoted and emitted with their whole provenance. COUNT and SUM aggregates never prune.

>>> from aspen.provenance import ProvenanceManager
>>> from aspen.engine.records import Update
>>> m = ProvenanceManager(backend="python")
>>> sel = AggSel(m, group=(0, 1), aggregates=(Aggregate("cost", "min", 2),))
>>> [u.op for u in sel.process("in", Update.ins("p", ("a", "b", 5.0), m.var("x")))]
['INS']
>>> [(u.op, u.tuple) for u in sel.process("in", Update.ins("p", ("a", "b", 3.0), m.var("y")))]
[('INS', ('a', 'b', 3.0)), ('DEL', ('a', 'b', 5.0))]
>>> sel.process("in", Update.ins("p", ("a", "b", 9.0), m.var("z")))   # pruned
[]
>>> [(u.op, u.tuple) for u in sel.delete_vars(frozenset({"y"}))]        # promotion
[('INS', ('a', 'b', 5.0)), ('DEL', ('a', 'b', 3.0))]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aspen.engine.operators.base import FormulaCodec, Operator
from aspen.engine.operators.store import ProvenanceStore
from aspen.engine.records import INS, Update
from aspen.errors import EngineError
from aspen.provenance.bdd import ProvenanceManager

__all__ = ["Aggregate", "AggSel", "AGGREGATE_FUNCTIONS"]

AGGREGATE_FUNCTIONS = ("min", "max", "count", "sum")


@dataclass(frozen=True)
class Aggregate:
    """One aggregate: its name, function (min, max, count, sum) and the column it reads."""

    name: str
    fn: str
    column: int = -1

    def __post_init__(self) -> None:
        if self.fn not in AGGREGATE_FUNCTIONS:
            raise EngineError(
                f"unknown aggregate {self.fn!r}; choose one of {list(AGGREGATE_FUNCTIONS)}"
            )

    @property
    def selective(self) -> bool:
        """Whether the aggregate can prune (MIN/MAX: "better than" exists)."""
        return self.fn in ("min", "max")

    def better(self, a: Any, b: Any) -> bool:
        return a < b if self.fn == "min" else a > b


class AggSel(Operator):
    """Aggregate selection over groups ``values[group]`` for MIN/MAX ``aggregates``."""

    kind = "aggsel"

    def __init__(self, manager: ProvenanceManager, group: tuple[int, ...],
                 aggregates: tuple[Aggregate, ...], *, relation: str | None = None,
                 emit_retractions: bool = True) -> None:
        super().__init__(manager)
        if not aggregates:
            raise EngineError("AggSel needs at least one aggregate")
        self.group = tuple(group)
        self.aggregates = tuple(aggregates)
        self.selective = [i for i, a in enumerate(self.aggregates) if a.selective]
        self.prunes = len(self.selective) == len(self.aggregates)
        self.relation = relation
        self.emit_retractions = emit_retractions
        self.members: dict[tuple, set[tuple]] = {}        # H
        self.store = ProvenanceStore(manager)              # P
        self.best: dict[tuple, list[tuple[Any, set[tuple]]]] = {}  # B: per selective aggregate

    def group_of(self, values: tuple) -> tuple:
        return tuple(values[i] for i in self.group)

    def _rel(self, update: Update | None = None) -> str:
        if update is not None and self.relation is None:
            self.relation = update.relation
        return self.relation or ""

    def is_best(self, values: tuple) -> bool:
        """Whether ``values`` is tied with the best value of some aggregate of its group."""
        bests = self.best.get(self.group_of(values))
        return bool(bests) and any(values in tied for _v, tied in bests)

    def process(self, port: str, update: Update) -> list[Update]:
        relation = self._rel(update)
        values = update.tuple
        if update.op != INS:
            if update.deleted:
                return self.delete_vars(update.deleted)
            return self._retract(values)
        pv = update.pv
        if pv == self.manager.false:
            return []
        old, new = self.store.add(values, pv)
        if old is not None and new == old:
            return []
        key = self.group_of(values)
        if old is None:
            self.members.setdefault(key, set()).add(values)
        bests = self.best.get(key)
        forward = not self.prunes
        displaced: set[tuple] = set()
        if bests is None:
            self.best[key] = [(values[self.aggregates[i].column], {values}) for i in self.selective]
            forward = True
        else:
            for slot, i in enumerate(self.selective):
                agg = self.aggregates[i]
                value = values[agg.column]
                best_value, tied = bests[slot]
                if agg.better(value, best_value):
                    displaced |= tied
                    bests[slot] = (value, {values})
                    forward = True
                elif value == best_value:
                    tied.add(values)  # a tie, or a new derivation of a current best
                    forward = True
        out: list[Update] = []
        if forward:
            out.append(self._ins(relation, values, pv))
        if displaced and self.emit_retractions:
            still = set().union(*(tied for _v, tied in self.best[key]))
            out.extend(self._del(relation, d) for d in sorted(displaced - still, key=repr))
        return out

    def _rescan(self, key: tuple) -> set[tuple]:
        """Recompute the bests of ``key`` from ``H``; return the tuples newly best."""
        before = set().union(*(tied for _v, tied in self.best.get(key, [])))
        members = self.members.get(key)
        if not members:
            self.best.pop(key, None)
            self.members.pop(key, None)
            return set()
        bests: list[tuple[Any, set[tuple]]] = []
        for i in self.selective:
            agg = self.aggregates[i]
            best_value = None
            tied: set[tuple] = set()
            for values in members:
                value = values[agg.column]
                if best_value is None or agg.better(value, best_value):
                    best_value, tied = value, {values}
                elif value == best_value:
                    tied.add(values)
            bests.append((best_value, tied))
        self.best[key] = bests
        return set().union(*(tied for _v, tied in bests)) - before

    def _retract(self, values: tuple) -> list[Update]:
        if self.store.pop(values) is None:
            return []
        key = self.group_of(values)
        self.members.get(key, set()).discard(values)
        was_best = self.is_best(values)
        out: list[Update] = []
        if was_best or not self.prunes:
            promoted = self._rescan(key) if was_best else set()
            out.extend(self._ins(self._rel(), p, self.store[p]) for p in sorted(promoted, key=repr))
            out.append(self._del(self._rel(), values))
        elif not self.members.get(key):
            self.members.pop(key, None)
        return out

    def delete_vars(self, dead: frozenset[str]) -> list[Update]:
        dead = frozenset(dead)
        false = self.manager.false
        affected: set[tuple] = set()
        died: list[tuple] = []
        for values, _old, new in self.store.restrict(dead):
            if new == false:
                key = self.group_of(values)
                self.members.get(key, set()).discard(values)
                if self.is_best(values):
                    affected.add(key)
                elif not self.members.get(key):
                    self.members.pop(key, None)
                died.append(values)
        relation = self._rel()
        out: list[Update] = []
        for key in sorted(affected, key=repr):
            promoted = self._rescan(key)
            out.extend(self._ins(relation, p, self.store[p]) for p in sorted(promoted, key=repr))
        out.extend(self._del(relation, values, dead) for values in died)
        return out

    def best_tuples(self) -> dict[tuple, list[tuple[Any, set[tuple]]]]:
        """Group → per selective aggregate (best value, tied tuples)."""
        return self.best

    def stores(self):
        return (self.store,)

    def formulas(self):
        return self.store.items()

    def dump_state(self, codec: FormulaCodec) -> Any:
        return {
            "store": codec.dump_map(self.store.items()),
            "best": {k: [(v, set(t)) for v, t in b] for k, b in self.best.items()},
            "relation": self.relation,
        }

    def load_state(self, state: Any, codec: FormulaCodec) -> None:
        for values, f in codec.load_map(state["store"]):
            self.store.set(values, f)
            self.members.setdefault(self.group_of(values), set()).add(values)
        self.best = {k: [(v, set(t)) for v, t in b] for k, b in state["best"].items()}
        self.relation = state["relation"]
