"""The views in the lake: a snapshot table per view plus one change log for all of them.

A maintained batch does not rewrite or MERGE its nine view tables. It appends what changed —
every row of every view that was added, whose provenance changed, or that was dropped — to the
one table ``view_changes``, in one commit. The view tables (``reachable``, ``min_cost`` …) are
**snapshots**: rewritten only when a batch **compacts** (a rebuild, or the log outgrowing
:func:`should_compact`'s bound), which also empties the log. So a view as of a committed batch is
its snapshot at the version the ledger recorded, with the log's changes at its recorded version
applied in batch order (:func:`current_rows`): an ``upsert`` sets a row (by the view's
attributes, its key), a ``delete`` removes it. :func:`aspen.lake.committed.read_committed` reads
every view this way, and with it ``show``, ``explain``, ``verify``, the expectation suites and the
dashboard.

``view_changes`` has a column ``view``, ``batch_id``, ``change`` (``upsert`` or ``delete``), the
union of the views' attribute columns (a view's own are set, the others null), then
``provenance``, ``prov_bytes`` and ``node`` as in a view table. A reader outside Aspen gets a
view's current rows with one query (DuckDB, over the two Delta tables; docs/architecture.md):
the snapshot's rows and the view's log rows, the last change per key kept, deletions left out.

>>> import pandas as pd
>>> snapshot = pd.DataFrame({"src": ["a", "a"], "dst": ["b", "c"], "provenance": [b"1", b"2"],
...                          "prov_bytes": [1, 1], "batch_id": [1, 1], "node": [0, 0]})
>>> log = pd.DataFrame({"view": ["reachable"] * 2, "batch_id": [2, 2],
...                     "change": ["delete", "upsert"], "src": ["a", "a"], "dst": ["b", "d"],
...                     "provenance": [None, b"3"], "prov_bytes": [0, 1], "node": [0, 0]})
>>> current_rows("reachable", snapshot, log)[["src", "dst", "batch_id"]].values.tolist()
[['a', 'c', 1], ['a', 'd', 2]]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aspen.catalog import VIEW_COLUMNS, check_view
from aspen.settings import Settings

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "CHANGE_DELETE",
    "CHANGE_UPSERT",
    "COMPACT_AFTER_FILES",
    "COMPACT_MIN_ROWS",
    "PATH_COLUMNS",
    "ROW_COLUMNS",
    "VIEW_CHANGES",
    "append_changes",
    "change_records",
    "change_schema",
    "compact_views",
    "current_rows",
    "current_rows_sql",
    "empty_log",
    "log_size",
    "read_view_at",
    "read_view_spark",
    "should_compact",
    "truncate_log",
    "view_records",
    "view_schema",
]

#: The change log of every view.
VIEW_CHANGES = "view_changes"
CHANGE_UPSERT = "upsert"
CHANGE_DELETE = "delete"
#: The columns holding a path (a list of node ids).
PATH_COLUMNS = frozenset({"path", "cheapest", "fewest"})
_INT_COLUMNS = frozenset({"hops", "size"})
_FLOAT_COLUMNS = frozenset({"cost"})
#: What a view row has after its attributes.
ROW_COLUMNS: tuple[str, ...] = ("provenance", "prov_bytes", "batch_id", "node")
#: Every attribute column of any view, in first-seen order (the log's value columns).
_ATTRIBUTES: tuple[str, ...] = tuple(dict.fromkeys(c for cs in VIEW_COLUMNS.values() for c in cs))
#: A log with at least this many files (one per batch) is compacted: each is read per view read.
COMPACT_AFTER_FILES = 48
#: ... and one with more rows than this and than the snapshots hold together.
COMPACT_MIN_ROWS = 20_000


def _attribute_type(column: str) -> pa.DataType:
    import pyarrow as pa

    if column in PATH_COLUMNS:
        return pa.list_(pa.string())
    if column in _INT_COLUMNS:
        return pa.int64()
    return pa.float64() if column in _FLOAT_COLUMNS else pa.string()


def _row_fields() -> list[pa.Field]:
    import pyarrow as pa

    return [pa.field("provenance", pa.binary()), pa.field("prov_bytes", pa.int64()),
            pa.field("batch_id", pa.int64()), pa.field("node", pa.int32())]


def view_schema(view: str) -> pa.Schema:
    """The Arrow schema of ``view``'s snapshot table: its attributes, then :data:`ROW_COLUMNS`.

    >>> view_schema("min_hops").names
    ['src', 'dst', 'hops', 'provenance', 'prov_bytes', 'batch_id', 'node']
    """
    import pyarrow as pa

    attributes = [pa.field(c, _attribute_type(c)) for c in VIEW_COLUMNS[check_view(view)]]
    return pa.schema(attributes + _row_fields())


def change_schema() -> pa.Schema:
    """The Arrow schema of ``view_changes``.

    >>> change_schema().names[:4], change_schema().names[-3:]
    (['view', 'batch_id', 'change', 'src'], ['provenance', 'prov_bytes', 'node'])
    """
    import pyarrow as pa

    fields = [pa.field("view", pa.string()), pa.field("batch_id", pa.int64()),
              pa.field("change", pa.string())]
    fields += [pa.field(c, _attribute_type(c)) for c in _ATTRIBUTES]
    fields += [f for f in _row_fields() if f.name != "batch_id"]
    return pa.schema(fields)


def empty_log() -> pa.Table:
    """A ``view_changes`` table without rows (what a compaction leaves)."""
    return change_schema().empty_table()


def change_records(view: str, rows: list[dict[str, Any]], change: str,
                   batch_id: int) -> list[dict[str, Any]]:
    """Log records of ``view`` from view-row records (attributes and, for an upsert,
    :data:`ROW_COLUMNS`).

    >>> change_records("reachable", [{"src": "a", "dst": "b"}], CHANGE_DELETE, 4)[0]["change"]
    'delete'
    """
    check_view(view)
    out = []
    for row in rows:
        record = {c: row.get(c) for c in VIEW_COLUMNS[view]}
        record.update(view=view, batch_id=batch_id, change=change,
                      provenance=row.get("provenance") if change == CHANGE_UPSERT else None,
                      prov_bytes=int(row.get("prov_bytes") or 0) if change == CHANGE_UPSERT else 0,
                      node=row.get("node", -1))
        out.append(record)
    return out


def append_changes(settings: Settings, records: list[dict[str, Any]]) -> None:
    """Append log records (:func:`change_records`) to ``view_changes``: one commit (none when
    there are no records and the log exists)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from aspen.lake.deltars import table_exists

    exists = table_exists(settings, VIEW_CHANGES)
    if not records and exists:
        return
    data = pa.Table.from_pylist(records, schema=change_schema())
    write_deltalake(settings.table_uri(VIEW_CHANGES), data,
                    mode="append" if exists else "overwrite")


def truncate_log(settings: Settings) -> None:
    """Empty ``view_changes`` (a compaction has folded its rows into the snapshots)."""
    from deltalake import write_deltalake

    write_deltalake(settings.table_uri(VIEW_CHANGES), empty_log(), mode="overwrite",
                    schema_mode="overwrite")


def compact_views(settings: Settings, views: tuple[str, ...]) -> None:
    """Fold the change log into the snapshots: every view of ``views`` rewritten with its
    current rows (the latest snapshot and log), then the log emptied. Readers keep reading the
    versions the ledger recorded until the batch commits."""
    from aspen.lake.deltars import table_version, write_table

    log_version = table_version(settings, VIEW_CHANGES)
    for view in views:
        rows = read_view_at(settings, view, table_version(settings, view), log_version)
        write_table(settings, view, _as_arrow(view, rows))
    truncate_log(settings)


def _as_arrow(view: str, rows: pd.DataFrame) -> pa.Table:
    """A view's rows (a pandas frame) in its snapshot schema."""
    import pyarrow as pa

    schema = view_schema(view)
    columns = {}
    for name in schema.names:
        values = rows[name].tolist()
        if name in PATH_COLUMNS:
            values = [None if v is None else [str(x) for x in v] for v in values]
        columns[name] = pa.array(values, type=schema.field(name).type)
    return pa.table(columns, schema=schema)


def log_size(settings: Settings) -> tuple[int, int]:
    """(files, rows) of the latest ``view_changes``, from its Delta log; (0, 0) when absent.

    >>> log_size(Settings(lake="/nonexistent/lake"))
    (0, 0)
    """
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        actions = DeltaTable(settings.table_uri(VIEW_CHANGES)).get_add_actions(flatten=True)
    except TableNotFoundError:
        return 0, 0
    rows = actions.column("num_records").to_pylist()
    return len(rows), int(sum(n or 0 for n in rows))


def should_compact(log_files: int, log_rows: int, view_rows: int) -> bool:
    """Whether a batch compacts: the log has :data:`COMPACT_AFTER_FILES` files, or more rows than
    :data:`COMPACT_MIN_ROWS` and than the views hold (reading it would cost more than reading the
    snapshots).

    >>> should_compact(3, 100, 10), should_compact(48, 10, 10**6)
    (False, True)
    >>> should_compact(5, 30_000, 25_000), should_compact(5, 30_000, 90_000)
    (True, False)
    """
    return log_files >= COMPACT_AFTER_FILES or log_rows > max(COMPACT_MIN_ROWS, view_rows)


def _hashable(value: Any) -> Any:
    """A key cell: a path (list or array) as a tuple."""
    if value is None or isinstance(value, str | int | float):
        return value
    try:
        return tuple(value)
    except TypeError:
        return value


def current_rows(view: str, snapshot: pd.DataFrame, changes: pd.DataFrame) -> pd.DataFrame:
    """``view``'s rows: ``snapshot`` (a snapshot table's rows) with ``changes`` (its log rows)
    applied in batch order, deletions of a batch before its upserts; the snapshot's columns.
    See the module docstring for an example."""
    import pandas as pd

    columns = VIEW_COLUMNS[check_view(view)]
    out_columns = [*columns, *ROW_COLUMNS]
    if "view" in changes:
        changes = changes[changes["view"] == view]
    if changes.empty:
        return snapshot.reset_index(drop=True)
    base = snapshot[out_columns].assign(_order=-1, _upsert=True)
    log = changes[out_columns].assign(
        _order=changes["batch_id"].astype("int64"),
        _upsert=(changes["change"] == CHANGE_UPSERT).to_numpy())
    both = pd.concat([f for f in (base, log) if not f.empty], ignore_index=True)
    both = both.sort_values(["_order", "_upsert"], kind="stable")
    keys = [f"_key_{c}" for c in columns]
    for column, key in zip(columns, keys, strict=True):
        cells = both[column]
        both[key] = cells.map(_hashable) if column in PATH_COLUMNS else cells
    last = both.drop_duplicates(subset=keys, keep="last")
    kept = last[last["_upsert"]]
    kept = kept.sort_values(["_order"], kind="stable")[out_columns].reset_index(drop=True)
    for column in ("prov_bytes", "batch_id"):
        kept[column] = kept[column].astype("int64")
    kept["node"] = kept["node"].astype("int32")
    return kept


def read_view_at(settings: Settings, view: str, snapshot_version: int,
                 log_version: int | None) -> pd.DataFrame:
    """``view``'s rows from its snapshot at ``snapshot_version`` and the log at ``log_version``
    (None: no log yet), both read with delta-rs (:func:`current_rows`)."""
    from deltalake import DeltaTable

    from aspen.lake.deltars import read_table, text_field

    snapshot = read_table(settings, view, version=snapshot_version)
    if log_version is None:
        return snapshot
    dataset = DeltaTable(settings.table_uri(VIEW_CHANGES), version=log_version) \
        .to_pyarrow_dataset()
    changes = dataset.to_table(filter=text_field("view") == view).to_pandas()
    return current_rows(view, snapshot, changes)


def view_records(view: str, rows: Mapping[tuple, tuple[bytes | None, int]],
                 batch_id: int) -> list[dict[str, Any]]:
    """View-row records from ``tuple → (provenance bytes, node)`` (for :func:`change_records`).

    >>> view_records("reachable", {("a", "b"): (b"x", 1)}, 3)[0]["prov_bytes"]
    1
    """
    columns = VIEW_COLUMNS[check_view(view)]
    out = []
    for values, (data, node) in rows.items():
        record: dict[str, Any] = {c: (list(v) if c in PATH_COLUMNS else v)
                                  for c, v in zip(columns, values, strict=True)}
        record.update(provenance=data, prov_bytes=len(data) if data is not None else 0,
                      batch_id=batch_id, node=node)
        out.append(record)
    return out


def read_view_spark(spark: SparkSession, settings: Settings, view: str, snapshot_version: int,
                    log_version: int | None) -> DataFrame:
    """``view``'s rows as a Spark DataFrame (:func:`current_rows` on Spark: the last change per
    key wins, a batch's deletions before its upserts), for Spark jobs that read a view (the
    continuous queries).

    Example, on a lake::

        read_view_spark(spark, settings, "reachable", 3, 7).count()
        # 42
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    columns = list(VIEW_COLUMNS[check_view(view)])
    out = [*columns, *ROW_COLUMNS]

    def load(name: str, version: int) -> DataFrame:
        return spark.read.format("delta").option("versionAsOf", int(version)) \
            .load(settings.table_uri(name))

    snapshot = load(view, snapshot_version).select(*out)
    if log_version is None:
        return snapshot
    log = load(VIEW_CHANGES, log_version).where(F.col("view") == view)
    both = snapshot.select(*out, F.lit(-1).cast("long").alias("_order"),
                           F.lit(True).alias("_upsert")).unionByName(
        log.select(*out, F.col("batch_id").alias("_order"),
                   (F.col("change") == CHANGE_UPSERT).alias("_upsert")))
    latest = Window.partitionBy(*columns).orderBy(F.desc("_order"), F.desc("_upsert"))
    return both.withColumn("_rank", F.row_number().over(latest)) \
        .where("_rank = 1 AND _upsert").select(*out)


def current_rows_sql(view: str, snapshot: str | None = None, log: str = VIEW_CHANGES) -> str:
    """A SQL query (DuckDB, Spark SQL) giving ``view``'s current rows from its snapshot table and
    the change log, for readers outside Aspen: name the two tables, e.g. DuckDB's
    ``delta_scan('<lake>/reachable')`` and ``delta_scan('<lake>/view_changes')``.

    >>> print(current_rows_sql("reachable"))  # doctest: +NORMALIZE_WHITESPACE
    SELECT src, dst, provenance, prov_bytes, batch_id, node FROM (SELECT *, row_number() OVER
    (PARTITION BY src, dst ORDER BY _order DESC, _upsert DESC) AS _rank FROM (SELECT src, dst,
    provenance, prov_bytes, batch_id, node, -1 AS _order, TRUE AS _upsert FROM reachable UNION ALL
    SELECT src, dst, provenance, prov_bytes, batch_id, node, batch_id AS _order, change = 'upsert'
    AS _upsert FROM view_changes WHERE view = 'reachable') AS changes) AS ranked WHERE _rank = 1
    AND _upsert
    """
    columns = ", ".join((*VIEW_COLUMNS[check_view(view)], *ROW_COLUMNS))
    key = ", ".join(VIEW_COLUMNS[view])
    return (
        f"SELECT {columns} FROM (SELECT *, row_number() OVER (PARTITION BY {key} ORDER BY "
        "_order DESC, _upsert DESC) AS _rank FROM ("
        f"SELECT {columns}, -1 AS _order, TRUE AS _upsert FROM {snapshot or view} UNION ALL "
        f"SELECT {columns}, batch_id AS _order, change = '{CHANGE_UPSERT}' AS _upsert "
        f"FROM {log} WHERE view = '{view}') AS changes) AS ranked "
        "WHERE _rank = 1 AND _upsert"
    )
