"""The views Aspen maintains, defined as plans (data), and the compiler of a set of views.

>>> from aspen.engine.plan import PlanChoices
>>> flow = build_dataflow(("reachable",), PlanChoices())
>>> [o.view for o in flow.outputs]
['reachable']
"""

from __future__ import annotations

from collections.abc import Iterable

from aspen.engine.plan import Dataflow, PlanChoices, SourceSpec
from aspen.errors import UnknownViewError
from aspen.views.fragment import Fragment
from aspen.views.reachable import reachable_fragment
from aspen.views.regions import REGION_VIEWS, region_fragment
from aspen.views.shortest_path import PATH_VIEWS, path_fragment

__all__ = ["VIEWS", "VIEW_LAYOUTS", "build_dataflow", "check_views"]

#: Every view name and its tuple layout.
VIEW_LAYOUTS: dict[str, tuple[str, ...]] = {
    "reachable": ("src", "dst"),
    "min_cost": ("src", "dst", "cost"),
    "min_hops": ("src", "dst", "hops"),
    "cheapest_path": ("src", "dst", "path", "cost"),
    "fewest_hops": ("src", "dst", "path", "hops"),
    "shortest_cheapest_path": ("src", "dst", "cheapest", "cost", "fewest", "hops"),
    "active_region": ("region", "sensor"),
    "region_sizes": ("region", "size"),
    "largest_regions": ("region", "size"),
}
VIEWS: tuple[str, ...] = tuple(VIEW_LAYOUTS)


def check_views(views: Iterable[str]) -> tuple[str, ...]:
    """Validate view names (raises :class:`UnknownViewError`); keep order, drop repeats."""
    out: list[str] = []
    for name in views:
        if name not in VIEW_LAYOUTS:
            raise UnknownViewError(f"unknown view {name!r}; known views: {', '.join(VIEWS)}")
        if name not in out:
            out.append(name)
    if not out:
        raise UnknownViewError(f"no view requested; known views: {', '.join(VIEWS)}")
    return tuple(out)


def build_dataflow(views: Iterable[str], choices: PlanChoices | None = None) -> Dataflow:
    """Compile the requested views (and what they need) into one dataflow."""
    choices = choices or PlanChoices()
    wanted = set(check_views(views))
    frag = Fragment()
    if "reachable" in wanted:
        frag.merge(reachable_fragment(choices))
    if wanted & set(PATH_VIEWS):
        frag.merge(path_fragment(wanted & set(PATH_VIEWS), choices))
    if wanted & set(REGION_VIEWS):
        frag.merge(region_fragment(wanted & set(REGION_VIEWS), choices))
    return Dataflow(
        ops=tuple(frag.ops),
        sources=tuple(SourceSpec(rel, tuple(routes)) for rel, routes in frag.sources.items()),
        outputs=tuple(o for o in frag.outputs if o.view in wanted),
        choices=choices,
    )
