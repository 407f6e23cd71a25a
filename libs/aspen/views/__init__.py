"""The views Aspen maintains, defined as plans (data), and the compiler of a set of views. Each
view is declared once and registered in :mod:`aspen.views.registry` (its name and columns:
:mod:`aspen.catalog`).

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
from aspen.views.registry import REGISTRY
from aspen.views.spec import FragmentBuilder

__all__ = ["build_dataflow"]


def build_dataflow(views: Iterable[str], choices: PlanChoices | None = None) -> Dataflow:
    """Compile the requested views (and what they need) into one dataflow."""
    choices = choices or PlanChoices()
    wanted = set(check_views(views))
    # each fragment builder once, with every wanted view it builds, in the registry's order
    families: dict[FragmentBuilder, set[str]] = {}
    for name, view in REGISTRY.items():
        if name in wanted:
            families.setdefault(view.fragment, set()).add(name)
    frag = Fragment()
    for builder, names in families.items():
        frag.merge(builder(names, choices))
    return Dataflow(
        ops=tuple(frag.ops),
        sources=tuple(SourceSpec(rel, tuple(routes)) for rel, routes in frag.sources.items()),
        outputs=tuple(o for o in frag.outputs if o.view in wanted),
        choices=choices,
    )
