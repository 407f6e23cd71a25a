"""Aspen's per-update cost against Differential Dataflow and DuckDB, same workloads, one run.

For every topology size, workload (:mod:`aspen.bench.engine_workloads`: ``bridge``, ``random``)
and view (``reachable``, ``min_cost``) each scheme runs the same batches in a process of its own,
so that its peak resident set is its own. A scheme whose build (batch 0) takes more than
``budget_s`` is stopped and reported as "did not finish"; so is one whose updates take more than
another ``budget_s`` after the build (with the updates it did). The schemes:

* ``native`` / ``reference`` — Aspen, ``LocalRuntime((view,), partitions, mode="lazy",
  core=...)`` fed through :class:`~aspen.bench.common.FactStream`; a batch's time is
  ``runtime.apply(batch)``. After batch 0 the deletion index is built
  (``index_provenance``, reported as ``index_s`` and counted in ``build_s``: the build ends when
  the first deletion pays no set-up). A runtime without the ``core`` keyword runs the reference
  core, and the result says so in ``note``.
* ``duckdb`` — recomputes the view from the live links after every batch (a batch's time: load
  the links, run the query): ``reachable`` by :func:`aspen.bench.peers.duckdb_reachable`,
  ``min_cost`` by a ``WITH RECURSIVE … USING KEY`` shortest-path fixpoint over integer costs.
* ``dataflow`` — the Differential Dataflow program (:mod:`aspen.bench.dataflow_peer`), one
  worker thread, incremental.

After every batch each scheme's view is checked against Differential Dataflow's (row count and
:func:`~aspen.bench.dataflow_peer.reachable_checksum` / ``min_cost_checksum``); without the
``dataflow`` scheme, against the first scheme that ran. A mismatch is printed at once and makes
``all_equal`` false.

>>> SCHEMES, VIEWS
(('native', 'reference', 'duckdb', 'dataflow'), ('reachable', 'min_cost'))

(``tests/bench/test_engine_peers.py`` runs a tiny case end to end; the benchmark's script is
``benchmarks/engine_peers.py``.)
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aspen.bench import dataflow_peer
from aspen.bench.common import FactStream, machine_info, timed, topology
from aspen.bench.dataflow_peer import (
    min_cost_checksum,
    peak_rss_mb,
    reachable_checksum,
    run_lines,
    scaled_cost,
    write_workload,
)
from aspen.bench.engine_workloads import workload
from aspen.errors import ConfigError

__all__ = ["SCHEMES", "VIEWS", "duckdb_min_cost", "markdown", "run"]

SCHEMES = ("native", "reference", "duckdb", "dataflow")
VIEWS = ("reachable", "min_cost")
#: Address-space limit of a Python scheme's process, so that one size cannot swamp the machine.
MEMORY_LIMIT_GB = 12

_DUCK_MIN_COST = (
    "WITH RECURSIVE mc(src, dst, cost) USING KEY (src, dst) AS ("
    " SELECT src, dst, min(cost) FROM link GROUP BY src, dst"
    " UNION"
    " SELECT l.src, w.dst, min(l.cost + w.cost) FROM mc w JOIN link l ON l.dst = w.src"
    " LEFT JOIN recurring.mc r ON r.src = l.src AND r.dst = w.dst"
    " WHERE l.src <> w.dst GROUP BY l.src, w.dst"
    " HAVING any_value(r.cost) IS NULL OR min(l.cost + w.cost) < any_value(r.cost))"
    " SELECT src, dst, cost FROM mc")


def duckdb_min_cost(links: Sequence[tuple[str, str, int]], con: Any = None
                    ) -> set[tuple[str, str, int]]:
    """``min_cost`` by a DuckDB ``USING KEY`` recursive CTE over integer (scaled) costs: each
    round extends the pairs improved in the round before by one link, keeping a pair's row only
    when it is cheaper than the one known (Bellman-Ford). ``src == dst`` only by a self-loop,
    as in Aspen.

    >>> sorted(duckdb_min_cost([("a", "b", 1500), ("b", "c", 2000), ("c", "a", 1000)]))[:3]
    [('a', 'b', 1500), ('a', 'c', 3500), ('b', 'a', 3000)]
    """
    import duckdb
    import pandas as pd

    con = con or duckdb.connect()
    frame = pd.DataFrame(list(links), columns=["src", "dst", "cost"])
    con.register("link_frame", frame)
    con.execute("CREATE OR REPLACE TABLE link AS SELECT src::VARCHAR AS src, dst::VARCHAR AS dst,"
                " cost::BIGINT AS cost FROM link_frame")
    con.unregister("link_frame")
    return set(con.execute(_DUCK_MIN_COST).fetchall())


# -- the child process of one scheme ----------------------------------------------------------

def _aspen_runtime(view: str, core: str, partitions: int) -> tuple[Any, str | None]:
    """Aspen's runtime for ``core``, and a note when it cannot be had as asked."""
    from aspen.runtime.local import LocalRuntime

    kwargs: dict[str, Any] = {"partitions": partitions, "mode": "lazy", "measure_bytes": False}
    try:
        runtime = LocalRuntime((view,), core=core, **kwargs)
    except TypeError as err:  # a LocalRuntime without the compiled core's keyword
        if "core" not in str(err):
            raise
        return LocalRuntime((view,), **kwargs), "LocalRuntime has no 'core' keyword: ran reference"
    if core == "native" and view not in getattr(runtime, "native", {view: None}):
        return runtime, f"the native core does not maintain {view}: its reference operators ran"
    return runtime, None


def _child(spec: dict[str, Any]) -> None:
    """Run one scheme on the batches of ``spec``; one JSON line per batch on stdout."""
    import resource

    limit = MEMORY_LIMIT_GB * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    scheme, view = spec["scheme"], spec["view"]
    batches = json.loads(Path(spec["batches"]).read_text())
    stream = FactStream()
    runtime, note = (None, None)
    con = None
    if scheme == "duckdb":
        import duckdb
        import pandas  # noqa: F401 - imported here, not inside the first timed batch

        con = duckdb.connect()
    else:
        runtime, note = _aspen_runtime(view, scheme, spec["partitions"])
    if note:
        print(json.dumps({"note": note}), flush=True)
    for number, records in enumerate(batches):
        batch = stream.batch(records)
        line: dict[str, Any] = {"batch": number}
        if con is not None:
            links = [(s, d, scaled_cost(stream.costs[(s, d)])) for s, d in stream.links()]
            if view == "reachable":
                line["seconds"], rows = timed(_duck_reachable, links, con)
            else:
                line["seconds"], rows = timed(duckdb_min_cost, links, con)
        else:
            line["seconds"], _ = timed(runtime.apply, batch)
            if number == 0:  # the deletion index, once after the build (see the module)
                line["index_s"], _ = timed(runtime.index_provenance)
            rows = list(runtime.view(view))
        checksum = reachable_checksum if view == "reachable" else min_cost_checksum
        line |= {"rows": len(rows), "checksum": checksum(rows), "peak_rss_mb": peak_rss_mb()}
        print(json.dumps(line), flush=True)


def _duck_reachable(links: Sequence[tuple[str, str, int]], con: Any) -> set[tuple[str, str]]:
    from aspen.bench.peers import duckdb_reachable

    return duckdb_reachable([(s, d) for s, d, _ in links], con)


# -- the parent: cases, checks, the report ----------------------------------------------------

def _scheme_run(scheme: str, view: str, batches_path: Path, dd_workload: Path, binary: Path | None,
                partitions: int, budget_s: float | None, work: Path) -> dict[str, Any]:
    """Run one scheme of one case in its own process; its per-batch lines and status."""
    if scheme == "dataflow":
        assert binary is not None
        done = dataflow_peer.run(binary, dd_workload, (view,), budget_s)
        key = view
        batches = [{"batch": b["batch"], "seconds": b["seconds"], "rows": b[key],
                    "checksum": b[f"{key}_checksum"], "peak_rss_mb": b["peak_rss_mb"]}
                   for b in done["lines"]]
        return done | {"batches": batches, "lines": None}
    spec = {"scheme": scheme, "view": view, "batches": str(batches_path), "partitions": partitions}
    spec_path = work / f"{scheme}-{view}.spec.json"
    spec_path.write_text(json.dumps(spec))
    done = run_lines([sys.executable, "-m", "aspen.bench.engine_peers", "child", str(spec_path)],
                     work / f"{scheme}-{view}.out.jsonl", budget_s)
    notes = [line["note"] for line in done["lines"] if "note" in line]
    batches = [line for line in done["lines"] if "batch" in line]
    if notes:
        done["note"] = "; ".join([*notes, *([done["note"]] if done.get("note") else [])])
    return done | {"batches": batches, "lines": None}


def _percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (linear between ranks), None for no values.

    >>> _percentile([1.0, 2.0, 3.0, 4.0], 90)
    3.7
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (rank - low), 12)


def _summary(scheme: str, done: dict[str, Any], expected_batches: int) -> dict[str, Any]:
    """One scheme's line of a case: build, per-update median / p90 / max, peak RSS."""
    batches = done["batches"]
    first = batches[0] if batches else {}
    updates = [b["seconds"] for b in batches[1:]]
    status = done["status"]
    if status == "ok" and len(batches) < expected_batches:
        status = "error"
        done["note"] = done.get("note") or f"only {len(batches)} of {expected_batches} batches"
    build_s = first.get("seconds", 0.0) + first.get("index_s", 0.0) if first else None
    # the process's own peak (VmHWM, exact) when it finished; else the kernel's upper bound
    own = [b["peak_rss_mb"] for b in batches if b.get("peak_rss_mb")]
    peak = max(own) if own and status == "ok" else done.get("peak_rss_mb")
    return {"scheme": scheme, "status": status, "note": done.get("note"),
            "build_s": build_s, "index_s": first.get("index_s"),
            "updates_done": len(updates), "update_median_s": _percentile(updates, 50),
            "update_p90_s": _percentile(updates, 90), "update_max_s": max(updates, default=None),
            "peak_rss_mb": peak, "seconds": done.get("seconds"),
            "batches": batches}


def _check(summaries: list[dict[str, Any]], log: Callable[[str], None] | None
           ) -> tuple[str | None, list[str]]:
    """Compare every scheme's rows and checksum with the truth's after every batch: the
    Differential Dataflow peer's, or the first scheme's with batches. Sets ``all_equal`` and
    ``checked_batches`` per scheme; returns the truth's name and the mismatches in words."""
    ran = [s for s in summaries if s["batches"]]
    truth = next((s for s in ran if s["scheme"] == "dataflow"), ran[0] if ran else None)
    mismatches: list[str] = []
    for s in summaries:
        s["checked_against"] = truth["scheme"] if truth and s is not truth and s["batches"] \
            else None
        if truth is None or s is truth or not s["batches"]:  # nothing to check
            s["all_equal"], s["checked_batches"] = None, 0
            continue
        pairs = list(zip(s["batches"], truth["batches"], strict=False))
        for mine, theirs in pairs:
            if (mine["rows"], mine["checksum"]) != (theirs["rows"], theirs["checksum"]):
                mismatches.append(
                    f"{s['scheme']} differs from {truth['scheme']} after batch {mine['batch']}: "
                    f"{mine['rows']} rows (checksum {mine['checksum']}) against "
                    f"{theirs['rows']} (checksum {theirs['checksum']})")
        s["checked_batches"] = len(pairs)
        s["all_equal"] = not any(m.startswith(f"{s['scheme']} ") for m in mismatches)
    for line in mismatches:
        if log:
            log(f"EQUALITY FAILURE: {line}")
        print(f"EQUALITY FAILURE: {line}", file=sys.stderr)
    return (truth["scheme"] if truth else None), mismatches


def run(nodes: Sequence[int] = (100, 1000, 3000), updates: int = 20,
        workloads: Sequence[str] = ("bridge", "random"), views: Sequence[str] = VIEWS,
        schemes: Sequence[str] = SCHEMES, budget_s: float | None = 600.0, seed: int = 0,
        degree: float = 2.4, partitions: int = 12, tiny: bool = False,
        out: Path | None = None, log: Callable[[str], None] | None = print) -> dict[str, Any]:
    """Every (size, workload, view) case with every scheme; the report (also written to
    ``out`` after every case, so a run cut off keeps what it measured)."""
    for name, given, known in (("scheme", schemes, SCHEMES), ("view", views, VIEWS)):
        unknown = [g for g in given if g not in known]
        if unknown:
            raise ConfigError(f"unknown {name} {unknown[0]!r}; choose among {', '.join(known)}")
    head: dict[str, Any] = {
        "params": {"nodes": list(nodes), "updates": updates, "workloads": list(workloads),
                   "views": list(views), "schemes": list(schemes), "budget_s": budget_s,
                   "seed": seed, "degree": degree, "partitions": partitions, "tiny": tiny},
        "machine": machine_info(), "cases": []}
    binary = None
    if "dataflow" in schemes:
        head["dataflow_build_s"], binary = timed(dataflow_peer.build)
    for size in nodes:
        topo = topology(size, degree, seed, tiny)
        for name in workloads:
            batches = workload(name, topo, updates, seed)
            with tempfile.TemporaryDirectory(prefix="aspen-engine-peers-") as tmp:
                work = Path(tmp)
                batches_path = work / "batches.json"
                batches_path.write_text(json.dumps(batches))
                dd_workload = write_workload(batches, work / "workload.txt")
                for view in views:
                    case = _case(size, len(topo.node_ids), len(topo.links), name, view, schemes,
                                 batches_path, dd_workload, binary, partitions, budget_s, work,
                                 len(batches), log)
                    head["cases"].append(case)
                    head["all_equal"] = all(c["all_equal"] for c in head["cases"])
                    if out is not None:
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.write_text(json.dumps(head, indent=1))
    head["all_equal"] = all(c["all_equal"] for c in head["cases"])
    if out is not None:
        out.write_text(json.dumps(head, indent=1))
    return head


def _case(size: int, node_count: int, link_count: int, name: str, view: str,
          schemes: Sequence[str], batches_path: Path, dd_workload: Path, binary: Path | None,
          partitions: int, budget_s: float | None, work: Path, expected: int,
          log: Callable[[str], None] | None) -> dict[str, Any]:
    """One (size, workload, view) case: every scheme, then the checks."""
    summaries = []
    for scheme in schemes:
        done = _scheme_run(scheme, view, batches_path, dd_workload, binary, partitions,
                           budget_s, work)
        summary = _summary(scheme, done, expected)
        summaries.append(summary)
        if log:
            log(f"{node_count} nodes, {name}, {view}, {scheme}: {summary['status']}"
                f"{' (' + summary['note'] + ')' if summary['note'] else ''}, build "
                f"{_num(summary['build_s'])} s, update median {_num(summary['update_median_s'])}"
                f" s, max {_num(summary['update_max_s'])} s, "
                f"peak RSS {_num(summary['peak_rss_mb'])} MB")
    truth, mismatches = _check(summaries, log)
    return {"nodes": size, "node_count": node_count, "link_tuples": link_count,
            "workload": name, "view": view, "updates": expected - 1, "checked_against": truth,
            "mismatches": mismatches, "all_equal": not mismatches, "schemes": summaries}


def _num(value: float | None, digits: int = 3) -> str:
    """A number for the table, or ``—``.

    >>> _num(None), _num(0.000123456), _num(12.3456), _num(5120.4)
    ('—', '0.000123', '12.3', '5,120')
    """
    if value is None:
        return "—"
    return f"{value:,.0f}" if abs(value) >= 10**digits else f"{value:.{digits}g}"


def markdown(report: dict[str, Any]) -> str:
    """The report as a markdown table, then the ratios to Differential Dataflow.

    >>> markdown({"cases": []}).splitlines()[0].split(" | ")[4:8]
    ['status', 'build s', 'updates', 'median ms']
    """
    lines = ["| nodes | workload | view | scheme | status | build s | updates | median ms | p90 ms "
             "| max ms | RSS MB | equal |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ratios = ["| nodes | workload | view | scheme | median / DD | max / DD | build / DD |",
              "|---|---|---|---|---|---|---|"]

    def ms(value: float | None) -> str:
        return _num(None if value is None else value * 1000)

    for case in report["cases"]:
        dd = next((s for s in case["schemes"] if s["scheme"] == "dataflow"
                   and s["status"] == "ok"), None)
        for s in case["schemes"]:
            truth = s["scheme"] == case["checked_against"]
            equal = "(truth)" if truth else {True: "yes", False: "**NO**", None: "—"}[
                s["all_equal"]]
            lines.append(f"| {case['node_count']} | {case['workload']} | {case['view']} | "
                         f"{s['scheme']} | {s['status']} | {_num(s['build_s'])} | "
                         f"{s['updates_done']}/{case['updates']} | "
                         f"{ms(s['update_median_s'])} | {ms(s['update_p90_s'])} | "
                         f"{ms(s['update_max_s'])} | {_num(s['peak_rss_mb'])} | {equal} |")
            if dd is not None and s is not dd and s["updates_done"]:
                partial = "" if s["status"] == "ok" else f" ({s['updates_done']} updates)"
                ratios.append(f"| {case['node_count']} | {case['workload']} | {case['view']} | "
                              f"{s['scheme']}{partial} | {_ratio(s, dd, 'update_median_s')} | "
                              f"{_ratio(s, dd, 'update_max_s')} | {_ratio(s, dd, 'build_s')} |")
    notes = [f"- {c['node_count']} nodes, {c['workload']}, {c['view']}, {s['scheme']}: "
             f"{s['note']}" for c in report["cases"] for s in c["schemes"] if s.get("note")]
    failures = [f"- **{m}**" for c in report["cases"] for m in c["mismatches"]]
    out = [*lines, "", "Ratios to Differential Dataflow (scheme / DD):", "", *ratios]
    if notes:
        out += ["", "Notes:", *notes]
    if failures:
        out += ["", "EQUALITY FAILURES:", *failures]
    return "\n".join(out)


def _ratio(scheme: dict[str, Any], dd: dict[str, Any], key: str) -> str:
    mine, theirs = scheme.get(key), dd.get(key)
    if mine is None or not theirs:
        return "—"
    return f"{mine / theirs:.3g}×"


if __name__ == "__main__":  # the child of one scheme: ``child SPEC_JSON``
    if sys.argv[1:2] == ["child"] and len(sys.argv) == 3:
        _child(json.loads(Path(sys.argv[2]).read_text()))
    else:
        raise SystemExit("usage: python -m aspen.bench.engine_peers child SPEC_JSON")
