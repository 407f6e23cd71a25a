"""Soak: a follower under sustained churn, and whether backlog, latency or memory grow.

A lake of a ``topology(nodes)`` is built and maintained once; then ``aspen maintain --follow``
runs (its TTL sweep every ``expire_every`` seconds) while this process ingests ``rate`` updates
a second for ``minutes``, in files of ``rate × every`` updates: link deletions and re-insertions
of random links, a share of the insertions with a TTL so that the sweep has expiries to turn into
deletions. Ingest runs in this process, through delta-rs without a JVM (the log-writer lease
keeps it apart from the follower's sweep); when one ingest call takes longer than ``every`` the
next follows at once, and the summary's ``achieved_rate_per_s`` says what the path sustained.

Sampled every ``sample_every`` seconds: the **backlog** (ingest batches logged but not yet
covered by a committed batch), the follower's **resident memory** (its process tree: the Python
driver, its JVM and any host processes), and per committed batch its **latency**, from the
landing of the newest ingest batch it covers to its ledger row being seen. A quantity "grows
without bound" when the median of its last third exceeds that of its first third by more than
``GROWTH_TOLERANCE`` and the backlog never drains; :func:`verdicts` says so per quantity.

>>> verdicts({"backlog": [3, 4, 2, 3, 4, 3], "rss_mb": [900, 910, 905, 915, 908, 912]})
{'backlog': 'bounded', 'rss_mb': 'bounded'}
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aspen.bench.common import topology

__all__ = ["GROWTH_TOLERANCE", "SoakResult", "percentile", "soak", "verdicts"]

#: How much the last third's median may exceed the first third's before it counts as growth.
GROWTH_TOLERANCE = 0.5


@dataclass
class SoakResult:
    """The time series of one soak (seconds since the churn started)."""

    nodes: int
    links: int
    rate: float
    minutes: float
    samples: list[dict[str, float]] = field(default_factory=list)
    batches: list[dict[str, float]] = field(default_factory=list)
    ingested_updates: int = 0
    ingest_batches: int = 0
    committed_batches: int = 0
    drained_s: float | None = None

    def summary(self) -> dict[str, Any]:
        """The figures of the run: latency p50/p95, backlog and memory, and the verdicts."""
        latency = [b["latency_s"] for b in self.batches]
        series = {"backlog": [s["backlog"] for s in self.samples],
                  "rss_mb": [s["rss_mb"] for s in self.samples],
                  "latency_s": latency}
        return {"nodes": self.nodes, "links": self.links, "rate_per_s": self.rate,
                "achieved_rate_per_s": self.ingested_updates / max(1.0, self.minutes * 60),
                "minutes": self.minutes, "ingested_updates": self.ingested_updates,
                "ingest_batches": self.ingest_batches, "batches": self.committed_batches,
                "latency_p50_s": percentile(latency, 50), "latency_p95_s": percentile(latency, 95),
                "backlog_max": max(series["backlog"], default=0),
                "rss_mb_first": series["rss_mb"][0] if series["rss_mb"] else None,
                "rss_mb_max": max(series["rss_mb"], default=None),
                "rss_mb_last": series["rss_mb"][-1] if series["rss_mb"] else None,
                "drained_after_s": self.drained_s, "verdicts": verdicts(series)}


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (nearest rank) of ``values``; None when empty.

    >>> percentile([1, 2, 3, 4, 10], 50), percentile([1, 2, 3, 4, 10], 95)
    (3, 10)
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n q / 100), at least 1
    return ordered[int(rank) - 1]


def verdicts(series: Mapping[str, Sequence[float]]) -> dict[str, str]:
    """Per quantity: ``bounded``, or ``grows`` when the median of its last third exceeds its
    first third's by more than :data:`GROWTH_TOLERANCE` (of it, or of 1 for values near 0)."""
    out = {}
    for name, values in series.items():
        if len(values) < 6:
            out[name] = "too few samples"
            continue
        third = len(values) // 3
        first, last = statistics.median(values[:third]), statistics.median(values[-third:])
        out[name] = "grows" if last - first > GROWTH_TOLERANCE * max(first, 1.0) else "bounded"
    return out


def _drain(stream: Any, path: Path) -> None:
    """Copy the rest of a process's output ``stream`` into the file ``path``."""
    with path.open("a") as out:
        for line in stream:
            out.write(line)
            out.flush()


def _tree_rss_mb(pid: int) -> float:
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total / 2**20


def soak(nodes: int = 100, rate: float = 5.0, minutes: float = 30.0, every: float = 2.0,
         ttl_share: float = 0.2, ttl_s: tuple[float, float] = (30.0, 120.0),
         expire_every: float = 60.0, sample_every: float = 10.0, runtime: str = "local",
         seed: int = 0, lake_dir: str | None = None, drain_minutes: float = 10.0,
         log: Any = None) -> SoakResult:
    """Run the soak; see the module docstring."""
    from aspen.generators.records import link_delete, link_insert
    from aspen.generators.writers import write_jsonl
    from aspen.lake.ingest import ingest_files
    from aspen.lake.lease import request_stop
    from aspen.pipeline import ledger
    from aspen.settings import Settings

    emit = log or (lambda line: print(line, flush=True))
    topo = topology(nodes, 2.0, seed)
    links = list(dict.fromkeys((ln.src, ln.dst, ln.cost) for ln in topo.links))
    rng = random.Random(seed)
    root = Path(lake_dir or tempfile.mkdtemp(prefix="aspen-soak-"))
    settings = Settings(lake=str(root / "lake"))
    aspen = str(Path(sys.executable).parent / "aspen")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    counter = 0

    def ingest(records: list[dict[str, Any]]) -> int:
        nonlocal counter
        counter += 1
        path = root / "inbox" / f"churn-{counter:05d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(records, str(path))
        return ingest_files(settings, [path]).batch_id

    ingest([link_insert(s, d, c) for s, d, c in links])
    subprocess.run([aspen, "--lake", settings.lake, "maintain", "--runtime", runtime],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    result = SoakResult(len(topo.node_ids), len(links), rate, minutes)
    follower_log = (root / "follower.err").open("w")
    follower = subprocess.Popen(
        [aspen, "--lake", settings.lake, "maintain", "--runtime", runtime, "--follow",
         "--poll", "1", "--expire-every", str(expire_every), "--housekeep-every", "0"],
        env=env, stdout=subprocess.PIPE, stderr=follower_log, text=True)
    landed: dict[int, float] = {}
    seen_batch = ledger.last_committed(settings).batch_id
    down: set[tuple[str, str]] = set()
    try:
        assert follower.stdout is not None
        for line in follower.stdout:
            if line.startswith("following"):
                break
        # keep reading its per-batch lines: a full pipe would stop the follower mid-write
        threading.Thread(target=_drain, args=(follower.stdout, root / "follower.out"),
                         daemon=True).start()
        started, began = time.perf_counter(), time.time()
        covered_through = ledger.last_committed(settings).through_ingest_batch
        next_sample = 0.0

        def look(sample: bool) -> None:
            """New ledger rows become batches; with ``sample``, a backlog and memory sample."""
            nonlocal seen_batch, covered_through
            now = time.time()
            for row in _ledger_rows(settings, seen_batch):
                fresh = [t for b, t in landed.items() if covered_through < b
                         <= row["through_ingest_batch"]]
                committed = row["committed_at"]
                if fresh:
                    result.batches.append({
                        "at_s": committed - began, "batch": row["batch_id"],
                        "updates_batches": len(fresh),
                        "latency_s": committed - min(fresh),
                        "latency_newest_s": committed - max(fresh)})
                seen_batch = row["batch_id"]
                covered_through = max(covered_through, row["through_ingest_batch"])
                result.committed_batches += 1
            if sample:
                result.samples.append({
                    "at_s": now - began, "rss_mb": _tree_rss_mb(follower.pid),
                    "backlog": float(sum(1 for b in landed if b > covered_through))})

        while time.perf_counter() - started < minutes * 60:
            if follower.poll() is not None:
                raise RuntimeError(f"the follower exited with code {follower.returncode}")
            records = []
            for _ in range(max(1, round(rate * every))):
                src, dst, cost = rng.choice(links)
                if (src, dst) in down:
                    ttl = rng.uniform(*ttl_s) if rng.random() < ttl_share else None
                    records.append(link_insert(src, dst, cost, ttl_s=ttl))
                    down.discard((src, dst))
                else:
                    records.append(link_delete(src, dst))
                    down.add((src, dst))
            tick = time.perf_counter()
            batch = ingest(records)
            landed[batch] = time.time()
            result.ingested_updates += len(records)
            result.ingest_batches += 1
            sample = landed[batch] - began >= next_sample
            look(sample)
            if sample:
                next_sample = landed[batch] - began + sample_every
                last = result.samples[-1]
                emit(f"{last['at_s']:7.0f} s  backlog {last['backlog']:4.0f}  rss "
                     f"{last['rss_mb']:6.0f} MB  batches {result.committed_batches}")
            time.sleep(max(0.0, every - (time.perf_counter() - tick)))
        # the churn stops: how long until the follower has caught up
        stop_at = time.perf_counter()
        final = max(landed)
        while time.perf_counter() - stop_at < drain_minutes * 60:
            if follower.poll() is not None:
                raise RuntimeError(f"the follower exited with code {follower.returncode}")
            look(sample=True)
            if covered_through >= final:
                result.drained_s = time.perf_counter() - stop_at
                break
            time.sleep(1.0)
    except RuntimeError as err:
        tail = (root / "follower.err").read_text(errors="replace").strip().splitlines()[-1:]
        raise RuntimeError(f"{err}: {tail[0] if tail else 'no output'}") from None
    finally:
        request_stop(settings)
        try:
            follower.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            follower.kill()
        follower_log.close()
    return result


def _ledger_rows(settings: Any, after: int) -> list[dict[str, Any]]:
    """The ledger's rows after batch ``after``, oldest first, ``committed_at`` as epoch s."""
    from aspen.lake.deltars import read_table, table_exists

    if not table_exists(settings, "ledger"):
        return []
    frame = read_table(settings, "ledger", ["batch_id", "through_ingest_batch", "committed_at"])
    frame = frame[frame["batch_id"] > after].sort_values("batch_id")
    return [{"batch_id": int(r.batch_id), "through_ingest_batch": int(r.through_ingest_batch),
             "committed_at": r.committed_at.timestamp()} for r in frame.itertuples()]


def write_report(result: SoakResult, out: Path) -> dict[str, Any]:
    """``soak.json``, ``samples.csv``, ``batches.csv`` and (matplotlib) ``soak.png`` in ``out``."""
    import csv

    out.mkdir(parents=True, exist_ok=True)
    summary = result.summary()
    (out / "soak.json").write_text(json.dumps({"summary": summary, "samples": result.samples,
                                               "batches": result.batches}, indent=1))
    for name, rows in (("samples", result.samples), ("batches", result.batches)):
        if rows:
            with (out / f"{name}.csv").open("w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return summary
    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    minutes = [s["at_s"] / 60 for s in result.samples]
    axes[0].plot(minutes, [s["backlog"] for s in result.samples])
    axes[0].set_ylabel("backlog (ingest batches)")
    axes[1].plot([b["at_s"] / 60 for b in result.batches],
                 [b["latency_s"] for b in result.batches], ".")
    axes[1].set_ylabel("batch latency (s)")
    axes[2].plot(minutes, [s["rss_mb"] for s in result.samples])
    axes[2].set_ylabel("follower RSS (MB)")
    axes[2].set_xlabel("minutes of churn")
    fig.suptitle(f"{result.nodes} nodes, {result.rate:g} updates/s")
    fig.tight_layout()
    fig.savefig(out / "soak.png", dpi=100)
    plt.close(fig)
    return summary
