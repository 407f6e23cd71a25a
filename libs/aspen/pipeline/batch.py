"""One maintained batch, written once for both runtimes.

:func:`run_batch` is the skeleton every ``aspen maintain`` batch follows, whichever runtime runs
the operators (:class:`BatchRuntime`: the in-process one of :mod:`aspen.pipeline.maintain_local`,
the Spark one of :mod:`aspen.pipeline.maintain_spark`):

0. **check** that the view tables, the change log and the runtime's state the last committed
   batch left are all there (:func:`~aspen.pipeline.integrity.check_lake`: Delta logs and folder
   listings, no scan), else refuse in one line before writing anything; a **rebuild**
   (``aspen maintain --rebuild``) checks nothing, moves aside a table whose log cannot be read
   and rebuilds every view from the registry;
1. **apply** the logged updates to the base tables and the registry (:mod:`aspen.lake.apply`),
   and restore any table a failed run wrote past the last committed batch
   (:func:`~aspen.pipeline.ledger.restore_uncommitted`);
2. **read** what changed since the committed batch (the runtime turns the registry's births and
   deaths into its first round's input; None: nothing to do);
3. **run** the operators to quiescence, MinShip buffers flushed (decision 5);
4. **publish** the view changes — every row added, whose provenance changed, or dropped — and
   write them as one append to ``view_changes``, or, when the batch compacts (a rebuild, or a
   log past :func:`~aspen.lake.view_log.should_compact`'s bound), every view's snapshot and an
   emptied log (:mod:`aspen.lake.view_log`);
5. **write** the runtime's state and the batch's metrics;
6. **commit**: the ledger row, last, recording every table version the batch wrote.

A crash anywhere before step 6 leaves the ledger at the previous batch; the rerun restores the
tables written since and recomputes the batch from the committed state. A runtime may keep its
state in memory between batches (a warm follower): :meth:`BatchRuntime.committed` says the batch
committed, :meth:`BatchRuntime.discard` that it did not, so what it holds is never ahead of the
ledger.

>>> MaintainReport(3, 7, nothing_to_do=True).lines()
['nothing new since batch 3 (ingest batch 7)']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from aspen.catalog import VIEWS
from aspen.crashpoints import crash_point
from aspen.errors import ConfigError, LakeError
from aspen.lake.deltars import column_maxima, read_table, replace_batch, table_exists
from aspen.lake.view_log import VIEW_CHANGES, log_size, should_compact, truncate_log
from aspen.pipeline import ledger
from aspen.pipeline.provenance_vars import PROV_INDEX_TABLE, write_for_batch
from aspen.settings import Settings

if TYPE_CHECKING:
    from aspen.spark.phase_meter import PhaseMeter

__all__ = ["BatchRuntime", "MaintainReport", "registry_through", "registry_through_rows",
           "run_batch", "write_metrics"]

METRICS = "metrics"


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
    #: Whether the batch rewrote the view snapshots (and emptied the change log).
    compacted: bool = False
    #: Variables the compaction moved to their ideal place in the BDD order (0: none moved).
    relabelled: int = 0
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
        if self.relabelled:
            out.append(f"  {self.relabelled} variables moved to their place in the BDD order "
                       "(every row rewritten)")
        return out + self.notes


class BatchRuntime(Protocol):
    """What :func:`run_batch` needs of a runtime. One object serves one lake and may be reused
    for its next batch (warm)."""

    #: The ledger's name of the runtime (``local``, ``spark``).
    name: str
    partitions: int
    mode: str
    #: The views it maintains.
    views: tuple[str, ...]
    #: Tables holding its state that the ledger governs (restored after a failed run).
    state_tables: tuple[str, ...]

    def read(self, settings: Settings, last: ledger.LedgerEntry, through: int,
             report: MaintainReport) -> bool:
        """Prepare the batch after ``last`` through ingest batch ``through`` (counting the
        instances in ``report``); False when there is nothing to do."""

    def force_rebuild(self) -> None:
        """Make the next batch rebuild every view and the runtime's state from the registry,
        whatever the runtime holds or the lake keeps (``aspen maintain --rebuild``)."""

    def rebuilds(self) -> bool:
        """Whether the prepared batch rebuilds every view from scratch (then it compacts)."""

    def rewrites(self) -> bool:
        """Whether the stored formulas are in another variable order than the runtime's (a
        lake written before the runtime kept one): then the batch compacts, which rewrites
        every view's rows in the runtime's order."""

    def run(self) -> None:
        """Run the prepared batch to quiescence, MinShip buffers flushed."""

    def publish(self, entry: ledger.LedgerEntry) -> None:
        """List the views' changes since the committed batch (what :meth:`write_views`
        appends to the log), provenance encoded."""

    def view_rows(self) -> int:
        """How many rows the views hold after :meth:`run` (for the compaction bound)."""

    def write_views(self, settings: Settings, entry: ledger.LedgerEntry, compact: bool,
                    report: MaintainReport) -> None:
        """Publish the views: their changes appended to the log, or (``compact``) their
        snapshots and an emptied log; view sizes and changes into ``report``."""

    def write_state(self, settings: Settings, entry: ledger.LedgerEntry) -> None:
        """Write the runtime's state as of ``entry``."""

    def write_metrics(self, settings: Settings, entry: ledger.LedgerEntry,
                      report: MaintainReport, meter: PhaseMeter) -> None:
        """Write the batch's metrics rows (:func:`write_metrics`)."""

    def committed(self, entry: ledger.LedgerEntry) -> None:
        """The batch committed: what the runtime holds is the lake's state as of ``entry``."""

    def discard(self) -> None:
        """The batch failed: forget anything held past the committed batch."""


def registry_through(settings: Settings) -> int:
    """The last ingest batch the registry records a birth or a death of (-1: none), from the
    Delta log's file statistics, else by reading the two columns (:func:`registry_through_rows`).

    >>> registry_through(Settings(lake="/nonexistent/lake"))
    -1
    """
    if not table_exists(settings, "variables"):
        return -1
    try:
        born, died = column_maxima(settings, "variables", ("inserted_batch", "deleted_batch"))
    except LakeError:  # the statistics do not tell
        frame = read_table(settings, "variables", columns=["inserted_batch", "deleted_batch"])
        return registry_through_rows(frame)
    return _largest_batch((born, died))


def registry_through_rows(variables: pd.DataFrame | None) -> int:
    """:func:`registry_through` of registry rows already read (``inserted_batch``,
    ``deleted_batch``; a missing column counts as empty); -1 for none.

    >>> registry_through_rows(pd.DataFrame({"inserted_batch": [1, 4],
    ...                                     "deleted_batch": pd.array([5, None], dtype="Int64")}))
    5
    >>> registry_through_rows(None), registry_through_rows(pd.DataFrame({"inserted_batch": []}))
    (-1, -1)
    """
    if variables is None or variables.empty:
        return -1
    return _largest_batch(variables[c].max() for c in ("inserted_batch", "deleted_batch")
                          if c in variables)


def _largest_batch(values: Iterable[object]) -> int:
    """The largest known batch number of ``values`` (None, NaN and NA skipped); -1 for none."""
    known = [int(v) for v in values if v is not None and not pd.isna(v)]  # type: ignore[call-overload]
    return max(known, default=-1)


def run_batch(settings: Settings, runtime: BatchRuntime, meter: PhaseMeter,
              apply: Callable[[], Any], rebuild: bool = False) -> MaintainReport:
    """One maintained batch of ``runtime`` (see the module docstring); ``apply`` applies the
    logged updates (step 1), ``meter`` measures the phases. A damaged lake is refused
    (:class:`~aspen.pipeline.integrity.DamagedLakeError`) unless ``rebuild``, which rebuilds
    every view from the registry, committed as one batch even when nothing new was logged."""
    from aspen.pipeline import integrity

    started = time.perf_counter()
    # what a rebuild writes afresh: the views, the log, the runtime's state (governed or not)
    state = integrity.STATE_TABLES.get(runtime.name)
    rewritten = tuple(dict.fromkeys((*runtime.views, VIEW_CHANGES, PROV_INDEX_TABLE,
                                     *runtime.state_tables, *([state] if state else []))))
    notes: list[str] = []
    with meter.phase("apply"):
        if rebuild:
            notes = integrity.prepare_rebuild(settings, rewritten)
            runtime.force_rebuild()
        else:
            try:
                integrity.check_lake(settings)
            except integrity.DamagedLakeError:
                runtime.discard()
                raise
        apply()
        last = ledger.last_committed(settings)
        ledger.restore_uncommitted(settings, last, skip=rewritten if rebuild else ())
        crash_point("maintain:after-apply")
        if not table_exists(settings, "variables"):
            raise ConfigError("the lake has no base tables yet: run `aspen ingest FILE…` first")
        through = registry_through(settings)

    entry = ledger.LedgerEntry(last.batch_id + 1, through, runtime.name, runtime.partitions,
                               runtime.mode)
    report = MaintainReport(entry.batch_id, through)
    if rebuild:
        report.notes += [*notes, "  rebuilt every view, the change log and the runtime's state "
                                 "from the registry"]
    try:
        with meter.phase("read"):
            if not runtime.read(settings, last, through, report):
                runtime.committed(last)  # nothing ran: what it holds is still the committed state
                return MaintainReport(last.batch_id, last.through_ingest_batch,
                                      nothing_to_do=True)
        with meter.phase("rounds"):
            runtime.run()
        with meter.phase("publish"):
            runtime.publish(entry)
        with meter.phase("write"):
            _drop_uncommitted_log(settings, last)
            files, rows = log_size(settings)
            compact = runtime.rebuilds() or runtime.rewrites() or \
                should_compact(files, rows, runtime.view_rows())
            runtime.write_views(settings, entry, compact, report)
            report.compacted = compact
            # the variable index follows the views, in the same batch (provenance_vars)
            write_for_batch(settings, entry.batch_id, compact, last.table_versions)
            crash_point("maintain:after-prov-index")
            runtime.write_state(settings, entry)
            crash_point("maintain:after-state")
        report.seconds = time.perf_counter() - started
        runtime.write_metrics(settings, entry, report, meter)
        crash_point("maintain:after-metrics")
        changes = sum(i + d for i, d in report.view_changes.values())
        crash_point("maintain:before-ledger")
        entry = ledger.commit(settings, entry, report.inserted_vars + report.deleted_vars,
                              changes, tables=(*runtime.views, VIEW_CHANGES, PROV_INDEX_TABLE,
                                      *runtime.state_tables))
    except BaseException:
        runtime.discard()
        raise
    runtime.committed(entry)
    crash_point("maintain:after-ledger")
    if entry.batch_id % COMPACT_EVERY == 0:
        compact_fragmented(settings)
    return report


#: Every this many batches, a batch compacts the tables that grow a file or more a batch.
COMPACT_EVERY = 16
#: A table with more data files than this is compacted.
MAX_FILES = 16
#: Tables the maintainer writes a file or more to a batch, and that readers scan whole (the
#: ledger, the registry, the apply's state); none is restored by the ledger.
_MAINTAINER_TABLES = ("ledger", "metrics", "variables", "apply_state", "apply_notes", "link",
                      "sensor", "triggered", "region_seed")
#: The update log's tables (an ingest appends a file to each); compacted under the log-writer
#: lease, skipped while an ingest holds it.
_LOG_TABLES = ("ingest_files", "updates", "quarantine", "readings")


def compact_fragmented(settings: Settings) -> list[str]:
    """Compact every fragmented table a follower's batches grow (delta-rs, no JVM), so that a
    batch's reads stay as cheap at its thousandth batch as at its first; the tables compacted.
    The caller holds the maintainer lease; the log's tables are done only if the log-writer
    lease is free at once."""
    from aspen.errors import LeaseBusyError
    from aspen.lake.deltars import compact_if_fragmented
    from aspen.lake.lease import LogWriterLease

    done = [name for name in _MAINTAINER_TABLES
            if compact_if_fragmented(settings, name, MAX_FILES)]
    try:
        with LogWriterLease.reentrant(settings, "aspen maintain (compaction)", wait=0):
            done += [name for name in _LOG_TABLES
                     if compact_if_fragmented(settings, name, MAX_FILES)]
    except LeaseBusyError:  # an ingest is writing: the next compaction will do them
        pass
    return done


def _drop_uncommitted_log(settings: Settings, last: ledger.LedgerEntry) -> None:
    """Empty a change log no committed batch recorded (a failed first batch wrote it, so
    :func:`~aspen.pipeline.ledger.restore_uncommitted` cannot restore it): its rows must not
    mix with the rerun's."""
    from aspen.lake.committed import committed_versions

    if table_exists(settings, VIEW_CHANGES) and \
            VIEW_CHANGES not in (last.table_versions or committed_versions(settings)):
        truncate_log(settings)


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
