"""Per-batch latency: a ``spark-submit`` per batch (the pipeline DAG) against a follower
(``aspen maintain --runtime spark --follow``), on one lake, the same batch sizes.

The lake is built first (every link of the topology, one ``spark-submit`` maintain). Then, for
each size, ``size`` random links are deleted and the same links inserted back, each a batch:

- **per batch** (``spark-submit``): the batch is ingested, then ``jobs/maintain.py`` runs in a
  new Spark application; its latency is that run's wall time (JVM start, Delta reads, the
  host processes restoring every node that has work);
- **follower**: one ``jobs/maintain.py --follow`` application runs throughout; the batch is
  ingested and its latency is the time from the ingest's end until the ledger shows the batch
  committed (looked at every 0.1 s). The follower's first batch restores the nodes it needs
  like a fresh application; later ones find them in memory.

Both arms run the same code per batch (``maintain_spark``), the same partitions and hosts; the
batches differ only in which random links they touch (a fresh draw per batch). Ingest runs in
this process (delta-rs, no JVM), outside the measured time of both arms.

>>> [row["arm"] for row in _rows("x", [("delete", 1, 2.0)])]
['x']
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aspen.bench.common import topology

__all__ = ["follower_latency"]

#: Seconds between looks at the ledger while a follower works on a batch.
LOOK_SECONDS = 0.1


def _rows(arm: str, batches: list[tuple[str, int, float]]) -> list[dict[str, Any]]:
    return [{"arm": arm, "kind": kind, "size": size, "seconds": seconds}
            for kind, size, seconds in batches]


def _submit(job_args: list[str], memory: str) -> list[str]:
    from aspen.pipeline.launch import spark_submit_command

    command = spark_submit_command("maintain", *job_args)
    return [command[0], "--driver-memory", memory, *command[1:]]


def follower_latency(nodes: int = 100, degree: float = 2.0, partitions: int = 4,
                     hosts: int = 2, sizes: tuple[int, ...] = (1, 10), seed: int = 0,
                     driver_memory: str = "8g", poll: float = 0.5,
                     lake_dir: str | None = None) -> dict[str, Any]:
    """Build a lake, then time each batch both ways; see the module docstring."""
    from aspen.generators.records import link_delete, link_insert
    from aspen.generators.writers import write_jsonl
    from aspen.lake.ingest import ingest_files
    from aspen.lake.lease import request_stop
    from aspen.pipeline import ledger
    from aspen.settings import Settings

    topo = topology(nodes, degree, seed)
    links = list(dict.fromkeys((ln.src, ln.dst, ln.cost) for ln in topo.links))
    rng = random.Random(seed)
    root = Path(lake_dir or tempfile.mkdtemp(prefix="aspen-follower-"))
    settings = Settings(lake=str(root / "lake"))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    maintain_args = ["--lake", settings.lake, "--runtime", "spark", "--partitions",
                     str(partitions), "--hosts", str(hosts)]
    counter = 0

    def ingest(records: list[dict[str, Any]]) -> None:
        nonlocal counter
        counter += 1
        path = root / f"batch-{counter:03d}.jsonl"
        write_jsonl(records, str(path))
        ingest_files(settings, [path])

    def one_shot() -> float:
        started = time.perf_counter()
        subprocess.run(_submit(maintain_args, driver_memory), env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - started

    def draws() -> list[tuple[str, int, list[dict[str, Any]]]]:
        out = []
        for size in sizes:
            chosen = rng.sample(links, size)
            out.append(("delete", size, [link_delete(s, d) for s, d, _ in chosen]))
            out.append(("insert", size, [link_insert(s, d, c) for s, d, c in chosen]))
        return out

    ingest([link_insert(s, d, c) for s, d, c in links])
    result: dict[str, Any] = {"nodes": len(topo.node_ids), "links": len(links),
                              "partitions": partitions, "hosts": hosts, "poll": poll,
                              "build_s": one_shot()}

    fresh = []
    for kind, size, records in draws():
        ingest(records)
        fresh.append((kind, size, one_shot()))

    # no TTL sweep or housekeeping between batches: they would land in the measured latencies
    chores_off = ["--expire-every", "0", "--housekeep-every", "0"]
    follower = subprocess.Popen(_submit([*maintain_args, "--follow", "--poll", str(poll),
                                         *chores_off], driver_memory),
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True)
    followed = []
    try:
        started = time.perf_counter()
        for line in follower.stdout:  # its first line: it holds the lease and looks at the log
            if line.startswith("following"):
                break
        result["follower_start_s"] = time.perf_counter() - started
        for kind, size, records in draws():
            before = ledger.last_committed(settings).batch_id
            ingest(records)
            landed = time.perf_counter()
            while ledger.last_committed(settings).batch_id == before:
                if follower.poll() is not None:
                    raise RuntimeError(f"the follower exited with code {follower.returncode}")
                time.sleep(LOOK_SECONDS)
            followed.append((kind, size, time.perf_counter() - landed))
    finally:
        request_stop(settings)
        follower.communicate(timeout=600)
    result["rows"] = _rows("spark-submit per batch", fresh) + _rows("follower", followed)
    return result


def table(result: dict[str, Any]) -> str:
    """The result as a Markdown table: per batch, both arms' seconds and their ratio.

    >>> print(table({"rows": _rows("spark-submit per batch", [("delete", 1, 60.0)])
    ...              + _rows("follower", [("delete", 1, 20.0)])}))
    | batch | links | spark-submit per batch s | follower s | per batch / follower |
    |---|---|---|---|---|
    | delete | 1 | 60.0 | 20.0 | 3.00 |
    """
    fresh = [r for r in result["rows"] if r["arm"] == "spark-submit per batch"]
    followed = [r for r in result["rows"] if r["arm"] == "follower"]
    lines = ["| batch | links | spark-submit per batch s | follower s | per batch / follower |",
             "|---|---|---|---|---|"]
    for a, b in zip(fresh, followed, strict=True):
        lines.append(f"| {a['kind']} | {a['size']} | {a['seconds']:.1f} | {b['seconds']:.1f} | "
                     f"{a['seconds'] / b['seconds']:.2f} |")
    return "\n".join(lines)
