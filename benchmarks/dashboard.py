"""Dashboard answer times: *why* and *what if* from published tables, and in Chromium.

1. Builds a lake for a transit-stub topology of ``--nodes`` nodes (1,000 by default;
   ``aspen.generators.topology``, the demo's 2.4 link tuples per node) with the in-process
   engine, and publishes the view tables, ``link``, the ``variables`` registry and the variable
   index ``prov_index`` with delta-rs, as ``aspen maintain`` does. The lake is kept under
   ``--lake-dir`` and reused by later runs.
   Exact all-pairs ``reachable`` provenance does not scale to 1,000 nodes (docs/architecture.md,
   "Limits"), so by default only the path views are published (``--views`` changes it).
2. Answers what the Why and What-if pages answer, through the same calls they make
   (``LakeProvenance.explain`` / ``live_vars_of`` + ``what_if``), for random pairs and links:
   the first answer (cold: read and decode the tables) and the following ones (warm: the page's
   cached ``LakeProvenance``), p50 and p95.
3. Decodes once as the dashboard server's warming thread does, then answers from memory.
4. In headless Chromium, on a fresh server each time (``aspen.bench.dashboard``): the
   Overview's tiles, What-if (a link, Simulate → the answer drawn) and Why (a far pair → its
   witnesses and route drawn), ``--runs`` times each, on the ``--nodes`` lake and on the demo
   lake (``--demo-lake``, as ``aspen demo`` builds it). ``--browser-only`` skips 2 and 3.

Prints numbers; asserts nothing.

    .venv/bin/python benchmarks/dashboard.py [--nodes 1000] [--samples 30] [--no-browser]
    .venv/bin/python benchmarks/dashboard.py --browser-only --nodes 0 --demo-lake DIR/lakehouse
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa

from aspen.bench.dashboard import FLOWS, Run, bytecode_env, far_pair, run_flows, summary
from aspen.cli.dashboard import app_path, streamlit_command
from aspen.engine.batch import BaseFact, Batch
from aspen.errors import UnknownKeyError
from aspen.generators.topology import TransitStubParams, transit_stub
from aspen.lake.deltars import read_table, table_exists, write_table
from aspen.pipeline import ledger
from aspen.pipeline.lake_provenance import (
    LakeProvenance,
    provenance_versions,
    shared_provenance,
)
from aspen.pipeline.provenance_vars import PROV_INDEX_TABLE, rebuild
from aspen.pipeline.view_tables import view_frame, write_snapshot
from aspen.runtime.local import LocalRuntime
from aspen.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PATH_VIEWS = ("cheapest_path", "fewest_hops", "min_cost", "min_hops")
DEMO_AVG_DEGREE = 2.4
NODES_PER_DOMAIN = 100  # TransitStubParams() defaults: 4 transit nodes × (1 + 3 stubs × 8)


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile of ``values`` (share in [0, 1])."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(share * len(ordered) + 0.5)))
    return ordered[rank - 1]


def build_lake(lake: Path, nodes: int, views: tuple[str, ...], seed: int) -> dict[str, float]:
    """Publish the views of a ``nodes``-node topology into ``lake`` (skipped when present)."""
    settings = Settings(lake=str(lake))
    marker = lake / "bench.json"
    wanted = {"nodes": nodes, "views": list(views), "seed": seed, "committed": True,
              "index": True}
    if marker.exists() and json.loads(marker.read_text()).get("spec") == wanted:
        return json.loads(marker.read_text())["build"]
    shutil.rmtree(lake, ignore_errors=True)
    domains = -(-nodes // NODES_PER_DOMAIN)
    topology = transit_stub(
        TransitStubParams(transit_domains=domains, avg_degree=DEMO_AVG_DEGREE), seed=seed
    )
    facts = [
        BaseFact("link", (link.src, link.dst, link.cost), f"v{i}")
        for i, link in enumerate(topology.links)
    ]
    print(f"build: {len(topology.nodes)} nodes, {len(facts)} link tuples, views {', '.join(views)}")
    started = time.perf_counter()
    runtime = LocalRuntime(views=views, partitions=4, mode="lazy", measure_bytes=False)
    runtime.apply(Batch(inserts=tuple(facts)))
    runtime.flush()
    engine_s = time.perf_counter() - started

    started = time.perf_counter()
    rows: dict[str, float] = {}
    for view in views:
        tuples = runtime.view(view)
        write_snapshot(settings, view, view_frame(view, tuples, runtime.manager, batch_id=1))
        rows[view] = float(len(tuples))
    links = pd.DataFrame(
        {
            "src": [f.values[0] for f in facts],
            "dst": [f.values[1] for f in facts],
            "cost": [float(f.values[2]) for f in facts],
            "var": [f.var for f in facts],
            "batch_id": 1,
        }
    )
    write_table(settings, "link", links)
    variables = pa.table(
        {
            "var": [f.var for f in facts],
            "relation": ["link"] * len(facts),
            "key": [json.dumps(list(f.values[:2])) for f in facts],
            "values": [json.dumps(list(f.values)) for f in facts],
            "inserted_batch": pa.array([1] * len(facts), pa.int64()),
            "deleted_batch": pa.array([None] * len(facts), pa.int64()),
            "expires_at": pa.array([None] * len(facts), pa.timestamp("us", "UTC")),
        }
    )
    write_table(settings, "variables", variables)
    publish_s = time.perf_counter() - started
    started = time.perf_counter()
    rebuild(settings, 1, views)  # the variable index, as `aspen maintain` keeps it
    index_s = time.perf_counter() - started
    # readers read the views as of the last committed batch: commit this one in the ledger
    ledger.commit(settings, ledger.LedgerEntry(1, 1, "local", 4, "lazy"), 0, 0,
                  (*views, PROV_INDEX_TABLE))
    build = {"engine_s": engine_s, "publish_s": publish_s, "index_s": index_s, **rows}
    marker.write_text(json.dumps({"spec": wanted, "build": build}))
    return build


def time_answers(lake: Path, samples: int, seed: int) -> None:
    """Why and what-if answer times through the pages' calls (cold first, then warm)."""
    settings = Settings(lake=str(lake))
    rng = random.Random(seed)
    links = read_table(settings, "link", columns=["src", "dst"])
    link_keys = [tuple(map(str, pair)) for pair in links.drop_duplicates().itertuples(index=False)]
    why_view = "cheapest_path" if table_exists(settings, "cheapest_path") else "reachable"
    pairs = read_table(settings, why_view, columns=["src", "dst"]).drop_duplicates()
    pair_keys = [tuple(map(str, p)) for p in pairs.itertuples(index=False)]

    def why(provenance: LakeProvenance, key: tuple[str, str]) -> float:
        started = time.perf_counter()
        provenance.explain(why_view, key)
        return time.perf_counter() - started

    def what_if(provenance: LakeProvenance, key: tuple[str, str]) -> tuple[float, int]:
        started = time.perf_counter()
        deleted = provenance.live_vars_of("link", key)
        lost = provenance.what_if(deleted)
        return time.perf_counter() - started, sum(len(v) for v in lost.values())

    started = time.perf_counter()
    provenance = LakeProvenance(settings)
    open_s = time.perf_counter() - started
    why_cold = why(provenance, rng.choice(pair_keys))
    why_warm = [why(provenance, rng.choice(pair_keys)) for _ in range(samples)]
    print(f"\nanswers from published tables ({len(pair_keys)} {why_view} pairs, "
          f"{len(link_keys)} links; {samples} samples each)")
    print(f"  open LakeProvenance (read variables)     {open_s * 1000:9.1f} ms")
    print(f"  why ({why_view}) first answer          {why_cold * 1000:9.1f} ms")
    print(f"  why warm  p50 / p95                      {percentile(why_warm, .5) * 1000:9.1f} ms"
          f" / {percentile(why_warm, .95) * 1000:.1f} ms")

    provenance = LakeProvenance(settings)  # a fresh one: the what-if page's first answer
    cold_s, cold_lost = what_if(provenance, rng.choice(link_keys))
    warm: list[float] = []
    lost_counts: list[int] = []
    for _ in range(samples):
        try:
            seconds, lost = what_if(provenance, rng.choice(link_keys))
        except UnknownKeyError:
            continue
        warm.append(seconds)
        lost_counts.append(lost)
    print(f"  what-if first answer (decode all views)  {cold_s * 1000:9.1f} ms  ({cold_lost} lost)")
    print(f"  what-if warm p50 / p95                   {percentile(warm, .5) * 1000:9.1f} ms"
          f" / {percentile(warm, .95) * 1000:.1f} ms  (median {statistics.median(lost_counts):.0f}"
          " tuples lost per link)")


def warm_then_answer(lake: Path, samples: int, seed: int) -> None:
    """What the dashboard server does: decode every view once (its warming thread), then
    answer what-if questions from memory, as the first click of every browser tab does."""
    settings = Settings(lake=str(lake))
    rng = random.Random(seed)
    links = read_table(settings, "link", columns=["src", "dst"])
    link_keys = [tuple(map(str, pair)) for pair in links.drop_duplicates().itertuples(index=False)]
    started = time.perf_counter()
    provenance = shared_provenance(settings.lake, provenance_versions(settings))
    warm_s = provenance.warm()
    total_s = time.perf_counter() - started
    first: float | None = None
    later: list[float] = []
    for _ in range(samples):
        key = rng.choice(link_keys)
        started = time.perf_counter()
        provenance.what_if(provenance.live_vars_of("link", key))
        elapsed = time.perf_counter() - started
        if first is None:
            first = elapsed
        else:
            later.append(elapsed)
    print("\nserver: decode once per lake version (warming thread), then answer")
    print(f"  warm (read + decode + index every view)  {total_s * 1000:9.1f} ms "
          f"(decode {warm_s * 1000:.1f} ms)")
    print(f"  what-if first answer after warm          {(first or 0) * 1000:9.1f} ms")
    if later:
        print(f"  what-if later p50 / p95                  {percentile(later, .5) * 1000:9.1f} ms"
              f" / {percentile(later, .95) * 1000:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--views", default=",".join(PATH_VIEWS),
                        help="views to publish (reachable does not scale to 1,000 nodes)")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lake-dir", type=Path, default=ROOT / "results" / "dashboard-bench-lake")
    parser.add_argument("--demo-lake", type=Path, default=ROOT / "lakehouse")
    parser.add_argument("--runs", type=int, default=3, help="fresh servers per browser flow")
    parser.add_argument("--flows", default=",".join(FLOWS), help="browser flows to time")
    parser.add_argument("--settle", type=float, default=0.0,
                        help="seconds between the server's health check and the navigation")
    parser.add_argument("--pycache", type=Path, default=ROOT / "results" / "dashboard-pycache",
                        help="where the servers keep compiled modules ('' for none)")
    parser.add_argument("--no-prime", action="store_true",
                        help="no uncounted first run per flow (modules already compiled)")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--browser-only", action="store_true",
                        help="only the browser flows (0 --nodes: only on the demo lake)")
    args = parser.parse_args(argv)

    views = tuple(v for v in args.views.split(",") if v)
    lakes: list[Path] = []
    if args.nodes:
        lake = args.lake_dir / f"n{args.nodes}"
        build = build_lake(lake, args.nodes, views, args.seed)
        print("build (engine, then publish with delta-rs): "
              + ", ".join(f"{k} {v:.1f}" if k.endswith("_s") else f"{k} {v:.0f} rows"
                          for k, v in build.items()))
        if not args.browser_only:
            time_answers(lake, args.samples, args.seed)
            warm_then_answer(lake, args.samples, args.seed)
        lakes.append(lake)
    if args.no_browser:
        return 0
    if (args.demo_lake / "link" / "_delta_log").is_dir():
        lakes.append(args.demo_lake)
    else:
        print(f"\nbrowser on the demo lake: skipped (none at {args.demo_lake}; run `aspen demo`)")
    for lake in lakes:
        env = bytecode_env(args.pycache) if str(args.pycache) else None
        browser_flows(lake, args.flows.split(","), args.runs, args.settle, env,
                      not args.no_prime)
    return 0


def server_command(lake_uri: str, port: int) -> list[str]:
    """``aspen dashboard``'s server command line for the app of this tree."""
    return streamlit_command(app_path(), lake_uri, port)


def browser_flows(lake: Path, flows: list[str], runs: int, settle_s: float,
                  env: dict[str, str] | None, prime: bool = True) -> None:
    """The three first answers on fresh servers, each run and their median (and the load);
    a first run of each flow (not counted) compiles the modules the servers import."""
    pair = far_pair(lake)
    print(f"\nbrowser on {lake}: fresh server per run, {settle_s:g} s after its health check; "
          f"why for {pair[0]} → {pair[1]}; load average before "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    def report(r: Run) -> None:
        print(f"  {r.flow:<9} run {r.run}: page ready {r.ready_s:6.2f} s, answer "
              f"{r.answer_s:6.2f} s, total {r.total_s:6.2f} s  ({r.seen[:90]}); load "
              f"{os.getloadavg()[0]:.2f}", flush=True)

    done = run_flows(lake, server_command, flows, runs, settle_s, env, prime, report, pair=pair)
    for flow in flows:
        print(f"  {flow:<9} {summary([r for r in done if r.flow == flow])}")
    print("  load average after " + " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    sys.exit(main())
