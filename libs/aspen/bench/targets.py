"""The suite's performance targets, evaluated on one run's measurements (never tuned to meet them).

Each target is ``{"target", "measured", "met", "note"}``; ``measured`` is the ratio measured in
this run (None when the experiment did not run or did not finish), ``met`` True/False/None.

>>> ratio(10.0, 2.0), ratio(1.0, 0.0)
(5.0, None)
"""

from __future__ import annotations

import statistics
from typing import Any

__all__ = ["evaluate_targets", "ratio"]


def ratio(num: float | None, den: float | None) -> float | None:
    """``num / den``, or None when either is missing or ``den`` is 0."""
    if num is None or den is None or den == 0:
        return None
    return num / den


def _x(value: float | None) -> str:
    """A ratio for a note: ``×12.3``, or ``×∞`` when the denominator was 0."""
    return "×∞" if value is None else f"×{value:.2f}" if value < 10 else f"×{value:.0f}"


def _ok(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    return rec["result"] if rec and rec.get("status") == "ok" else None


def _target(target: str, measured: float | None, met: bool | None, note: str) -> dict[str, Any]:
    return {"target": target, "measured": measured, "met": met, "note": note}


def _scheme(exp: dict[str, Any], group: str, scheme: str) -> dict[str, Any] | None:
    """One scheme's result in a per-scheme group (insertions, deletions)."""
    res = _ok(exp.get(group, {}).get(scheme))
    return res["schemes"][scheme] | {"link_tuples": res["link_tuples"]} if res else None


def _deletions(exp: dict[str, Any]) -> list[dict[str, Any]]:
    name = "deletions ≥10× cheaper than DRed (messages and time)"
    dred = _scheme(exp, "deletions", "dred")
    if dred is None:
        return [_target(name, None, None, "DRed deletion run did not finish")]
    out = []
    for scheme in ("absorption-lazy", "absorption-eager"):
        mine = _scheme(exp, "deletions", scheme)
        if mine is None:
            out.append(_target(f"{name} [{scheme}]", None, None, "did not finish"))
            continue
        msgs = ratio(dred["del_messages"], mine["del_messages"])
        secs = ratio(dred["del_seconds"], mine["del_seconds"])
        met = None if msgs is None or secs is None else (msgs >= 10 and secs >= 10)
        same = "same final view" if mine["view_digest"] == dred["view_digest"] else \
            "**final views differ**"
        out.append(_target(f"{name} [{scheme}]", secs, met,
                           f"DRed/{scheme}: messages {_x(msgs)}, view tuples shipped "
                           f"{_x(ratio(dred['del_tuples'], mine['del_tuples']))}, time "
                           f"{_x(secs)} over {mine['deletions']} deletions "
                           f"({mine['link_tuples']} link tuples; {same})"
                           + ("" if secs is None or secs >= 10 else
                              "; time is limited because DRed here is a lean in-process set "
                              "simulation (no network latency per message) while absorption "
                              "pays BDD restriction in Python")))
    return out


def _density(exp: dict[str, Any]) -> dict[str, Any]:
    name = "lazy ≥50× faster than eager on dense"
    runs = exp.get("density", {})
    # the paper's claim is on 800 link tuples (200 nodes); else the 100-node dense topology
    size = "/n200" if _ok(runs.get("dense/lazy/n200")) and "dense/eager/n200" in runs else ""
    lazy, eager = _ok(runs.get(f"dense/lazy{size}")), runs.get(f"dense/eager{size}")
    if lazy is None or eager is None:
        return _target(name, None, None, "dense lazy or eager run missing")
    if eager["status"] == "timeout":
        bound = ratio(eager["seconds"], lazy["seconds"])
        met = True if bound and bound >= 50 else None
        return _target(name, bound, met,
                       f"eager {eager['note']}; lazy built in {lazy['seconds']:.2f} s "
                       f"({lazy['link_tuples']} link tuples): the ratio is a lower bound "
                       f"(≥{bound or 0:.0f}×)" + ("" if met else ", limited by the cut-off: "
                                                  "undecided"))
    eager_res = _ok(eager)
    if eager_res is None:
        return _target(name, None, None, f"eager failed: {eager.get('note')}")
    r = ratio(eager_res["seconds"], lazy["seconds"])
    return _target(name, r, bool(r and r >= 50),
                   f"eager {eager_res['seconds']:.2f} s vs lazy {lazy['seconds']:.2f} s "
                   f"({lazy['link_tuples']} link tuples); lazy leaves formulas partial")


def _aggsel(exp: dict[str, Any]) -> dict[str, Any]:
    name = "multi-aggregate ≤ half the cost of single"
    runs = exp.get("aggsel", {})
    multi, single = _ok(runs.get("dense/multi")), _ok(runs.get("dense/single"))
    if multi is None or single is None:
        return _target(name, None, None, "dense multi or single run missing")
    msgs = ratio(multi["messages"], single["messages"])
    secs = ratio(multi["seconds"], single["seconds"])
    met = None if msgs is None or secs is None else (msgs <= 0.5 and secs <= 0.5)
    return _target(name, msgs, met,
                   f"multi/single on dense: messages ×{msgs or 0:.2f}, time ×{secs or 0:.2f}. "
                   "Multi keeps every tuple best for either aggregate (cost or hops) and "
                   "maintains two views, so it cannot ship less than cost-only pruning here")


def _order(exp: dict[str, Any]) -> dict[str, Any]:
    name = "DFS order ≤ half the BDD size of arrival order"
    res = _ok(exp.get("order"))
    if res is None:
        return _target(name, None, None, "order experiment did not finish")
    orders = res["orders"]
    r = ratio(orders["dfs"]["bdd_nodes"], orders["arrival"]["bdd_nodes"])
    bfs = ratio(orders["bfs"]["bdd_nodes"], orders["arrival"]["bdd_nodes"]) if "bfs" in orders \
        else None
    return _target(name, r, None if r is None else r <= 0.5,
                   f"DFS/arrival BDD nodes ×{r or 0:.2f}, BFS/arrival ×{bfs or 0:.2f} "
                   f"(all-pairs reachable, {res['link_tuples']} link tuples)")


def _insert_only(exp: dict[str, Any]) -> dict[str, Any]:
    name = "insert-only provenance ≤2× plain set semantics"
    lazy, plain = _scheme(exp, "insertions", "absorption-lazy"), _scheme(exp, "insertions", "dred")
    if lazy is None or plain is None:
        return _target(name, None, None, "insertion runs did not finish")
    last, base = lazy["steps"][-1], plain["steps"][-1]
    msgs = ratio(last["messages"], base["messages"])
    secs = ratio(last["seconds"], base["seconds"])
    met = None if msgs is None or secs is None else (msgs <= 2 and secs <= 2)
    return _target(name, secs, met,
                   f"absorption lazy / set semantics (DRed, insert-only) at fraction 1.0: "
                   f"messages ×{msgs or 0:.2f}, time ×{secs or 0:.2f}; provenance "
                   f"{lazy['per_tuple_bytes'] or 0:.0f} B per tuple (partial formulas)"
                   + ("" if secs is None or secs <= 2 else
                      "; time is limited by BDD operations in Python against plain set "
                      "insertions"))


def _index_note(aspen: dict[str, Any]) -> str:
    """The one-off indexing of the provenance for deletions, when it was timed apart."""
    if aspen.get("index_s") is None:
        return ""
    return (f"; Aspen indexed its provenance for deletions once after the build "
            f"({aspen['index_s']:.1f} s, not in the per-update times)")


def _updates(exp: dict[str, Any]) -> dict[str, Any]:
    name = "single-link updates at 1,000 nodes: incremental ≥20× faster than fastest peer"
    candidates = [("peers 1000", exp.get("peers-1000")),
                  ("ladder 1000", exp.get("ladder", {}).get("1000")),
                  ("peers", exp.get("peers")),
                  ("ladder 100", exp.get("ladder", {}).get("100"))]
    for label, rec in candidates:
        res = _ok(rec)
        if res is None:
            continue
        peers = {k: v for k, v in res["peers"].items() if k != "aspen" and v["mean_update_s"]}
        if not peers:
            continue
        fastest = min(peers, key=lambda k: peers[k]["mean_update_s"])
        aspen = res["peers"]["aspen"]["mean_update_s"]
        r = ratio(peers[fastest]["mean_update_s"], aspen)
        upd = [b["aspen_s"] for b in res["batches"][1:]]
        med = ratio(statistics.median(b[f"{fastest}_s"] for b in res["batches"][1:]
                                      if f"{fastest}_s" in b), statistics.median(upd))
        where = f"at {res['nodes']} nodes ({label})"
        note = (f"{where}: fastest peer {fastest} {1000 * peers[fastest]['mean_update_s']:.1f} "
                f"ms vs Aspen {1000 * aspen:.1f} ms per update (means; medians ×{med or 0:.1f})"
                + _index_note(res["peers"]["aspen"]))
        if res["nodes"] < 1000:
            note += "; the 1,000-node run did not finish or did not run"
        return _target(name, r, bool(r and r >= 20) if res["nodes"] >= 1000 else None, note)
    return _target(name, None, None, "no peer comparison finished")


def evaluate_targets(experiments: dict[str, Any]) -> list[dict[str, Any]]:
    """Every performance target on ``experiments`` (records of
    :func:`aspen.bench.worker.run_task`)."""
    return [*_deletions(experiments), _density(experiments), _aggsel(experiments),
            _order(experiments), _insert_only(experiments), _updates(experiments)]
