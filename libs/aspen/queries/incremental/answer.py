"""``a``: the result rows of the state's groups, and how a batch's changed groups change the
result — per result row, how many more (or fewer) copies ``q_<name>`` holds.

An aggregating query gives one row per group: its outputs over the group's key and the
aggregates' final values (AVG = total / count, MIN/MAX from the multiset, and the expressions
around them). Without GROUP BY there is always exactly one row, the aggregates of no rows
(``COUNT`` 0, the others NULL) when the state has no group. A plain projection gives its key
(the output row) as many times as the group counts it; DISTINCT once.

>>> from aspen.queries.sql import parse_query
>>> from aspen.queries.incremental.compile import compile_query
>>> plan = compile_query(parse_query("q", "SELECT COUNT(*) AS n, MAX(cost) AS m FROM link"))
>>> group_rows(plan, (), None), group_rows(plan, (), (2, (2, {1.0: 1, 3.0: 1})))
({(0, None): 1}, {(2, 3.0): 1})
>>> answer_changes(plan, [((), None, (1, (1, {2.0: 1})))])
{(0, None): -1, (1, 2.0): 1}
"""

from __future__ import annotations

from collections.abc import Iterable

from aspen.queries.incremental.compile import IncrementalPlan
from aspen.queries.incremental.state import Group, State

__all__ = ["answer_changes", "full_answer", "group_rows"]


def group_rows(plan: IncrementalPlan, key: tuple, group: Group | None) -> dict[tuple, int]:
    """The result rows, with their counts, that the group ``key`` holding ``group`` (None:
    absent) gives."""
    if not plan.aggregated:
        if group is None:
            return {}
        return {plan.output_row(key, []): 1 if plan.distinct else group[0]}
    if group is None:
        if not plan.global_aggregate:
            return {}
        group = (0, tuple(0 if a.kind == "count_star" else a.monoid.zero()
                          for a in plan.aggregates))
    finals = [a.final(c) for a, c in zip(plan.aggregates, group[1], strict=True)]
    return {plan.output_row(key, finals): 1}


def answer_changes(plan: IncrementalPlan,
                   changed: Iterable[tuple[tuple, Group | None, Group | None]]
                   ) -> dict[tuple, int]:
    """Per result row, the change of its count from the changed groups (old → new)."""
    out: dict[tuple, int] = {}
    for key, old, new in changed:
        for rows, sign in ((group_rows(plan, key, old), -1), (group_rows(plan, key, new), 1)):
            for row, count in rows.items():
                total = out.get(row, 0) + sign * count
                if total:
                    out[row] = total
                else:
                    out.pop(row, None)
    return out


def full_answer(plan: IncrementalPlan, state: State) -> dict[tuple, int]:
    """The whole result, ``a(state)``: each row with its count."""
    out: dict[tuple, int] = {}
    groups = state.groups.items() if state.groups or not plan.global_aggregate \
        else [((), None)]
    for key, group in groups:
        for row, count in group_rows(plan, key, group).items():
            out[row] = out.get(row, 0) + count
    return out
