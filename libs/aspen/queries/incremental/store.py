"""The state and the result of an incrementally maintained query as Delta tables (delta-rs, no
JVM), written so that a batch applies exactly once.

**State:** one table per query, ``qstate_<name>`` (:func:`state_table`), of one fixed schema
(:data:`STATE_COLUMNS`): a row per group (``part`` = ``group``, ``key`` its key and ``value`` its
components as canonical JSON (:mod:`.codec`), ``n`` its count), a row per distinct join-input
row (``part`` = ``rel:<alias>``, ``key`` the row, ``n`` its multiplicity) and ``meta`` rows:
``batch`` (``n`` = the maintained batch the state covers), ``plan`` (``value`` = the query's SQL
and spec: a state of other SQL is not used), ``journal`` (batches and rows appended since the
table was last written whole) and ``rows:<table>`` per table read (``n`` = its rows as the
query reads them, unfiltered: the live statistics' row counts, :mod:`.livestats`). The
table is a **journal**: a batch *appends* its changed rows (``n`` = 0: the group or row is
gone) with the meta rows, each row tagged with the batch
— one commit, so the state covers a batch entirely or not at all — and a reader keeps, per
``(part, key)``, the row of the latest batch. Every :data:`REWRITE_AFTER_BATCHES` batches, or
when the journal holds more rows than the state, the batch writes the whole state instead
(an overwrite): an append costs a third of a MERGE on delta-rs, and reads stay bounded.

**Result:** ``q_<name>``, the query's output columns only (as a recomputing run writes it). A
batch's changes are one MERGE: every result row whose count changed is deleted (matched on all
columns, NULL-safe) and inserted again as many times as it now counts. Every write to it —
an empty append when nothing changed — carries the batch in its commit's metadata
(:data:`BATCH_KEY`), so :func:`result_batch` says which batch the result shows.

>>> state_table("hot"), STATE_COLUMNS
('qstate_hot', ('part', 'key', 'value', 'n', 'batch_id'))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aspen.errors import LakeError
from aspen.queries.incremental.codec import dumps, loads
from aspen.queries.incremental.compile import IncrementalPlan
from aspen.queries.incremental.monoids import SumMonoid
from aspen.queries.incremental.state import State
from aspen.queries.names import check_name, result_table
from aspen.queries.spec import ParsedQuery
from aspen.settings import Settings

if TYPE_CHECKING:
    import pyarrow as pa

    from aspen.queries.incremental.apply import BatchOutcome

__all__ = ["BATCH_KEY", "REWRITE_AFTER_BATCHES", "STATE_COLUMNS", "STATE_PREFIX", "StoredState",
           "apply_result", "fingerprint", "read_state", "result_batch", "state_schema",
           "state_table", "write_result", "write_state", "write_state_changes"]

#: A query ``x`` keeps its incremental state in the table ``qstate_x``.
STATE_PREFIX = "qstate_"
#: Batches appended to a state table before one writes it whole.
REWRITE_AFTER_BATCHES = 48
#: The commit metadata key of ``q_<name>`` writes naming the batch the result shows.
BATCH_KEY = "aspen.incremental.batch"
_META, _GROUP = "meta", "group"
#: The meta rows ``rows:<table>``: the table's rows as the query reads it (live statistics).
_ROWS = "rows:"


#: The state table's columns.
STATE_COLUMNS: tuple[str, ...] = ("part", "key", "value", "n", "batch_id")


def state_schema() -> pa.Schema:
    """The state table's Arrow schema (:data:`STATE_COLUMNS`)."""
    import pyarrow as pa

    return pa.schema([("part", pa.string()), ("key", pa.string()), ("value", pa.string()),
                      ("n", pa.int64()), ("batch_id", pa.int64())])


def state_table(name: str) -> str:
    """The state table of query ``name``."""
    return STATE_PREFIX + check_name(name)


def fingerprint(parsed: ParsedQuery) -> str:
    """What the state was built for: the SQL and the execution spec, as JSON text."""
    return json.dumps({"sql": parsed.sql, "spec": parsed.spec.to_json()}, sort_keys=True)


class StoredState:
    """A state read back: the state, the plan fingerprint it was built for, and the Delta
    version of the state table read."""

    def __init__(self, state: State, plan_text: str, version: int) -> None:
        self.state = state
        self.plan_text = plan_text
        self.version = version


def _open(settings: Settings, table: str):
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(settings.table_uri(table))
    except TableNotFoundError:
        return None


def _state_rows(plan: IncrementalPlan, state: State, groups: Any = None,
                rows: Any = None) -> list[dict[str, Any]]:
    """The state rows of the given groups and join-input rows (None: all); one that is gone
    has ``n`` = 0."""
    out = []
    batch = state.batch_id
    for key in state.groups if groups is None else groups:
        group = state.groups.get(key)
        out.append({"part": _GROUP, "key": dumps(key),
                    "value": None if group is None else dumps(group[1]),
                    "n": 0 if group is None else group[0], "batch_id": batch})
    for position, rel in enumerate(plan.relations):
        held = state.rows[position]
        for row in (held if rows is None else rows[position]):
            out.append({"part": f"rel:{rel.alias}", "key": dumps(row), "value": None,
                        "n": held.get(row, 0), "batch_id": batch})
    return out


def _meta(state: State, plan_text: str) -> list[dict[str, Any]]:
    batches, rows = state.journal
    counted = [{"part": _META, "key": _ROWS + table, "value": None, "n": int(n),
                "batch_id": state.batch_id} for table, n in sorted((state.table_rows or {})
                                                                    .items())]
    return [{"part": _META, "key": "batch", "value": None, "n": state.batch_id,
             "batch_id": state.batch_id},
            {"part": _META, "key": "plan", "value": plan_text, "n": 0,
             "batch_id": state.batch_id},
            {"part": _META, "key": "journal", "value": str(rows), "n": batches,
             "batch_id": state.batch_id}, *counted]


def write_state(settings: Settings, name: str, plan: IncrementalPlan, state: State,
                plan_text: str) -> int:
    """Overwrite ``qstate_<name>`` with the whole ``state`` (a build, or the journal written
    whole); the new version."""
    import pyarrow as pa
    from deltalake import write_deltalake

    state.journal = (0, 0)
    data = pa.Table.from_pylist(_state_rows(plan, state) + _meta(state, plan_text),
                                schema=state_schema())
    found = _open(settings, state_table(name))
    write_deltalake(found if found is not None else settings.table_uri(state_table(name)),
                    data, mode="overwrite", schema_mode="overwrite")
    return _open(settings, state_table(name)).version()


def write_state_changes(settings: Settings, name: str, plan: IncrementalPlan, state: State,
                        outcome: BatchOutcome, plan_text: str) -> int:
    """Append the groups and join-input rows ``outcome`` changed and the meta rows of
    ``state`` to ``qstate_<name>`` in one commit (or write it whole, see the module
    docstring); the new version."""
    import pyarrow as pa
    from deltalake import write_deltalake

    changed = _state_rows(plan, state, outcome.groups, outcome.rows)
    batches, rows = state.journal
    batches, rows = batches + 1, rows + len(changed) + 3 + len(state.table_rows or {})
    if batches >= REWRITE_AFTER_BATCHES or rows > max(state.row_count(), 1000):
        return write_state(settings, name, plan, state, plan_text)
    found = _open(settings, state_table(name))
    if found is None:
        raise LakeError(f"the state table {state_table(name)!r} is missing: rebuild the query")
    state.journal = (batches, rows)
    write_deltalake(found, pa.Table.from_pylist(changed + _meta(state, plan_text),
                                                schema=state_schema()), mode="append")
    return found.version()


def read_state(settings: Settings, name: str, plan: IncrementalPlan) -> StoredState | None:
    """The stored state of query ``name`` (None before its first write): per ``(part, key)``
    the row of the latest batch."""
    from aspen.queries.incremental.apply import new_state

    found = _open(settings, state_table(name))
    if found is None:
        return None
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for record in found.to_pyarrow_table().to_pylist():
        key = (record["part"], record["key"])
        held = latest.get(key)
        if held is None or record["batch_id"] >= held["batch_id"]:
            latest[key] = record
    state, plan_text = new_state(plan), ""
    counted: dict[str, int] = {}
    positions = {f"rel:{r.alias}": i for i, r in enumerate(plan.relations)}
    changes: list[dict[tuple, int]] = [{} for _ in plan.relations]
    for (part, key), record in latest.items():
        if part == _META:
            if key == "batch":
                state.batch_id = int(record["n"])
            elif key == "plan":
                plan_text = record["value"] or ""
            elif key == "journal":
                state.journal = (int(record["n"]), int(record["value"] or 0))
            elif key.startswith(_ROWS):
                counted[key[len(_ROWS):]] = int(record["n"])
        elif not record["n"]:
            continue  # gone
        elif part == _GROUP:
            components = loads(record["value"])
            state.groups[loads(key)] = (int(record["n"]), tuple(
                list(c) if isinstance(a.monoid, SumMonoid) else c  # SUM's is a list
                for a, c in zip(plan.aggregates, components, strict=True)))
        elif part in positions:
            changes[positions[part]][loads(key)] = int(record["n"])
    for position, rows in enumerate(changes):
        state.apply_rows(position, rows)
    state.table_rows = counted if set(plan.tables) <= set(counted) else None
    return StoredState(state, plan_text, found.version())


# -- the result ------------------------------------------------------------------------------

def result_batch(settings: Settings, name: str) -> int | None:
    """The batch the last write of ``q_<name>`` by this path shows (None: another writer, or
    no table)."""
    found = _open(settings, result_table(name))
    if found is None:
        return None
    last = found.history(1)
    value = last[0].get(BATCH_KEY) if last else None
    return None if value is None else int(value)


def _arrow(plan: IncrementalPlan, rows: Mapping[tuple, int],
           schema: pa.Schema | None = None) -> pa.Table:
    import pyarrow as pa

    expanded = [row for row, count in rows.items() for _ in range(count)]
    if schema is not None:
        return pa.Table.from_pylist(
            [dict(zip(plan.output_names, r, strict=True)) for r in expanded], schema=schema)
    columns = {}
    for i, column in enumerate(plan.output_names):
        values = [r[i] for r in expanded]
        columns[column] = pa.array(values) if any(v is not None for v in values) \
            else pa.array(values, pa.string())
    return pa.table(columns)


def write_result(settings: Settings, name: str, plan: IncrementalPlan,
                 rows: Mapping[tuple, int], batch_id: int) -> None:
    """Overwrite ``q_<name>`` with the whole result ``rows`` (row → count), marked
    ``batch_id``."""
    from deltalake import CommitProperties, write_deltalake

    found = _open(settings, result_table(name))
    write_deltalake(found if found is not None else settings.table_uri(result_table(name)),
                    _arrow(plan, rows), mode="overwrite", schema_mode="overwrite",
                    commit_properties=CommitProperties(custom_metadata={BATCH_KEY: str(batch_id)}))


def apply_result(settings: Settings, name: str, plan: IncrementalPlan,
                 changes: Mapping[tuple, int], batch_id: int) -> bool:
    """Apply the result's row-count ``changes`` to ``q_<name>`` in one commit marked
    ``batch_id``; False when they do not fit the table (a new column type: rewrite it
    whole)."""
    import pyarrow as pa
    from deltalake import CommitProperties, write_deltalake

    found = _open(settings, result_table(name))
    if found is None:
        return False
    commit = CommitProperties(custom_metadata={BATCH_KEY: str(batch_id)})
    schema = pa.schema(found.schema().to_arrow())  # arro3 → pyarrow (Arrow C interface)
    if list(schema.names) != list(plan.output_names):
        return False
    if not changes:
        write_deltalake(found, schema.empty_table(), mode="append", commit_properties=commit)
        return True
    try:  # rows the table's column types cannot hold: rewrite it whole
        pa.Table.from_pylist([dict(zip(plan.output_names, row, strict=True))
                              for row in changes], schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return False
    held = _held_counts(found, plan, changes)
    targets = {}
    for row, change in changes.items():
        count = held.get(row, 0) + change
        if count < 0:
            return False  # the table is not what the state says: rewrite it
        targets[row] = count
    source_rows = [dict(zip(plan.output_names, row, strict=True)) | {"aspen_op": "delete"}
                   for row in targets]
    source_rows += [dict(zip(plan.output_names, row, strict=True)) | {"aspen_op": "insert"}
                    for row, count in targets.items() for _ in range(count)]
    try:
        source = pa.Table.from_pylist(source_rows,
                                      schema=schema.append(pa.field("aspen_op", pa.string())))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return False
    same = " AND ".join(f'(t."{c}" IS NOT DISTINCT FROM s."{c}")' for c in plan.output_names)
    (found.merge(source, f"s.aspen_op = 'delete' AND {same}", source_alias="s",
                 target_alias="t", commit_properties=commit)
     .when_matched_delete()
     .when_not_matched_insert(updates={f'"{c}"': f's."{c}"' for c in plan.output_names},
                              predicate="s.aspen_op = 'insert'")
     .execute())
    return True


def _held_counts(found: Any, plan: IncrementalPlan,
                 changes: Mapping[tuple, int]) -> dict[tuple, int]:
    """How many copies of each changed row ``q_<name>`` holds now (read filtered by the first
    column's values when they are plain)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from aspen.queries.incremental.delta import plain_row

    dataset = found.to_pyarrow_dataset()
    first = [row[0] for row in changes]
    kind = dataset.schema.field(plan.output_names[0]).type
    wanted = set(changes)
    expression = None
    textual = pa.types.is_string(kind) or pa.types.is_large_string(kind) \
        or pa.types.is_string_view(kind)
    if textual and all(isinstance(v, str) for v in first):
        expression = pc.field(plan.output_names[0]).cast(pa.string()).isin(sorted(set(first)))
    elif pa.types.is_integer(kind) and all(isinstance(v, int) and not isinstance(v, bool)
                                           for v in first):
        expression = pc.field(plan.output_names[0]).isin(sorted(set(first)))
    table = dataset.to_table(filter=expression) if expression is not None else dataset.to_table()
    held: dict[tuple, int] = {}
    for record in table.to_pylist():
        row = plain_row(record[c] for c in plan.output_names)
        if row in wanted:
            held[row] = held.get(row, 0) + 1
    return held
