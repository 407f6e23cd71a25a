"""A maintained batch's changes of the tables a query reads, as the query sees them — read
from the lake, no JVM.

A maintained batch ``b`` (a ``ledger`` row) covers the ingest batches after its predecessor's
``through_ingest_batch`` up to its own (:class:`BatchPoint`). For a **base table** the variable
registry (``variables``) names the instances born or killed in those ingest batches; the keys
they belong to are the keys that may have changed, and each such key's tuple as a query sees it
(:mod:`aspen.queries.base_tuples`: its values and the bookkeeping over its live instances) is
built from its instances live before and after; the change is ``new − old`` (a renewal changes
``instances``, a replacement the values). For a **view** whose snapshot did not move, the
batch's rows of ``view_changes`` name the keys (the view's attributes) that changed, and only
those keys' rows are read as of the two batches' ledger versions — snapshot and log filtered
by the key, then :func:`aspen.lake.view_log.current_rows`; when the snapshot moved (a
compaction or a rebuild) the view is compared whole. Either way a deletion only removes a row
that was there (:func:`.delta.diff`).

>>> BatchPoint(0, -1, {}).through
-1
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aspen.errors import LakeError
from aspen.queries.base_tuples import is_base_table, tuple_columns, tuples_pandas
from aspen.queries.incremental.delta import SignedRows, diff, plain_row
from aspen.settings import Settings

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BatchPoint", "batch_changes", "batch_points", "table_columns", "table_rows"]

_LEDGER = "ledger"
_REGISTRY = "variables"
_VIEW_LOG = "view_changes"
#: Columns of a view table after its attributes.
_VIEW_EXTRA = ("provenance", "prov_bytes", "batch_id", "node")


@dataclass(frozen=True)
class BatchPoint:
    """The lake after a committed maintained batch: its id, the last ingest batch it covers
    and every governed table's Delta version (the ledger's, latest recorded)."""

    batch_id: int
    through: int
    versions: Mapping[str, int]


def batch_points(settings: Settings, batch_id: int) -> tuple[BatchPoint, BatchPoint]:
    """The committed batch before ``batch_id`` (batch 0 covering nothing when it is the first)
    and ``batch_id`` itself; :class:`LakeError` when ``batch_id`` is not committed."""
    from aspen.lake.committed import versions_in
    from aspen.lake.deltars import read_table, table_exists

    frame = read_table(settings, _LEDGER) if table_exists(settings, _LEDGER) else None
    if frame is None or frame.empty or batch_id not in set(frame["batch_id"].astype(int)):
        raise LakeError(f"maintained batch {batch_id} is not committed (run `aspen maintain`)")
    frame = frame.sort_values("batch_id")
    ids = frame["batch_id"].astype(int)
    current = frame[ids <= batch_id]
    earlier = frame[ids < batch_id]

    def point(rows: pd.DataFrame) -> BatchPoint:
        if rows.empty:
            return BatchPoint(0, -1, {})
        last = rows.iloc[-1]
        return BatchPoint(int(last["batch_id"]), int(last["through_ingest_batch"]),
                          versions_in(rows))

    return point(earlier), point(current)


def table_columns(table: str) -> tuple[str, ...]:
    """The columns of ``table`` as a query reads it."""
    from aspen.catalog import VIEW_COLUMNS

    if is_base_table(table):
        return tuple_columns(table)
    return (*VIEW_COLUMNS[table], *_VIEW_EXTRA)


def _registry(settings: Settings, table: str, keys: Iterable[str] | None = None,
              after: int | None = None, through: int | None = None) -> pd.DataFrame:
    """Registry rows of ``table``: of the given keys, or born or killed in (after, through]."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    from aspen.lake.deltars import table_exists, text_field

    if not table_exists(settings, _REGISTRY):
        import pandas as pd

        return pd.DataFrame(columns=["key", "values", "inserted_batch", "deleted_batch"])
    condition = text_field("relation") == table
    if keys is not None:
        condition = condition & text_field("key").isin(sorted(set(keys)))
    if after is not None and through is not None:
        born = (ds.field("inserted_batch") > after) & (ds.field("inserted_batch") <= through)
        died = (ds.field("deleted_batch") > after) & (ds.field("deleted_batch") <= through)
        condition = condition & (born | died)
    dataset = DeltaTable(settings.table_uri(_REGISTRY)).to_pyarrow_dataset()
    return dataset.to_table(filter=condition).to_pandas()


def _tuples_at(table: str, registry: pd.DataFrame, through: int) -> list[tuple]:
    """The tuples of ``table`` live after ingest batch ``through``, from its registry rows."""
    import pandas as pd

    from aspen.lake.tables import BASE_VALUE_COLUMNS

    if registry.empty or through < 0:
        return []
    died = registry["deleted_batch"]
    live = registry[(registry["inserted_batch"] <= through)
                    & (died.isna() | (died > through))]
    if live.empty:
        return []
    values = pd.DataFrame([json.loads(v) for v in live["values"]],
                          columns=list(BASE_VALUE_COLUMNS[table]), index=live.index)
    instances = values.assign(seq=live["inserted_seq"], batch_id=live["inserted_batch"],
                              inserted_at=live["inserted_at"], expires_at=live["expires_at"])
    frame = tuples_pandas(table, instances)
    return [plain_row(r) for r in frame.itertuples(index=False, name=None)]


def _view_rows(settings: Settings, view: str, point: BatchPoint) -> list[tuple]:
    from aspen.lake.view_log import read_view_at

    version = point.versions.get(view)
    if version is None:
        return []
    frame = read_view_at(settings, view, version, point.versions.get(_VIEW_LOG))
    return [plain_row(r) for r in frame[list(table_columns(view))]
            .itertuples(index=False, name=None)]


def _keyed(frame: pd.DataFrame, attributes: tuple[str, ...], keys: set[tuple]) -> pd.DataFrame:
    """The rows of ``frame`` whose attributes are one of ``keys``."""
    if frame.empty:
        return frame
    inside = [plain_row(r) in keys
              for r in frame[list(attributes)].itertuples(index=False, name=None)]
    return frame[inside]


def _view_key_rows(settings: Settings, view: str, point: BatchPoint, keys: set[tuple],
                   firsts: list[str]) -> list[tuple]:
    """The rows of ``view`` after ``point`` whose attributes are one of ``keys``."""
    from deltalake import DeltaTable

    from aspen.catalog import VIEW_COLUMNS
    from aspen.lake.deltars import text_field
    from aspen.lake.view_log import current_rows

    attributes = VIEW_COLUMNS[view]
    near = text_field(attributes[0]).isin(firsts)  # a cheap filter, then the exact one
    snapshot = DeltaTable(settings.table_uri(view), version=point.versions[view]) \
        .to_pyarrow_dataset().to_table(filter=near).to_pandas()
    log_version = point.versions.get(_VIEW_LOG)
    if log_version is None:
        frame = _keyed(snapshot, attributes, keys)
    else:
        log = DeltaTable(settings.table_uri(_VIEW_LOG), version=log_version) \
            .to_pyarrow_dataset().to_table(filter=(text_field("view") == view) & near) \
            .to_pandas()
        frame = current_rows(view, _keyed(snapshot, attributes, keys),
                             _keyed(log, attributes, keys))
    return [plain_row(r) for r in frame[list(table_columns(view))]
            .itertuples(index=False, name=None)]


def _view_change(settings: Settings, view: str, before: BatchPoint,
                 after: BatchPoint) -> SignedRows:
    """The change of ``view`` from ``before`` to ``after`` (see the module docstring)."""
    from deltalake import DeltaTable

    from aspen.catalog import VIEW_COLUMNS
    from aspen.lake.deltars import text_field

    columns = table_columns(view)
    if all(before.versions.get(t) == after.versions.get(t) for t in (view, _VIEW_LOG)):
        return SignedRows(columns)
    snapshot = after.versions.get(view)
    if snapshot is None or before.versions.get(view) != snapshot \
            or after.versions.get(_VIEW_LOG) is None:
        return diff(columns, _view_rows(settings, view, before), _view_rows(settings, view, after))
    import pyarrow.dataset as ds

    attributes = VIEW_COLUMNS[view]
    batch = DeltaTable(settings.table_uri(_VIEW_LOG), version=after.versions[_VIEW_LOG]) \
        .to_pyarrow_dataset().to_table(
            filter=(text_field("view") == view) & (ds.field("batch_id") > before.batch_id),
            columns=list(attributes)).to_pandas()
    keys = {plain_row(r) for r in batch.itertuples(index=False, name=None)}
    if not keys:
        return SignedRows(columns)
    firsts = sorted({k[0] for k in keys if k[0] is not None})
    return diff(columns, _view_key_rows(settings, view, before, keys, firsts),
                _view_key_rows(settings, view, after, keys, firsts))


def table_rows(settings: Settings, table: str, point: BatchPoint) -> SignedRows:
    """Every row of ``table`` after ``point``, each inserted once."""
    if is_base_table(table):
        rows = _tuples_at(table, _registry(settings, table), point.through)
    else:
        rows = _view_rows(settings, table, point)
    return SignedRows.inserts(table_columns(table), rows)


def batch_changes(settings: Settings, tables: Iterable[str], before: BatchPoint,
                  after: BatchPoint) -> dict[str, SignedRows]:
    """Per table, its signed change from ``before`` to ``after`` (see the module docstring)."""
    out: dict[str, SignedRows] = {}
    for table in tables:
        columns = table_columns(table)
        if is_base_table(table):
            touched = _registry(settings, table, after=before.through, through=after.through)
            if touched.empty:
                out[table] = SignedRows(columns)
                continue
            rows = _registry(settings, table, keys=touched["key"])
            out[table] = diff(columns, _tuples_at(table, rows, before.through),
                              _tuples_at(table, rows, after.through))
        else:
            out[table] = _view_change(settings, table, before, after)
    return out
