"""Incremental group aggregates (MIN, MAX, COUNT, SUM) over a view's update stream.

Members are counted as a set: a group holds tuple → provenance for its live members (the support
count is the number of members), so the group disappears with its last member. The output tuple
is ``group values + (aggregate value,)``; a changed value is emitted as a retraction of the old
output followed by an INS of the new one. The formula of an output tuple is its **support
formula**: the OR of the provenance of the members attaining the value (MIN/MAX) or of all members
(COUNT/SUM) — true iff the witnesses exist, not iff the value is exactly this.

>>> from aspen.provenance import ProvenanceManager
>>> from aspen.engine.records import Update
>>> m = ProvenanceManager(backend="python")
>>> agg = GroupAggregate(m, "region_sizes", group=(0,), fn="count")
>>> [u.tuple for u in agg.process("in", Update.ins("active_region", ("r1", "s1"), m.var("a")))]
[('r1', 1)]
>>> [(u.op, u.tuple)
...  for u in agg.process("in", Update.ins("active_region", ("r1", "s2"), m.var("b")))]
[('DEL', ('r1', 1)), ('INS', ('r1', 2))]
>>> [(u.op, u.tuple) for u in agg.delete_vars(frozenset({"a", "b"}))]
[('DEL', ('r1', 2))]
"""

from __future__ import annotations

from typing import Any

from aspen.engine.operators.aggsel import AGGREGATE_FUNCTIONS
from aspen.engine.operators.base import FormulaCodec, Operator
from aspen.engine.operators.store import ProvenanceStore
from aspen.engine.records import INS, Update
from aspen.errors import EngineError
from aspen.provenance.bdd import Formula, ProvenanceManager

__all__ = ["GroupAggregate"]


class GroupAggregate(Operator):
    """``relation(group…, fn(column))`` over the members of each group."""

    kind = "aggregate"

    def __init__(self, manager: ProvenanceManager, relation: str, group: tuple[int, ...],
                 fn: str, column: int = -1) -> None:
        super().__init__(manager)
        if fn not in AGGREGATE_FUNCTIONS:
            raise EngineError(
                f"unknown aggregate {fn!r}; choose one of {list(AGGREGATE_FUNCTIONS)}")
        self.relation = relation
        self.group = tuple(group)
        self.fn = fn
        self.column = column
        self.store = ProvenanceStore(manager)
        self.members: dict[tuple, set[tuple]] = {}
        self.outputs: dict[tuple, tuple[tuple, Formula]] = {}  # group → (output tuple, support)

    def group_of(self, values: tuple) -> tuple:
        return tuple(values[i] for i in self.group)

    def _compute(self, key: tuple) -> tuple[tuple, Formula] | None:
        members = self.members.get(key)
        if not members:
            return None
        data = self.store.data
        if self.fn == "count":
            value: Any = len(members)
            witnesses = members
        elif self.fn == "sum":
            value = sum(m[self.column] for m in members)
            witnesses = members
        else:
            pick = min if self.fn == "min" else max
            value = pick(m[self.column] for m in members)
            witnesses = [m for m in members if m[self.column] == value]
        support = self.manager.false
        for m in witnesses:
            support = support | data[m]
        return (*key, value), support

    def _refresh(self, keys: set[tuple]) -> list[Update]:
        out: list[Update] = []
        for key in sorted(keys, key=repr):
            before = self.outputs.get(key)
            after = self._compute(key)
            if before == after:
                continue
            if before is not None and (after is None or after[0] != before[0]):
                out.append(self._del(self.relation, before[0]))
            if after is None:
                self.outputs.pop(key, None)
                self.members.pop(key, None)
            else:
                self.outputs[key] = after
                out.append(self._ins(self.relation, after[0], after[1]))
        return out

    def process(self, port: str, update: Update) -> list[Update]:
        values = update.tuple
        if update.op == INS:
            if update.pv == self.manager.false:
                return []
            old, new = self.store.add(values, update.pv)
            if old is not None and new == old:
                return []
            key = self.group_of(values)
            self.members.setdefault(key, set()).add(values)
            return self._refresh({key})
        if update.deleted:
            return self.delete_vars(update.deleted)
        if self.store.pop(values) is None:
            return []
        key = self.group_of(values)
        self.members.get(key, set()).discard(values)
        return self._refresh({key})

    def delete_vars(self, dead: frozenset[str]) -> list[Update]:
        keys: set[tuple] = set()
        false = self.manager.false
        for values, _old, new in self.store.restrict(dead):
            key = self.group_of(values)
            keys.add(key)
            if new == false:
                self.members.get(key, set()).discard(values)
        return self._refresh(keys)

    def rows(self) -> dict[tuple, Formula]:
        """Output tuple → support formula, for every live group."""
        return dict(self.outputs.values())

    def stores(self):
        return (self.store,)

    def formulas(self):
        return self.store.items()

    def dump_state(self, codec: FormulaCodec) -> Any:
        return codec.dump_map(self.store.items())

    def load_state(self, state: Any, codec: FormulaCodec) -> None:
        keys = set()
        for values, f in codec.load_map(state):
            self.store.set(values, f)
            key = self.group_of(values)
            self.members.setdefault(key, set()).add(values)
            keys.add(key)
        for key in keys:
            computed = self._compute(key)
            if computed is not None:
                self.outputs[key] = computed
