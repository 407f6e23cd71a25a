"""The view registry: every view Aspen maintains, by name, with what it declares
(:class:`~aspen.views.spec.View`). Plans (:func:`aspen.views.build_dataflow`), the from-scratch
oracle (:mod:`aspen.baselines.scratch`), the quality suites and the what-if answers read it
instead of keeping their own lists.

To add a view: its name and columns in :data:`aspen.catalog.VIEW_COLUMNS` (every layer reads
them from there); one module of :mod:`aspen.views` declaring its :class:`View` (a family of views
sharing operators may share a module and a fragment builder); one entry below, after the views
it needs. ``tests/unit/views/test_view_registry.py`` checks every entry provides what a view
must, and that the registry agrees with the catalog and the oracle.

>>> list(REGISTRY)[:3]
['reachable', 'min_cost', 'min_hops']
>>> view("region_sizes").needs
('active_region',)
>>> view("reach")
Traceback (most recent call last):
...
aspen.errors.UnknownViewError: unknown view 'reach'; known views: reachable, min_cost, \
min_hops, cheapest_path, fewest_hops, shortest_cheapest_path, active_region, region_sizes, \
largest_regions
"""

from __future__ import annotations

from aspen.catalog import check_view
from aspen.views import reachable, regions, shortest_path
from aspen.views.spec import View

__all__ = ["REGISTRY", "View", "view"]

#: Every view by name, in the order of :data:`aspen.catalog.VIEWS` (a view after the views its
#: oracle needs): one entry per view.
REGISTRY: dict[str, View] = {v.name: v for v in (
    reachable.VIEW,
    shortest_path.MIN_COST,
    shortest_path.MIN_HOPS,
    shortest_path.CHEAPEST_PATH,
    shortest_path.FEWEST_HOPS,
    shortest_path.SHORTEST_CHEAPEST_PATH,
    regions.ACTIVE_REGION,
    regions.REGION_SIZES,
    regions.LARGEST_REGIONS,
)}


def view(name: str) -> View:
    """The registered view ``name`` (:class:`~aspen.errors.UnknownViewError` if none)."""
    return REGISTRY[check_view(name)]
