"""The TTL sweep: live instances whose ``expires_at`` has passed die, as a batch of their own.

An expiry is a deletion of one insertion instance (design.md decisions 1 and 4): the sweep gives
the due instances a new ingest batch number ``B`` and then takes the path every deletion takes —
the base tables lose the instances, the registry records the death (``deleted_batch = B``,
``death = 'expired'``, ``deleted_at`` = the expiry time) and the next ``maintain`` (local or Spark)
restricts their variables to false.

Steps, each safe to rerun after a crash:

1. apply every logged batch first (the sweep must not overtake an unapplied batch);
2. append the ``ingest_files`` row of batch ``B`` (no records): ``B`` is allocated;
3. delete the due instances from the base tables (MERGE on ``var``);
4. record their deaths in ``variables`` (MERGE on ``var``, only rows still live);
5. append the ``apply_state`` row of ``B``: the commit marker.

A crash after 2 leaves ``B`` unapplied: the next apply marks it applied (it has no records) and
the rerun sweeps the same instances under ``B + 1``; one after 3 leaves them live in the registry
only, so the rerun finds them due again. The sweep and ingest must not run at the same time
(the Airflow DAGs share a pool).

>>> ExpireReport(batch_id=None, expired=0, now="2026-01-01T00:00:00+00:00").lines()
['nothing expired as of 2026-01-01T00:00:00+00:00']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aspen.lake import tables
from aspen.settings import Settings
from aspen.spark.checkpoint import checkpointed

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["ExpireReport", "expire_due"]


@dataclass
class ExpireReport:
    """What one sweep did."""

    batch_id: int | None
    expired: int
    now: str
    per_relation: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """Human-readable summary lines."""
        if not self.expired:
            return [f"nothing expired as of {self.now}"]
        detail = ", ".join(f"{n} {rel}" for rel, n in sorted(self.per_relation.items()))
        return [f"batch {self.batch_id}: {self.expired} instance(s) expired as of {self.now} "
                f"({detail}); run `aspen maintain` to update the views"]


def expire_due(spark: SparkSession, settings: Settings, now: datetime | None = None
               ) -> ExpireReport:
    """Kill every live instance whose TTL has passed at ``now`` (default: the current time)."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from aspen.lake.apply import apply_pending

    now = (now or datetime.now(UTC)).astimezone(UTC)
    stamp = now.isoformat()
    apply_pending(spark, settings)
    if not tables.table_exists(spark, settings, tables.VARIABLES):
        return ExpireReport(None, 0, stamp)
    due = checkpointed(
        tables.read_table(spark, settings, tables.VARIABLES)
        .where(F.col("deleted_batch").isNull() & F.col("expires_at").isNotNull()
               & (F.col("expires_at") <= F.lit(now)))
        .select("var", "relation", "expires_at"), spark)
    per_relation = {r["relation"]: int(r["count"]) for r in due.groupBy("relation").count().collect()}
    if not per_relation:
        return ExpireReport(None, 0, stamp)

    files = tables.read_table(spark, settings, tables.INGEST_FILES).agg(
        F.max("batch_id").alias("batch"), F.max("seq_end").alias("seq")).first()
    batch_id = int(files["batch"] or 0) + 1
    last_seq = int(files["seq"] or 0)
    _append(spark, settings, tables.INGEST_FILES, [(
        f"expire@{stamp}", "", None, batch_id, last_seq + 1, last_seq, 0, 0, 0, now)])
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
    expired = sum(per_relation.values())
    _append(spark, settings, tables.APPLY_STATE, [(batch_id, now, 0, 0, expired, 0)])
    return ExpireReport(batch_id, expired, stamp, per_relation)


def _append(spark: SparkSession, settings: Settings, name: str, rows: list[tuple]) -> None:
    frame = spark.createDataFrame(rows, tables.schema_of(name))
    frame.write.format("delta").mode("append").save(settings.table_uri(name))
