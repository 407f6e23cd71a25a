"""A base table as a continuous query reads it: one row per live tuple, not per instance.

A base table (``link``, ``sensor``, ``triggered``, ``region_seed``) stores one row per live
*insertion instance* (decision 4: a renewal is a second instance of the same key). A query sees
one row per live key: the tuple's values, then its bookkeeping over its live instances
(:data:`BOOKKEEPING`):

- ``instances`` — how many live instances the tuple has (1 + its live renewals);
- ``first_inserted_at`` / ``last_inserted_at`` — the earliest and latest insertion times;
- ``expires_at`` — the latest expiry, NULL when any live instance has no TTL: the tuple lives
  until its last instance dies, so a renewal *with* a TTL of a tuple inserted *without* one
  leaves it never expiring;
- ``first_batch_id`` / ``last_batch_id`` — the ingest batches of the earliest and latest
  instances' records.

All live instances of a key carry the same values (an insert with other values replaces them,
:mod:`aspen.lake.fold`); the values are taken from the instance of the highest ``seq`` all the
same, so one row per key holds even for a table written otherwise. A stored column a table lacks
(a table written by hand) counts as NULL. :func:`tuples_spark` builds the frame on Spark (what a
query run and its statistics read), :func:`tuples_pandas` the same rows in pandas.

>>> import pandas as pd
>>> stored = pd.DataFrame({"src": ["a", "a"], "dst": ["b", "b"], "cost": [2.0, 2.0],
...                        "seq": [1, 7], "batch_id": [1, 3],
...                        "inserted_at": pd.to_datetime(["2026-01-01", "2026-01-02"]),
...                        "expires_at": pd.to_datetime(["2026-01-01 00:10", None])})
>>> row = tuples_pandas("link", stored).iloc[0]
>>> int(row["instances"]), int(row["last_batch_id"]), row["expires_at"] is pd.NaT
(2, 3, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from aspen.lake.tables import BASE_KEY_COLUMNS, BASE_TABLES, BASE_VALUE_COLUMNS

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["BOOKKEEPING", "is_base_table", "tuple_columns", "tuples_pandas", "tuples_spark"]

#: The per-tuple bookkeeping columns after a base tuple's values, with their Spark SQL types.
BOOKKEEPING: tuple[tuple[str, str], ...] = (
    ("instances", "BIGINT"),
    ("first_inserted_at", "TIMESTAMP"),
    ("last_inserted_at", "TIMESTAMP"),
    ("expires_at", "TIMESTAMP"),
    ("first_batch_id", "BIGINT"),
    ("last_batch_id", "BIGINT"),
)
#: The instance columns the bookkeeping is aggregated from, with their Spark SQL types.
_INSTANCE_TYPES = {"seq": "BIGINT", "batch_id": "BIGINT", "inserted_at": "TIMESTAMP",
                   "expires_at": "TIMESTAMP"}


def is_base_table(table: str) -> bool:
    """Whether ``table`` is a base table (read per tuple).

    >>> is_base_table("link"), is_base_table("reachable")
    (True, False)
    """
    return table in BASE_TABLES


def tuple_columns(table: str) -> tuple[str, ...]:
    """The columns of base table ``table`` as a query reads it: its values, then the
    bookkeeping.

    >>> tuple_columns("triggered")
    ('id', 'instances', 'first_inserted_at', 'last_inserted_at', 'expires_at', \
'first_batch_id', 'last_batch_id')
    """
    return (*BASE_VALUE_COLUMNS[table], *(name for name, _ in BOOKKEEPING))


def tuples_spark(table: str, instances: DataFrame) -> DataFrame:
    """The live tuples of base table ``table`` from its stored rows ``instances`` (one Spark
    aggregation by key; see the module docstring)."""
    from pyspark.sql import functions as F

    present = set(instances.columns)

    def column(name: str, kind: str):
        return F.col(f"`{name}`") if name in present else F.lit(None).cast(kind)

    keys = BASE_KEY_COLUMNS[table]
    others = [c for c in BASE_VALUE_COLUMNS[table] if c not in keys]
    order = F.coalesce(column("seq", "BIGINT"), F.lit(-1))
    aggregates = [
        F.count(F.lit(1)).alias("instances"),
        F.min(column("inserted_at", "TIMESTAMP")).alias("first_inserted_at"),
        F.max(column("inserted_at", "TIMESTAMP")).alias("last_inserted_at"),
        # count(expires_at) skips NULLs: any instance without a TTL makes the tuple's NULL
        F.when(F.count(column("expires_at", "TIMESTAMP")) == F.count(F.lit(1)),
               F.max(column("expires_at", "TIMESTAMP"))).alias("expires_at"),
        F.min(column("batch_id", "BIGINT")).alias("first_batch_id"),
        F.max(column("batch_id", "BIGINT")).alias("last_batch_id"),
    ]
    if others:
        latest = F.struct(*(column(c, "STRING").alias(c) for c in others))
        aggregates.append(F.max_by(latest, order).alias("_latest"))
    grouped = instances.groupBy(*(F.col(f"`{k}`") for k in keys)).agg(*aggregates)
    return grouped.select(
        *(F.col(f"`{c}`") if c in keys else F.col(f"_latest.`{c}`").alias(c)
          for c in BASE_VALUE_COLUMNS[table]),
        *(F.col(name) for name, _ in BOOKKEEPING))


def tuples_pandas(table: str, instances: pd.DataFrame) -> pd.DataFrame:
    """:func:`tuples_spark` over a pandas frame of stored rows (rows in key order)."""
    keys = list(BASE_KEY_COLUMNS[table])
    frame = instances.copy()
    for name, kind in _INSTANCE_TYPES.items():
        if name not in frame:
            frame[name] = pd.Series([pd.NaT if kind == "TIMESTAMP" else None] * len(frame),
                                    dtype="datetime64[us]" if kind == "TIMESTAMP" else "Int64")
    frame["_order"] = pd.to_numeric(frame["seq"]).fillna(-1)
    frame = frame.sort_values([*keys, "_order"], kind="stable")
    out = []
    for _, group in frame.groupby(keys, dropna=False, sort=True):
        latest = group.iloc[-1]
        expiries = group["expires_at"]
        row = {c: latest[c] for c in BASE_VALUE_COLUMNS[table]}
        row.update(
            instances=len(group),
            first_inserted_at=group["inserted_at"].min(),
            last_inserted_at=group["inserted_at"].max(),
            expires_at=expiries.max() if expiries.notna().all() else pd.NaT,
            first_batch_id=group["batch_id"].min(),
            last_batch_id=group["batch_id"].max(),
        )
        out.append(row)
    return pd.DataFrame(out, columns=list(tuple_columns(table)))
