"""From-scratch evaluation of every Aspen view: the correctness oracle.

Set semantics, no provenance, plain Python, over the set of **live** base facts. Each view's
oracle is the one its entry in the view registry names (:mod:`aspen.views.registry`; the
algorithms and the semantics they follow are in :mod:`aspen.baselines.oracles`); this module
evaluates the views asked for, and first the views they need, in the registry's order.

>>> facts = [BaseFact("link", ("a", "b", 1.0), "v1"), BaseFact("link", ("b", "a", 2.0), "v2")]
>>> sorted(evaluate("reachable", facts))
[('a', 'a'), ('a', 'b'), ('b', 'a'), ('b', 'b')]
>>> sorted(evaluate("cheapest_path", facts))
[('a', 'b', ('a', 'b'), 1.0), ('b', 'a', ('b', 'a'), 2.0)]
"""

from __future__ import annotations

from collections.abc import Iterable

from aspen.baselines.oracles import BaseState, Facts, Scratch, base_state
from aspen.catalog import VIEWS, check_view
from aspen.engine.batch import BaseFact
from aspen.views.registry import REGISTRY

__all__ = ["BaseFact", "BaseState", "base_state", "evaluate", "evaluate_all"]


def evaluate(view: str, facts: Facts, k: float = 20.0) -> set[tuple]:
    """The tuples of ``view`` computed from scratch over the live ``facts``.

    >>> sensors = [BaseFact("sensor", ("s1", 0, 0), "a"), BaseFact("sensor", ("s2", 0, 20), "b"),
    ...            BaseFact("triggered", ("s1",), "c"), BaseFact("triggered", ("s2",), "d"),
    ...            BaseFact("region_seed", ("r", "s1"), "e")]
    >>> evaluate("active_region", sensors)          # distance exactly k: not near
    {('r', 's1')}
    >>> sorted(evaluate("active_region", sensors, k=20.5))
    [('r', 's1'), ('r', 's2')]
    """
    check_view(view)
    return evaluate_all(facts, k=k, views=(view,))[view]


def evaluate_all(
    facts: Facts, k: float = 20.0, views: Iterable[str] | None = None
) -> dict[str, set[tuple]]:
    """Every view (or those named in ``views``) computed from scratch over ``facts``.

    >>> out = evaluate_all([BaseFact("link", ("a", "b", 1.0), "v1")])
    >>> out["min_hops"], out["shortest_cheapest_path"]
    ({('a', 'b', 1)}, {('a', 'b', ('a', 'b'), 1.0, ('a', 'b'), 1)})
    """
    wanted = tuple(VIEWS if views is None else views)
    for view in wanted:
        check_view(view)
    needs = set(wanted)
    for name in reversed(REGISTRY):  # a view comes after those it needs
        if name in needs:
            needs.update(REGISTRY[name].needs)
    scratch = Scratch(base_state(facts), k)
    out: dict[str, set[tuple]] = {}
    for name, view in REGISTRY.items():
        if name in needs:
            out[name] = view.oracle(scratch, out)
    return {view: out[view] for view in wanted}
