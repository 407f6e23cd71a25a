"""Planning and running registered queries: statistics from the lake → the optimizer → the
stored plan → a run on Spark.

:func:`plan_query` reads the statistics of the query's tables (and the join selectivities its
last run observed), asks the optimizer for the best plan and stores it in ``queries``.
:func:`run_query` runs a query with its stored plan (planning it first when it has none, or
when asked to plan again). :func:`run_registered` runs every registered query, each under a
time limit (:mod:`aspen.queries.guard`: its Spark job group is cancelled when the limit passes)
and catching every error per query — after a maintained batch a query the incremental compiler
accepts is brought to that batch in process by its state (:mod:`aspen.queries.incremental`,
no Spark; a join in the order of its stored plan, and re-planned when its live statistics
moved, :mod:`aspen.queries.follow`), the others are recomputed on Spark; a query registered
with provenance is always run whole through the provenance instrumentation
(:mod:`aspen.queries.query_provenance`), never incrementally — then appends the
round's ``query_runs`` rows in one commit, records each query's outcome in
``query_status`` (:mod:`aspen.queries.status`) in another and, after a maintained batch, each
query's path and cost in ``query_batches`` (:mod:`aspen.queries.batch_costs`) in a third.
:func:`run_round` is that round as lines to print — what the query worker
(:mod:`aspen.queries.worker`) runs after maintained batches, outside the maintainer's lease.

Example, on a lake::

    run_registered(spark, settings, batch_id=7)
    # [QueryOutcome(name='hot_links', report=RunReport(...), error=None, ...)]
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aspen.errors import LakeError
from aspen.optimizer.stats import Stats
from aspen.queries.batch_costs import BatchCost
from aspen.queries.execute import RunReport, execute
from aspen.queries.guard import run_limited, time_limit_from_env
from aspen.queries.incremental.expr import NotIncrementalError
from aspen.queries.incremental.maintain import IncrementalReport, maintain_incremental
from aspen.queries.planner import DEFAULT_METHOD, choose_plan
from aspen.queries.query_provenance import ProvenanceReport, run_with_provenance
from aspen.queries.registry import RegisteredQuery, get_query, list_queries
from aspen.queries.reoptimize import record_plan
from aspen.queries.spec import ParsedQuery
from aspen.queries.stats import lake_stats, table_versions
from aspen.queries.status import FAILED, OK, TIMED_OUT, QueryStatus, one_line
from aspen.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Planned", "QueryOutcome", "plan_query", "run_after_batch", "run_query",
           "run_registered", "run_round", "spark_runner"]

#: Runs one query of a round: (its name, its Spark job group) → its report.
RunOne = Callable[[str, str], RunReport]
#: Cancels the Spark jobs of a job group.
Cancel = Callable[[str], None]


@dataclass(frozen=True)
class Planned:
    """A query's chosen plan, its cost, the statistics it was chosen under, and the Delta
    versions of the tables those statistics were read at."""

    parsed: ParsedQuery
    plan: dict[str, Any]
    cost: float
    stats: Stats
    document: dict[str, Any]
    versions: dict[str, int]


@dataclass(frozen=True)
class QueryOutcome:
    """One query of :func:`run_registered`: its run, or the error that stopped it (any
    exception: Aspen's, Spark's, Py4J's) and whether the time limit cancelled it.

    >>> QueryOutcome("hot", None, ZeroDivisionError("division by zero")).line()
    '  query hot: failed: ZeroDivisionError: division by zero'
    """

    name: str
    report: RunReport | IncrementalReport | ProvenanceReport | None
    error: Exception | None = None
    timed_out: bool = False
    seconds: float = 0.0
    limit: float | None = None

    @property
    def status(self) -> str:
        """``ok``, ``failed`` or ``timed out``."""
        if self.timed_out:
            return TIMED_OUT
        return OK if self.error is None and self.report is not None else FAILED

    @property
    def reason(self) -> str | None:
        """Why it did not run, in one line (None when it ran)."""
        if self.timed_out:
            limit = "" if self.limit is None else f" after {self.limit:g} s"
            return f"cancelled{limit} (the time limit, {TIME_LIMIT_HINT})"
        if self.error is not None:
            return one_line(self.error)
        return None if self.report is not None else "not run"

    def line(self) -> str:
        """The outcome as a line of a batch's output."""
        from aspen.queries.names import result_table

        if self.report is None:
            return f"  query {self.name}: {self.status}: {self.reason}"
        if isinstance(self.report, IncrementalReport | ProvenanceReport):
            return f"  query {self.report.line()}"
        planned = "" if self.report.matches else " (not every join ran as planned)"
        return (f"  query {self.name}: {self.report.result_rows} rows into "
                f"{result_table(self.name)} in {self.report.seconds:.2f} s{planned}")

    def to_cost(self, batch_id: int | None) -> BatchCost:
        """The row of ``query_batches`` this outcome records (its path and cost).

        >>> report = IncrementalReport("hot", 7, "incremental", 2, 1203, 0.041)
        >>> cost = QueryOutcome("hot", report, seconds=0.05).to_cost(7)
        >>> cost.path, cost.mode, cost.rows_changed, cost.result_rows
        ('incremental', 'incremental', 2, None)
        """
        from aspen.queries.batch_costs import FAILED_PATH, INCREMENTAL, RECOMPUTED

        report, now = self.report, datetime.now(UTC)
        if isinstance(report, IncrementalReport):
            return BatchCost(self.name, batch_id, INCREMENTAL, report.mode, float(self.seconds),
                             report.rows_changed, None, report.state_rows, now)
        if isinstance(report, RunReport | ProvenanceReport):
            return BatchCost(self.name, batch_id, RECOMPUTED, None, float(self.seconds), None,
                             report.result_rows, None, now)
        return BatchCost(self.name, batch_id, FAILED_PATH, None, float(self.seconds), None,
                         None, None, now)

    def to_status(self, batch_id: int | None) -> QueryStatus:
        """The row of ``query_status`` this outcome records."""
        run_id = (self.report.run_id if isinstance(self.report, RunReport | ProvenanceReport)
                  else None)
        return QueryStatus(self.name, self.status, self.reason, batch_id, run_id,
                           datetime.now(UTC), float(self.seconds))


#: Where the time limit is set, as the reason of a cancelled query says.
TIME_LIMIT_HINT = "ASPEN_QUERY_TIME_LIMIT"


def plan_query(spark: SparkSession, settings: Settings, name: str,
               method: str | None = None) -> Planned:
    """Plan the registered query ``name`` from the lake's statistics and store the plan."""
    entry = get_query(settings, name)
    parsed = entry.parsed()
    versions = table_versions(settings, parsed.tables)
    found = lake_stats(spark, settings, parsed, versions, observed_since=entry.registered_at)
    cost, plan = choose_plan(parsed.query, found.stats, method)
    record_plan(settings, entry, "planned", method or DEFAULT_METHOD, plan, cost, found.stats,
                found.document)
    return Planned(parsed, plan, cost, found.stats, found.document, versions)


def run_query(spark: SparkSession, settings: Settings, name: str, replan: bool = False,
              method: str | None = None, batch_id: int | None = None,
              record: bool = True) -> RunReport:
    """Run the registered query ``name`` with its stored plan (planned first if it has none,
    or if ``replan``); estimates are those of the statistics the plan was chosen under. Its SQL
    is parsed and checked again (:mod:`aspen.queries.limits`) before it runs, so a query
    registered by older code that the checks now refuse does not run. ``record``: append its
    rows to ``query_runs`` (else the caller does)."""
    entry = get_query(settings, name)
    if replan or entry.plan is None or entry.stats is None:
        planned = plan_query(spark, settings, name, method)
        return execute(spark, settings, planned.parsed, planned.plan, planned.stats,
                       planned.versions, batch_id, record)
    return execute(spark, settings, entry.parsed(), entry.plan, Stats.from_json(entry.stats),
                   None, batch_id, record)


def spark_runner(spark: SparkSession, settings: Settings, batch_id: int | None,
                  replan: bool) -> tuple[RunOne, Cancel]:
    """Run a query on ``spark`` with its jobs in a job group of their own (interrupted when
    cancelled), and cancel a group."""
    context = spark.sparkContext

    def run_one(name: str, group: str) -> RunReport:
        context.setJobGroup(group, f"aspen continuous query {name}", interruptOnCancel=True)
        try:
            return run_query(spark, settings, name, replan=replan, batch_id=batch_id,
                             record=False)
        finally:  # the thread's later jobs are in no group
            for key in ("spark.jobGroup.id", "spark.job.description",
                        "spark.job.interruptOnCancel"):
                context.setLocalProperty(key, None)  # type: ignore[arg-type]

    return run_one, context.cancelJobGroup


#: The crash point between an incremental batch's state and result writes and its plan's.
AFTER_STATE = "query:after-state"


def _incremental(settings: Settings, entry: RegisteredQuery,
                 batch_id: int) -> IncrementalReport | None:
    """Bring ``entry`` to batch ``batch_id`` by its state, in process, joining in the order of
    its stored plan, then re-plan it when its live statistics moved
    (:mod:`aspen.queries.follow`; the next batch adopts a new plan); None when the query is
    not maintained incrementally, or the lake cannot give the batch's changes (a batch not
    committed, a table missing): it is then recomputed."""
    from aspen.crashpoints import crash_point
    from aspen.errors import ConfigError
    from aspen.queries.follow import follow_statistics

    try:
        report = maintain_incremental(settings, entry.name, entry.parsed(), batch_id,
                                      entry.plan)
    except (NotIncrementalError, LakeError):
        return None
    crash_point(AFTER_STATE)
    if report.statistics is None:
        return report
    try:
        note = follow_statistics(settings, entry, report.statistics, batch_id).note()
    except (ConfigError, LakeError) as err:  # the result is right; the plan stays
        note = f"plan kept (not re-planned: {one_line(err)})"
    return replace(report, note=note)


def run_registered(spark: SparkSession | Callable[[], SparkSession] | None, settings: Settings,
                   batch_id: int | None = None,
                   replan: bool = False, *, time_limit: float | None = None,
                   run_one: RunOne | None = None, cancel: Cancel | None = None,
                   should_stop: Callable[[], bool] = lambda: False,
                   incremental: bool = True,
                   provenance_engine: str = "spark") -> list[QueryOutcome]:
    """Run every registered query (by name), each within ``time_limit`` seconds (None: no
    limit); a query that fails — its SQL is refused, a table it reads is missing, Spark fails,
    the limit cancels it — is reported and recorded, and the others still run. The round's
    ``query_runs`` rows are appended in one commit, every query's outcome is recorded in
    ``query_status`` in one more and, after a maintained batch, its path and cost in
    ``query_batches`` (:mod:`aspen.queries.batch_costs`) in a third. ``run_one``/``cancel``
    replace the Spark runner (tests);
    once ``should_stop()`` says so, the queries not yet started are left out (not recorded).
    After a maintained batch (``batch_id``, not ``replan``, ``incremental``) each query is
    first tried incrementally in process; ``spark`` may be a function giving the session,
    called only when a query must be recomputed. A query registered with provenance is run
    whole with its formulas on ``provenance_engine`` (``spark``, or ``duckdb`` in process:
    there the time limit is recorded but cannot stop the run)."""
    from aspen.queries.batch_costs import append_batch_costs
    from aspen.queries.runs import append_runs
    from aspen.queries.status import record_statuses

    entries = list_queries(settings)
    if not entries:
        return []
    if (run_one is None or cancel is None) and spark is None:
        raise ValueError("run_registered needs a SparkSession or run_one and cancel")
    round_id = uuid.uuid4().hex[:8]
    out = []
    for entry in entries:
        if should_stop():
            break
        if entry.provenance:
            out.append(_with_provenance(spark, settings, entry, round_id, time_limit,
                                        provenance_engine))
            continue
        if batch_id is not None and incremental and not replan:
            done = run_limited(lambda e=entry: _incremental(settings, e, batch_id), time_limit,
                               lambda: None)
            if done.value is not None or done.error is not None or done.timed_out:
                out.append(QueryOutcome(entry.name, done.value, done.error, done.timed_out,
                                        done.seconds, time_limit))
                continue
        if run_one is None or cancel is None:
            assert spark is not None
            session = spark if hasattr(spark, "sparkContext") else spark()  # type: ignore[operator]
            run_one, cancel = spark_runner(session, settings, batch_id, replan)
        group = f"aspen-query-{entry.name}-{round_id}"
        run, stop = run_one, cancel
        done = run_limited(lambda n=entry.name, g=group, r=run: r(n, g), time_limit,
                           lambda g=group, c=stop: c(g))
        out.append(QueryOutcome(entry.name, done.value, done.error, done.timed_out,
                                done.seconds, time_limit))
    rows = [node for o in out if isinstance(o.report, RunReport) for node in o.report.nodes]
    if rows:
        append_runs(settings, rows)
    record_statuses(settings, [o.to_status(batch_id) for o in out])
    if batch_id is not None:  # a round after a maintained batch: its cost per query
        append_batch_costs(settings, [o.to_cost(batch_id) for o in out])
    return out


def _with_provenance(spark: SparkSession | Callable[[], SparkSession] | None,
                    settings: Settings, entry: RegisteredQuery, round_id: str,
                    time_limit: float | None, engine: str) -> QueryOutcome:
    """One query of a round run whole with provenance; on Spark its jobs in a job group of
    their own, cancelled when the time limit passes."""
    name = entry.name

    def run() -> ProvenanceReport:
        return run_with_provenance(settings, name, entry.sql, engine)[0]

    if engine != "spark" or spark is None:  # in process: nothing to cancel
        done = run_limited(run, time_limit, lambda: None)
        return QueryOutcome(name, done.value, done.error, done.timed_out, done.seconds,
                            time_limit)
    session = spark if hasattr(spark, "sparkContext") else spark()  # type: ignore[operator]
    context, group = session.sparkContext, f"aspen-query-{name}-{round_id}"

    def grouped() -> ProvenanceReport:
        context.setJobGroup(group, f"aspen continuous query {name} (provenance)",
                            interruptOnCancel=True)
        try:
            return run()
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]

    done = run_limited(grouped, time_limit, lambda: context.cancelJobGroup(group))
    return QueryOutcome(name, done.value, done.error, done.timed_out, done.seconds, time_limit)


def run_round(settings: Settings, batch_id: int, spark: Callable[[], SparkSession],
              time_limit: float | None = None, run_one: RunOne | None = None,
              cancel: Cancel | None = None,
              should_stop: Callable[[], bool] = lambda: False) -> list[str]:
    """Run every registered query after the committed batch ``batch_id``: one line per query.
    ``spark`` gives the session, called only when a query is registered (and no ``run_one``).

    >>> import tempfile
    >>> run_round(Settings(lake=tempfile.mkdtemp()), 1, spark=lambda: None)
    []
    """
    if not list_queries(settings):
        return []
    return [outcome.line() for outcome in run_registered(
        None if run_one is not None else spark, settings, batch_id, time_limit=time_limit,
        run_one=run_one, cancel=cancel, should_stop=should_stop)]


def run_after_batch(settings: Settings, batch_id: int) -> list[str]:
    """:func:`run_round` on the maintainer's Spark application, in the calling thread, with the
    time limit of ``ASPEN_QUERY_TIME_LIMIT``. No query registered: nothing runs and Spark is not
    started.

    >>> import tempfile
    >>> run_after_batch(Settings(lake=tempfile.mkdtemp()), batch_id=1)
    []
    """
    from aspen.spark.session import get_spark

    return run_round(settings, batch_id, lambda: get_spark("aspen-maintain"),
                     time_limit_from_env())
