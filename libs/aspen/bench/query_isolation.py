"""Query isolation: a one-link change's update-landed → views-committed latency through a local
follower with 0 and with N registered trivial continuous queries.

One small lake (a transit-stub topology, every link ingested and maintained once). Per arm, a
follower (``aspen maintain --runtime local --follow``, no chores; its process is
:mod:`aspen.pipeline.maintainer_main`) runs in a process of its own;
``changes`` single-link updates (a delete, then the insert back, …; one more first, unmeasured,
to warm the follower up) are ingested one at a time, and each one's latency is the time from
the ingest's end until the ledger shows a new committed batch (looked at every 0.05 s). The
second arm first registers ``queries`` trivial queries (``SELECT COUNT(*) AS n FROM link``):
every committed batch is handed to the follower's query worker, which starts Spark and runs
them in its own thread while the follower goes on. The ratio of the arms' median latencies is
the cost the queries add to a batch (target: at most 2).

>>> summary([0.5, 0.7, 0.6], [0.9, 0.8, 1.0])["ratio"]
1.5
"""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["TRIVIAL_SQL", "query_isolation", "summary"]

#: The query every registered query of the second arm runs.
TRIVIAL_SQL = "SELECT COUNT(*) AS n FROM link"
#: Seconds between looks at the ledger while the follower works on a batch.
LOOK_SECONDS = 0.05
#: Seconds a change may take to commit before the run is given up.
WAIT_SECONDS = 300.0
#: The ratio of median latencies the queries may cost.
TARGET_RATIO = 2.0

_NUMBERS = itertools.count(1)


def summary(without: list[float], with_queries: list[float]) -> dict[str, Any]:
    """Medians of both arms and their ratio (with queries over without)."""
    a, b = statistics.median(without), statistics.median(with_queries)
    return {"median_without_s": a, "median_with_s": b, "ratio": round(b / a, 3),
            "target_ratio": TARGET_RATIO, "met": b / a <= TARGET_RATIO}


def _arm(settings: Any, root: Path, changes: Iterator[list[dict[str, Any]]], count: int,
         poll: float) -> tuple[list[float], str]:
    """Start a follower, time each change, stop it; the latencies and its output."""
    from aspen.generators.writers import write_jsonl
    from aspen.lake.ingest import ingest_files
    from aspen.lake.lease import request_stop
    from aspen.pipeline import ledger

    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    follower = subprocess.Popen(
        [sys.executable, "-m", "aspen.pipeline.maintainer_main", "--lake", settings.lake,
         "--runtime", "local", "--follow", "--poll", str(poll), "--expire-every", "0",
         "--housekeep-every", "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = []
    try:
        assert follower.stdout is not None
        for line in follower.stdout:  # its first line: it holds the lease and looks at the log
            if line.startswith("following"):
                break
        time.sleep(2 * poll)  # its first look (nothing new) is done
        for number in range(count + 1):
            path = root / f"change-{next(_NUMBERS):03d}.jsonl"
            records = next(changes)
            write_jsonl(records, str(path))
            before = ledger.last_committed(settings).batch_id
            ingest_files(settings, [path])
            landed = time.perf_counter()
            while ledger.last_committed(settings).batch_id == before:
                if follower.poll() is not None:
                    raise RuntimeError(f"the follower exited with code {follower.returncode}")
                if time.perf_counter() - landed > WAIT_SECONDS:
                    raise RuntimeError(f"no batch committed within {WAIT_SECONDS:g} s")
                time.sleep(LOOK_SECONDS)
            if number:  # the first change warms the follower up (its engine state loads)
                seconds.append(time.perf_counter() - landed)
    finally:
        request_stop(settings)
        output, _ = follower.communicate(timeout=300)
    return seconds, output


def query_isolation(nodes: int = 30, queries: int = 200, changes: int = 6, poll: float = 0.2,
                    seed: int = 0, lake_dir: str | None = None) -> dict[str, Any]:
    """Build the lake, then time ``changes`` one-link changes with 0 and with ``queries``
    registered queries; see the module docstring."""
    from aspen.bench.common import topology
    from aspen.generators.records import link_delete, link_insert
    from aspen.generators.writers import write_jsonl
    from aspen.lake.ingest import ingest_files
    from aspen.pipeline.maintain_local import maintain_local
    from aspen.queries.registry import register
    from aspen.settings import Settings

    topo = topology(nodes, 2.0, seed)
    links = list(dict.fromkeys((ln.src, ln.dst, ln.cost) for ln in topo.links))
    root = Path(lake_dir or tempfile.mkdtemp(prefix="aspen-query-isolation-"))
    settings = Settings(lake=str(root / "lake"))
    write_jsonl([link_insert(s, d, c) for s, d, c in links], str(root / "build.jsonl"))
    ingest_files(settings, [root / "build.jsonl"])
    maintain_local(settings)
    src, dst, cost = links[0]
    # delete, insert back, delete, …: every change is a real one, across both arms
    flips = itertools.cycle([[link_delete(src, dst)], [link_insert(src, dst, cost)]])
    without, _ = _arm(settings, root, flips, changes, poll)
    started = time.perf_counter()
    for i in range(queries):
        register(settings, f"trivial_{i:03d}", TRIVIAL_SQL)
    register_s = time.perf_counter() - started
    with_queries, output = _arm(settings, root, flips, changes, poll)
    result = {"nodes": len(topo.node_ids), "links": len(links), "queries": queries,
              "changes": changes, "poll": poll, "register_s": register_s,
              "without_s": without, "with_s": with_queries,
              "worker_lines": [ln for ln in output.splitlines() if "quer" in ln][-5:]}
    result.update(summary(without, with_queries))
    return result
