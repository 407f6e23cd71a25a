"""The views Aspen maintains: their names and their columns, in order (data only).

Every other module takes the view names and layouts from here: the engine's runtimes, the view
plans (:mod:`aspen.views`), the lake's view tables, the quality suites, the CLI and the
dashboard. The rest of what a view declares (key, provenance, plan fragment, oracle, checks,
words) is its entry in the view registry, :mod:`aspen.views.registry`, which names the same
views in the same order: a new view is a line here and an entry there.

>>> VIEWS[:3]
('reachable', 'min_cost', 'min_hops')
>>> VIEW_COLUMNS["cheapest_path"]
('src', 'dst', 'path', 'cost')
>>> check_views(["min_hops", "reachable", "min_hops"])
('min_hops', 'reachable')
>>> check_view("reach")
Traceback (most recent call last):
...
aspen.errors.UnknownViewError: unknown view 'reach'; known views: reachable, min_cost, \
min_hops, cheapest_path, fewest_hops, shortest_cheapest_path, active_region, region_sizes, \
largest_regions
"""

from __future__ import annotations

from collections.abc import Iterable

from aspen.errors import UnknownViewError

__all__ = ["VIEWS", "VIEW_COLUMNS", "check_view", "check_views"]

#: Every view name and its attributes (the tuple layout), in dependency order.
VIEW_COLUMNS: dict[str, tuple[str, ...]] = {
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
#: Every view name, in the order of :data:`VIEW_COLUMNS`.
VIEWS: tuple[str, ...] = tuple(VIEW_COLUMNS)


def _unknown(name: str) -> UnknownViewError:
    return UnknownViewError(f"unknown view {name!r}; known views: {', '.join(VIEWS)}")


def check_view(name: str) -> str:
    """Return ``name`` if it is a view Aspen maintains, else raise :class:`UnknownViewError`.

    >>> check_view("region_sizes")
    'region_sizes'
    """
    if name not in VIEW_COLUMNS:
        raise _unknown(name)
    return name


def check_views(views: Iterable[str]) -> tuple[str, ...]:
    """Validate view names (raises :class:`UnknownViewError`, also when there are none); keep
    their order, drop repeats.

    >>> check_views([])
    Traceback (most recent call last):
    ...
    aspen.errors.UnknownViewError: no view requested; known views: reachable, min_cost, \
min_hops, cheapest_path, fewest_hops, shortest_cheapest_path, active_region, region_sizes, \
largest_regions
    """
    out: list[str] = []
    for name in views:
        if name not in VIEW_COLUMNS:
            raise _unknown(name)
        if name not in out:
            out.append(name)
    if not out:
        raise UnknownViewError(f"no view requested; known views: {', '.join(VIEWS)}")
    return tuple(out)
