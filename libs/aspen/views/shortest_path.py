"""Query 2, the shortest-path family over ``path(src, dst, path, cost, hops)``.

Recursive rule (decision 7): ``path(x,y,[x]+p1,c1+c2,l1+1) :- link(x,z,c1), path(z,y,p1,c2,l1),
x ∉ p1`` — simple paths only, the cost a right fold (link cost + cost of the rest). Path values are
tuples of node ids. AggSel (min cost and min hops, all ties kept) prunes the recursion by default;
``aggsel="single"`` keeps min cost only, ``False`` enumerates every simple path.

Views on top of the path Fixpoint: ``min_cost``/``min_hops`` (GroupAggregate MIN; formula = OR of
the tied best paths' provenance), ``cheapest_path``/``fewest_hops`` (AggSel with ties; formula of
the path), ``shortest_cheapest_path`` (their pairs per (src,dst); formula = AND of both).

>>> from aspen.engine.plan import PlanChoices
>>> names = [op.name for op in path_fragment({"min_cost"}, PlanChoices()).ops]
>>> names[:2], names[-1]
(['path.recv_aggsel', 'path.fix'], 'min_cost.agg')
"""

from __future__ import annotations

from aspen.baselines import oracles
from aspen.engine.operators.aggsel import Aggregate
from aspen.engine.plan import AggSelChoice, OpSpec, PlanChoices, RecursivePlan, Route, ViewOutput
from aspen.errors import EngineError
from aspen.views.fragment import Fragment
from aspen.views.spec import View

__all__ = [
    "CHEAPEST_PATH", "COST", "FEWEST_HOPS", "HOPS", "MIN_COST", "MIN_HOPS", "PATH_VIEWS",
    "SHORTEST_CHEAPEST_PATH", "path_fragment", "path_plan",
]

COST = Aggregate("cost", "min", 3)
HOPS = Aggregate("hops", "min", 4)
_HOP_VIEWS = {"min_hops", "fewest_hops", "shortest_cheapest_path"}


def path_plan(choices: PlanChoices,
              views: set[str] | frozenset[str] = frozenset()) -> RecursivePlan:
    """The recursive plan of ``path`` under ``choices``."""
    if choices.aggsel in (True, "multi"):
        aggsel: AggSelChoice | None = AggSelChoice((0, 1), (COST, HOPS),
                                                   at_sender=choices.aggsel_at_sender)
    elif choices.aggsel == "single":
        wanted = sorted(_HOP_VIEWS & set(views))
        if wanted:
            raise EngineError(
                f"aggsel='single' keeps min-cost paths only and cannot build {wanted}; "
                "use aggsel=True (multi) or False"
            )
        aggsel = AggSelChoice((0, 1), (COST,), at_sender=choices.aggsel_at_sender)
    else:
        aggsel = None
    return RecursivePlan(
        view="path", base_relation="link", base_rule="link_to_path",
        step_relation="link", step_key=1, join_key=0, combine="path_step",
        ship=choices.ship, aggsel=aggsel, step_placement=choices.step_placement,
    )


def path_fragment(views: set[str], choices: PlanChoices) -> Fragment:
    """Operators, sources and readers of the requested path-family ``views``."""
    plan = path_plan(choices, views)
    top: list[OpSpec] = []
    outputs: list[ViewOutput] = []
    sel_needed = set()
    if "shortest_cheapest_path" in views:
        sel_needed |= {"cheapest_path", "fewest_hops"}
    for name, column in (("min_cost", 3), ("min_hops", 4)):
        if name in views:
            top.append(OpSpec(f"{name}.agg", "aggregate",
                              (("relation", name), ("group", (0, 1)), ("fn", "min"),
                               ("column", column))))
            outputs.append(ViewOutput(name, "aggregate", (f"{name}.agg",)))
    for name, agg, project in (("cheapest_path", COST, (0, 1, 2, 3)),
                               ("fewest_hops", HOPS, (0, 1, 2, 4))):
        if name in views or name in sel_needed:
            top.append(OpSpec(f"{name}.sel", "aggsel",
                              (("group", (0, 1)), ("aggregates", (agg,)), ("relation", name),
                               ("emit_retractions", True))))
        if name in views:
            outputs.append(ViewOutput(name, "argbest", (f"{name}.sel",), (("project", project),)))
    if "shortest_cheapest_path" in views:
        outputs.append(ViewOutput("shortest_cheapest_path", "pairs",
                                  ("cheapest_path.sel", "fewest_hops.sel")))
    frag = Fragment()
    frag.ops.extend(plan.compile(tuple(Route(op.name, "in") for op in top)))
    frag.ops.extend(top)
    frag.add_source("link", plan.base_route(), plan.step_target)
    frag.outputs.extend(outputs)
    return frag


_PAIRS = ("aspen_pairs_in_reachable",)  # every (src, dst) of a path view is reachable
MIN_COST = View("min_cost", key=("src", "dst"), provenance=True, fragment=path_fragment,
                oracle=oracles.min_cost, title="Cheapest cost of a pair", checks=_PAIRS,
                measure=(2, True))
MIN_HOPS = View("min_hops", key=("src", "dst"), provenance=True, fragment=path_fragment,
                oracle=oracles.min_hops, title="Fewest hops of a pair", checks=_PAIRS,
                measure=(2, False))
CHEAPEST_PATH = View("cheapest_path", key=("src", "dst", "path"), provenance=True,
                     fragment=path_fragment, oracle=oracles.cheapest_path,
                     title="Cheapest routes", checks=_PAIRS, measure=(3, True))
FEWEST_HOPS = View("fewest_hops", key=("src", "dst", "path"), provenance=True,
                   fragment=path_fragment, oracle=oracles.fewest_hops, title="Fewest-hop routes",
                   checks=_PAIRS, hop_paths=("path",), measure=(3, False))
SHORTEST_CHEAPEST_PATH = View(
    "shortest_cheapest_path", key=("src", "dst", "cheapest", "fewest"), provenance=True,
    fragment=path_fragment, oracle=oracles.shortest_cheapest_path,
    title="Cheapest and fewest-hop routes", needs=("cheapest_path", "fewest_hops"),
    checks=_PAIRS, hop_paths=("fewest",), measure=(3, True))
#: The views of this family, by name.
PATH_VIEWS = tuple(v.name for v in (MIN_COST, MIN_HOPS, CHEAPEST_PATH, FEWEST_HOPS,
                                    SHORTEST_CHEAPEST_PATH))
