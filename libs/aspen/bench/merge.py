"""One report from several runs of ``aspen bench`` (e.g. ``--only`` runs of some groups).

The runs' experiment groups are combined case by case, a later run's case replacing an earlier
one's; targets are evaluated again on the combined experiments, and the notes say which run
each group came from.

>>> a = {"mode": "full", "started": "t0", "machine": {}, "cutoff_s": 300, "timeouts_s": {},
...      "total_s": 10.0, "notes": ["n"],
...      "experiments": {"order": {"status": "timeout"}, "density": {"a": {"status": "timeout"}}}}
>>> b = dict(a, started="t1", total_s=5.0, experiments={"density": {"b": {"status": "timeout"}}})
>>> m = merge_results([a, b])
>>> sorted(m["experiments"]["density"]), m["total_s"]
(['a', 'b'], 15.0)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aspen.bench.report import write_report
from aspen.bench.targets import evaluate_targets

__all__ = ["merge_folders", "merge_results"]


def merge_results(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The combined results of ``runs`` (``results.json`` contents), in order."""
    if not runs:
        raise ValueError("nothing to merge")
    merged = dict(runs[0])
    experiments: dict[str, Any] = {}
    origin: dict[str, list[str]] = {}
    for run in runs:
        for group, rec in run["experiments"].items():
            origin.setdefault(run["started"], []).append(group)
            if "status" in rec:  # a single task
                experiments[group] = rec
            else:
                experiments.setdefault(group, {}).update(rec)
    notes = list(dict.fromkeys(n for run in runs for n in run["notes"]
                               if not n.startswith("only the groups")))
    notes += [f"run started {started}: {', '.join(groups)}" for started, groups in origin.items()]
    merged.update(experiments=experiments, targets=evaluate_targets(experiments), notes=notes,
                  total_s=sum(run["total_s"] for run in runs),
                  started=" + ".join(run["started"] for run in runs))
    return merged


def merge_folders(folders: Sequence[Path | str], out: Path | str) -> Path:
    """Merge the ``results.json`` of ``folders`` and write the report into ``out``."""
    runs = [json.loads((Path(f) / "results.json").read_text()) for f in folders]
    return write_report(merge_results(runs), Path(out))
