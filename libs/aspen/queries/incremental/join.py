"""The joined rows a batch changes: ``Δ(R ⋈ S) = ΔR ⋈ S_old + R_new ⋈ ΔS`` with signed
multiplicities, which is ``ΔR ⋈ S_old + R_old ⋈ ΔS + ΔR ⋈ ΔS`` — the cross term included.

Relations are taken in order: relation *i*'s changes are joined with the state of the others —
those before *i* already changed, those after not yet — and then applied to the state. The sum
telescopes to ``J(R₁', …, Rₙ') − J(R₁, …, Rₙ)`` for any number of relations, a table joined
with itself included (each alias is its own relation with its own change). A joined row's
multiplicity is the product of its parts'; a NULL join value matches nothing.

>>> from aspen.queries.incremental.state import State
>>> from aspen.queries.incremental.compile import Step
>>> state = State(index_columns={1: {(0,)}}, relations=2)
>>> to_s = Step(1, (0,), lambda joined: (joined[0][1],))   # r.b = s.c
>>> to_r = Step(0, (1,), lambda joined: (joined[1][0],))
>>> state.indexes[0][(1,)] = {}
>>> changes = [{("a", 1): 1}, {(1, 10): 1}]   # r(a, 1) and s(1, 10) arrive together
>>> joined_changes(state, [[to_s], [to_r]], changes)[0]
{(('a', 1), (1, 10)): 1}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from aspen.queries.incremental.compile import Step
from aspen.queries.incremental.state import State

__all__ = ["joined_changes"]


def joined_changes(state: State, steps: Sequence[Sequence[Step]],
                   changes: Sequence[Mapping[tuple, int]],
                   observe: Callable[[int, Mapping[tuple, int]], None] | None = None
                   ) -> tuple[dict[tuple, int], int]:
    """Apply every relation's signed ``changes`` to ``state`` (one per relation, in order) and
    return the change of the joined rows (a joined row is the tuple of its relations' rows)
    and how many deletions of rows not held were ignored. ``observe(position, applied)`` is
    told each relation's change as applied, in that order (the live statistics)."""
    out: dict[tuple, int] = {}
    ignored = 0
    for position, change in enumerate(changes):
        if not change:
            continue
        applied, dropped = state.apply_rows(position, change)
        ignored += dropped
        if observe is not None:
            observe(position, applied)
        # the others are as the telescoping sum needs them: this relation is not looked up
        for row, sign in applied.items():
            partial: list = [None] * len(changes)
            partial[position] = row
            for joined, count in _extend(state, steps[position], partial, sign):
                key = tuple(joined)
                total = out.get(key, 0) + count
                if total:
                    out[key] = total
                else:
                    out.pop(key, None)
    return out, ignored


def _extend(state: State, steps: Sequence[Step], partial: list, sign: int):
    if not steps:
        yield partial, sign
        return
    step, rest = steps[0], steps[1:]
    key = step.probe(partial)
    if any(v is None for v in key):
        return
    for row, count in state.lookup(step.position, step.columns, key).items():
        extended = list(partial)
        extended[step.position] = row
        yield from _extend(state, rest, extended, sign * count)
