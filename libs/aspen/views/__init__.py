"""The views Aspen maintains, defined as plans (data), and the compiler of a set of views (their
names and columns: :mod:`aspen.catalog`).

>>> from aspen.engine.plan import PlanChoices
>>> flow = build_dataflow(("reachable",), PlanChoices())
>>> [o.view for o in flow.outputs]
['reachable']
"""

from __future__ import annotations

from collections.abc import Iterable

from aspen.catalog import check_views
from aspen.engine.plan import Dataflow, PlanChoices, SourceSpec
from aspen.views.fragment import Fragment
from aspen.views.reachable import reachable_fragment
from aspen.views.regions import REGION_VIEWS, region_fragment
from aspen.views.shortest_path import PATH_VIEWS, path_fragment

__all__ = ["build_dataflow"]


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
