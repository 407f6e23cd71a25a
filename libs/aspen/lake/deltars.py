"""Reading lake tables and their Delta logs without a JVM, through delta-rs (``deltalake``).

Commands that only read (``show``, ``explain``, ``what-if``, ``verify``) and the dashboard use
this, and the Spark jobs for what the log alone tells (a table's size for the apply's conf, a
VACUUM's count for housekeeping: no Spark job). Ingest writes the update log through it too
(:func:`append_table`, :func:`delete_where`); Spark writes the base tables. A table created here
gets the properties Aspen's Spark sessions give a new table (:data:`NEW_TABLE_PROPERTIES`), so
every table stays at Delta reader version 1, writer version 2, whichever engine created it.

>>> from aspen.settings import Settings
>>> table_exists(Settings(lake="/nonexistent/lake"), "updates")
False
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aspen.errors import LakeError, TableMissingError
from aspen.settings import Settings

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import pandas as pd
    import pyarrow as pa

__all__ = [
    "NEW_TABLE_PROPERTIES", "append_batches", "append_table", "column_max", "column_maxima",
    "commit_after",
    "compact_if_fragmented", "only_compacted_since",
    "data_bytes", "delete_where", "exact_row_count", "partition_columns", "read_table",
    "replace_batch", "row_count", "table_columns", "table_exists", "table_version",
    "table_version_or_none", "text_field", "write_table",
]

#: The table properties of a table :func:`append_table` creates: those Aspen's Spark sessions
#: give every new table (``spark.databricks.delta.properties.defaults.*`` in
#: :mod:`aspen.spark.session`), so it is the Delta table Spark would have made (reader version
#: 1, writer version 2: no deletion vectors, no column mapping, no change data feed).
NEW_TABLE_PROPERTIES: dict[str, str] = {
    "delta.enableChangeDataFeed": "false",
    "delta.enableDeletionVectors": "false",
    "delta.columnMapping.mode": "none",
}


def _open(settings: Settings, name: str, version: int | None = None):
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(settings.table_uri(name), version=version)
    except TableNotFoundError as err:
        raise TableMissingError(
            f"table '{name}' does not exist under {settings.lake_uri} "
            "(run `aspen ingest` and `aspen maintain` first)"
        ) from err


def text_field(name: str) -> Any:
    """A string column for a pyarrow scan filter, safe on files of mixed string types.

    delta-rs's MERGE writes strings as ``string_view`` and Spark and appends as ``string``;
    pyarrow compares a literal with a file's statistics in the file's type and has no kernel
    for the pair, so a plain ``field(name) == "x"`` fails on a file whose column holds one value.
    The cast keeps the statistics out of it.

    >>> import pyarrow as pa, pyarrow.dataset as ds
    >>> rows = ds.dataset(pa.table({"death": ["expired", "deleted"]}))
    >>> rows.to_table(filter=text_field("death") == "expired").num_rows
    1
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.field(name).cast(pa.string())


#: Operations that rewrite a table's files without changing its rows.
_NO_DATA_CHANGE = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END"})


def compact_if_fragmented(settings: Settings, name: str, max_files: int) -> bool:
    """Compact table ``name`` into fewer files (delta-rs OPTIMIZE, no JVM) when it has more
    than ``max_files`` data files; whether it did. Readers that scan a table open every file,
    so an append-per-batch table would otherwise cost more each batch.

    >>> import tempfile, pandas as pd
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> for n in range(3):
    ...     append_table(lake, "t", _arrow(pd.DataFrame({"batch_id": [n]})))
    >>> compact_if_fragmented(lake, "t", 2), compact_if_fragmented(lake, "t", 2)
    (True, False)
    >>> len(_open(lake, "t").file_uris()), len(read_table(lake, "t"))
    (1, 3)
    """
    if not table_exists(settings, name):
        return False
    table = _open(settings, name)
    if len(table.file_uris()) <= max_files:
        return False
    table.optimize.compact()
    return True


def only_compacted_since(settings: Settings, name: str, version: int) -> bool:
    """Whether every commit of table ``name`` after ``version`` only rewrote files (OPTIMIZE,
    VACUUM): the table's rows are still those of ``version``.

    >>> import tempfile, pandas as pd
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> for n in range(2):
    ...     append_table(lake, "t", _arrow(pd.DataFrame({"batch_id": [n]})))
    >>> only_compacted_since(lake, "t", 0), compact_if_fragmented(lake, "t", 1)
    (False, True)
    >>> only_compacted_since(lake, "t", 1)
    True
    """
    table = _open(settings, name)
    newer = table.version() - version
    if newer <= 0:
        return True
    return all(entry.get("operation") in _NO_DATA_CHANGE
               for entry in table.history(newer) if int(entry.get("version", -1)) > version)


def table_exists(settings: Settings, name: str) -> bool:
    """Whether the Delta table ``name`` exists under the lake root."""
    try:
        _open(settings, name)
    except TableMissingError:
        return False
    return True


def table_columns(settings: Settings, name: str) -> list[str]:
    """The column names of table ``name`` (from its Delta log)."""
    return [field.name for field in _open(settings, name).schema().fields]


def partition_columns(settings: Settings, name: str) -> list[str]:
    """The partition columns of table ``name`` (from its Delta log)."""
    return list(_open(settings, name).metadata().partition_columns)


def table_version(settings: Settings, name: str) -> int:
    """The latest Delta version of table ``name``."""
    return _open(settings, name).version()


def table_version_or_none(settings: Settings, name: str) -> int | None:
    """The latest Delta version of table ``name``, or None when it does not exist.

    >>> table_version_or_none(Settings(lake="/nonexistent/lake"), "updates") is None
    True
    """
    try:
        return table_version(settings, name)
    except TableMissingError:
        return None


def commit_after(settings: Settings, name: str, version: int,
                 operation: str) -> dict[str, Any] | None:
    """The first commit of ``operation`` after ``version`` of table ``name`` (its commit info
    from the Delta log: ``version``, ``operationMetrics`` …), or None; other writers' commits
    in between are passed over.

    >>> import tempfile, pandas as pd
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> for mode in ("overwrite", "append", "append"):
    ...     write_table(lake, "t", pd.DataFrame({"a": [1]}), mode=mode)
    >>> commit_after(lake, "t", 0, "WRITE")["version"], commit_after(lake, "t", 2, "WRITE")
    (1, None)
    """
    table = _open(settings, name)
    newer = table.version() - version
    if newer <= 0:
        return None
    for entry in sorted(table.history(newer), key=lambda e: int(e["version"])):
        if int(entry["version"]) > version and entry.get("operation") == operation:
            return entry
    return None


def row_count(settings: Settings, name: str) -> int:
    """Rows in table ``name`` from the Delta log's file statistics (no data file is read)."""
    actions = _open(settings, name).get_add_actions(flatten=True)
    return int(sum(n for n in actions.column("num_records").to_pylist() if n is not None))


def exact_row_count(uri: str, version: int) -> int:
    """Rows of the Delta table at ``uri`` as of ``version``, counted exactly from the Parquet
    files' metadata (no data page is read; unlike :func:`row_count`, which trusts the log).

    >>> import tempfile, pandas as pd
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> write_table(lake, "t", pd.DataFrame({"a": [1, 2]}))
    >>> write_table(lake, "t", pd.DataFrame({"a": [3]}), mode="append")
    >>> exact_row_count(lake.table_uri("t"), 0), exact_row_count(lake.table_uri("t"), 1)
    (2, 3)
    """
    from deltalake import DeltaTable

    return int(DeltaTable(uri, version=version).to_pyarrow_dataset().count_rows())


def data_bytes(settings: Settings, name: str) -> int:
    """Bytes of table ``name``'s current data files, from its Delta log (no data file is read);
    0 when the table does not exist.

    >>> import tempfile, pandas as pd
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> data_bytes(lake, "t")
    0
    >>> write_table(lake, "t", pd.DataFrame({"born": [1, 3]}))
    >>> data_bytes(lake, "t") > 0
    True
    """
    try:
        table = _open(settings, name)  # one read of the log, not one to check and one to sum
    except TableMissingError:
        return 0
    actions = table.get_add_actions(flatten=True)
    return int(sum(actions.column("size_bytes").to_pylist()))


def column_max(settings: Settings, name: str, column: str) -> int | None:
    """The largest value of the integer column ``column`` of table ``name``, from the Delta
    log's per-file statistics (no data file is read); None when no row holds a value. Raises
    LakeError when the statistics do not tell (a file without them for the column).

    >>> import tempfile, pandas as pd
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> write_table(lake, "t", pd.DataFrame({"born": [1, 3], "died": [None, None]}, dtype="Int64"))
    >>> column_max(lake, "t", "born"), column_max(lake, "t", "died")
    (3, None)
    """
    return column_maxima(settings, name, (column,))[0]


def column_maxima(settings: Settings, name: str, columns: Sequence[str]) -> tuple[int | None, ...]:
    """:func:`column_max` of each of ``columns``, reading the Delta log once.

    >>> import tempfile, pandas as pd
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> write_table(lake, "t", pd.DataFrame({"born": [1, 3], "died": [None, 2]}, dtype="Int64"))
    >>> column_maxima(lake, "t", ("born", "died"))
    (3, 2)
    """
    actions = _open(settings, name).get_add_actions(flatten=True)
    return tuple(_file_stats_max(actions, name, column) for column in columns)


def _file_stats_max(actions: Any, name: str, column: str) -> int | None:
    """The maximum of ``column`` over the add actions' statistics (see :func:`column_max`)."""
    needed = ("num_records", f"null_count.{column}", f"max.{column}")
    if any(c not in actions.column_names for c in needed):
        raise LakeError(f"table '{name}' keeps no statistics for column '{column}'")
    best: int | None = None
    for rows, nulls, high in zip(*(actions.column(c).to_pylist() for c in needed), strict=True):
        if high is None:
            if rows is None or nulls is None or nulls < rows:  # values, but no maximum kept
                raise LakeError(f"a file of table '{name}' has no maximum for '{column}'")
            continue
        best = int(high) if best is None else max(best, int(high))
    return best


def read_table(settings: Settings, name: str, columns: list[str] | None = None,
               version: int | None = None) -> pd.DataFrame:
    """The whole table ``name`` (at ``version``, default the latest) as a pandas DataFrame
    (raises TableMissingError). Readers of maintained tables use
    :func:`aspen.lake.committed.read_committed` instead."""
    return _open(settings, name, version).to_pandas(columns=columns)


def write_table(
    settings: Settings, name: str, data: pd.DataFrame | pa.Table, mode: str = "overwrite"
) -> None:
    """Write ``data`` as table ``name`` (``overwrite`` or ``append``; reader version 1)."""
    from deltalake import write_deltalake

    data = _arrow(data)
    if mode == "overwrite":
        write_deltalake(settings.table_uri(name), data, mode="overwrite", schema_mode="overwrite")
    else:  # appending rows with a column the table lacks adds it (older ledgers)
        write_deltalake(settings.table_uri(name), data, mode=mode, schema_mode="merge")


def replace_batch(
    settings: Settings, name: str, data: pd.DataFrame | pa.Table, batch_id: int
) -> None:
    """Replace the rows of ``batch_id`` in table ``name`` by ``data`` (idempotent on rerun)."""
    from deltalake import write_deltalake

    if not table_exists(settings, name):
        write_table(settings, name, data, mode="overwrite")
        return
    write_deltalake(
        settings.table_uri(name), _arrow(data), mode="overwrite",
        predicate=f"batch_id = {int(batch_id)}"
    )


def append_table(settings: Settings, name: str, data: pa.Table,
                 add_columns: bool = False) -> None:
    """Append ``data`` to table ``name`` in one commit; when the table does not exist, create
    it with ``data``'s schema and :data:`NEW_TABLE_PROPERTIES` (an empty ``data`` then only
    creates it; on an existing table it writes nothing). A column of the table that ``data``
    lacks is null in the new rows (a writer that predates a column,
    :data:`aspen.lake.tables.ADDED_COLUMNS`); a column ``data`` has and the table lacks is
    added only with ``add_columns``. Otherwise ``data``'s schema must be the table's (a
    mismatch raises delta-rs's ``SchemaMismatchError``): nothing is cast silently.

    Creating is not atomic on every store: callers that may create a table hold a lease that
    serializes them (the update log's tables: the log writer lease).

    >>> import tempfile, pyarrow as pa
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> schema = pa.schema([("batch_id", pa.int64())])
    >>> append_table(lake, "t", schema.empty_table())  # created, empty
    >>> append_table(lake, "t", pa.table({"batch_id": [1, 2]}, schema=schema))
    >>> table_version(lake, "t"), row_count(lake, "t")
    (1, 2)
    >>> _open(lake, "t").protocol().min_reader_version
    1
    """
    append_batches(settings, name, data.schema, data.to_batches(), add_columns=add_columns)


def append_batches(settings: Settings, name: str, schema: pa.Schema,
                   batches: Iterable[pa.RecordBatch], add_columns: bool = False) -> None:
    """:func:`append_table` for rows given as record batches of ``schema``, consumed one at a
    time (delta-rs writes them as they come): the rows appended are never all in memory.
    Nothing is committed when there is no row and the table exists.

    >>> import tempfile, pyarrow as pa
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> schema = pa.schema([("batch_id", pa.int64())])
    >>> append_batches(lake, "t", schema, (pa.record_batch([[i]], schema=schema)
    ...                                    for i in range(3)))
    >>> wide = pa.schema([("batch_id", pa.int64()), ("note", pa.string())])
    >>> append_batches(lake, "t", wide, [pa.record_batch([[4], ["x"]], schema=wide)],
    ...                add_columns=True)
    >>> append_batches(lake, "t", schema, [pa.record_batch([[5]], schema=schema)])
    >>> read_table(lake, "t").sort_values("batch_id")["note"].tolist()
    [None, None, None, 'x', None]
    """
    import itertools

    import pyarrow as pa
    from deltalake import write_deltalake

    uri = settings.table_uri(name)
    rows = iter(batches)
    first = next((batch for batch in rows if batch.num_rows), None)
    if not table_exists(settings, name):
        data = (schema.empty_table() if first is None else
                pa.RecordBatchReader.from_batches(schema, itertools.chain([first], rows)))
        write_deltalake(uri, data, mode="append", configuration=NEW_TABLE_PROPERTIES)
        return
    if first is None:
        return
    table_schema = pa.schema(_open(settings, name).schema().to_arrow())
    missing = [f for f in table_schema if f.name not in schema.names]
    extra = [f.name for f in schema if f.name not in table_schema.names]
    target = schema
    if missing:  # the table's columns first, in its order; a column ``data`` lacks is null
        target = pa.schema([schema.field(f.name) if f.name in schema.names else f
                            for f in table_schema] + [schema.field(n) for n in extra])

    def fitted(batch: pa.RecordBatch) -> pa.RecordBatch:
        if not missing:
            return batch
        return pa.RecordBatch.from_arrays(
            [batch.column(f.name) if f.name in schema.names else pa.nulls(batch.num_rows, f.type)
             for f in target], schema=target)

    reader = pa.RecordBatchReader.from_batches(
        target, (fitted(b) for b in itertools.chain([first], rows) if b.num_rows))
    if extra and add_columns:
        write_deltalake(uri, reader, mode="append", schema_mode="merge")
    else:
        write_deltalake(uri, reader, mode="append")


def delete_where(settings: Settings, name: str, predicate: str) -> int:
    """Delete the rows of table ``name`` that match the SQL ``predicate`` (files rewritten, no
    deletion vectors); the number deleted. Nothing is committed when no row matches, nor when
    the table does not exist (0).

    >>> import tempfile, pandas as pd
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> write_table(lake, "t", pd.DataFrame({"batch_id": [1, 2, 3]}))
    >>> delete_where(lake, "t", "batch_id >= 2"), delete_where(lake, "t", "batch_id >= 2")
    (2, 0)
    >>> table_version(lake, "t"), delete_where(lake, "absent", "batch_id >= 2")
    (1, 0)
    """
    try:
        table = _open(settings, name)
    except TableMissingError:
        return 0
    metrics = table.delete(predicate)
    return int(metrics.get("num_deleted_rows") or 0)


def _arrow(data: pd.DataFrame | pa.Table) -> pa.Table:
    import pyarrow as pa

    return data if isinstance(data, pa.Table) else pa.Table.from_pandas(data, preserve_index=False)
