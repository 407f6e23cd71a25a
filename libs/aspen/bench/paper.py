"""The experiments of Liu et al. 2008, §7, on Aspen's in-process runtime.

Each function builds its workload from :mod:`aspen.generators`, runs the schemes on the same
batches, and returns JSON-able measurements (no assertion on time):

* :func:`insertions` — insert 0.25 → 1.0 of the links (Fig. 7): absorption lazy/eager, DRed
  (= plain set semantics in an insert-only run) and relative provenance;
* :func:`deletions` — insert all, then delete link tuples one at a time (Fig. 8);
* :func:`density` — one build of ``reachable`` in lazy (no flush: membership exact, formulas
  shipped only when needed) or eager mode (MinShip timer until nothing is buffered) (Fig. 11);
* :func:`aggsel` — the shortest-path views with multi-, single- or no aggregate selection (Fig. 14);
* :func:`regions` — the region query (W2): trigger a fraction of the sensors of the 100 m grid,
  then un-trigger them one per batch (convergence per deletion).

>>> r = deletions(tiny=True, limit=3, schemes=("absorption-lazy", "dred"))
>>> r["schemes"]["dred"]["deletions"]
3
"""

from __future__ import annotations

import hashlib
import random
import statistics
from collections.abc import Sequence
from typing import Any

from aspen.bench.common import (
    FactStream,
    make_scheme,
    messages_of,
    per_node_metrics,
    timed,
    topology,
    tuples_of,
)
from aspen.generators.workloads import delete_one_batches, fraction_batches

__all__ = ["aggsel", "deletions", "density", "insertions", "per_tuple_bytes", "regions"]

FRACTIONS = (0.25, 0.5, 0.75, 1.0)
ALL_SCHEMES = ("absorption-lazy", "absorption-eager", "dred", "relative")


def per_tuple_bytes(runtime: Any, view: str = "reachable", sample: int = 400) -> float | None:
    """Mean encoded size of the provenance of (a sample of) the view's tuples; None for
    baselines."""
    if not hasattr(runtime, "manager"):
        return None
    formulas = [f for f in runtime.view(view).values() if f is not None]
    if not formulas:
        return 0.0
    chosen = random.Random(0).sample(formulas, min(sample, len(formulas)))
    return statistics.mean(len(runtime.manager.encode(f)) for f in chosen)


def insertions(nodes: int = 100, degree: float = 2.4, partitions: int = 12, tiny: bool = False,
               schemes: Sequence[str] = ALL_SCHEMES, seed: int = 0) -> dict[str, Any]:
    """Cumulative cost after each fraction of the links is inserted, per scheme."""
    topo = topology(nodes, degree, seed, tiny)
    out: dict[str, Any] = {"link_tuples": len(topo.links), "fractions": list(FRACTIONS),
                           "schemes": {}}
    for name in schemes:
        stream = FactStream()
        runtime = make_scheme(name, partitions)
        rows, elapsed = [], 0.0
        for fraction, records in zip(FRACTIONS, fraction_batches(topo, FRACTIONS, seed=seed),
                                     strict=True):
            batch = stream.batch(records)
            seconds, _ = timed(runtime.apply, batch)
            if name == "absorption-eager":
                seconds += timed(runtime.flush)[0]
            elapsed += seconds
            rows.append({"fraction": fraction, "messages": messages_of(runtime),
                         "tuples": tuples_of(runtime), "seconds": elapsed,
                         "view_tuples": len(runtime.view("reachable")),
                         **per_node_metrics(runtime)})
        out["schemes"][name] = {"steps": rows, "per_tuple_bytes": per_tuple_bytes(runtime)}
    return out


def _one_per_batch(runtime: Any, stream: FactStream,
                   batches: Sequence[list]) -> tuple[list[float], list[int]]:
    """Apply each batch in turn: (seconds, messages shipped) of each (convergence per deletion)."""
    times, msgs = [], []
    for records in batches:
        before = messages_of(runtime)
        seconds, _ = timed(runtime.apply, stream.batch(records))
        times.append(seconds)
        msgs.append(messages_of(runtime) - before)
    return times, msgs


def deletions(nodes: int = 100, degree: float = 2.4, partitions: int = 12, tiny: bool = False,
              limit: int | None = None, seed: int = 0,
              schemes: Sequence[str] = ("absorption-lazy", "absorption-eager", "dred"),
              ) -> dict[str, Any]:
    """Insert every link tuple, then delete ``limit`` of them (all by default) one per batch."""
    topo = topology(nodes, degree, seed, tiny)
    batches = delete_one_batches(topo, seed=seed, unit="tuple")
    deletes = batches[1:][:limit] if limit else batches[1:]
    out: dict[str, Any] = {"link_tuples": len(topo.links), "schemes": {}}
    views: dict[str, set] = {}
    for name in schemes:
        stream = FactStream()
        runtime = make_scheme(name, partitions)
        build_s, _ = timed(runtime.apply, stream.batch(batches[0]))
        if name == "absorption-eager":
            build_s += timed(runtime.flush)[0]
        start_msgs, start_tuples = messages_of(runtime), tuples_of(runtime)
        times, msgs = _one_per_batch(runtime, stream, deletes)
        views[name] = set(runtime.view("reachable"))
        out["schemes"][name] = {
            "build_s": build_s, "build_messages": start_msgs, "deletions": len(times),
            "del_messages": messages_of(runtime) - start_msgs,
            "del_tuples": tuples_of(runtime) - start_tuples, "del_seconds": sum(times),
            "mean_messages": statistics.mean(msgs) if msgs else 0.0,
            "mean_ms": 1000 * statistics.mean(times) if times else 0.0,
            "max_ms": 1000 * max(times) if times else 0.0,
            "per_deletion_ms": [round(1000 * t, 3) for t in times],
            "per_deletion_messages": msgs,
            "view_digest": hashlib.sha1(repr(sorted(views[name])).encode()).hexdigest()[:12],
        }
    first = next(iter(views.values()), set())
    out["same_views"] = all(v == first for v in views.values())
    return out


def density(variant: str = "dense", mode: str = "lazy", nodes: int = 100, partitions: int = 12,
            tiny: bool = False, seed: int = 0) -> dict[str, Any]:
    """One build of ``reachable`` on the ``variant`` topology (sparse 2, dense 4 tuples/node)."""
    degree = {"sparse": 2.0, "dense": 4.0}[variant]
    topo = topology(nodes, degree, seed, tiny)
    stream = FactStream()
    runtime = make_scheme(f"absorption-{mode}", partitions)
    batch = stream.batch([r for b in fraction_batches(topo, (1.0,), seed=seed) for r in b])
    seconds, _ = timed(runtime.apply, batch)
    if mode == "eager":
        seconds += timed(runtime.flush)[0]
    return {"variant": variant, "mode": mode, "link_tuples": len(topo.links), "seconds": seconds,
            "messages": messages_of(runtime), "view_tuples": len(runtime.view("reachable"))}


def aggsel(variant: str = "dense", choice: str = "multi", nodes: int = 100, partitions: int = 12,
           tiny: bool = False, seed: int = 0) -> dict[str, Any]:
    """Build the cheapest-path views with aggregate selection ``choice`` (multi/single/none).

    ``multi`` maintains cheapest and fewest-hop paths in one recursion (AggSel on min cost and min
    hops); ``single`` maintains the cheapest paths only (AggSel on min cost) — the engine cannot
    prune on hops alone, so the fewest-hop half of a single-aggregate plan is not run; ``none``
    enumerates paths (cheapest paths, no pruning)."""
    degree = {"sparse": 2.0, "dense": 4.0}[variant]
    topo = topology(nodes, degree, seed, tiny)
    views = {"multi": ("cheapest_path", "fewest_hops")}.get(choice, ("cheapest_path",))
    flag = {"multi": True, "single": "single", "none": False}[choice]
    runtime = make_scheme("absorption-lazy", partitions, views, aggsel=flag)
    stream = FactStream()
    batch = stream.batch([r for b in fraction_batches(topo, (1.0,), seed=seed) for r in b])
    seconds, _ = timed(runtime.apply, batch)
    return {"variant": variant, "choice": choice, "views": list(views), "seconds": seconds,
            "messages": messages_of(runtime), "tuples": tuples_of(runtime),
            "view_tuples": {v: len(runtime.view(v)) for v in views}}


def regions(trigger_fraction: float = 0.3, partitions: int = 12, tiny: bool = False,
            seed: int = 0, limit: int | None = None,
            schemes: Sequence[str] = ("absorption-lazy", "absorption-eager", "dred"),
            ) -> dict[str, Any]:
    """Query 3 on the paper's workload W2 (100 m × 100 m grid, 10 m spacing, 5 seeds, k = 20 m;
    ``tiny``: 20 m spacing): setup and seeds, then ``trigger_fraction`` of the other sensors
    triggered in one batch (the build), then un-triggered one per batch (``limit`` of them).
    ``active_region`` is the view the baselines also maintain.

    >>> r = regions(tiny=True, limit=2, schemes=("absorption-lazy", "dred"))
    >>> r["schemes"]["dred"]["deletions"], r["same_views"]
    (2, True)
    """
    from aspen.generators.sensors import sensor_grid
    from aspen.generators.workloads import sensor_batches

    grid = sensor_grid(spacing=20.0 if tiny else 10.0, seed=seed)
    setup, trigger, untrigger = sensor_batches(grid, seed=seed, trigger_fraction=trigger_fraction)
    deletes = [[record] for record in untrigger][:limit] if limit else [[r] for r in untrigger]
    view = "active_region"
    out: dict[str, Any] = {"sensors": len(grid.sensors), "triggered": len(trigger),
                           "trigger_fraction": trigger_fraction, "schemes": {}}
    views: dict[str, set] = {}
    for name in schemes:
        stream = FactStream()
        runtime = make_scheme(name, partitions, views=(view,))
        build_s = sum(timed(runtime.apply, stream.batch(b))[0] for b in (setup, trigger))
        if name == "absorption-eager":
            build_s += timed(runtime.flush)[0]
        built = {"build_s": build_s, "build_messages": messages_of(runtime),
                 "view_tuples": len(runtime.view(view)),
                 "per_tuple_bytes": per_tuple_bytes(runtime, view), **per_node_metrics(runtime)}
        times, msgs = _one_per_batch(runtime, stream, deletes)
        views[name] = set(runtime.view(view))
        out["schemes"][name] = built | {
            "deletions": len(times), "del_seconds": sum(times),
            "mean_messages": statistics.mean(msgs) if msgs else 0.0,
            "mean_ms": 1000 * statistics.mean(times) if times else 0.0,
            "max_ms": 1000 * max(times) if times else 0.0,
        }
    first = next(iter(views.values()), set())
    out["same_views"] = all(v == first for v in views.values())
    return out
