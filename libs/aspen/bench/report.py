"""Write a bench run's results: ``results.json``, ``measurements.csv``, ``targets.csv``, PNG plots
(when matplotlib is importable; otherwise the summary says they were skipped) and ``summary.md``.

>>> flat = list(_flatten("x", {"a": {"b": 1.5, "c": [1, 2]}, "d": "s"}))
>>> flat
[('x', 'a.b', 1.5), ('x', 'd', 's')]
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aspen.bench import plots
from aspen.bench.common import error_note

__all__ = ["write_report"]


def _flatten(experiment: str, value: Any, prefix: str = "") -> Iterator[tuple[str, str, Any]]:
    """(experiment, dotted metric, scalar) rows; lists (per-batch series) are left to the JSON."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _flatten(experiment, inner, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, int | float | str | bool) or value is None:
        yield experiment, prefix, value


def _records(experiments: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, task record) for every task of the run (nested groups: "group/case")."""
    for name, rec in experiments.items():
        if "status" in rec:  # a single task
            yield name, rec
        else:
            for case, inner in rec.items():
                yield f"{name}/{case}", inner


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _res(rec: Any) -> dict[str, Any] | None:
    return rec["result"] if isinstance(rec, dict) and rec.get("status") == "ok" else None


def _note(rec: dict[str, Any]) -> str:
    """A task record's note as the summary shows it: a failed task's is one line, its error's
    type and message, without traceback or absolute path (records of older runs, which a merge
    may bring in, held the last stderr lines).

    >>> _note({"status": "error", "note": 'exit code 1: File "/a/s.py", line 1 | x | MemoryError'})
    'exit code 1: MemoryError'
    """
    note = str(rec.get("note") or "")
    if rec.get("status") != "error" or not note:
        return note
    head, sep, rest = note.partition(": ")
    if head.startswith("exit code") and sep:
        return f"{head}: {error_note(rest.split(' | '))}"
    return error_note([note])


def _status(rec: Any) -> str:
    return _note(rec) or rec["status"] if isinstance(rec, dict) else "not run"


def _per_node(step: dict[str, Any]) -> str:
    """The paper's per-node columns of one insertion step (absent in older results)."""
    if "messages_per_node_mean" not in step:
        return "— | — | —"
    kb = step.get("state_bytes_per_node_mean")
    return (f"{_fmt(step['messages_per_node_mean'])} ({_fmt(step['messages_per_node_max'])}) | "
            f"{_fmt(step['state_entries_per_node_mean'])} "
            f"({_fmt(step['state_entries_per_node_max'])}) | "
            f"{_fmt(kb / 1024) if kb is not None else '—'}")


def _tables(exp: dict[str, Any]) -> list[str]:
    """Compact tables of the main measurements (the full data is in results.json)."""
    lines = ["## Measurements", "", "| deletions (one tuple per batch) | msgs/deletion | "
             "ms/deletion | build s |", "|---|---|---|---|"]
    for case, rec in exp.get("deletions", {}).items():
        res = _res(rec)
        row = res["schemes"][case.split("/")[-1]] if res else None
        lines.append(f"| {case} | {_fmt(row['mean_messages'])} | {_fmt(row['mean_ms'])} | "
                     f"{_fmt(row['build_s'])} |" if row else f"| {case} | {_status(rec)} | | |")
    lines += ["", "| regions (one sensor un-triggered per batch) | triggered | msgs/deletion | "
              "ms/deletion | build s | build msgs | B/tuple |", "|---|---|---|---|---|---|---|"]
    for case, rec in exp.get("regions", {}).items():
        res = _res(rec)
        row = res["schemes"][case.split("/")[-1]] if res else None
        lines.append(f"| {case} | {res['triggered']} of {res['sensors']} | "
                     f"{_fmt(row['mean_messages'])} | {_fmt(row['mean_ms'])} | "
                     f"{_fmt(row['build_s'])} | {row['build_messages']} | "
                     f"{_fmt(row['per_tuple_bytes'])} |" if row
                     else f"| {case} | | {_status(rec)} | | | | |")
    lines += ["", "| insertions (fraction 1.0, cumulative) | messages | seconds | B/tuple "
              "| msgs/node mean (max) | state entries/node mean (max) | state KB/node mean |",
              "|---|---|---|---|---|---|---|"]
    for case, rec in exp.get("insertions", {}).items():
        res = _res(rec)
        data = res["schemes"][case.split("/")[-1]] if res else None
        last = data["steps"][-1] if data else None
        lines.append(f"| {case} | {last['messages']} | {_fmt(last['seconds'])} | "
                     f"{_fmt(data['per_tuple_bytes'])} | {_per_node(last)} |" if last
                     else f"| {case} | {_status(rec)} | | | | | |")
    lines += ["", "| build | link tuples | query nodes | seconds | messages |",
              "|---|---|---|---|---|"]
    for group in ("density", "scale-out", "aggsel"):
        for case, rec in exp.get(group, {}).items():
            res = _res(rec)
            parts = rec.get("kwargs", {}).get("partitions", 12)
            lines.append(f"| {group} {case} | {_fmt(res.get('link_tuples'))} | {parts} | "
                         f"{_fmt(res['seconds'])} | {res['messages']} |"
                         if res else f"| {group} {case} | | {parts} | {_status(rec)} | |")
    res = _res(exp.get("order"))
    if res:
        lines += ["", "| variable order | BDD nodes (sum) | bytes/tuple | build s |",
                  "|---|---|---|---|"]
        lines += [f"| {n} | {o['bdd_nodes']} | {_fmt(o['bytes_per_tuple'])} | "
                  f"{_fmt(o['seconds'])} |" for n, o in res["orders"].items()]
    lines += ["", "| peers (recompute from scratch) | nodes | build s | mean s per update | "
              "updates timed | equal to Aspen |", "|---|---|---|---|---|---|"]
    groups = [("peers", exp.get("peers")), ("peers-1000", exp.get("peers-1000"))]
    groups += [(f"ladder {k}", v) for k, v in exp.get("ladder", {}).items()]
    groups += [(f"ladder dense {k}", v) for k, v in exp.get("ladder-dense", {}).items()]
    for label, rec in groups:
        if rec is None:
            continue
        res = _res(rec) or rec.get("partial")
        if not res:
            lines.append(f"| {label} | | | {_status(rec)} | | |")
            continue
        if res is rec.get("partial"):
            label = f"{label} ({_status(rec)}; partial)"
        for peer, st in res["peers"].items():
            eq = "—" if peer == "aspen" else "not checked" if not st["checked_batches"] \
                else f"{st['all_equal']} ({st['checked_batches']})"
            if peer == "aspen" and st["build_s"] is None:
                lines.append(f"| {label}: aspen | {res['nodes']} | not finished | | | — |")
                continue
            build = _fmt(st["build_s"])
            if st.get("index_s") is not None:
                build += f" (+{_fmt(st['index_s'])} index)"
            lines.append(f"| {label}: {peer} | {res['nodes']} | {build} | "
                         f"{_fmt(st['mean_update_s'])} | {st['update_batches']} | {eq} |")
    lines += _spark_runtime_table(exp.get("spark-runtime"))
    return lines + [""]


def _spark_runtime_table(rec: Any) -> list[str]:
    """Aspen on Spark per batch, next to DRed and a Spark recompute of the same view."""
    if rec is None:
        return []
    res = _res(rec) or rec.get("partial")
    lines = ["", "| Spark runtime batch | links | wall s | rounds | Spark jobs | rows shipped | "
             "DRed msgs | Spark recompute s | lake recompute s |",
             "|---|---|---|---|---|---|---|---|---|"]
    if not res:
        return [*lines, f"| {_status(rec)} | | | | | | | | |"]
    for row in res.get("batches", []):
        lines.append(f"| {row['kind']} | {row['size']} | {_fmt(row['wall_seconds'])} | "
                     f"{_fmt(row['rounds'])} | {_fmt(row['spark_jobs'])} | "
                     f"{_fmt(row['rows_shipped'])} | {_fmt(row['dred_messages'])} | "
                     f"{_fmt(row.get('recompute_s'))} | {_fmt(row.get('recompute_lake_s'))} |")
    return lines


def _overrides(timeouts: dict[str, float]) -> str:
    return "".join(f", {group} {seconds:.0f} s" for group, seconds in timeouts.items())


def _repeats_table(experiments: dict[str, Any]) -> list[str]:
    """Mean ± 95 % CI half-width of every timing of the experiments that were repeated."""
    rows = []
    for name, rec in _records(experiments):
        rep = rec.get("repeats")
        if not rep:
            continue
        counts = "equal" if rep["counts_equal"] else "**differ**"
        for path, st in rep["timings"].items():
            rows.append(f"| {name} | {path} | {rep['n']} of {rep['asked']} | {_fmt(st['mean'])} "
                        f"± {_fmt(st['ci95'])} | {_fmt(st['min'])}–{_fmt(st['max'])} | "
                        f"{counts} |")
    if not rows:
        return []
    return ["", "## Repeats (mean ± 95 % confidence half-width, Student's t)", "",
            "Runs that finished once were repeated, each in its own process; a timeout is not "
            "repeated. The tables above show the first run. Counts (messages, tuples) are "
            "compared across the runs.", "",
            "| experiment | timing | runs | mean ± CI | range | counts across runs |",
            "|---|---|---|---|---|---|", *rows]


def _summary(results: dict[str, Any], pngs: list[str], png_note: str) -> str:
    m = results["machine"]
    lines = [
        f"# aspen bench — {results['mode']} mode", "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB RAM, Python {m['python']} "
        f"({m['platform']}). Started {results['started']}, total {results['total_s']:.0f} s; "
        f"per-experiment cut-off {results['cutoff_s']:.0f} s"
        f"{_overrides(results.get('timeouts_s') or {})} (each experiment in its own process). "
        "Times are wall-clock on a machine shared with other work.", "",
        "## Targets (ratios measured in this run)", "",
        "| target | measured | met | how |", "|---|---|---|---|",
    ]
    for t in results["targets"]:
        met = {True: "yes", False: "**no**", None: "n/a"}[t["met"]]
        lines.append(f"| {t['target']} | {_fmt(t['measured'])} | {met} | {t['note']} |")
    lines += [""] + _tables(results["experiments"])
    lines += ["## Experiments", "", "| experiment | status | seconds | peak RSS MB | note |",
              "|---|---|---|---|---|"]
    for name, rec in _records(results["experiments"]):
        lines.append(f"| {name} | {rec['status']} | {rec['seconds']:.1f} | "
                     f"{_fmt(rec.get('peak_rss_mb'))} | {_note(rec)} |")
    lines += _repeats_table(results["experiments"])
    lines += ["", "## Peer views checked against Aspen's view", ""]
    for name, rec in _records(results["experiments"]):
        res = rec.get("result") or {}
        for peer, stats in res.get("peers", {}).items():
            if peer != "aspen":
                changed = sum(1 for b in res["batches"][1:] if b.get("view_changed"))
                lines.append(f"- {name} / {peer}: equal in {stats['checked_batches']} of "
                             f"{len(res['batches'])} batches checked (the view changed in "
                             f"{changed} of the {len(res['batches']) - 1} updates) — "
                             f"{'all equal' if stats['all_equal'] else '**MISMATCH**'}")
    lines += ["", "## Notes", ""] + [f"- {n}" for n in results["notes"]]
    lines += [f"- {png_note}" if png_note else f"- Plots: {', '.join(pngs)}"]
    return "\n".join(lines) + "\n"


def write_report(results: dict[str, Any], out: Path) -> Path:
    """Write every output file of ``results`` into ``out``; return the summary's path."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    with open(out / "measurements.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["experiment", "metric", "value"])
        for name, rec in _records(results["experiments"]):
            writer.writerows(_flatten(name, {k: v for k, v in rec.items() if k != "kwargs"}))
    with open(out / "targets.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["target", "measured", "met", "note"])
        writer.writeheader()
        writer.writerows(results["targets"])
    pngs, png_note = plots.write_plots(results["experiments"], out)
    summary = out / "summary.md"
    summary.write_text(_summary(results, pngs, png_note))
    return summary
