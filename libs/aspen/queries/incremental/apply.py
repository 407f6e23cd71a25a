"""One query's incremental maintenance in memory: a batch's signed table changes in, the
result's changes out — the state ``h`` so far updated by ``state ⊗ h(Δ)``.

A batch runs in four steps: each relation's rows of the changed tables are filtered and
projected (a change that does not pass a relation's filter is no change of it); the joined
rows they change are computed against the state (:mod:`.join`; a one-relation query's changed
rows are its joined rows); those are lifted and merged into ``Δh``, one group per key; ``Δh``
is merged into the state and ``a`` of the changed keys is the result's change (:mod:`.answer`).
:meth:`IncrementalQuery.build` is the same from an empty state with every row inserted.

>>> from aspen.queries.sql import parse_query
>>> from aspen.queries.incremental.compile import compile_query
>>> from aspen.queries.incremental.delta import SignedRows
>>> plan = compile_query(parse_query("q", "SELECT src, COUNT(*) AS n FROM link GROUP BY src"))
>>> query = IncrementalQuery(plan)
>>> cols = ("src", "dst", "cost")
>>> query.apply({"link": SignedRows(cols, {("a", "b", 1.0): 1, ("a", "c", 2.0): 1})}).result
{('a', 2): 1}
>>> query.apply({"link": SignedRows(cols, {("a", "b", 1.0): -1})}).result
{('a', 2): -1, ('a', 1): 1}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aspen.queries.incremental.answer import answer_changes, full_answer
from aspen.queries.incremental.compile import IncrementalPlan
from aspen.queries.incremental.delta import SignedRows
from aspen.queries.incremental.join import joined_changes
from aspen.queries.incremental.livestats import LiveStats
from aspen.queries.incremental.order import follow_plan
from aspen.queries.incremental.state import Group, State

__all__ = ["BatchOutcome", "IncrementalQuery", "lift"]


@dataclass
class BatchOutcome:
    """What one batch changed: the result (row → change of its count), the relations' rows
    and groups to rewrite in the stored state, and the deletions ignored (rows not held)."""

    result: dict[tuple, int] = field(default_factory=dict)
    rows: list[set[tuple]] = field(default_factory=list)
    groups: set[tuple] = field(default_factory=set)
    ignored: int = 0
    joined: int = 0


def lift(plan: IncrementalPlan, joined: Mapping[tuple, int]) -> dict[tuple, Group]:
    """``h`` of signed joined rows: per key its count and merged components (``Δh``)."""
    out: dict[tuple, Group] = {}
    monoids = [a.monoid for a in plan.aggregates]
    for row, sign in joined.items():
        parts = list(row)
        key = plan.group_key(parts)
        components = tuple(a.lift(parts, sign) for a in plan.aggregates)
        old = out.get(key)
        if old is None:
            out[key] = (sign, components)
        else:
            out[key] = (old[0] + sign, tuple(m.merge(a, b) for m, a, b in
                                             zip(monoids, old[1], components, strict=True)))
    return out


class IncrementalQuery:
    """A plan and its state (:attr:`state`), changed batch by batch; for a join, the
    statistics of its inputs too (:attr:`live`, :mod:`.livestats`)."""

    def __init__(self, plan: IncrementalPlan, state: State | None = None) -> None:
        self.plan = plan
        self.state = state if state is not None else new_state(plan)
        self.live = LiveStats.from_state(plan, self.state) if plan.keep_rows else None

    def follow(self, tree: Mapping[str, Any] | None) -> bool:
        """Join the next batches' changes in the order of the optimizer's plan ``tree``
        (:mod:`.order`); the state is unchanged (an index the new order looks rows up by is
        added). Whether the order changed."""
        plan = follow_plan(self.plan, tree)
        if plan is self.plan:
            return False
        self.plan = plan
        self.state.ensure_indexes(plan.index_columns())
        return True

    def statistics(self) -> dict[str, Any] | None:
        """The live statistics as S.json (None: not a join, or the tables' row counts are not
        known — a state stored before they were kept)."""
        if self.live is None or self.state.table_rows is None:
            return None
        return self.live.document(self.state.table_rows)

    def apply(self, changes: Mapping[str, SignedRows]) -> BatchOutcome:
        """Apply one batch's table changes (tables the query does not read are ignored)."""
        plan, outcome = self.plan, BatchOutcome()
        counted = self.state.table_rows
        if counted is not None:
            for table in plan.tables:
                found = changes.get(table)
                if found is not None:
                    counted[table] = counted.get(table, 0) + sum(found.counts.values())
        per_relation: list[dict[tuple, int]] = []
        for rel in plan.relations:
            change: dict[tuple, int] = {}
            table = changes.get(rel.table)
            for row, count in (table.dicts() if table is not None else ()):
                projected = rel.admit(row)
                if projected is not None:
                    total = change.get(projected, 0) + count
                    if total:
                        change[projected] = total
                    else:
                        change.pop(projected, None)
            per_relation.append(change)
        if plan.keep_rows:
            observe = self.live.observe if self.live is not None else None
            joined, outcome.ignored = joined_changes(self.state, plan.steps, per_relation,
                                                     observe)
            outcome.rows = [set(c) for c in per_relation]
        else:
            joined = {(row,): count for row, count in per_relation[0].items()}
            outcome.rows = [set() for _ in per_relation]
        outcome.joined = len(joined)
        changed = self.state.merge(lift(plan, joined))
        outcome.groups = {key for key, _, _ in changed}
        outcome.result = answer_changes(plan, changed)
        return outcome

    def build(self, tables: Mapping[str, SignedRows]) -> dict[tuple, int]:
        """Start from an empty state with every row of ``tables`` inserted; the whole result."""
        self.state = new_state(self.plan)
        self.live = LiveStats(self.plan) if self.plan.keep_rows else None
        self.apply(tables)
        return self.answer()

    def answer(self) -> dict[tuple, int]:
        """The whole result, ``a(state)``."""
        return full_answer(self.plan, self.state)


def new_state(plan: IncrementalPlan) -> State:
    """The empty state of ``plan`` (every table it reads at 0 rows)."""
    state = State(plan.index_columns(), len(plan.relations), [a.monoid for a in plan.aggregates])
    state.table_rows = dict.fromkeys(plan.tables, 0)
    return state
