"""The statistics a join query's plan is chosen under, kept exact from each batch's changes.

What the optimizer's cost model reads (:mod:`aspen.optimizer.cost`) is, per relation, its rows
times its filters' selectivity, and per join predicate its selectivity. An incrementally
maintained join already holds every input's filtered, projected rows with their counts
(:mod:`.state`), so those numbers follow from the rows the batch applies, with no scan:

- ``rows`` of a table: its rows as the query reads them, unfiltered — a counter the batch's
  signed table changes move (:attr:`.state.State.table_rows`, stored with the state);
- a relation's **filter selectivity**: its rows kept (the sum of its counts in the state) over
  the table's rows; a relation of *k* filters gives each the *k*-th root (only their product
  is known, and only it is used);
- a **join selectivity**: for the predicates between two relations, the joined pairs
  ``J = Σₖ cₐ(k)·c_b(k)`` over their join values ``k`` (NULL joins nothing) over the product of
  the two relations' kept rows — the exact size of their join; *k* predicates between the same
  two relations give each the *k*-th root. ``J`` moves with each applied row by
  ``δ·c_other(k)``, relation by relation as the batch applies them (as :mod:`.join`
  telescopes), so it stays exact;
- ``ndv`` of a join column: its distinct non-null values, where a relation reads that column
  of the table unfiltered (else not given: the join selectivity above is what the cost model
  uses).

Counts per join value are kept in memory beside the state and rebuilt from its rows when it is
read back (:meth:`LiveStats.from_state`); only the tables' row counts are stored.

>>> from aspen.queries.sql import parse_query
>>> from aspen.queries.incremental.compile import compile_query
>>> plan = compile_query(parse_query("q", "SELECT a.src FROM link a JOIN link b "
...                                       "ON a.dst = b.src WHERE b.cost > 1"))
>>> live = LiveStats(plan)
>>> [rel.columns for rel in plan.relations]
[('dst', 'src'), ('src',)]
>>> live.observe(0, {("y", "x"): 1, ("y", "z"): 1})   # two links into y
>>> live.observe(1, {("y",): 1, ("q",): 1})           # two of four links cost > 1
>>> doc = live.document({"link": 4})
>>> doc["tables"]["link"]
{'rows': 4.0, 'columns': {'dst': {'ndv': 1.0}, 'src': {'ndv': 2.0}}}
>>> doc["selectivity"]
{'b: cost > 1': 0.5, 'a.dst=b.src': 0.5}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aspen.queries.incremental.compile import IncrementalPlan
from aspen.queries.incremental.state import State

__all__ = ["LiveStats"]

_Cols = tuple[int, ...]


class LiveStats:
    """Per relation its kept rows and counts per join value; per pair of joined relations
    their joined pairs (see the module docstring)."""

    def __init__(self, plan: IncrementalPlan) -> None:
        self.plan = plan
        self.kept = [0] * len(plan.relations)
        # (relation, columns) → join value → count
        self.values: dict[tuple[int, _Cols], dict[tuple, int]] = {}
        # per joined pair: its predicate ids, (a, a's columns), (b, b's columns); J in joined
        grouped: dict[tuple[int, int], list[tuple[str, int, int]]] = {}
        for pred_id, lp, lc, rp, rc in plan.predicates:
            a, b = sorted((lp, rp))
            grouped.setdefault((a, b), []).append(
                (pred_id, lc, rc) if lp == a else (pred_id, rc, lc))
        self.pairs: list[tuple[tuple[str, ...], tuple[int, _Cols], tuple[int, _Cols]]] = []
        self.joined: list[int] = []
        for (a, b), preds in sorted(grouped.items()):
            side_a, side_b = (a, tuple(p[1] for p in preds)), (b, tuple(p[2] for p in preds))
            self.pairs.append((tuple(p[0] for p in preds), side_a, side_b))
            self.joined.append(0)
            self.values.setdefault(side_a, {})
            self.values.setdefault(side_b, {})
        # per relation: its (columns, pairs it is side 0 or 1 of) to update
        self.partners: list[list[tuple[_Cols, list[tuple[int, tuple[int, _Cols]]]]]] = [
            [] for _ in plan.relations]
        for (p, cols) in list(self.values):
            partner = [(i, pair[2] if pair[1] == (p, cols) else pair[1])
                       for i, pair in enumerate(self.pairs) if (p, cols) in (pair[1], pair[2])]
            self.partners[p].append((cols, partner))
        self._wiring: list | None = None
        self.ndv_of: dict[tuple[str, str], tuple[int, _Cols]] = {}
        for table in plan.tables:
            for p, rel in enumerate(plan.relations):
                if rel.table != table or rel.filters:
                    continue
                for column in self._join_columns(table):
                    if column in rel.columns and (table, column) not in self.ndv_of:
                        side = (p, (rel.columns.index(column),))
                        if side not in self.values:
                            self.values[side] = {}
                            self.partners[p].append((side[1], []))
                        self.ndv_of[(table, column)] = side

    def _join_columns(self, table: str) -> list[str]:
        plan = self.plan
        out = []
        for _, lp, lc, rp, rc in plan.predicates:
            for p, c in ((lp, lc), (rp, rc)):
                rel = plan.relations[p]
                if rel.table == table and rel.columns[c] not in out:
                    out.append(rel.columns[c])
        return sorted(out)

    @staticmethod
    def from_state(plan: IncrementalPlan, state: State) -> LiveStats:
        """The statistics of the rows ``state`` holds (as if they were applied in one batch)."""
        live = LiveStats(plan)
        for position, rows in enumerate(state.rows):
            live.observe(position, rows)
        return live

    def observe(self, position: int, applied: Mapping[tuple, int]) -> None:
        """Relation ``position``'s rows changed by ``applied`` (signed counts), after the
        relations before it in the batch and before those after it."""
        plan, kept, joined = self._wired(), self.kept, self.joined
        for row, delta in applied.items():
            kept[position] += delta
            for cols, held, others in plan[position]:
                key = tuple(row[c] for c in cols)
                if None in key:
                    continue  # NULL joins nothing and is no distinct value
                for index, other in others:
                    found = other.get(key)
                    if found:
                        joined[index] += delta * found
                total = held.get(key, 0) + delta
                if total:
                    held[key] = total
                else:
                    del held[key]

    def _wired(self) -> list[list[tuple[_Cols, dict[tuple, int],
                                        list[tuple[int, dict[tuple, int]]]]]]:
        """Per relation: its columns, their counts and the partners' counts per pair."""
        if self._wiring is None:
            self._wiring = [[(cols, self.values[(p, cols)],
                              [(i, self.values[side]) for i, side in pairs])
                             for cols, pairs in partners]
                            for p, partners in enumerate(self.partners)]
        return self._wiring

    def document(self, table_rows: Mapping[str, int]) -> dict[str, Any]:
        """The statistics as S.json (``tables`` with ``rows`` and ``ndv``, ``selectivity``)
        for the tables' unfiltered row counts ``table_rows``."""
        plan = self.plan
        tables: dict[str, dict[str, Any]] = {}
        selectivity: dict[str, float] = {}
        for table in plan.tables:
            info: dict[str, Any] = {}
            if table in table_rows:
                info["rows"] = float(max(0, table_rows[table]))
            columns = {c: {"ndv": float(len(self.values[side]))}
                       for (t, c), side in sorted(self.ndv_of.items()) if t == table}
            if columns:
                info["columns"] = columns
            tables[table] = info
        for p, rel in enumerate(plan.relations):
            rows = table_rows.get(rel.table, 0)
            if rel.filters and rows > 0:
                share = _root(min(1.0, max(0, self.kept[p]) / rows), len(rel.filters))
                for text in rel.filters:
                    selectivity[f"{rel.alias}: {text}"] = share
        for (ids, (a, _), (b, _)), pairs in zip(self.pairs, self.joined, strict=True):
            both = self.kept[a] * self.kept[b]
            if both > 0:
                share = _root(min(1.0, max(0, pairs) / both), len(ids))
                for pred_id in ids:
                    selectivity[pred_id] = share
        return {"tables": tables, "selectivity": selectivity}


def _root(value: float, k: int) -> float:
    return value if k == 1 or value <= 0 else math.pow(value, 1.0 / k)
