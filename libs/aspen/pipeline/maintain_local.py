"""``aspen maintain --runtime local``: the lake's logged updates through the in-process runtime.

One maintained batch:

1. apply every ingested batch to the base tables (Spark, Delta MERGE) — :mod:`aspen.lake.apply`;
2. load the engine state of the last committed batch (or start empty);
3. turn the registry's births and deaths since then into an engine :class:`Batch` and apply it;
4. flush MinShip buffers so that published provenance is complete;
5. write every view table (overwrite from the engine state), the metrics rows and the new engine
   state, keyed by batch id; then append the ledger row, last.

A crash anywhere before step 5's ledger row leaves the ledger at the previous batch: the rerun
loads that batch's state, recomputes the same batch and overwrites what the failed run wrote.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aspen.catalog import VIEWS
from aspen.errors import ConfigError, EngineError
from aspen.lake.deltars import read_table, replace_batch, table_exists, write_table
from aspen.pipeline import ledger
from aspen.pipeline.changes import batch_between
from aspen.pipeline.faults import crash_point
from aspen.pipeline.view_tables import view_frame
from aspen.settings import Settings

if TYPE_CHECKING:
    from aspen.runtime.local import LocalRuntime

__all__ = ["ENGINE_STATE", "METRICS", "MaintainReport", "load_runtime", "maintain_local",
           "write_metrics"]

ENGINE_STATE = "engine_state"
METRICS = "metrics"
#: How many past engine states to keep (time travel covers older ones).
KEEP_STATES = 3


@dataclass
class MaintainReport:
    """What one ``maintain`` run did."""

    batch_id: int
    through_ingest_batch: int
    inserted_vars: int = 0
    deleted_vars: int = 0
    view_changes: dict[str, tuple[int, int]] = field(default_factory=dict)
    view_sizes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    nothing_to_do: bool = False
    #: Lines about what ran after the batch (the continuous queries), printed after its own.
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Human-readable summary lines."""
        if self.nothing_to_do:
            return [f"nothing new since batch {self.batch_id} "
                    f"(ingest batch {self.through_ingest_batch})"]
        out = [
            f"batch {self.batch_id}: through ingest batch {self.through_ingest_batch}, "
            f"{self.inserted_vars} instances inserted, {self.deleted_vars} deleted, "
            f"{self.seconds:.2f} s"
        ]
        for view in VIEWS:
            if view in self.view_sizes:
                ins, dels = self.view_changes.get(view, (0, 0))
                out.append(f"  {view:<24} {self.view_sizes[view]:>7} rows  (+{ins} −{dels})")
        return out + self.notes


def load_runtime(settings: Settings, entry: ledger.LedgerEntry) -> LocalRuntime | None:
    """The engine state committed with ``entry``, or None on a fresh lake."""
    from aspen.runtime.local import LocalRuntime

    if entry.batch_id == 0 or not table_exists(settings, ENGINE_STATE):
        return None
    states = read_table(settings, ENGINE_STATE)
    match = states[states["batch_id"] == entry.batch_id]
    if match.empty:
        return None
    try:
        return LocalRuntime.load_state(bytes(match.iloc[0]["state"]))
    except EngineError:  # a state written by an older Aspen: rebuild from the registry
        return None


def _max_ingest_batch(variables: Any) -> int:
    if variables.empty:
        return -1
    born = variables["inserted_batch"].max()
    died = variables["deleted_batch"].dropna()
    return int(max(born, died.max() if not died.empty else born))


def maintain_local(
    settings: Settings,
    spark: Any = None,
    partitions: int | None = None,
    mode: str | None = None,
) -> MaintainReport:
    """Run one maintained batch on the in-process runtime; see the module docstring."""
    from aspen.lake.apply import apply_pending
    from aspen.runtime.local import LocalRuntime

    started = time.perf_counter()
    if spark is None:
        from aspen.spark.session import get_spark

        spark = get_spark("aspen-maintain")
    apply_pending(spark, settings)

    last = ledger.last_committed(settings)
    ledger.restore_uncommitted(settings, last)
    crash_point("maintain:after-apply")
    partitions = partitions or settings.partitions
    mode = mode or settings.mode
    if not table_exists(settings, "variables"):
        raise ConfigError("the lake has no base tables yet: run `aspen ingest FILE…` first")
    variables = read_table(settings, "variables")
    through = _max_ingest_batch(variables)

    runtime = load_runtime(settings, last) if last.runtime == "local" else None
    rebuild = runtime is None or (last.partitions, last.mode) != (partitions, mode)
    if not rebuild and through <= last.through_ingest_batch:
        return MaintainReport(last.batch_id, last.through_ingest_batch, nothing_to_do=True)
    if rebuild:
        # a fresh lake, or the plan changed (partitions / mode): rebuild from every live instance
        # shipped-bytes counting encodes every message (about 4× the build time); the per-tuple
        # provenance bytes are in the view tables, and the benchmarks measure shipped bytes
        runtime = LocalRuntime(views=VIEWS, partitions=partitions, mode=mode, measure_bytes=False)
        batch = batch_between(variables, after=-1, through=through)
    else:
        batch = batch_between(variables, after=last.through_ingest_batch, through=through)
    assert runtime is not None
    deltas = runtime.apply(batch) if batch else {}
    runtime.flush()

    entry = ledger.LedgerEntry(last.batch_id + 1, through, "local", partitions, mode)
    report = MaintainReport(entry.batch_id, through, len(batch.inserts), len(batch.deletes))
    for view in VIEWS:
        tuples = runtime.view(view)
        frame = view_frame(view, tuples, runtime.manager, entry.batch_id,
                           runtime.view_placement(view))
        write_table(settings, view, frame)
        crash_point(f"maintain:after-view-{view}")
        report.view_sizes[view] = len(tuples)
        if view in deltas:
            report.view_changes[view] = (len(deltas[view].inserted), len(deltas[view].deleted))
    report.seconds = time.perf_counter() - started
    _write_metrics(settings, entry.batch_id, runtime, report)
    crash_point("maintain:after-metrics")
    _write_state(settings, entry, runtime)
    crash_point("maintain:after-state")
    changes = sum(i + d for i, d in report.view_changes.values())
    crash_point("maintain:before-ledger")
    ledger.commit(settings, entry, len(batch.inserts) + len(batch.deletes), changes,
                  tables=VIEWS)
    crash_point("maintain:after-ledger")
    return report


def _write_state(settings: Settings, entry: ledger.LedgerEntry, runtime: LocalRuntime) -> None:
    import pyarrow as pa

    row = {
        "batch_id": entry.batch_id,
        "partitions": entry.partitions,
        "mode": entry.mode,
        "state": runtime.dump_state(),
    }
    schema = pa.schema(
        [("batch_id", pa.int64()), ("partitions", pa.int64()), ("mode", pa.string()),
         ("state", pa.large_binary())]
    )
    replace_batch(settings, ENGINE_STATE, pa.Table.from_pylist([row], schema=schema),
                  entry.batch_id)
    from deltalake import DeltaTable

    DeltaTable(settings.table_uri(ENGINE_STATE)).delete(
        f"batch_id <= {entry.batch_id - KEEP_STATES}")


def write_metrics(settings: Settings, batch_id: int, per_node: dict[int, dict[str, float]],
                  totals: dict[str, float]) -> None:
    """Replace batch ``batch_id``'s rows of the long-format ``metrics`` table (batch, node,
    metric, value); node -1 holds the totals. Both runtimes write through here.

    >>> write_metrics(lake, 3, {0: {"messages": 7.0}}, {"wall_seconds": 1.5})
    >>> from aspen.lake.deltars import read_table
    >>> read_table(lake, "metrics").sort_values("node").to_dict("records")
    [{'batch_id': 3, 'node': -1, 'metric': 'wall_seconds', 'value': 1.5}, \
{'batch_id': 3, 'node': 0, 'metric': 'messages', 'value': 7.0}]
    """
    import pandas as pd

    rows = [{"batch_id": batch_id, "node": node, "metric": name, "value": float(value)}
            for node, counters in sorted(per_node.items())
            for name, value in sorted(counters.items())]
    rows += [{"batch_id": batch_id, "node": -1, "metric": name, "value": float(value)}
             for name, value in totals.items()]
    replace_batch(settings, METRICS, pd.DataFrame(rows), batch_id)


def _write_metrics(settings: Settings, batch_id: int, runtime: LocalRuntime,
                   report: MaintainReport) -> None:
    """The local runtime's counters per node and in total, wall time and updates in."""
    metrics = runtime.metrics.as_dict()
    per_node = {node: {k: v for k, v in counters.items() if isinstance(v, int | float)}
                for node, counters in enumerate(metrics.get("nodes", []))}
    totals = {k: v for k, v in metrics.get("total", {}).items() if isinstance(v, int | float)}
    totals["wall_seconds"] = report.seconds
    totals["updates_in"] = float(report.inserted_vars + report.deleted_vars)
    write_metrics(settings, batch_id, per_node, totals)
