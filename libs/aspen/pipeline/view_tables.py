"""View tables in the lake: one Delta table per view, each row a view tuple with its provenance.

Columns are the view's attributes (:data:`aspen.catalog.VIEW_COLUMNS`), then ``provenance``
(the byte codec of the tuple's BDD, decision 8 of docs/architecture.md; null for aggregate views
without a formula), ``prov_bytes``, ``batch_id`` (the ledger batch that last wrote the table;
the Spark runtime: that last wrote the row) and ``node`` (the query node holding the tuple).
Paths are lists of node ids.

>>> row_to_tuple("cheapest_path", {"src": "a", "dst": "c", "path": ["a", "b", "c"], "cost": 3.0})
('a', 'c', ('a', 'b', 'c'), 3.0)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from aspen.catalog import VIEW_COLUMNS, check_view

if TYPE_CHECKING:
    import pyarrow as pa

    from aspen.provenance.bdd import ProvenanceManager
    from aspen.settings import Settings

__all__ = [
    "PATH_COLUMNS",
    "SNAPSHOT_ROW_GROUP",
    "row_to_tuple",
    "view_ddl",
    "view_frame",
    "write_snapshot",
]

#: The columns holding a path (a list of node ids); a view's columns: :mod:`aspen.catalog`.
PATH_COLUMNS = frozenset({"path", "cheapest", "fewest"})
_INT_COLUMNS = frozenset({"hops", "size"})
_FLOAT_COLUMNS = frozenset({"cost"})
#: Rows per Parquet row group of a snapshot written in process: its rows are sorted by key, so
#: a read of a few pairs (the variable index's, :mod:`aspen.pipeline.provenance_vars`) decodes
#: the formulas and paths of a few row groups, not of the whole view.
SNAPSHOT_ROW_GROUP = 1 << 14


def _cell(column: str, value: Any) -> Any:
    if column in PATH_COLUMNS:
        return tuple(str(v) for v in value)
    if column in _INT_COLUMNS:
        return int(value)
    if column in _FLOAT_COLUMNS:
        return float(value)
    return str(value)


def row_to_tuple(view: str, row: Mapping[str, Any]) -> tuple:
    """The engine's tuple for a table row of ``view``."""
    return tuple(_cell(c, row[c]) for c in VIEW_COLUMNS[check_view(view)])


def view_frame(
    view: str,
    tuples: Mapping[tuple, Any] | Iterable[tuple],
    manager: ProvenanceManager | None,
    batch_id: int,
    placement: Mapping[tuple, int] | None = None,
) -> pa.Table:
    """An Arrow table of ``view``'s tuples with encoded provenance, ready to write; ``node`` is
    the query node holding each tuple (from ``placement``; -1 when unknown)."""
    import pyarrow as pa

    columns = VIEW_COLUMNS[check_view(view)]
    items = tuples.items() if isinstance(tuples, Mapping) else ((t, None) for t in tuples)
    records: list[dict[str, Any]] = []
    for values, formula in sorted(items, key=lambda kv: repr(kv[0])):
        row = {c: (list(v) if c in PATH_COLUMNS else v)
               for c, v in zip(columns, values, strict=True)}
        data = manager.encode(formula) if (manager is not None and formula is not None) else None
        row["provenance"] = data
        row["prov_bytes"] = len(data) if data is not None else 0
        row["batch_id"] = batch_id
        row["node"] = placement.get(values, -1) if placement is not None else -1
        records.append(row)
    fields = []
    for c in columns:
        if c in PATH_COLUMNS:
            fields.append(pa.field(c, pa.list_(pa.string())))
        elif c in _INT_COLUMNS:
            fields.append(pa.field(c, pa.int64()))
        elif c in _FLOAT_COLUMNS:
            fields.append(pa.field(c, pa.float64()))
        else:
            fields.append(pa.field(c, pa.string()))
    fields += [
        pa.field("provenance", pa.binary()),
        pa.field("prov_bytes", pa.int64()),
        pa.field("batch_id", pa.int64()),
        pa.field("node", pa.int32()),
    ]
    return pa.Table.from_pylist(records, schema=pa.schema(fields))


def view_ddl(view: str) -> str:
    """The Spark DDL of ``view``'s attribute columns.

    >>> view_ddl("fewest_hops")
    'src STRING, dst STRING, path ARRAY<STRING>, hops BIGINT'
    """
    def kind(column: str) -> str:
        if column in PATH_COLUMNS:
            return "ARRAY<STRING>"
        if column in _INT_COLUMNS:
            return "BIGINT"
        return "DOUBLE" if column in _FLOAT_COLUMNS else "STRING"

    return ", ".join(f"{c} {kind(c)}" for c in VIEW_COLUMNS[check_view(view)])


def write_snapshot(settings: Settings, view: str, frame: pa.Table) -> None:
    """Write ``frame`` (:func:`view_frame`) as ``view``'s snapshot, in row groups of
    :data:`SNAPSHOT_ROW_GROUP` rows."""
    from deltalake import WriterProperties, write_deltalake

    write_deltalake(settings.table_uri(check_view(view)), frame, mode="overwrite",
                    schema_mode="overwrite",
                    writer_properties=WriterProperties(max_row_group_size=SNAPSHOT_ROW_GROUP))
