"""Incremental query maintenance against recomputation, per one-change batch, in process.

A 1,000-node transit-stub topology's links (:mod:`aspen.generators`) are the ``link`` table as
a query reads it (one row per live tuple, :mod:`aspen.queries.base_tuples`). Each of
``batches`` batches changes one link — a deletion, an insertion of a new link, a cost change
(−old +new), in turn — and for each query (:data:`QUERIES`) is timed:

- **incremental**: ``state ⊗ h(Δ)`` and ``a`` of the changed keys
  (:class:`aspen.queries.incremental.apply.IncrementalQuery`), in memory;
- **incremental + Delta**: the same plus its two delta-rs MERGEs, the state's changed rows
  into ``qstate_<name>`` and the result's changed rows into ``q_<name>`` (a temporary lake);
- **recompute**: the same SQL from scratch over the whole table in DuckDB
  (:func:`aspen.queries.incremental.scratch.scratch_answer`, the rows handed over as Arrow).

After every batch the maintained result is compared with the recomputed one (``mismatches``
must be 0); the state's rows are recorded per batch.

>>> summary([0.001, 0.002, 0.003], [0.02, 0.03, 0.04])["ratio"]
15.0
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

__all__ = ["QUERIES", "incremental_queries", "summary"]

#: The queries timed: a group-by over one relation and the join-and-count of docs/queries.md.
QUERIES: dict[str, str] = {
    "per_src": "SELECT src, COUNT(*) AS n, SUM(cost) AS c, MAX(cost) AS hi FROM link "
               "GROUP BY src",
    "two_hop_count": "SELECT a.src, COUNT(*) AS n FROM link a JOIN link b ON a.dst = b.src "
                     "WHERE b.cost > 1 GROUP BY a.src",
}


def summary(incremental: list[float], recompute: list[float]) -> dict[str, Any]:
    """Medians of both timings (seconds) and recompute / incremental."""
    a, b = statistics.median(incremental), statistics.median(recompute)
    return {"median_incremental_s": a, "median_recompute_s": b, "ratio": round(b / a, 1)}


def _row(src: str, dst: str, cost: float, batch: int) -> tuple:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return (src, dst, cost, 1, at, at, None, batch, batch)


def _rounded(result: dict[tuple, int]) -> Counter:
    return Counter({tuple(round(v, 9) if isinstance(v, float) else v for v in row): n
                    for row, n in result.items() if n})


def incremental_queries(nodes: int = 1000, batches: int = 50, seed: int = 0) -> dict[str, Any]:
    """Run the comparison (see the module docstring) in a temporary lake, removed after; a
    JSON-ready dict."""
    root = tempfile.mkdtemp(prefix="aspen-incremental-bench-")
    try:
        return _run(root, nodes, batches, seed)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(root: str, nodes: int, batches: int, seed: int) -> dict[str, Any]:
    from aspen.generators.topology import scaled_params, transit_stub
    from aspen.queries.base_tuples import tuple_columns
    from aspen.queries.incremental.apply import IncrementalQuery
    from aspen.queries.incremental.compile import IncrementalPlan, compile_query
    from aspen.queries.incremental.delta import SignedRows
    from aspen.queries.incremental.scratch import scratch_answer
    from aspen.queries.incremental.store import (
        apply_result,
        fingerprint,
        write_result,
        write_state,
        write_state_changes,
    )
    from aspen.queries.sql import parse_query
    from aspen.settings import Settings

    rng = random.Random(seed)
    topology = transit_stub(scaled_params(nodes), seed=seed)
    columns = tuple_columns("link")
    live: dict[tuple[str, str], tuple] = {
        (link.src, link.dst): _row(link.src, link.dst, link.cost, 0) for link in topology.links}
    node_ids = list(topology.node_ids)
    lake = Settings(lake=root)
    parsed = {name: parse_query(name, sql) for name, sql in QUERIES.items()}
    plans: dict[str, IncrementalPlan] = {}
    memory: dict[str, IncrementalQuery] = {}
    stored: dict[str, IncrementalQuery] = {}
    results: dict[str, Counter] = {}
    build_s: dict[str, float] = {}
    for name, p in parsed.items():
        plan = compile_query(p)
        assert isinstance(plan, IncrementalPlan), plan
        plans[name] = plan
        table = SignedRows.inserts(columns, live.values())
        clock = time.perf_counter()
        memory[name] = IncrementalQuery(plan)
        results[name] = Counter(memory[name].build({"link": table}))
        build_s[name] = time.perf_counter() - clock
        stored[name] = IncrementalQuery(plan)
        answer = stored[name].build({"link": table})
        stored[name].state.batch_id = 0
        write_state(lake, name, plan, stored[name].state, fingerprint(p))
        write_result(lake, name, plan, answer, 0)

    timings: dict[str, dict[str, list[float]]] = {
        name: {"incremental": [], "delta": [], "recompute": [], "state_rows": []}
        for name in QUERIES}
    mismatches = 0
    for batch in range(1, batches + 1):
        change = SignedRows(columns)
        kind = ("delete", "insert", "cost")[(batch - 1) % 3]
        if kind == "insert":
            while True:
                pair = (rng.choice(node_ids), rng.choice(node_ids))
                if pair[0] != pair[1] and pair not in live:
                    break
            live[pair] = _row(*pair, float(rng.choice([2, 10, 50])), batch)
            change.add(live[pair])
        else:
            pair = rng.choice(sorted(live))
            old = live.pop(pair)
            change.add(old, -1)
            if kind == "cost":  # a value change of a key: −old +new
                live[pair] = _row(*pair, float(old[2]) + 1.0, batch)
                change.add(live[pair])
        for name, plan in plans.items():
            clock = time.perf_counter()
            outcome = memory[name].apply({"link": change})
            timings[name]["incremental"].append(time.perf_counter() - clock)
            results[name].update(outcome.result)

            clock = time.perf_counter()
            persisted = stored[name].apply({"link": change})
            stored[name].state.batch_id = batch
            write_state_changes(lake, name, plan, stored[name].state, persisted,
                                fingerprint(parsed[name]))
            if not apply_result(lake, name, plan, persisted.result, batch):
                write_result(lake, name, plan, stored[name].answer(), batch)
            timings[name]["delta"].append(time.perf_counter() - clock)

            clock = time.perf_counter()
            scratch = scratch_answer(parsed[name],
                                     {"link": SignedRows.inserts(columns, live.values())})
            timings[name]["recompute"].append(time.perf_counter() - clock)
            timings[name]["state_rows"].append(memory[name].state.row_count())
            if _rounded(dict(results[name])) != _rounded(scratch):
                mismatches += 1
    out: dict[str, Any] = {"nodes": len(topology.nodes), "links": len(topology.links),
                           "batches": batches, "mismatches": mismatches, "queries": {}}
    for name, t in timings.items():
        out["queries"][name] = {
            "sql": QUERIES[name],
            "build_s": build_s[name],
            **summary(t["incremental"], t["recompute"]),
            "median_incremental_delta_s": statistics.median(t["delta"]),
            "ratio_with_delta": round(statistics.median(t["recompute"])
                                      / statistics.median(t["delta"]), 1),
            "state_rows_min": min(t["state_rows"]), "state_rows_max": max(t["state_rows"]),
            "state_rows": t["state_rows"],
        }
    return out
