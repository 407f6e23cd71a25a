"""Def. 2 of Ariadne (Glavic et al. 2012, §4.3) by brute force: the provenance sets of an output.

A set P of input readings is a provenance set of output t of network q over inputs 𝕀 when

1. ``q(𝕀 ∩ P)`` yields exactly one row, equal in value to t (its id may differ);
2. ``q(𝕀 ↑ P)`` — each stream cut after its last reading in P — ends with t itself (same id);
3. every window an aggregation forms on ``𝕀 ∩ P`` is one it formed on 𝕀 (same rows).

Def. 2 asks for "the minimal" such set; the seed never shows it exists or is unique, so the
search reports all of the *smallest* ones, trying subsets by increasing size: none, one or
several. Join windows are not windows for condition 3 (with them a left row meeting two right
rows would have no provenance set at all, against the join's rule ``{l, r}``).

Where Def. 2 and the per-operator rules part (see :mod:`aspen.streams.algebra`):

- a selection between stacked count windows (§11 item 8): Def. 2 needs every row between the
  surviving inner windows, so that only original inner windows form; the rules give only the
  surviving windows' rows;
- sliding time windows (slide < size): when a reading of the window also lies in another
  window, every subset that forms the window forms a second one too, so none yields exactly
  one row and Def. 2 gives no set; the rules give the window's rows.

>>> from aspen.streams.algebra import Aggregate, CountWindow, Reading, Stream, evaluate
>>> s = [Reading(i, "a", 0, 5) for i in (1, 2, 3, 4)]  # T1..T4, a = 5
>>> q = Aggregate(Stream("s"), CountWindow(2, 1), (("sum", "value"),), key=None)
>>> t6 = evaluate(q, {"s": s})[1]
>>> minimal_provenance(q, {"s": s}, t6)
[{'s': frozenset({2, 3})}]
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from itertools import combinations
from typing import Any

from aspen.errors import EngineError
from aspen.streams.algebra import (
    Inputs,
    Network,
    Provenance,
    Row,
    Window,
    evaluate,
    trace,
)

__all__ = ["MAX_INPUTS", "conditions", "minimal_provenance", "provenance_sets"]

#: The most input readings a brute-force search takes (it tries up to 2^n subsets).
MAX_INPUTS = 12

Chosen = frozenset[tuple[str, int]]


def conditions(network: Network, inputs: Inputs, t: Row,
               candidate: Mapping[str, Iterable[int]]) -> tuple[bool, bool, bool]:
    """Whether ``candidate`` (stream → ids) meets Def. 2's conditions 1, 2 and 3 for ``t``.

    >>> from aspen.streams.algebra import Aggregate, CountWindow, Reading, Stream, evaluate
    >>> s = [Reading(i, "a", 0, 5) for i in (1, 2, 3, 4)]  # T1..T4, a = 5
    >>> q = Aggregate(Stream("s"), CountWindow(2, 1), (("sum", "value"),), key=None)
    >>> t6 = evaluate(q, {"s": s})[1]
    >>> conditions(q, {"s": s}, t6, {"s": {1, 2}}), conditions(q, {"s": s}, t6, {"s": {1, 3}})
    ((True, False, True), (True, True, False))
    """
    chosen = frozenset((stream, i) for stream, ids in candidate.items() for i in ids)
    reduced = trace(network, _intersect(inputs, chosen))
    first = len(reduced.outputs) == 1 and reduced.outputs[0].data == t.data
    prefix = evaluate(network, _prefix(inputs, chosen))
    second = bool(prefix) and _same(prefix[-1], t)
    third = _windows_kept(reduced.windows, _window_keys(trace(network, inputs).windows))
    return first, second, third


def provenance_sets(network: Network, inputs: Inputs,
                    max_inputs: int = MAX_INPUTS) -> dict[Hashable, list[Provenance]]:
    """Every output id of ``network`` on ``inputs`` → its smallest Def. 2 provenance sets.

    One pass over the subsets serves all outputs: a subset meeting the three conditions does
    so for one output only, the last row of its prefix run.

    >>> from aspen.streams.algebra import Reading, Select, Stream
    >>> s = [Reading(1, "a", 0, 9), Reading(2, "a", 1, 3)]
    >>> provenance_sets(Select(Stream("s"), lambda r: r["value"] > 5), {"s": s})
    {('σ', ('s', 1)): [{'s': frozenset({1})}]}
    """
    universe = sorted((stream, r.id) for stream, rows in inputs.items() for r in rows)
    if len(universe) > max_inputs:
        raise EngineError(f"Def. 2 by brute force takes at most {max_inputs} input readings, "
                          f"not {len(universe)}")
    original = trace(network, inputs)
    outputs = {row.id: row for row in original.outputs}
    known = _window_keys(original.windows)
    found: dict[Hashable, list[Provenance]] = {row_id: [] for row_id in outputs}
    size_of: dict[Hashable, int] = {}
    for size in range(len(universe) + 1):
        if len(size_of) == len(outputs) and max(size_of.values(), default=0) < size:
            break  # every output has its smallest sets
        for combo in combinations(universe, size):
            chosen = frozenset(combo)
            witness = _witness(network, inputs, chosen, outputs, known)
            if witness is not None and size_of.setdefault(witness, size) == size:
                found[witness].append(_as_provenance(chosen))
    return found


def minimal_provenance(network: Network, inputs: Inputs, t: Row,
                       max_inputs: int = MAX_INPUTS) -> list[Provenance]:
    """The smallest Def. 2 provenance sets of output ``t`` (none, one or several); see the
    module's example."""
    sets = provenance_sets(network, inputs, max_inputs)
    if t.id not in sets:
        raise EngineError(f"{t.id} is not an output of the network on these inputs")
    return sets[t.id]


def _witness(network: Network, inputs: Inputs, chosen: Chosen, outputs: Mapping[Hashable, Row],
             known: Mapping[str, set[Any]]) -> Hashable | None:
    """The output whose Def. 2 conditions ``chosen`` meets, if any."""
    reduced = trace(network, _intersect(inputs, chosen))
    if len(reduced.outputs) != 1 or not _windows_kept(reduced.windows, known):
        return None  # condition 1 (exactly one row) or 3 (original windows only) fails
    prefix = evaluate(network, _prefix(inputs, chosen))
    t = outputs.get(prefix[-1].id) if prefix else None
    if t is None or not _same(prefix[-1], t) or reduced.outputs[0].data != t.data:
        return None  # condition 2 (the prefix ends with t) or 1 (same values) fails
    return t.id


def _intersect(inputs: Inputs, chosen: Chosen) -> Inputs:
    """𝕀 ∩ P: each stream's readings that are in P, in order."""
    return {s: [r for r in rows if (s, r.id) in chosen] for s, rows in inputs.items()}


def _prefix(inputs: Inputs, chosen: Chosen) -> Inputs:
    """𝕀 ↑ P: each stream up to its last reading in P (empty when P has none of it)."""
    cut = {}
    for stream, rows in inputs.items():
        last = max((i for i, r in enumerate(rows) if (stream, r.id) in chosen), default=-1)
        cut[stream] = list(rows[:last + 1])
    return cut


def _same(row: Row, t: Row) -> bool:
    return row.id == t.id and row.data == t.data


def _window_keys(windows: Mapping[str, list[Window]]) -> dict[str, set[Any]]:
    return {name: {_window_key(w) for w in formed} for name, formed in windows.items()}


def _window_key(window: Window) -> tuple[Any, ...]:
    return tuple((row.id, tuple(sorted(row.data.items()))) for row in window)


def _windows_kept(windows: Mapping[str, list[Window]], known: Mapping[str, set[Any]]) -> bool:
    return all(_window_key(w) in known.get(name, set())
               for name, formed in windows.items() for w in formed)


def _as_provenance(chosen: Chosen) -> Provenance:
    streams: dict[str, set[int]] = {}
    for stream, i in chosen:
        streams.setdefault(stream, set()).add(i)
    return {stream: frozenset(ids) for stream, ids in sorted(streams.items())}
