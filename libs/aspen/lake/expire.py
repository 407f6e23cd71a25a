"""The TTL sweep: live instances whose ``expires_at`` has passed die, as a batch of their own.

Two paths with the same steps: in this process with pyarrow and delta-rs
(:mod:`aspen.lake.expire_local`, no Spark job) when there is no Spark session or at most
:data:`~aspen.lake.apply.IN_PROCESS_MAX_UPDATES` instances are due, else on Spark (Delta MERGE).

An expiry is a deletion of one insertion instance (decisions 1 and 4, docs/architecture.md):
the sweep gives the due instances a new ingest batch number ``B`` and then takes the path every
deletion takes — the base tables lose the instances, the registry records the death
(``deleted_batch = B``, ``death = 'expired'``, ``deleted_at`` = the expiry time) and the next
``maintain`` (local or Spark) restricts their variables to false.

Steps, each safe to rerun after a crash:

1. apply every logged batch first (the sweep must not overtake an unapplied batch);
2. append the ``ingest_files`` row of batch ``B`` (no records): ``B`` is allocated;
3. delete the due instances from the base tables (MERGE on ``var``);
4. record their deaths in ``variables`` (MERGE on ``var``, only rows still live);
5. append the ``apply_state`` row of ``B``: the commit marker.

A crash after 2 leaves ``B`` unapplied: the next apply marks it applied (it has no records) and
the rerun sweeps the same instances under ``B + 1``; one after 3 leaves them live in the registry
only, so the rerun finds them due again.

Leases: the sweep writes the base tables and the registry, so it holds the **maintainer lease**
throughout (refused at once while ``aspen maintain`` or a follower holds it, as a second
maintainer is; a follower runs the sweep itself, in its own lease); and it hands out a batch
number in ``ingest_files``, so it also holds the **log writer lease** (:mod:`aspen.lake.lease`)
from checking that every logged batch is applied to writing ``B``'s row — not for the apply
itself (unless ingests keep landing) nor for steps 3–5, so an ingest waits for it briefly. If an
ingest landed a batch between the apply and the lease, the sweep applies again first: ``B`` never
overtakes an unapplied batch.

>>> ExpireReport(batch_id=None, expired=0, now="2026-01-01T00:00:00+00:00").lines()
['nothing expired as of 2026-01-01T00:00:00+00:00']
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aspen.errors import LakeError
from aspen.lake import apply as apply_module
from aspen.lake import tables
from aspen.lake.expire_local import (
    _APPLIES_OUTSIDE_THE_LEASE,
    ExpireReport,
    due_instances,
    expire_in_process,
)
from aspen.settings import Settings
from aspen.spark.checkpoint import checkpointed

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    from pyspark.sql import SparkSession

__all__ = ["ExpireReport", "expire_due", "sweeps_in_process"]


def sweeps_in_process(spark: SparkSession | Callable[[], SparkSession] | None,
                      settings: Settings, now: datetime, in_process: bool | None = None) -> bool:
    """Whether :func:`expire_due` sweeps in this process: as ``in_process`` says when given,
    else when there is no session or at most
    :data:`~aspen.lake.apply.IN_PROCESS_MAX_UPDATES` instances are due at ``now`` (read
    through delta-rs; the apply before the sweep picks its own path by its own size).

    >>> sweeps_in_process(None, Settings(lake="/nonexistent/lake"), datetime.now(UTC))
    True
    """
    if in_process is not None:
        if not in_process and spark is None:
            raise ValueError("the Spark path needs a SparkSession")
        return in_process
    return spark is None or (
        len(due_instances(settings, now)) <= apply_module.IN_PROCESS_MAX_UPDATES)


def expire_due(spark: SparkSession | Callable[[], SparkSession] | None, settings: Settings,
               now: datetime | None = None, wait: float | None = None, *,
               in_process: bool | None = None) -> ExpireReport:
    """Kill every live instance whose TTL has passed at ``now`` (default: the current time);
    ``wait``: seconds to wait for the log writer lease (default
    :data:`~aspen.lake.lease.LOG_WAIT_SECONDS`). See the module docstring.

    ``spark``: a session, a function that returns one (called only if Spark runs), or None
    (in process only); ``in_process``: force a path for the sweep and its apply (None:
    :func:`sweeps_in_process` decides). Both paths return the same report.

    Example, on a lake::

        expire_due(None, Settings(lake="/tmp/lake")).lines()
        # ['nothing expired as of 2026-01-01T00:00:00+00:00']
    """
    from aspen.lake.lease import LOG_WAIT_SECONDS, LogWriterLease, MaintainerLease

    now = (now or datetime.now(UTC)).astimezone(UTC)
    if sweeps_in_process(spark, settings, now, in_process):
        return expire_in_process(settings, now, wait, apply=lambda: apply_module.apply_pending(
            spark, settings, in_process=in_process))
    from pyspark.sql import functions as F

    spark = apply_module._session(spark)
    stamp = now.isoformat()
    wait = LOG_WAIT_SECONDS if wait is None else wait

    def apply_pending() -> None:
        apply_module.apply_pending(spark, settings, in_process=in_process)

    with MaintainerLease.reentrant(settings, "aspen expire"):
        for attempt in range(_APPLIES_OUTSIDE_THE_LEASE + 1):
            last_try = attempt == _APPLIES_OUTSIDE_THE_LEASE
            if not last_try:
                apply_pending()
            with LogWriterLease.reentrant(settings, "aspen expire", wait=wait) as log:
                if last_try:
                    apply_pending()
                files = tables.read_table(spark, settings, tables.INGEST_FILES).agg(
                    F.max("batch_id").alias("batch"), F.max("seq_end").alias("seq")).first()
                logged, last_seq = int(files["batch"] or 0), int(files["seq"] or 0)
                if apply_module.last_applied_batch(spark, settings) < logged:
                    continue  # an ingest landed a batch since the apply: apply it first
                if not tables.table_exists(spark, settings, tables.VARIABLES):
                    return ExpireReport(None, 0, stamp)
                due = checkpointed(
                    tables.read_table(spark, settings, tables.VARIABLES)
                    .where(F.col("deleted_batch").isNull() & F.col("expires_at").isNotNull()
                           & (F.col("expires_at") <= F.lit(now)))
                    .select("var", "relation", "expires_at"), spark)
                per_relation = {r["relation"]: int(r["count"])
                                for r in due.groupBy("relation").count().collect()}
                if not per_relation:
                    return ExpireReport(None, 0, stamp)
                batch_id = logged + 1
                log.check()
                _append(spark, settings, tables.INGEST_FILES, [(
                    f"expire@{stamp}", "", None, batch_id, last_seq + 1, last_seq, 0, 0, 0, now)])
                break
        else:  # pragma: no cover - the last attempt applies holding the lease: it catches up
            raise LakeError("the TTL sweep could not catch up with the update log")
        _kill(spark, settings, due, per_relation, batch_id)
        expired = sum(per_relation.values())
        _append(spark, settings, tables.APPLY_STATE, [(batch_id, now, 0, 0, expired, 0)])
    return ExpireReport(batch_id, expired, stamp, per_relation)


def _kill(spark: SparkSession, settings: Settings, due, per_relation: dict[str, int],
          batch_id: int) -> None:
    """Steps 3 and 4: the due instances leave the base tables and die in the registry."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    for relation in per_relation:
        (DeltaTable.forPath(spark, settings.table_uri(relation)).alias("t")
         .merge(due.where(F.col("relation") == relation).alias("s"), "t.var = s.var")
         .whenMatchedDelete().execute())
    deaths = due.select("var", F.lit(batch_id).cast("long").alias("deleted_batch"),
                        F.col("expires_at").alias("deleted_at"))
    (DeltaTable.forPath(spark, settings.table_uri(tables.VARIABLES)).alias("t")
     .merge(deaths.alias("s"), "t.var = s.var AND t.deleted_batch IS NULL")
     .whenMatchedUpdate(set={"deleted_batch": "s.deleted_batch", "deleted_at": "s.deleted_at",
                             "death": "'expired'"})
     .execute())


def _append(spark: SparkSession, settings: Settings, name: str, rows: list[tuple]) -> None:
    frame = spark.createDataFrame(rows, tables.schema_of(name))
    frame.write.format("delta").mode("append").save(settings.table_uri(name))
