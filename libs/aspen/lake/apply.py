"""Apply the logged updates to the base tables and the variable registry.

Two paths with the same steps and the same rows: a small backlog (at most
:data:`IN_PROCESS_MAX_UPDATES` pending updates) or a call without a Spark session is applied in
this process with pandas and delta-rs (:mod:`aspen.lake.apply_local`, no Spark job); a larger
one on Spark, as below (Delta MERGE).

:func:`apply_pending` takes every committed ingest batch (listed in ``ingest_files``) after the
last applied one (``apply_state``), in ``seq`` order, and makes the base tables follow the log:

1. the **pre-state**: registry instances live as of the last applied batch ``L`` (born at or
   before ``L``, not dead at or before ``L``, not expired), restricted to the keys the pending
   updates touch;
2. the **fold**: each key's updates, in seq order, over its live instances
   (:mod:`aspen.lake.fold`); keys are independent, so this runs distributed, many keys per
   Python call (``repartition(relation, key)``, sorted, ``mapInPandas(fold_sorted)``);
3. MERGE the births and deaths into ``variables`` (on ``var``), each touched base table (insert
   born-and-alive instances, delete killed ones, on ``var``) and ``apply_notes`` (on ``seq``),
   the tables concurrently;
4. append one ``apply_state`` row per applied batch — **last**: it is the commit marker.

Idempotent: the pre-state is computed from batch numbers, not from what a crashed run may have
written after ``L``, variable names are ``v{seq}``, and every MERGE writes the same values again;
so a crash anywhere before step 4, then a rerun, gives the same tables as one clean run.

Expiry is not applied here: an instance stays live in the base tables until the TTL sweep kills it
(it must set ``death = 'expired'`` in the registry; such instances are never live in a pre-state).

>>> ApplyReport(batches=[], updates=0).lines()
['nothing to apply: every ingested batch is applied']
>>> runs_in_process(None, Settings(lake="/nonexistent/lake"))
True
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING

from aspen.engine.batch import BaseFact, Batch
from aspen.lake import tables
from aspen.lake.apply_local import ApplyReport, apply_in_process, pending_updates
from aspen.lake.deltars import data_bytes
from aspen.lake.fold import FOLD_OUTPUT_DDL, fold_sorted
from aspen.settings import Settings
from aspen.spark.checkpoint import checkpointed
from aspen.spark.python_worker import prepare_worker
from aspen.spark.session import sql_conf_for_tables, temporary_conf

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterator

    import pandas as pd
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "IN_PROCESS_MAX_UPDATES",
    "ApplyReport",
    "BatchChanges",
    "apply_pending",
    "fold_changes",
    "fold_input",
    "last_applied_batch",
    "pending_changes",
    "live_instances",
    "runs_in_process",
]

_UPDATE_VALUE_COLUMNS = ("src", "dst", "cost", "id", "x", "y", "region")
#: How many of the registry, base-table and notes MERGEs run at once.
MERGE_THREADS = 4
#: The most pending updates an apply (and a TTL sweep's due instances) runs in process with;
#: more go to Spark when a session is given. In process, the pending updates and the live
#: instances of their keys are frames in this one process: 50,000 updates still apply 5× faster
#: than on Spark (7.6 s against 41.6 s, docs/performance.md), so the limit bounds the driver's
#: memory, not the time; above it Spark spreads the rows over the executors.
IN_PROCESS_MAX_UPDATES = 50_000


@dataclass(frozen=True)
class BatchChanges:
    """The births and deaths of one applied ingest batch (net: born-and-died-here is left out)."""

    batch_id: int
    born: tuple[BaseFact, ...]
    died: tuple[str, ...]

    def to_batch(self) -> Batch:
        """The engine batch for these changes."""
        return Batch(inserts=self.born, deletes=frozenset(self.died))


def last_applied_batch(spark: SparkSession, settings: Settings) -> int:
    """The last ingest batch applied to the base tables (0 when none)."""
    row = tables.read_table(spark, settings, tables.APPLY_STATE).agg({"batch_id": "max"}).first()
    return int(row[0]) if row and row[0] is not None else 0


def _key_column(relation: Column) -> Column:
    from pyspark.sql import functions as F

    expression = None
    for name, key_columns in tables.BASE_KEY_COLUMNS.items():
        as_json = F.to_json(F.array(*[F.col(c) for c in key_columns]))
        expression = (F.when(relation == name, as_json) if expression is None
                      else expression.when(relation == name, as_json))
    assert expression is not None
    return expression


def _pre_state(spark: SparkSession, settings: Settings, last: int) -> DataFrame:
    """Registry instances live as of batch ``last`` (what a clean run would have seen)."""
    from pyspark.sql import functions as F

    registry = tables.read_table(spark, settings, tables.VARIABLES)
    alive = F.col("deleted_batch").isNull() | (
        (F.col("deleted_batch") > last) & F.coalesce(F.col("death") != "expired", F.lit(True))
    )
    return registry.where((F.col("inserted_batch") <= last) & alive)


def _fold_partition_task(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """:func:`~aspen.lake.fold.fold_sorted` as a Spark task runs it (its worker prepared)."""
    prepare_worker()
    return fold_sorted(frames)


def _updates_and_live_instances(updates: DataFrame, state: DataFrame) -> DataFrame:
    """Updates (kind 1) and the live instances of the keys they touch (kind 0), one frame."""
    from pyspark.sql import functions as F

    touched = updates.select("relation", "key").distinct()
    state = state.join(touched, ["relation", "key"], "left_semi")
    nulls = {
        "op": "string", "ttl_s": "double", "event_time": "timestamp", "ingested_at": "timestamp",
        **{c: ("double" if c in ("cost", "x", "y") else "string") for c in _UPDATE_VALUE_COLUMNS},
    }
    state_rows = state.select(
        F.lit(0).alias("kind"), "relation", "key",
        F.col("inserted_seq").alias("seq"), F.col("inserted_batch").alias("batch_id"),
        "var", "values", "inserted_at", "expires_at",
        *[F.lit(None).cast(t).alias(c) for c, t in nulls.items()],
    )
    update_rows = updates.select(
        F.lit(1).alias("kind"), "relation", "key", "seq", "batch_id",
        F.lit(None).cast("string").alias("var"), F.lit(None).cast("string").alias("values"),
        F.lit(None).cast("timestamp").alias("inserted_at"),
        F.lit(None).cast("timestamp").alias("expires_at"),
        *nulls,
    )
    return state_rows.unionByName(update_rows)


def fold_input(spark: SparkSession, settings: Settings, after: int, through: int) -> DataFrame:
    """The fold's input for the ingest batches in (``after``, ``through``]: their updates and the
    instances live after batch ``after`` of the keys they touch, with the ``kind`` column
    :func:`~aspen.lake.fold.fold_key` reads.

    Example, on a lake::

        fold_input(spark, Settings(lake="/tmp/lake"), 0, 1).count()
        # 5
    """
    from pyspark.sql import functions as F

    updates = (
        tables.read_table(spark, settings, tables.UPDATES)
        .where((F.col("batch_id") > after) & (F.col("batch_id") <= through))
        .withColumn("key", _key_column(F.col("relation")))
    )
    return _updates_and_live_instances(updates, _pre_state(spark, settings, after))


def fold_changes(rows: DataFrame) -> DataFrame:
    """The changes of every key in ``rows`` (a :func:`fold_input`), as
    :data:`~aspen.lake.fold.FOLD_OUTPUT_DDL` rows, many keys per Python call: a key's rows go to
    one partition, next to each other, and :func:`~aspen.lake.fold.fold_sorted` folds the
    partition's stream. Not materialized.

    Example, on a lake::

        fold_changes(fold_input(spark, settings, 0, 1)).count()
        # 4
    """
    return (
        rows.repartition("relation", "key")
        .sortWithinPartitions("relation", "key")
        .mapInPandas(_fold_partition_task, FOLD_OUTPUT_DDL)
    )


def _merge_registry(spark: SparkSession, settings: Settings, instances: DataFrame) -> None:
    from delta.tables import DeltaTable

    columns = tables.schema_of(tables.VARIABLES).fieldNames()
    source = instances.select(*columns)
    died = ["deleted_batch", "deleted_seq", "deleted_at", "death"]
    (
        DeltaTable.forPath(spark, settings.table_uri(tables.VARIABLES)).alias("t")
        .merge(source.alias("s"), "t.var = s.var")
        .whenMatchedUpdate(set={c: f"s.{c}" for c in died})
        .whenNotMatchedInsert(values={f"`{c}`": f"s.`{c}`" for c in columns})
        .execute()
    )


def _merge_base(spark: SparkSession, settings: Settings, relation: str,
                instances: DataFrame) -> None:
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    renames = {"batch_id": "inserted_batch", "seq": "inserted_seq"}
    columns = tables.schema_of(relation).fieldNames()
    source = instances.where(F.col("relation") == relation).select(
        *[F.col(renames.get(c, c)).alias(c) for c in columns], "deleted_batch"
    )
    (
        DeltaTable.forPath(spark, settings.table_uri(relation)).alias("t")
        .merge(source.alias("s"), "t.var = s.var")
        .whenMatchedDelete(condition="s.deleted_batch IS NOT NULL")
        .whenNotMatchedInsert(
            condition="s.deleted_batch IS NULL", values={c: f"s.{c}" for c in columns}
        )
        .execute()
    )


def _merge_notes(spark: SparkSession, settings: Settings, notes: DataFrame) -> None:
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    source = notes.select(
        F.col("note_batch").alias("batch_id"), F.col("note_seq").alias("seq"),
        "relation", "key", "note",
    )
    (
        DeltaTable.forPath(spark, settings.table_uri(tables.APPLY_NOTES)).alias("t")
        .merge(source.alias("s"), "t.seq = s.seq")
        .whenNotMatchedInsertAll()
        .execute()
    )


def _session(spark: SparkSession | Callable[[], SparkSession] | None) -> SparkSession:
    """The session ``spark`` is or starts (a function is called only now: when Spark runs)."""
    if spark is None:
        raise ValueError("the Spark path needs a SparkSession")
    return spark() if callable(spark) else spark


def runs_in_process(spark: SparkSession | Callable[[], SparkSession] | None,
                    settings: Settings, in_process: bool | None = None) -> bool:
    """Whether :func:`apply_pending` applies in this process: as ``in_process`` says when
    given, else when there is no session or at most :data:`IN_PROCESS_MAX_UPDATES` updates
    are pending (counted from ``ingest_files`` and ``apply_state``, through delta-rs).

    >>> runs_in_process(None, Settings(lake="/nonexistent/lake"), in_process=False)
    Traceback (most recent call last):
    ...
    ValueError: the Spark path needs a SparkSession
    """
    if in_process is not None:
        if not in_process and spark is None:
            raise ValueError("the Spark path needs a SparkSession")
        return in_process
    return spark is None or pending_updates(settings) <= IN_PROCESS_MAX_UPDATES


def apply_pending(spark: SparkSession | Callable[[], SparkSession] | None, settings: Settings,
                  *, in_process: bool | None = None) -> ApplyReport:
    """Apply every committed, not yet applied ingest batch; see the module docstring.

    ``spark``: a session, a function that returns one (called only if the Spark path runs, so
    a small apply starts no JVM), or None (in process only). ``in_process``: force a path
    (None: :func:`runs_in_process` decides by the pending updates). Both paths return the same
    report and write the same rows.

    On Spark its queries run with the tiny-data SQL conf while the registry, the largest table
    it reads and MERGEs, is small (:func:`aspen.spark.session.sql_conf_for_tables`), then the
    session gets its own conf back.

    It holds the lake's maintainer lease (:mod:`aspen.lake.lease`): the one this thread
    holds already (``maintain``, the TTL sweep), else its own for the call — refused with one
    line while another maintainer or a follower holds it.

    Example, on a lake::

        apply_pending(None, Settings(lake="/tmp/lake")).lines()
        # ['applied batch 1: 5 update(s), 4 instance(s) born, 1 died, 0 note(s)']
    """
    from aspen.lake.lease import MaintainerLease

    with MaintainerLease.reentrant(settings, "aspen apply"):
        if runs_in_process(spark, settings, in_process):
            return apply_in_process(settings)
        session = _session(spark)
        if not tables.table_exists(session, settings, tables.INGEST_FILES):
            return ApplyReport(batches=[], updates=0)
        registry_bytes = data_bytes(settings, tables.VARIABLES)  # the Delta log via delta-rs
        with temporary_conf(session, sql_conf_for_tables(registry_bytes)):
            return _apply_pending(session, settings)


def _apply_pending(spark: SparkSession, settings: Settings) -> ApplyReport:
    from pyspark.sql import functions as F

    if not tables.table_exists(spark, settings, tables.APPLY_STATE):  # a fresh lake
        for name in (tables.VARIABLES, tables.APPLY_NOTES, *tables.BASE_TABLES):
            tables.ensure_table(spark, settings, name)
    last = last_applied_batch(spark, settings)
    per_batch: dict[int, dict[str, int]] = {}
    for row in (
        tables.read_table(spark, settings, tables.INGEST_FILES)
        .where(F.col("batch_id") > last).groupBy("batch_id").agg(F.sum("valid").alias("valid"))
        .collect()
    ):
        per_batch[int(row["batch_id"])] = {
            "updates": int(row["valid"]), "born": 0, "died": 0, "notes": 0
        }
    if not per_batch:
        return ApplyReport(batches=[], updates=0)
    pending = sorted(per_batch)
    changes = checkpointed(fold_changes(fold_input(spark, settings, last, pending[-1])), spark)
    instances = changes.where(F.col("row_kind") == "instance")
    notes = changes.where(F.col("row_kind") == "note")

    summary = (
        changes.groupBy("row_kind", "relation", "inserted_batch", "deleted_batch", "note_batch")
        .count().collect()
    )
    relations: set[str] = set()
    for row in summary:
        if row["row_kind"] == "note":
            per_batch[int(row["note_batch"])]["notes"] += int(row["count"])
            continue
        relations.add(str(row["relation"]))
        if row["inserted_batch"] > last:
            per_batch[int(row["inserted_batch"])]["born"] += int(row["count"])
        if row["deleted_batch"] is not None:
            per_batch[int(row["deleted_batch"])]["died"] += int(row["count"])
    note_rows = (
        notes.orderBy("note_seq").select("note").collect()
        if any(c["notes"] for c in per_batch.values()) else []
    )

    merges: list[Callable[[], None]] = []
    if relations:
        merges.append(partial(_merge_registry, spark, settings, instances))
        merges += [partial(_merge_base, spark, settings, relation, instances)
                   for relation in tables.BASE_TABLES if relation in relations]
    if note_rows:
        merges.append(partial(_merge_notes, spark, settings, notes))
    # one table each: concurrent Spark jobs (a MERGE's cost is mostly latency); the commit
    # marker below is written only once all of them are
    with ThreadPoolExecutor(max_workers=MERGE_THREADS) as pool:
        for done in [pool.submit(merge) for merge in merges]:
            done.result()

    applied_at = datetime.now(UTC)
    state_rows = [
        (b, applied_at, c["updates"], c["born"], c["died"], c["notes"])
        for b, c in sorted(per_batch.items())
    ]
    (
        spark.createDataFrame(state_rows, tables.schema_of(tables.APPLY_STATE))
        .write.format("delta").mode("append").save(settings.table_uri(tables.APPLY_STATE))
    )
    return ApplyReport(
        batches=pending,
        updates=sum(c["updates"] for c in per_batch.values()),
        born=sum(c["born"] for c in per_batch.values()),
        died=sum(c["died"] for c in per_batch.values()),
        notes=[str(r["note"]) for r in note_rows],
    )


def _fact(relation: str, values_json: str, var: str) -> BaseFact:
    layout = tables.BASE_VALUE_COLUMNS[relation]
    decoded = json.loads(values_json)
    values = tuple(
        float(v) if name in ("cost", "x", "y") else str(v)
        for name, v in zip(layout, decoded, strict=True)
    )
    return BaseFact(relation, values, var)


def _var_number(var: str) -> int:
    digits = var.lstrip("v")
    return int(digits) if digits.isdigit() else 0


def pending_changes(
    spark: SparkSession, settings: Settings, after_batch: int, through_batch: int | None = None
) -> list[BatchChanges]:
    """Births and deaths of the applied batches in (``after_batch``, ``through_batch``], per batch.

    ``through_batch`` defaults to the last applied batch. An instance born and killed in the
    same batch appears in neither list. Deaths by expiry are included under their
    ``deleted_batch``. Collects to the driver (control-size data).

    Example, on a lake::

        [c.batch_id for c in pending_changes(spark, settings, after_batch=0)]
        # [1, 2]
    """
    from pyspark.sql import functions as F

    through = last_applied_batch(spark, settings) if through_batch is None else through_batch
    if through <= after_batch:
        return []
    registry = tables.read_table(spark, settings, tables.VARIABLES)
    in_window = (F.col("inserted_batch") > after_batch) & (F.col("inserted_batch") <= through)
    died_in_window = (F.col("deleted_batch") > after_batch) & (F.col("deleted_batch") <= through)
    rows = (
        registry.where(in_window | died_in_window)
        .select("var", "relation", "values", "inserted_batch", "deleted_batch")
        .collect()
    )
    born: dict[int, list[tuple[int, BaseFact]]] = {}
    died: dict[int, list[tuple[int, str]]] = {}
    for row in rows:
        ib, db = row["inserted_batch"], row["deleted_batch"]
        same_batch = db is not None and db == ib
        if after_batch < ib <= through and not same_batch:
            fact = _fact(row["relation"], row["values"], row["var"])
            born.setdefault(int(ib), []).append((_var_number(row["var"]), fact))
        if db is not None and after_batch < db <= through and not same_batch:
            died.setdefault(int(db), []).append((_var_number(row["var"]), row["var"]))
    out = []
    for batch_id in sorted(set(born) | set(died)):
        out.append(BatchChanges(
            batch_id,
            tuple(f for _, f in sorted(born.get(batch_id, []), key=lambda p: p[0])),
            tuple(v for _, v in sorted(died.get(batch_id, []))),
        ))
    return out


def live_instances(
    spark: SparkSession, settings: Settings, as_of_batch: int | None = None
) -> list[BaseFact]:
    """Every instance live after ``as_of_batch`` (default: the last applied), in seq order.

    Example, on a lake::

        live_instances(spark, settings)
        # [BaseFact(relation='link', values=('a', 'b', 1.0), var='v1')]
    """
    from pyspark.sql import functions as F

    through = last_applied_batch(spark, settings) if as_of_batch is None else as_of_batch
    rows = (
        tables.read_table(spark, settings, tables.VARIABLES)
        .where((F.col("inserted_batch") <= through)
               & (F.col("deleted_batch").isNull() | (F.col("deleted_batch") > through)))
        .select("var", "relation", "values", "inserted_seq")
        .orderBy("inserted_seq")
        .collect()
    )
    return [_fact(r["relation"], r["values"], r["var"]) for r in rows]
