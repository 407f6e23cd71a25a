"""Query 3, sensor regions (decision 7).

``active_region(r, s) :- region_seed(r, s), sensor(s, ·), triggered(s)`` and
``active_region(r, y) :- active_region(r, x), sensor(x, px), sensor(y, py), triggered(y),
dist(px, py) < k`` (k = 20.0 by default): the **new** sensor must be triggered.
``region_sizes(region, size)`` counts members; ``largest_regions(region, size)`` keeps the regions
of maximum size (all ties). Both carry no formula (None): a count is not one Boolean formula.

Dataflow: ``triggered_sensor = sensor ⋈ triggered`` at owner(id); ``region_seed`` ships to the
owner of its sensor to meet it; ``neighbor(x, y) = sensor(x) ⋈θ triggered_sensor(y)`` is a
grid-bucketed theta join at owner(x) with triggered sensors broadcast; the recursive join meets
``active_region(r, x)`` (shipped to owner(x)) with ``neighbor(x, y)``.

>>> from aspen.engine.plan import PlanChoices
>>> [op.name for op in region_fragment({"active_region"}, PlanChoices()).ops][:3]
['triggered_sensor.join', 'seed.join', 'neighbor.join']
"""

from __future__ import annotations

from aspen.baselines import oracles
from aspen.engine.operators.aggsel import Aggregate
from aspen.engine.plan import OpSpec, PlanChoices, RecursivePlan, Route, ViewOutput
from aspen.views.fragment import Fragment
from aspen.views.spec import View

__all__ = [
    "ACTIVE_REGION", "LARGEST_REGIONS", "REGION_SIZES", "REGION_VIEWS", "region_fragment",
    "region_plan",
]


def region_plan(choices: PlanChoices) -> RecursivePlan:
    """The recursive plan of ``active_region`` (its base case comes from ``seed.join``)."""
    return RecursivePlan(
        view="active_region", base_relation="region_seed", base_rule="",
        step_relation="neighbor", step_key=0, join_key=1, combine="region_step",
        ship=choices.ship, step_placement=choices.region_step_placement,
    )


def region_fragment(views: set[str], choices: PlanChoices) -> Fragment:
    """Operators, sources and readers of the requested region ``views``."""
    plan = region_plan(choices)
    k = (("k", choices.k),)
    ops: list[OpSpec] = [
        OpSpec("triggered_sensor.join", "join",
               (("relation", "triggered_sensor"), ("left_key", "col:0"), ("right_key", "col:0"),
                ("combine", "sensor_triggered")),
               (Route("seed.join", "right", "owner", 0),
                Route("neighbor.join", "right", "broadcast"))),
        OpSpec("seed.join", "join",
               (("relation", "active_region"), ("left_key", "col:1"), ("right_key", "col:0"),
                ("combine", "seed_join")),
               (Route(plan.entry, "base", "owner", 0),)),
        OpSpec("neighbor.join", "join",
               (("relation", "neighbor"), ("left_key", ("cell", k)), ("right_key", ("cell", k)),
                ("probe_left", ("cells_around", k)), ("probe_right", ("cells_around", k)),
                ("combine", ("neighbors", k))),
               (plan.step_target,)),
    ]
    top: list[OpSpec] = []
    outputs: list[ViewOutput] = []
    if "active_region" in views:
        outputs.append(ViewOutput("active_region", "fixpoint", (plan.fixpoint,),
                                  ACTIVE_REGION.output_params))
    if "region_sizes" in views or "largest_regions" in views:
        routes = ((Route("largest_regions.sel", "in", "node", 0),)
                  if "largest_regions" in views else ())
        top.append(OpSpec("region_sizes.agg", "aggregate",
                          (("relation", "region_sizes"), ("group", (0,)), ("fn", "count")),
                          routes))
    if "region_sizes" in views:
        outputs.append(ViewOutput("region_sizes", "aggregate", ("region_sizes.agg",),
                                  REGION_SIZES.output_params))
    if "largest_regions" in views:
        top.append(OpSpec("largest_regions.sel", "aggsel",
                          (("group", ()), ("aggregates", (Aggregate("size", "max", 1),)),
                           ("relation", "largest_regions"), ("emit_retractions", True))))
        outputs.append(ViewOutput("largest_regions", "argbest", ("largest_regions.sel",),
                                  LARGEST_REGIONS.output_params))
    frag = Fragment()
    frag.ops.extend(ops)
    frag.ops.extend(plan.compile(tuple(Route(op.name, "in") for op in top[:1])))
    frag.ops.extend(top)
    frag.add_source("sensor", Route("triggered_sensor.join", "left", "local"),
                    Route("neighbor.join", "left", "local"))
    frag.add_source("triggered", Route("triggered_sensor.join", "right", "local"))
    frag.add_source("region_seed", Route("seed.join", "left", "owner", 1))
    frag.outputs.extend(outputs)
    return frag


ACTIVE_REGION = View("active_region", key=("region", "sensor"), provenance=True,
                     fragment=region_fragment, oracle=oracles.active_region,
                     title="Region members")
REGION_SIZES = View("region_sizes", key=("region",), provenance=False, fragment=region_fragment,
                    oracle=oracles.region_sizes, title="Region sizes", needs=("active_region",),
                    checks=("aspen_sizes_count_active_region",))
LARGEST_REGIONS = View("largest_regions", key=("region",), provenance=False,
                       fragment=region_fragment, oracle=oracles.largest_regions,
                       title="Largest regions", needs=("region_sizes",),
                       checks=("aspen_largest_of_region_sizes",))
#: The views of this family, by name.
REGION_VIEWS = tuple(v.name for v in (ACTIVE_REGION, REGION_SIZES, LARGEST_REGIONS))
