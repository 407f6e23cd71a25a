"""Provenance size, maintenance and questions on lakes the pipeline wrote, per variable order.

Before and after in one run: the same inputs are maintained into one lake per variable order
(``ASPEN_VARIABLE_ORDER``: ``arrival`` — what maintenance did before it kept an order —,
``bfs``, and ``dfs``, the default: Liu 2016's Fig. 17 comparison, here from lakes the pipeline
wrote), and each lake is measured by :func:`aspen.bench.provenance_size.provenance_size`
(bytes and BDD nodes per view, the console's whole warm-up, ``what-if`` and ``explain``) plus
the maintain time of every batch and the decoding of the last batch's changes.

Lakes:

* ``demo`` — ``aspen demo`` itself (Airflow's ``dag.test()``, every task a spark-submit job),
  run as a subprocess per order;
* ``dense`` — the paper's dense topology (100 nodes, 4 link tuples per node) and the demo's
  sensor grid, ingested and maintained in process (``ingest_files`` + ``maintain_local``, the
  follower's path), then single-link changes, one batch each;
* ``n1000`` — the same at 1,000 nodes and 2.4 link tuples per node.

Each build runs in a child process under a time limit; a build that does not finish is reported
as such, not left out.

>>> sorted(LAKES)
['demo', 'dense', 'n1000']
>>> target_lines({"lakes": {}})
[]
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["LAKES", "TARGETS", "batch_decode_s", "build_generated", "engine_reachable",
           "in_child", "measure_lake",
           "previous_versions", "provenance_order", "target_lines"]

#: Generated lakes: nodes, link tuples per node, single-link change batches after the build.
LAKES: dict[str, dict[str, Any]] = {
    "demo": {},
    "dense": {"nodes": 100, "degree": 4.0, "changes": 10},
    "n1000": {"nodes": 1000, "degree": 2.4, "changes": 5},
}
#: The targets (seconds or bytes) each lake must reach in the default order.
TARGETS: dict[str, dict[str, float]] = {
    "demo": {"active_region_bytes": 100_000, "warm_s": 2.0, "what_if_s": 0.5},
    "n1000": {"warm_s": 30.0, "batch_decode_s": 1.0},
}


def _aspen() -> str:
    found = Path(sys.executable).with_name("aspen")
    return str(found) if found.exists() else (shutil.which("aspen") or "aspen")


def build_demo(lake: Path, order: str, limit_s: float) -> dict[str, Any]:
    """``aspen demo --lake LAKE`` with ``ASPEN_VARIABLE_ORDER=order``; its seconds, or why not."""
    env = {**os.environ, "ASPEN_VARIABLE_ORDER": order}
    started = time.perf_counter()
    try:
        done = subprocess.run([_aspen(), "--lake", str(lake), "demo"], env=env,
                              capture_output=True, text=True, timeout=limit_s, check=False)
    except subprocess.TimeoutExpired:
        return {"finished": False, "why": f"not finished in {limit_s:.0f} s"}
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"finished": False, "why": " / ".join(tail), "seconds": seconds}
    return {"finished": True, "seconds": seconds}


def build_generated(lake: str, nodes: int, degree: float, changes: int, order: str,
                    seed: int = 0) -> dict[str, Any]:
    """Ingest a transit-stub topology and the demo's sensor grid into ``lake`` and maintain it
    in process, then ``changes`` single-link changes (delete a link, insert it back, …), one
    ingest batch and one maintained batch each. Returns the maintain seconds of every batch."""
    from aspen.bench.common import topology
    from aspen.generators.records import link_delete, link_insert
    from aspen.generators.sensors import sensor_grid
    from aspen.generators.workloads import sensor_batches
    from aspen.generators.writers import write_jsonl
    from aspen.lake.ingest import ingest_files
    from aspen.pipeline.maintain_local import maintain_local
    from aspen.settings import Settings

    settings = Settings(lake=lake, variable_order=order)
    inbox = Path(lake).parent / f"inputs-{Path(lake).name}"
    inbox.mkdir(parents=True, exist_ok=True)
    topo = topology(nodes, degree, seed)
    links = list(dict.fromkeys((ln.src, ln.dst, ln.cost) for ln in topo.links))
    setup, trigger, *_ = sensor_batches(sensor_grid(seed=seed), seed=seed)
    write_jsonl([link_insert(s, d, c) for s, d, c in links] + setup + trigger,
                inbox / "build.jsonl")
    ingest_files(settings, [inbox / "build.jsonl"])
    started = time.perf_counter()
    maintain_local(settings)
    out: dict[str, Any] = {"links": len(links), "build_s": time.perf_counter() - started,
                           "batch_s": []}
    src, dst, cost = links[len(links) // 2]
    for i in range(changes):
        record = link_delete(src, dst) if i % 2 == 0 else link_insert(src, dst, cost)
        path = inbox / f"change-{i}.jsonl"
        write_jsonl([record], path)
        ingest_files(settings, [path])
        started = time.perf_counter()
        maintain_local(settings)
        out["batch_s"].append(time.perf_counter() - started)
    return out


def _child(call: Callable[..., dict[str, Any]], args: tuple, out: str) -> None:
    result = call(*args)
    Path(out).write_text(json.dumps(result, default=str))


def in_child(call: Callable[..., dict[str, Any]], args: tuple, limit_s: float,
             scratch: Path) -> dict[str, Any]:
    """``call(*args)`` in a spawned child process, killed after ``limit_s`` seconds."""
    out = scratch / f"child-{time.monotonic_ns()}.json"
    child = multiprocessing.get_context("spawn").Process(target=_child, args=(call, args, str(out)))
    started = time.perf_counter()
    child.start()
    child.join(limit_s)
    if child.is_alive():
        child.kill()
        child.join()
        return {"finished": False, "why": f"not finished in {limit_s:.0f} s"}
    if child.exitcode != 0 or not out.exists():
        return {"finished": False, "why": f"exit code {child.exitcode}"}
    result = json.loads(out.read_text())
    result.update(finished=True, seconds=time.perf_counter() - started)
    return result


def previous_versions(settings: Any) -> tuple[tuple[str, int], ...] | None:
    """The provenance versions as of the batch before the last (None: fewer than two)."""
    from aspen.lake.committed import versions_in
    from aspen.lake.deltars import read_table
    from aspen.pipeline.lake_provenance import PROVENANCE_TABLES, provenance_versions

    ledger = read_table(settings, "ledger").sort_values("batch_id")
    if len(ledger) < 2:
        return None
    before = versions_in(ledger.iloc[:-1])
    latest = dict(provenance_versions(settings))
    return tuple((name, before[name] if name in before else latest[name])
                 for name in PROVENANCE_TABLES if name in before or name == "variables")


def batch_decode_s(lake: str) -> float | None:
    """Seconds to bring the console's decoded provenance from the batch before the last to the
    last one (``LakeProvenance.advance``, then decoding the changed rows); None when the lake
    has one batch."""
    from aspen.pipeline.lake_provenance import LakeProvenance, provenance_versions
    from aspen.settings import Settings

    settings = Settings(lake=lake)
    before = previous_versions(settings)
    if before is None:
        return None
    earlier = LakeProvenance(settings, versions=before)
    earlier.warm()
    started = time.perf_counter()
    earlier.advance(provenance_versions(settings)).warm()
    return time.perf_counter() - started


def measure_lake(lake: str, sift: bool, say: Callable[[str], None]) -> dict[str, Any]:
    """:func:`~aspen.bench.provenance_size.provenance_size` of ``lake``, and the decode of its
    last batch's changes."""
    from aspen.bench.provenance_size import provenance_size

    out = provenance_size(lake, sift=sift, say=say)
    out["batch_decode_s"] = batch_decode_s(lake)
    return out


def engine_reachable(nodes: int, order: str, seed: int = 0) -> dict[str, Any]:
    """``reachable`` alone on a ``nodes``-node topology (2.4 link tuples per node), in process
    (the pipeline's lake build maintains every view, which at 1,000 nodes the engine does not
    finish in half an hour): its rows' stored bytes, the decode of all of them into a fresh
    manager (the console's warm-up of this view) and of the rows one single-link batch changed
    (its re-decode), in variable order ``order``."""
    from aspen.bench.common import FactStream, topology
    from aspen.generators.records import link_delete
    from aspen.generators.workloads import link_inserts
    from aspen.provenance.bdd import ProvenanceManager
    from aspen.runtime.local import LocalRuntime

    topo = topology(nodes, 2.4, seed)
    records = link_inserts(topo, seed=seed)  # in the random order the demo's links arrive in
    links = [(r["src"], r["dst"], r["cost"]) for r in records]
    stream = FactStream()
    runtime = LocalRuntime(("reachable",), partitions=4, measure_bytes=False,
                           variable_order=order)
    started = time.perf_counter()
    runtime.apply(stream.batch(records), deltas=False)
    runtime.flush()
    build_s = time.perf_counter() - started
    before = runtime.view("reachable")
    keys = list(before)
    encodings = runtime.manager.encode_each([before[k] for k in keys])
    fresh = ProvenanceManager()
    fresh.fix_order()
    started = time.perf_counter()
    fresh.decode_each(encodings)
    decode_s = time.perf_counter() - started
    src, dst, _cost = links[len(links) // 2]
    started = time.perf_counter()
    runtime.apply(stream.batch([link_delete(src, dst)]), deltas=False)
    runtime.flush()
    batch_s = time.perf_counter() - started
    after = runtime.view("reachable")
    changed = [f for k, f in after.items() if k not in before or not (before[k] == f)]
    changed_bytes = runtime.manager.encode_each(changed)
    started = time.perf_counter()
    fresh.decode_each(changed_bytes)
    return {"links": len(links), "rows": len(keys), "bytes": sum(map(len, encodings)),
            "build_s": build_s, "decode_s": decode_s, "batch_s": batch_s,
            "changed_rows": len(changed), "batch_decode_s": time.perf_counter() - started}


def _headline(result: dict[str, Any]) -> dict[str, Any]:
    """The figures the targets name, from one lake's measurement."""
    views = result.get("views", {})
    what_ifs = [w["fresh_s"] for w in result.get("what_if", {}).values()]
    return {
        "active_region_bytes": views.get("active_region", {}).get("bytes_total"),
        "reachable_bytes": views.get("reachable", {}).get("bytes_total"),
        "reachable_nodes": views.get("reachable", {}).get("nodes_stored_sum"),
        "active_region_nodes": views.get("active_region", {}).get("nodes_stored_sum"),
        "warm_s": result.get("decode_lake_s"),
        "what_if_s": max(what_ifs) if what_ifs else None,
        "explain_s": {k: e["seconds"] for k, e in result.get("explain", {}).items()},
        "batch_decode_s": result.get("batch_decode_s"),
    }


def provenance_order(root: Path, lakes: Sequence[str] = ("demo", "dense", "n1000"),
                     orders: Sequence[str] = ("arrival", "bfs", "dfs"), sift: bool = False,
                     limit_s: float = 1800.0, reuse: bool = False,
                     say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Build and measure every lake in every order under ``root``; see the module docstring.
    With ``reuse``, a lake an earlier run built under ``root`` is measured again, not rebuilt
    (its build figures are read back from ``build.json`` beside it)."""
    root.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"lakes": {}}
    for name in lakes:
        spec = LAKES[name]
        for order in orders:
            lake = root / f"{name}-{order}" / "lakehouse"
            record = lake.parent / "build.json"
            if reuse and record.exists():
                built = json.loads(record.read_text())
            else:
                shutil.rmtree(lake.parent, ignore_errors=True)
                lake.parent.mkdir(parents=True)
                say(f"building {name} in {order} order")
                if name == "demo":
                    built = build_demo(lake, order, limit_s)
                else:
                    built = in_child(build_generated, (str(lake), spec["nodes"], spec["degree"],
                                                       spec["changes"], order), limit_s, root)
                record.write_text(json.dumps(built, default=str))
            entry: dict[str, Any] = {"build": built}
            if built.get("finished"):
                say(f"measuring {name} in {order} order")
                entry["measured"] = measure_lake(str(lake), sift, say)
                entry["headline"] = _headline(entry["measured"])
            out["lakes"].setdefault(name, {})[order] = entry
    return out


def target_lines(result: dict[str, Any]) -> list[str]:
    """One line per lake and order (headline figures, ratio to arrival order), then the targets.

    >>> lines = target_lines({"lakes": {"demo": {"dfs": {"build": {"finished": False,
    ...                                                              "why": "x"}}}}})
    >>> lines[:2]  # doctest: +NORMALIZE_WHITESPACE
    ['demo    dfs     : not built (x)',
     '  target demo active_region_bytes ≤ 100000: - — not measured']
    """
    lines: list[str] = []
    for name, per_order in result["lakes"].items():
        base = per_order.get("arrival", {}).get("headline", {})
        for order, entry in per_order.items():
            if "headline" not in entry:
                lines.append(f"{name:<8}{order:<8}: not built ({entry['build'].get('why')})")
                continue
            h = entry["headline"]
            ratio = ""
            if base.get("reachable_bytes") and h.get("reachable_bytes"):
                ratio = f"  reachable ×{base['reachable_bytes'] / h['reachable_bytes']:.1f} smaller"
            build = entry["build"]
            batch = build.get("batch_s") or []
            explain = ", ".join(f"{k} {v:.2f} s" for k, v in h["explain_s"].items())
            built_s = build.get("build_s", build.get("seconds", 0.0))
            per_batch = (f", maintain per batch median {sorted(batch)[len(batch) // 2]:.2f} s "
                         f"max {max(batch):.2f} s" if batch else "")
            lines.append(
                f"{name:<8}{order:<8}: active_region {h['active_region_bytes']} B "
                f"({h['active_region_nodes']} nodes), reachable {h['reachable_bytes']} B "
                f"({h['reachable_nodes']} nodes){ratio}; warm-up {h['warm_s']:.2f} s, "
                f"what-if {_s(h['what_if_s'])}, explain {explain}, "
                f"last batch decode {_s(h['batch_decode_s'])}; build {built_s:.1f} s{per_batch}")
        for key, limit in TARGETS.get(name, {}).items():
            h = per_order.get("dfs", {}).get("headline")
            value = None if h is None else h.get(key)
            verdict = "not measured" if value is None else (
                "met" if value <= limit else "missed")
            lines.append(f"  target {name} {key} ≤ {limit:g}: {_s(value)} — {verdict}")
    return lines


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)
