"""Apply the logged updates in this process: pandas, pyarrow and delta-rs, no Spark job.

The same apply as :mod:`aspen.lake.apply` — the same steps, the same rows, the same crash
safety — for the small batches that are most of a lake's life (a follower's next file, a
one-line correction), where Spark's 50–60 jobs cost seconds and the work costs milliseconds:

1. the **pending batches**: every ``ingest_files`` batch after the last ``apply_state`` one, and
   their records from ``updates`` (a pyarrow scan pruned to those batches' files by the Delta
   log's statistics);
2. the **pre-state**: registry instances live as of the last applied batch ``L`` (born at or
   before ``L``, not dead at or before ``L``, not expired), restricted to the touched keys;
3. the **fold** (:func:`aspen.lake.fold.fold_sorted`) over the rows sorted by (relation, key);
4. the writes, one delta-rs commit each: the registry ``variables`` (births inserted, deaths
   updated, MERGE on ``var``), each touched base table (killed instances deleted, instances
   born and alive inserted, MERGE on ``var``), ``apply_notes`` (inserted when absent, MERGE on
   ``seq``), then the ``apply_state`` rows — **last**: they are the commit marker.

Idempotent as the Spark path is: the pre-state depends on batch numbers only, never on what a
crashed run wrote after ``L``; variable names are ``v{seq}``; every MERGE writes the same values
again. So a crash after any step, then a rerun (either path), gives the tables of one clean run.

A tuple key is the JSON text Spark's ``to_json(array(key columns))`` writes (:func:`key_json`),
byte for byte, so registries written by either path join on ``key``. Timestamps are written as
``timestamp[us, tz=UTC]`` (Delta's ``timestamp``, what Spark writes); tables a fresh lake lacks
are created at Delta reader version 1, writer version 2, so Spark reads and MERGEs them too.

>>> key_json(["n1", 'say "hi"'])
'["n1","say \\\\"hi\\\\""]'
>>> ApplyReport(batches=[], updates=0).lines()
['nothing to apply: every ingested batch is applied']
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from aspen.errors import LakeError
from aspen.lake import tables
from aspen.lake.fold import FOLD_OUTPUT_COLUMNS, fold_sorted
from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    import pyarrow.dataset as pads

__all__ = [
    "ApplyReport",
    "apply_in_process",
    "ensure_tables",
    "fold_input",
    "key_json",
    "last_applied",
    "pending_batches",
    "pending_updates",
]

#: The columns of the update log the fold reads.
_UPDATE_COLUMNS = ("batch_id", "seq", "op", "relation", "src", "dst", "cost", "id", "x", "y",
                   "region", "ttl_s", "event_time", "ingested_at")
#: The registry columns a live instance brings into the fold.
_STATE_COLUMNS = ("var", "relation", "key", "values", "inserted_batch", "inserted_seq",
                  "inserted_at", "expires_at")
#: Columns of the fold's input and output that hold times, and those that hold numbers.
_TIME_COLUMNS = frozenset({"inserted_at", "expires_at", "deleted_at", "event_time",
                           "ingested_at"})
_FLOAT_COLUMNS = frozenset({"cost", "x", "y", "ttl_s"})
#: How Spark's ``to_json`` (Jackson) writes a character of a JSON string that it escapes: the
#: quote, the backslash and the control characters, the common ones by their short escapes, the
#: others as ``\\u`` and four upper-case hex digits; every other character is written as itself.
_JSON_ESCAPES: dict[int, str] = {code: f"\\u{code:04X}" for code in range(0x20)} | {
    ord('"'): '\\"', ord("\\"): "\\\\", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f",
    0x0D: "\\r",
}


@dataclass
class ApplyReport:
    """What one apply run did (either path)."""

    batches: list[int]
    updates: int
    born: int = 0
    died: int = 0
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Human-readable summary lines."""
        if not self.batches:
            return ["nothing to apply: every ingested batch is applied"]
        span = (
            f"batch {self.batches[0]}"
            if len(self.batches) == 1
            else f"batches {self.batches[0]}–{self.batches[-1]}"
        )
        out = [
            f"applied {span}: {self.updates} update(s), {self.born} instance(s) born, "
            f"{self.died} died, {len(self.notes)} note(s)"
        ]
        out += [f"  note: {note}" for note in self.notes]
        return out


def key_json(values: Sequence[str | None]) -> str:
    """A tuple key as Spark's ``to_json(array(...))`` of its string columns writes it: no
    spaces, non-ASCII characters as themselves, quotes, backslashes and control characters
    escaped as Jackson escapes them, a null as ``null``.

    >>> key_json(["a", "b"]), key_json(["s\\u00e9\\t"]), key_json([None])
    ('["a","b"]', '["sé\\\\t"]', '[null]')
    >>> key_json(["\\x01"])
    '["\\\\u0001"]'
    """
    return "[" + ",".join(
        "null" if value is None else '"' + value.translate(_JSON_ESCAPES) + '"'
        for value in values
    ) + "]"


# -- reading ------------------------------------------------------------------------------------


def _dataset(settings: Settings, name: str, pruning: str | None = None) -> pads.Dataset | None:
    """Table ``name`` as a pyarrow dataset (its files pruned by ``pruning``, a SQL predicate the
    Delta log's statistics decide per file), or None when the table does not exist."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(settings.table_uri(name))
    except TableNotFoundError:
        return None
    return table.to_pyarrow_dataset(file_pruning_predicate=pruning)


def _maximum(settings: Settings, name: str, column: str) -> int | None:
    """The largest value of integer column ``column`` of table ``name`` (None: no rows, or no
    table): from the Delta log's statistics when every file keeps them, else by reading."""
    import pyarrow.compute as pc

    from aspen.lake.deltars import column_max, table_exists

    if not table_exists(settings, name):
        return None
    try:
        return column_max(settings, name, column)
    except LakeError:  # a file without statistics: read the column
        dataset = _dataset(settings, name)
        assert dataset is not None
        high = pc.max(dataset.to_table(columns=[column]).column(column)).as_py()
        return None if high is None else int(high)


def last_applied(settings: Settings) -> int:
    """The last ingest batch applied to the base tables (0 when none), without Spark.

    >>> last_applied(Settings(lake="/nonexistent/lake"))
    0
    """
    return _maximum(settings, tables.APPLY_STATE, "batch_id") or 0


def pending_batches(settings: Settings, after: int) -> dict[int, int]:
    """The committed ingest batches after batch ``after``, each with its count of valid
    updates (the ``valid`` of its ``ingest_files`` rows).

    >>> pending_batches(Settings(lake="/nonexistent/lake"), 0)
    {}
    """
    import pyarrow.compute as pc

    dataset = _dataset(settings, tables.INGEST_FILES)
    if dataset is None:
        return {}
    files = dataset.to_table(columns=["batch_id", "valid"],
                             filter=pc.field("batch_id") > after).to_pandas()
    return {int(batch): int(valid) for batch, valid in
            files.groupby("batch_id")["valid"].sum().items()}


def pending_updates(settings: Settings) -> int:
    """How many logged updates the next apply has to apply (from ``ingest_files`` and
    ``apply_state``, no update is read): what decides whether it runs in process.

    >>> pending_updates(Settings(lake="/nonexistent/lake"))
    0
    """
    return sum(pending_batches(settings, last_applied(settings)).values())


def _updates(settings: Settings, after: int, through: int) -> pd.DataFrame:
    """The logged updates of the ingest batches in (``after``, ``through``], each with its
    tuple ``key``."""
    import pyarrow.compute as pc

    window = f"batch_id > {int(after)} AND batch_id <= {int(through)}"
    dataset = _dataset(settings, tables.UPDATES, pruning=window)
    if dataset is None:
        return pd.DataFrame(columns=[*_UPDATE_COLUMNS, "key"])
    rows = dataset.to_table(
        columns=list(_UPDATE_COLUMNS),
        filter=(pc.field("batch_id") > after) & (pc.field("batch_id") <= through),
    ).to_pandas()
    rows = rows.astype({c: object for c in ("src", "dst", "id", "region")})
    rows["key"] = [
        key_json([record[c] for c in tables.BASE_KEY_COLUMNS[record["relation"]]])
        for record in rows.to_dict("records")
    ] if len(rows) else pd.Series(dtype=object)
    return rows


def _pre_state(settings: Settings, last: int, touched: pd.DataFrame) -> pd.DataFrame:
    """Registry instances live as of batch ``last`` (what a clean run would have seen: not
    what a crashed run wrote after it) of the (relation, key) pairs in ``touched``."""
    import pyarrow.compute as pc

    from aspen.lake.deltars import text_field

    dataset = _dataset(settings, tables.VARIABLES)
    if dataset is None or touched.empty:
        return pd.DataFrame(columns=list(_STATE_COLUMNS))
    deleted, death = pc.field("deleted_batch"), text_field("death")
    alive = deleted.is_null() | (
        (deleted > last) & (death.is_null() | (death != "expired")))
    keys = text_field("key").isin(sorted(set(touched["key"])))
    live = dataset.to_table(
        columns=list(_STATE_COLUMNS),
        filter=(pc.field("inserted_batch") <= last) & alive & keys,
    ).to_pandas()
    # a key's text may be the key of two relations (a sensor and a triggered id)
    return live.merge(touched, on=["relation", "key"], how="inner")


def fold_input(settings: Settings, after: int, through: int) -> pd.DataFrame:
    """The fold's input for the ingest batches in (``after``, ``through``], as
    :func:`aspen.lake.apply.fold_input` makes it on Spark: their updates (``kind`` 1) and the
    instances live after batch ``after`` of the keys they touch (``kind`` 0), sorted by
    (relation, key). Timestamps are UTC.

    >>> fold_input(Settings(lake="/nonexistent/lake"), 0, 1).empty
    True
    """
    updates = _updates(settings, after, through)
    state = _pre_state(settings, after, updates[["relation", "key"]].drop_duplicates())
    update_rows = updates.assign(kind=1, var=None, values=None, inserted_at=pd.NaT,
                                 expires_at=pd.NaT)
    state_rows = state.rename(columns={"inserted_seq": "seq", "inserted_batch": "batch_id"})
    state_rows = state_rows.assign(kind=0, op=None, ttl_s=math.nan, event_time=pd.NaT,
                                   ingested_at=pd.NaT, **{c: None for c in (
                                       "src", "dst", "cost", "id", "x", "y", "region")})
    frames = [_typed(frame) for frame in (state_rows, update_rows) if len(frame)]
    if not frames:
        return _typed(update_rows.iloc[0:0])
    rows = pd.concat(frames, ignore_index=True)
    return rows.sort_values(["relation", "key"], kind="stable", ignore_index=True)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with one dtype per column whatever its values (times as UTC instants), so
    frames of the fold's input or output concatenate without a column changing type."""
    frame = frame.copy()
    for name in frame.columns:
        if name in _TIME_COLUMNS:
            frame[name] = pd.to_datetime(frame[name], utc=True)
        elif name in _FLOAT_COLUMNS:
            frame[name] = frame[name].astype("float64")
        else:
            frame[name] = frame[name].astype(object)
    return frame


# -- the steps ----------------------------------------------------------------------------------


def _fold(rows: pd.DataFrame) -> pd.DataFrame:
    """The changes of every key in ``rows`` (a :func:`fold_input`), as
    :data:`~aspen.lake.fold.FOLD_OUTPUT_COLUMNS` rows."""
    out = [_typed(frame) for frame in fold_sorted([rows])] if len(rows) else []
    if not out:
        return _typed(pd.DataFrame(columns=list(FOLD_OUTPUT_COLUMNS)))
    return pd.concat(out, ignore_index=True)


def _absent(value: Any) -> bool:
    return value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value))


def _column(values: Iterable[Any], kind: pa.DataType) -> pa.Array:
    """One Arrow column of ``kind`` from Python or pandas values (absent ones null)."""
    import pyarrow as pa

    items = list(values)
    if pa.types.is_timestamp(kind):
        # the fold floors its times to microseconds; pandas keeps nanoseconds
        stamps = pd.to_datetime(pd.Series(items, dtype=object), utc=True).dt.floor("us")
        return pa.Array.from_pandas(stamps).cast(kind)
    if pa.types.is_integer(kind):
        return pa.array([None if _absent(v) else int(v) for v in items], type=kind)
    if pa.types.is_floating(kind):
        return pa.array([None if _absent(v) else float(v) for v in items], type=kind)
    return pa.array([None if _absent(v) else str(v) for v in items], type=kind)


def _arrow(frame: pd.DataFrame, name: str, renames: dict[str, str] | None = None,
           extra: Sequence[tuple[str, pa.DataType]] = ()) -> pa.Table:
    """The rows of ``frame`` as an Arrow table of table ``name``'s schema (column ``c`` taken
    from ``renames.get(c, c)``), plus the ``extra`` columns of ``frame``."""
    import pyarrow as pa

    schema = tables.arrow_schema_of(name)
    renames = renames or {}
    fields = [*schema, *(pa.field(c, kind) for c, kind in extra)]
    return pa.Table.from_arrays(
        [_column(frame[renames.get(f.name, f.name)], f.type) for f in fields],
        schema=pa.schema(fields),
    )


def _delta(settings: Settings, name: str):
    from deltalake import DeltaTable

    return DeltaTable(settings.table_uri(name))


def _from_source(columns: Iterable[str]) -> dict[str, str]:
    """``{target column: source column}`` for a MERGE's update or insert, every name quoted
    (``values`` is a word of SQL)."""
    return {f"`{c}`": f"s.`{c}`" for c in columns}


def _merge_registry(settings: Settings, instances: pd.DataFrame) -> None:
    """Births inserted, deaths recorded in ``variables`` (one MERGE on ``var``)."""
    source = _arrow(instances, tables.VARIABLES)
    died = ("deleted_batch", "deleted_seq", "deleted_at", "death")
    (
        _delta(settings, tables.VARIABLES)
        .merge(source, "t.var = s.var", source_alias="s", target_alias="t")
        .when_matched_update(updates=_from_source(died))
        .when_not_matched_insert(updates=_from_source(source.column_names))
        .execute()
    )


def _merge_base(settings: Settings, relation: str, instances: pd.DataFrame) -> None:
    """Killed instances deleted from base table ``relation``, instances born and alive inserted
    (one MERGE on ``var``)."""
    import pyarrow as pa

    mine = instances[instances["relation"] == relation]
    source = _arrow(mine, relation, renames={"batch_id": "inserted_batch", "seq": "inserted_seq"},
                    extra=[("deleted_batch", pa.int64())])
    columns = tables.arrow_schema_of(relation).names
    (
        _delta(settings, relation)
        .merge(source, "t.var = s.var", source_alias="s", target_alias="t")
        .when_matched_delete(predicate="s.deleted_batch IS NOT NULL")
        .when_not_matched_insert(updates=_from_source(columns),
                                 predicate="s.deleted_batch IS NULL")
        .execute()
    )


def _merge_notes(settings: Settings, notes: pd.DataFrame) -> None:
    """The notes inserted into ``apply_notes`` unless there already (one MERGE on ``seq``)."""
    source = _arrow(notes, tables.APPLY_NOTES,
                    renames={"batch_id": "note_batch", "seq": "note_seq"})
    (
        _delta(settings, tables.APPLY_NOTES)
        .merge(source, "t.seq = s.seq", source_alias="s", target_alias="t")
        .when_not_matched_insert_all()
        .execute()
    )


def _append(settings: Settings, name: str, rows: list[tuple]) -> None:
    """Append ``rows`` (tuples in the table's column order) to table ``name`` in one commit
    (created when missing, as every engine creates Aspen's tables)."""
    import pyarrow as pa

    from aspen.lake.deltars import append_table

    schema = tables.arrow_schema_of(name)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    append_table(settings, name, pa.Table.from_arrays(
        [_column(values, f.type) for values, f in zip(columns, schema, strict=True)],
        schema=schema))


def ensure_tables(settings: Settings, names: Iterable[str]) -> None:
    """Create each table of ``names`` that does not exist, empty, at Delta reader version 1 and
    writer version 2 (no deletion vectors, no column mapping: Spark and delta-rs both write it;
    :func:`aspen.lake.deltars.append_table`).

    >>> import tempfile
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> ensure_tables(lake, ["apply_notes"])
    >>> from deltalake import DeltaTable
    >>> DeltaTable(lake.table_uri("apply_notes")).protocol().min_writer_version
    2
    """
    for name in names:
        _append(settings, name, [])


def _apply_pending(settings: Settings) -> ApplyReport:
    """Steps 1–4 of the module docstring, the caller holding the maintainer lease."""
    from aspen.lake.deltars import table_exists

    if not table_exists(settings, tables.APPLY_STATE):  # a fresh lake
        ensure_tables(settings, (tables.VARIABLES, tables.APPLY_NOTES, *tables.BASE_TABLES))
    last = last_applied(settings)
    per_batch = {batch: {"updates": valid, "born": 0, "died": 0, "notes": 0}
                 for batch, valid in pending_batches(settings, last).items()}
    if not per_batch:
        return ApplyReport(batches=[], updates=0)
    pending = sorted(per_batch)
    changes = _fold(fold_input(settings, last, pending[-1]))
    instances = changes[changes["row_kind"] == "instance"]
    notes = changes[changes["row_kind"] == "note"].sort_values("note_seq")

    # the counts the Spark path takes from its summary query: a birth counts in its batch
    # (died in the same batch or not), a death in its own
    for record in instances[["inserted_batch", "deleted_batch"]].to_dict("records"):
        if int(record["inserted_batch"]) > last:
            per_batch[int(record["inserted_batch"])]["born"] += 1
        if not _absent(record["deleted_batch"]):
            per_batch[int(record["deleted_batch"])]["died"] += 1
    for batch in notes["note_batch"]:
        per_batch[int(batch)]["notes"] += 1

    relations = set(instances["relation"])
    if relations:
        _merge_registry(settings, instances)
        for relation in tables.BASE_TABLES:
            if relation in relations:
                _merge_base(settings, relation, instances)
    if len(notes):
        _merge_notes(settings, notes)

    applied_at = datetime.now(UTC)
    _append(settings, tables.APPLY_STATE, [
        (b, applied_at, c["updates"], c["born"], c["died"], c["notes"])
        for b, c in sorted(per_batch.items())
    ])
    return ApplyReport(
        batches=pending,
        updates=sum(c["updates"] for c in per_batch.values()),
        born=sum(c["born"] for c in per_batch.values()),
        died=sum(c["died"] for c in per_batch.values()),
        notes=[str(note) for note in notes["note"]],
    )


def apply_in_process(settings: Settings) -> ApplyReport:
    """Apply every committed, not yet applied ingest batch in this process (module docstring):
    what :func:`aspen.lake.apply.apply_pending` does for a small backlog or without a session.

    It holds the lake's maintainer lease: the one this thread holds already (``maintain``, the
    TTL sweep), else its own for the call — refused with one line while another maintainer or
    a follower holds it.

    Example, on a lake::

        apply_in_process(Settings(lake="/tmp/lake")).lines()
        # ['applied batch 1: 5 update(s), 4 instance(s) born, 1 died, 0 note(s)']
    """
    from aspen.lake.deltars import table_exists
    from aspen.lake.lease import MaintainerLease

    with MaintainerLease.reentrant(settings, "aspen apply"):
        if not table_exists(settings, tables.INGEST_FILES):
            return ApplyReport(batches=[], updates=0)
        return _apply_pending(settings)
