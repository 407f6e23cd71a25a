"""Provenance size under BDD variable orders (Liu 2016, §3.5): DFS, BFS, arrival, in the engine.

The links arrive in random order (the insertion workload's order); before the build the link
variables are placed in the manager in DFS edge order, BFS edge order, or arrival order
(:func:`aspen.provenance.ordering.order_variables`), dynamic reordering off; then
:class:`~aspen.runtime.local.LocalRuntime` builds ``reachable`` with exact provenance (lazy +
flush). Size = the sum over the view's tuples of their BDD node counts, and the mean encoded
bytes per tuple (the paper's per-tuple provenance overhead).

>>> r = variable_order(tiny=True, orders=("dfs", "arrival"))
>>> sorted(r["orders"]), r["orders"]["dfs"]["view_tuples"] == r["orders"]["arrival"]["view_tuples"]
(['arrival', 'dfs'], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aspen.bench.common import FactStream, make_scheme, timed, topology
from aspen.generators.workloads import fraction_batches
from aspen.provenance.ordering import (
    arrival_order,
    bfs_edge_order,
    dfs_edge_order,
    order_variables,
)

__all__ = ["ORDERS", "variable_order"]

ORDERS = {"dfs": dfs_edge_order, "bfs": bfs_edge_order, "arrival": arrival_order}


def variable_order(nodes: int = 100, degree: float = 2.4, partitions: int = 12,
                   tiny: bool = False, seed: int = 0,
                   orders: Sequence[str] = ("dfs", "bfs", "arrival")) -> dict[str, Any]:
    """Build size and time of exact ``reachable`` provenance under each variable order."""
    topo = topology(nodes, degree, seed, tiny)
    records = [r for b in fraction_batches(topo, (1.0,), seed=seed) for r in b]
    out: dict[str, Any] = {"link_tuples": len(topo.links), "orders": {}}
    for name in orders:
        stream = FactStream()
        batch = stream.batch(records)
        arrived = [(f.values[0], f.values[1]) for f in batch.inserts]
        runtime = make_scheme("absorption-lazy", partitions)
        placed = order_variables(runtime.manager, ORDERS[name](arrived), stream.live)
        seconds, _ = timed(lambda rt=runtime, b=batch: (rt.apply(b), rt.flush()))
        view = runtime.view("reachable")
        manager = runtime.manager
        node_sum = sum(manager.node_count(f) for f in view.values() if f is not None)
        byte_sum = sum(len(manager.encode(f)) for f in view.values() if f is not None)
        out["orders"][name] = {
            "variables_placed": len(placed), "seconds": seconds, "view_tuples": len(view),
            "bdd_nodes": node_sum, "bytes_per_tuple": byte_sum / max(len(view), 1),
        }
    return out
