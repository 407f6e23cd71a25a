"""Aspen's incremental maintenance against peers that recompute ``reachable`` from scratch.

The workload is one run of batches on a transit-stub topology: batch 0 inserts every link, then
single-link updates alternate between deleting a link (both directions) and inserting it back.
After each batch Aspen applies it incrementally (:class:`LocalRuntime`, lazy mode), then every
peer recomputes the view from the live links, and its result is checked against Aspen's view.
After the build Aspen indexes its provenance for deletions (reported as ``index_s``, apart
from the build; otherwise the first deletion would pay it, see
:meth:`LocalRuntime.index_provenance`). The peers:

* ``networkx`` — :func:`networkx.transitive_closure` (self pairs for nodes on a cycle);
* ``duckdb`` — ``WITH RECURSIVE … UNION`` (set semantics: the fixpoint terminates on cycles);
* ``spark_df`` — a semi-naive loop of Spark DataFrame joins (delta ⋈ link, minus the total);
* ``spark_sql`` — Spark SQL ``WITH RECURSIVE``. Limits of Spark 4.1: only ``UNION ALL`` in a
  recursive CTE (``UNION`` is rejected), so cycles never exhaust; the recursion is therefore
  bounded by hop count (walks of at most n−1 links, deduplicated per level), with
  ``MAX RECURSION LEVEL`` and ``spark.sql.cteRecursionRowLimit`` raised to fit.

Spark peers start a SparkSession (:func:`aspen.spark.session.get_spark`) and are slow per batch,
so a peer named in ``peer_batches`` recomputes only on that many first batches.

>>> r = compare(tiny=True, updates=2, peers=("networkx", "duckdb"))
>>> r["all_equal"], sorted(r["peers"])
(True, ['aspen', 'duckdb', 'networkx'])
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import networkx as nx

from aspen.bench.common import FactStream, make_scheme, timed, topology, write_partial
from aspen.generators.records import Record, link_delete, link_insert
from aspen.generators.workloads import link_inserts

__all__ = ["PEERS", "compare", "duckdb_reachable", "networkx_reachable", "spark_df_closure",
           "update_batches"]

Pairs = set[tuple[str, str]]
PEERS = ("networkx", "duckdb", "spark_df", "spark_sql")


def networkx_reachable(links: Sequence[tuple[str, str]]) -> Pairs:
    """``reachable`` by networkx's transitive closure.

    >>> sorted(networkx_reachable([("a", "b"), ("b", "a")]))
    [('a', 'a'), ('a', 'b'), ('b', 'a'), ('b', 'b')]
    """
    closure = nx.transitive_closure(nx.DiGraph(links), reflexive=False)
    return set(closure.edges())


_DUCK_SQL = ("WITH RECURSIVE r(src, dst) AS (SELECT src, dst FROM link UNION "
             "SELECT l.src, r.dst FROM link l JOIN r ON l.dst = r.src) SELECT src, dst FROM r")


def duckdb_reachable(links: Sequence[tuple[str, str]], con: Any = None) -> Pairs:
    """``reachable`` by a DuckDB recursive CTE (links loaded into a fresh table each time).

    >>> sorted(duckdb_reachable([("a", "b"), ("b", "c")]))
    [('a', 'b'), ('a', 'c'), ('b', 'c')]
    """
    import duckdb
    import pandas as pd

    con = con or duckdb.connect()
    frame = pd.DataFrame(list(links), columns=["src", "dst"], dtype=object)
    con.register("link_frame", frame)
    con.execute("CREATE OR REPLACE TABLE link AS SELECT src::VARCHAR AS src, "
                "dst::VARCHAR AS dst FROM link_frame")
    con.unregister("link_frame")
    return set(con.execute(_DUCK_SQL).fetchall())


def spark_df_closure(links: Any) -> Any:
    """The transitive closure of a ``src, dst`` DataFrame as a DataFrame (checkpointed), by a
    semi-naive loop: delta(z,y) ⋈ link(x,z) → (x,y), minus what is known.

    >>> sorted(spark_df_closure(spark.createDataFrame([("a", "b"), ("b", "c")],
    ...     "src string, dst string")).collect())
    [Row(src='a', dst='b'), Row(src='a', dst='c'), Row(src='b', dst='c')]
    """
    from pyspark.sql import functions as F

    link = links.select("src", "dst").distinct().localCheckpoint()
    total = link
    delta = total
    while True:
        step = (link.alias("l").join(delta.alias("d"), F.col("l.dst") == F.col("d.src"))
                .select(F.col("l.src").alias("src"), F.col("d.dst").alias("dst")).distinct())
        delta = step.subtract(total).localCheckpoint()
        if delta.isEmpty():
            return total
        total = total.union(delta).localCheckpoint()


def _spark_df_reachable(spark: Any, links: Sequence[tuple[str, str]]) -> Pairs:
    """:func:`spark_df_closure` of ``links``, collected."""
    closure = spark_df_closure(spark.createDataFrame(list(links), "src string, dst string"))
    return {(r[0], r[1]) for r in closure.collect()}


def _spark_sql_reachable(spark: Any, links: Sequence[tuple[str, str]]) -> Pairs:
    """Hop-bounded ``WITH RECURSIVE … UNION ALL`` (Spark 4.1 rejects UNION in recursion)."""
    nodes = {n for link in links for n in link}
    bound = max(len(nodes) - 1, 1)
    spark.createDataFrame(list(links), "src string, dst string").createOrReplaceTempView("link")
    spark.conf.set("spark.sql.cteRecursionRowLimit", str(max(len(nodes) ** 3, 10**6)))
    query = (f"WITH RECURSIVE r(src, dst, hops) MAX RECURSION LEVEL {bound + 1} AS ("
             "SELECT src, dst, 1 FROM link UNION ALL "
             "SELECT DISTINCT l.src, r.dst, r.hops + 1 FROM link l JOIN r ON l.dst = r.src "
             f"WHERE r.hops < {bound}) SELECT DISTINCT src, dst FROM r")
    return {(r[0], r[1]) for r in spark.sql(query).collect()}


def _peer_functions(peers: Sequence[str]) -> dict[str, Callable[[list], Pairs]]:
    funcs: dict[str, Callable[[list], Pairs]] = {}
    if "networkx" in peers:
        funcs["networkx"] = networkx_reachable
    if "duckdb" in peers:
        funcs["duckdb"] = duckdb_reachable
    if {"spark_df", "spark_sql"} & set(peers):
        from aspen.spark.session import get_spark

        spark = get_spark("aspen-bench", {"spark.sql.shuffle.partitions": "2"})
        if "spark_df" in peers:
            funcs["spark_df"] = lambda links: _spark_df_reachable(spark, links)
        if "spark_sql" in peers:
            funcs["spark_sql"] = lambda links: _spark_sql_reachable(spark, links)
    return funcs


def update_batches(topo: Any, updates: int, seed: int = 0) -> list[list[Record]]:
    """Batch 0 inserts every link; then delete a random link (both directions), insert it back,
    and so on: ``updates`` single-link batches."""
    links = topo.undirected()
    random.Random(seed).shuffle(links)
    batches: list[list[Record]] = [link_inserts(topo, seed=seed)]
    for i in range(updates):
        a, b, cost = links[(i // 2) % len(links)]
        if i % 2 == 0:
            batches.append([link_delete(a, b), link_delete(b, a)])
        else:
            batches.append([link_insert(a, b, cost), link_insert(b, a, cost)])
    return batches


def _summary(rows: list[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """Per scheme: build time, number and mean time of the update batches, agreement."""
    summary: dict[str, Any] = {}
    for name in ["aspen", *names]:
        upd = [r[f"{name}_s"] for r in rows[1:] if f"{name}_s" in r]
        summary[name] = {"build_s": rows[0].get(f"{name}_s") if rows else None,
                         "update_batches": len(upd),
                         "mean_update_s": statistics.mean(upd) if upd else None}
        if name == "aspen" and rows and "aspen_index_s" in rows[0]:
            summary[name]["index_s"] = rows[0]["aspen_index_s"]
        if name != "aspen":
            checked = [r[f"{name}_equal"] for r in rows if f"{name}_equal" in r]
            summary[name] |= {"all_equal": all(checked), "checked_batches": len(checked)}
    return summary


def compare(nodes: int = 100, degree: float = 2.4, partitions: int = 12, tiny: bool = False,
            updates: int = 10, peers: Sequence[str] = PEERS,
            peer_batches: dict[str, int] | None = None, seed: int = 0) -> dict[str, Any]:
    """Per batch: each peer's recompute time, Aspen's incremental time, and whether they agree.

    The peers run first on each batch, so that a run cut off while Aspen builds still reports
    them (:func:`aspen.bench.common.write_partial`)."""
    topo = topology(nodes, degree, seed, tiny)
    limits = {"spark_df": 3, "spark_sql": 1} if peer_batches is None else peer_batches
    setup_s, funcs = timed(lambda: _peer_functions(peers))
    head = {"nodes": len(topo.node_ids), "link_tuples": len(topo.links), "updates": updates,
            "spark_setup_s": setup_s if {"spark_df", "spark_sql"} & set(funcs) else None}
    stream = FactStream()
    runtime = make_scheme("absorption-lazy", partitions)
    rows: list[dict[str, Any]] = []
    for index, records in enumerate(update_batches(topo, updates, seed)):
        batch = stream.batch(records)
        links = stream.links()
        row: dict[str, Any] = {"batch": index}
        results: dict[str, Pairs] = {}
        for name, func in funcs.items():
            if index < limits.get(name, index + 1):
                row[f"{name}_s"], results[name] = timed(func, links)
        write_partial(head | {"batches": [*rows, row], "peers": _summary([*rows, row], funcs)})
        aspen_s, deltas = timed(runtime.apply, batch)
        if index == 0:  # the deletion index, built once here rather than by the first deletion
            row["aspen_index_s"], _ = timed(runtime.index_provenance)
        view = set(runtime.view("reachable"))
        changed = len(deltas["reachable"].inserted) + len(deltas["reachable"].deleted)
        row |= {"aspen_s": aspen_s, "view_tuples": len(view), "view_changed": changed}
        row |= {f"{name}_equal": result == view for name, result in results.items()}
        rows.append(row)
    summary = _summary(rows, funcs)
    return head | {"batches": rows, "peers": summary,
                   "all_equal": all(v.get("all_equal", True) for v in summary.values())}
