"""Statistics of a query's tables, from the lake, as the optimizer's
:class:`~aspen.optimizer.stats.Stats`.

Per table (each at the Delta version it is read at, see :func:`table_versions`), over the
relation as a query reads it (:func:`read_relation`: a base table one row per live tuple, a
view its committed rows):

- one small Spark aggregation gives its ``rows`` (for a base table the live keys, not the
  stored instances), the distinct values of the join columns (``approx_count_distinct``), the
  rows each filter of the query keeps (a filter's selectivity: that count over the rows), and
  the average bytes of the string columns read (the row ``width`` of what the run ships: 8
  bytes per number, the average length + 4 per string);
- per stored column the query reads, its ``min``/``max`` from the Delta log's file statistics
  where every file has them (no data file is read; shown with the plan, the cost model does
  not use them) — for a base table only its value columns, whose range is the same over
  instances and tuples; the log's own row count (``numRecords``, instances) is kept as
  ``log_rows``;
- the join predicates' selectivities observed by the query's last run (``query_runs``): a
  join's output rows over the product of its two inputs' rows; a join of several predicates
  gives each the same share (the k-th root). Without a run, the cost model's ``1 / max(ndv)``.

The document (:attr:`LakeStats.document`) is S.json plus ``min``/``max`` per column,
``log_rows`` per table, ``versions`` and ``observed_run``; ``Stats.from_json`` reads it as it is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aspen.lake.tables import BASE_VALUE_COLUMNS
from aspen.optimizer.stats import Stats
from aspen.queries.runs import last_run
from aspen.queries.spec import ParsedQuery
from aspen.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LakeStats", "lake_stats", "observed_selectivities", "read_relation",
           "table_versions"]

#: Bytes a fixed-width value takes, and a string's overhead beside its characters.
_FIXED_BYTES, _STRING_OVERHEAD, _OTHER_BYTES = 8.0, 4.0, 16.0


@dataclass(frozen=True)
class LakeStats:
    """The optimizer's statistics and the document they were read from."""

    stats: Stats
    document: dict[str, Any]


def table_versions(settings: Settings, tables: tuple[str, ...]) -> dict[str, int]:
    """The current Delta version of each table (a statistics pass and a run read the tables at
    these versions, so both see the same rows); TableMissingError for a missing one."""
    from aspen.lake.deltars import table_version

    return {table: table_version(settings, table) for table in tables}


def read_relation(spark: SparkSession, settings: Settings, table: str, version: int
                  ) -> DataFrame:
    """Table ``table`` as a query reads it: a base table as of Delta ``version``, one row per
    live tuple (:mod:`aspen.queries.base_tuples`); a view as of the last committed batch (its
    snapshot and change log, :mod:`aspen.lake.view_log`), whatever ``version`` says; any other
    table as of ``version``."""
    from aspen.catalog import VIEWS
    from aspen.queries.base_tuples import is_base_table, tuples_spark

    if table in VIEWS:
        from aspen.lake.committed import committed_versions
        from aspen.lake.view_log import VIEW_CHANGES, read_view_spark

        versions = committed_versions(settings)
        if table in versions:
            return read_view_spark(spark, settings, table, versions[table],
                                   versions.get(VIEW_CHANGES))
    stored = (spark.read.format("delta").option("versionAsOf", int(version))
              .load(settings.table_uri(table)))
    return tuples_spark(table, stored) if is_base_table(table) else stored


def _log_stats(settings: Settings, table: str, version: int,
               columns: list[str]) -> tuple[int | None, dict[str, dict[str, Any]]]:
    """Rows (None when a file has no count) and per column min/max from the Delta log."""
    from deltalake import DeltaTable

    actions = DeltaTable(settings.table_uri(table), version=version).get_add_actions(
        flatten=True)
    names = set(actions.column_names)
    counts = actions.column("num_records").to_pylist() if "num_records" in names else [None]
    rows = None if any(n is None for n in counts) else int(sum(counts))
    ranges: dict[str, dict[str, Any]] = {}
    for column in columns:
        if f"min.{column}" not in names or f"max.{column}" not in names:
            continue
        lows = actions.column(f"min.{column}").to_pylist()
        highs = actions.column(f"max.{column}").to_pylist()
        if not lows or any(v is None for v in lows + highs):
            continue
        ranges[column] = {"min": _jsonable(min(lows)), "max": _jsonable(max(highs))}
    return rows, ranges


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value if isinstance(value, int | float | str | bool) else str(value)


def _aggregate(frame: DataFrame, ndv_columns: list[str], filters: list[str],
               string_columns: list[str]) -> dict[str, float]:
    """One Spark job: the rows, distinct values, filter hits and string lengths."""
    from pyspark.sql import functions as F

    exprs = [F.count(F.lit(1)).alias("rows")]
    exprs += [F.approx_count_distinct(c).alias(f"ndv{i}") for i, c in enumerate(ndv_columns)]
    exprs += [F.sum(F.when(F.expr(f), 1).otherwise(0)).alias(f"hit{i}")
              for i, f in enumerate(filters)]
    exprs += [F.avg(F.octet_length(F.col(c))).alias(f"len{i}")
              for i, c in enumerate(string_columns)]
    row = frame.agg(*exprs).collect()[0].asDict()
    return {k: (0.0 if v is None else float(v)) for k, v in row.items()}


def lake_stats(spark: SparkSession, settings: Settings, parsed: ParsedQuery,
               versions: Mapping[str, int] | None = None,
               observed_since: datetime | None = None) -> LakeStats:
    """The statistics of ``parsed``'s tables (at ``versions``, default the current ones) and
    the join selectivities of its last run since ``observed_since`` (None: any run).

    Example, on a lake::

        lake_stats(spark, settings, parse_query("q", sql)).stats.rows("link")
        # 120.0
    """
    from pyspark.sql import types as T

    versions = dict(versions or table_versions(settings, parsed.tables))
    query, spec = parsed.query, parsed.spec
    doc: dict[str, Any] = {"tables": {}, "selectivity": {}, "versions": versions}
    for table in parsed.tables:
        aliases = [r for r in spec.relations if r.table == table]
        join_columns = sorted({col.split(".", 1)[1] for p in query.joins
                               for col in (p.left, p.right)
                               if query.relations[col.split(".", 1)[0]] == table})
        read = sorted({c for r in aliases for c in r.columns})
        filters = [(r.alias, f) for r in aliases for f in r.filters]
        frame = read_relation(spark, settings, table, versions[table])
        types = {f.name: f.dataType for f in frame.schema.fields}
        strings = [c for c in read if isinstance(types.get(c), T.StringType)]
        agg = _aggregate(frame, join_columns, [f for _, f in filters], strings)
        ranged = [c for c in read if c in BASE_VALUE_COLUMNS.get(table, read)]
        log_rows, ranges = _log_stats(settings, table, versions[table], ranged)
        rows = agg["rows"]  # the relation the query reads: for a base table its live tuples
        width = 0.0
        for column in read:
            kind = types.get(column)
            if isinstance(kind, T.StringType):
                width += agg[f"len{strings.index(column)}"] + _STRING_OVERHEAD
            elif isinstance(kind, T.NumericType | T.TimestampType | T.DateType):
                width += _FIXED_BYTES
            else:
                width += _OTHER_BYTES
        columns = {c: dict(ranges.get(c, {})) for c in sorted(set(read) | set(join_columns))}
        for i, column in enumerate(join_columns):
            columns[column]["ndv"] = agg[f"ndv{i}"]
        doc["tables"][table] = {"rows": rows, "width": max(width, _FIXED_BYTES),
                                "columns": {c: v for c, v in columns.items() if v},
                                **({} if log_rows is None else {"log_rows": log_rows})}
        for i, (alias, text) in enumerate(filters):
            if agg["rows"] > 0:
                doc["selectivity"][f"{alias}: {text}"] = agg[f"hit{i}"] / agg["rows"]
    observed, run_id = observed_selectivities(settings, parsed, observed_since)
    doc["selectivity"].update(observed)
    doc["observed_run"] = run_id
    return LakeStats(Stats.from_json(doc), doc)


def observed_selectivities(settings: Settings, parsed: ParsedQuery,
                           since: datetime | None = None) -> tuple[dict[str, float], str | None]:
    """Join predicate id → selectivity observed by the query's last run, and that run's id
    (None when it never ran)."""
    rows = last_run(settings, parsed.name, since)
    by_node = {row.node: row for row in rows}
    out: dict[str, float] = {}
    query = parsed.query
    for row in rows:
        if row.operator == "scan" or row.observed_rows is None:
            continue
        if not row.left_rows or not row.right_rows:  # an empty input tells nothing
            continue
        left_row, right_row = by_node.get(f"{row.node}.L"), by_node.get(f"{row.node}.R")
        if left_row is None or right_row is None:
            continue
        left, right = _aliases(left_row.relations), _aliases(right_row.relations)
        if not (left | right) <= query.root:  # a run of an earlier version of the query
            continue
        preds = query.joins_between(left, right)
        if not preds:
            continue
        combined = min(1.0, row.observed_rows / (row.left_rows * row.right_rows))
        share = math.pow(combined, 1.0 / len(preds)) if combined > 0 else 0.0
        for pred in preds:
            out[pred.id] = share
    return out, (rows[0].run_id if rows else None)


def _aliases(text: str) -> frozenset[str]:
    return frozenset(a for a in text.split(",") if a)
