"""The Spark runtime's cost per batch, against DRed and a Spark recompute, on one topology
and partition count.

:func:`maintain_batches` builds a real Delta lake in a temporary folder, ingests every link,
maintains ``reachable`` with ``maintain_spark`` (the production path: rounds as Spark jobs, state
and view MERGEd into Delta, ledger), then, for each batch size, ingests that many link deletions
and maintains, then inserts the same links back and maintains. Per batch it reads the ``metrics``
table the job wrote (wall time, phases, rounds, Spark jobs, rows and bytes shipped over the real
shuffles) and runs, on the same updates:

* DRed on the same partitions, in process (:class:`~aspen.baselines.dred.DRedRuntime`; its
  messages are what it would ship between nodes; it has no Spark implementation);
* a from-scratch recompute of ``reachable`` with Spark (the semi-naive DataFrame loop of
  :mod:`aspen.bench.peers`), after the same updates, two ways: ``recompute_s``, the fixpoint of
  the live links given as a Python list, collected to the driver (no lake); and
  ``recompute_lake_s``, the job a recompute would really be (:func:`recompute_from_lake`): the
  updates applied to the base tables (the batch's own ``apply_seconds``: both need it), the
  links read from Delta, the closure written to a Delta table. Neither computes provenance.

``reachable`` only, because it is the view DRed maintains; the deletions and insertions are
link tuples drawn with ``seed``. Progress goes to :func:`~aspen.bench.common.write_partial`, so a
run cut off by the bench worker still reports the batches it finished.

Example, on a lake::

    maintain_batches(nodes=100, partitions=4, sizes=(1,))
    # {'nodes': 100, 'partitions': 4, 'build': {...}, 'batches': [...]}
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from aspen.bench.common import timed, topology, write_partial
from aspen.generators.writers import write_jsonl

__all__ = ["maintain_batches", "recompute_from_lake"]

RECOMPUTED = "reachable_recomputed"

VIEW = "reachable"
#: Per-node counters of the Spark runtime summed over the nodes of a batch (``nodes_…``).
NODE_SUMS = ("time_s", "decode_s", "decodes", "replayed", "dumps", "publish_dumps",
             "publish_restores")


def _metrics(settings: Any, batch_id: int) -> dict[str, float]:
    from aspen.lake.deltars import read_table

    frame = read_table(settings, "metrics")
    batch = frame[frame["batch_id"] == batch_id]
    totals = batch[batch["node"] == -1]
    out = {str(k): float(v) for k, v in zip(totals["metric"], totals["value"], strict=True)}
    per_node = batch[(batch["node"] >= 0) & batch["metric"].isin(NODE_SUMS)]
    for name, value in per_node.groupby("metric")["value"].sum().items():
        out[f"nodes_{name}"] = float(value)  # summed over the nodes: where the task time went
    return out


def _pairs(settings: Any, table: str) -> set[tuple[str, str]]:
    """The ``(src, dst)`` rows of a Delta table (delta-rs, two columns)."""
    from aspen.catalog import VIEWS
    from aspen.lake.committed import read_committed
    from aspen.lake.deltars import read_table

    frame = (read_committed(settings, table, ["src", "dst"]) if table in VIEWS
             else read_table(settings, table, columns=["src", "dst"]))
    return set(zip(frame["src"], frame["dst"], strict=True))


def recompute_from_lake(spark: Any, settings: Any, apply: bool = True) -> int:
    """Recompute ``reachable`` from scratch as a job on the lake would: apply the ingested
    updates (unless ``apply`` is False: already done), read the live links from the ``link``
    base table, compute their closure (:func:`~aspen.bench.peers.spark_df_closure`) and
    overwrite the Delta table ``reachable_recomputed`` with it; returns its rows. No provenance.

    Example, on a lake::

        recompute_from_lake(spark, Settings(lake="/tmp/lake"))
        # 1000000
    """
    from aspen.bench.peers import spark_df_closure
    from aspen.lake import tables
    from aspen.lake.apply import apply_pending
    from aspen.lake.deltars import row_count

    if apply:
        apply_pending(spark, settings)
    closure = spark_df_closure(tables.read_table(spark, settings, "link"))
    closure.write.format("delta").mode("overwrite").option("overwriteSchema", "true") \
        .save(settings.table_uri(RECOMPUTED))
    return row_count(settings, RECOMPUTED)  # from the Delta log, as the maintained view's


def maintain_batches(nodes: int = 100, degree: float = 2.4, partitions: int = 4,
                     sizes: tuple[int, ...] = (1, 10, 100), seed: int = 0,
                     recompute: bool = True, hosts: int | None = None, tiny: bool = False,
                     spark: Any = None) -> dict[str, Any]:
    """Per batch (deletions, then the same links inserted back): the Spark runtime's metrics,
    DRed's messages and time, and a Spark recompute's time; see the module docstring. ``hosts``:
    the Spark tasks a round runs the nodes on (``maintain_spark``; None: its default, a host
    per task slot; each batch's row records the hosts it ran on). ``tiny``: the 22-node
    topology instead of ``nodes`` (tests). ``spark``: a session to use (default: one started
    for the run, and stopped after it)."""
    from aspen.baselines.dred import DRedRuntime
    from aspen.bench.peers import _spark_df_reachable
    from aspen.engine.batch import BaseFact, Batch
    from aspen.generators.records import link_delete, link_insert
    from aspen.lake.ingest import ingest_files
    from aspen.pipeline.maintain_spark import maintain_spark
    from aspen.settings import Settings
    from aspen.spark.session import get_spark

    topo = topology(nodes, degree, seed, tiny=tiny)
    links = list(dict.fromkeys((ln.src, ln.dst, ln.cost) for ln in topo.links))
    rng = random.Random(seed)
    # node states of large topologies outgrow Spark's default 1 GB driver heap (local mode)
    memory = os.environ.get("ASPEN_BENCH_DRIVER_MEMORY", "8g")
    own_session = spark is None
    spark_s, spark = timed(get_spark, "aspen-bench-spark-runtime",
                           {"spark.driver.memory": memory}) if own_session else (0.0, spark)
    head: dict[str, Any] = {"nodes": len(topo.node_ids), "link_tuples": len(links),
                            "partitions": partitions, "hosts": hosts or "default",
                            "view": VIEW, "spark_start_s": spark_s,
                            "batches": []}
    dred = DRedRuntime(views=(VIEW,), partitions=partitions)
    live: dict[tuple[str, str], list[str]] = {}  # link → DRed variables of its instances
    counter = 0

    def dred_facts(chosen: list[tuple[str, str, float]]) -> tuple[BaseFact, ...]:
        nonlocal counter
        out = []
        for src, dst, cost in chosen:
            counter += 1
            var = f"d{counter}"
            live.setdefault((src, dst), []).append(var)
            out.append(BaseFact("link", (src, dst, cost), var))
        return tuple(out)

    with tempfile.TemporaryDirectory(prefix="aspen-bench-lake-") as tmp:
        settings = Settings(lake=str(Path(tmp) / "lake"), partitions=partitions)
        inbox = Path(tmp) / "inbox"
        inbox.mkdir()

        def run_batch(label: str, size: int, records: list[dict[str, Any]],
                      batch: Batch) -> dict[str, Any]:
            path = inbox / f"{len(head['batches'])}-{label}.jsonl"
            write_jsonl(records, path)
            started = time.perf_counter()
            ingest_files(settings, [path])
            ingest_s = time.perf_counter() - started
            report = maintain_spark(settings, spark, partitions, "lazy", views=(VIEW,),
                                    hosts=hosts)
            row: dict[str, Any] = {"kind": label, "size": size, "ingest_s": ingest_s,
                                   "view_tuples": report.view_sizes.get(VIEW),
                                   **_metrics(settings, report.batch_id)}
            before = dred.metrics.total().messages
            row["dred_s"], _ = timed(dred.apply, batch)
            row["dred_messages"] = dred.metrics.total().messages - before
            maintained = _pairs(settings, VIEW)  # the tuples, not only their number
            row["dred_equal"] = set(dred.view(VIEW)) == maintained
            if recompute:
                current = [(s, d) for (s, d), vs in live.items() if vs]
                row["recompute_s"], pairs = timed(_spark_df_reachable, spark, current)
                row["recompute_equal"] = pairs == maintained
                lake_s, _ = timed(recompute_from_lake, spark, settings, False)
                row["recompute_lake_s"] = row.get("apply_seconds", 0.0) + lake_s
                row["recompute_lake_equal"] = _pairs(settings, RECOMPUTED) == maintained
            head["batches"].append(row)
            write_partial(head)
            return row

        build = run_batch("build", len(links), [link_insert(s, d, c) for s, d, c in links],
                          Batch(inserts=dred_facts(links)))
        head["build"] = build
        for size in sizes:
            chosen = rng.sample(links, min(size, len(links)))
            dead = frozenset(v for s, d, _c in chosen for v in live.pop((s, d), []))
            run_batch("delete", len(chosen), [link_delete(s, d) for s, d, _c in chosen],
                      Batch(deletes=dead))
            run_batch("insert", len(chosen), [link_insert(s, d, c) for s, d, c in chosen],
                      Batch(inserts=dred_facts(chosen)))
    if own_session:
        spark.stop()
    return head
