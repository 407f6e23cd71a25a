"""Planning and running registered queries: statistics from the lake → the optimizer → the
stored plan → a run on Spark.

:func:`plan_query` reads the statistics of the query's tables (and the join selectivities its
last run observed), asks the optimizer for the best plan and stores it in ``queries``.
:func:`run_query` runs a query with its stored plan (planning it first when it has none, or
when asked to plan again). :func:`run_registered` runs every registered query — what the
maintainer calls after each maintained batch, inside its lease, so the queries see the batch's
tables as committed.

Example, on a lake::

    run_registered(spark, settings, batch_id=7)
    # [QueryOutcome(name='hot_links', report=RunReport(...), error=None)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aspen.errors import AspenError
from aspen.optimizer.stats import Stats
from aspen.queries.execute import RunReport, execute
from aspen.queries.planner import DEFAULT_METHOD, choose_plan
from aspen.queries.registry import get_query, list_queries
from aspen.queries.reoptimize import record_plan
from aspen.queries.spec import ParsedQuery
from aspen.queries.stats import lake_stats, table_versions
from aspen.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Planned", "QueryOutcome", "plan_query", "run_after_batch", "run_query",
           "run_registered"]


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
    """One query of :func:`run_registered`: its run, or the error that stopped it."""

    name: str
    report: RunReport | None
    error: AspenError | None = None


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
              method: str | None = None, batch_id: int | None = None) -> RunReport:
    """Run the registered query ``name`` with its stored plan (planned first if it has none,
    or if ``replan``); estimates are those of the statistics the plan was chosen under."""
    entry = get_query(settings, name)
    if replan or entry.plan is None or entry.stats is None:
        planned = plan_query(spark, settings, name, method)
        return execute(spark, settings, planned.parsed, planned.plan, planned.stats,
                       planned.versions, batch_id)
    return execute(spark, settings, entry.parsed(), entry.plan, Stats.from_json(entry.stats),
                   None, batch_id)


def run_registered(spark: SparkSession, settings: Settings, batch_id: int | None = None,
                   replan: bool = False) -> list[QueryOutcome]:
    """Run every registered query (by name); a query that fails (a table it reads is missing,
    its SQL no longer parses) is reported and the others still run."""
    out = []
    for entry in list_queries(settings):
        try:
            report = run_query(spark, settings, entry.name, replan=replan, batch_id=batch_id)
        except AspenError as err:
            out.append(QueryOutcome(entry.name, None, err))
            continue
        out.append(QueryOutcome(entry.name, report))
    return out


def run_after_batch(settings: Settings, batch_id: int) -> list[str]:
    """Run every registered query after the maintained batch ``batch_id`` (in the maintainer,
    inside its lease: every table read is of that committed batch); one line per query. No
    query registered: nothing runs and Spark is not started.

    >>> import tempfile
    >>> run_after_batch(Settings(lake=tempfile.mkdtemp()), batch_id=1)
    []
    """
    if not list_queries(settings):
        return []
    from aspen.queries.names import result_table
    from aspen.spark.session import get_spark

    lines = []
    for outcome in run_registered(get_spark("aspen-maintain"), settings, batch_id):
        if outcome.report is None:
            lines.append(f"  query {outcome.name}: not run: {outcome.error}")
            continue
        report = outcome.report
        planned = "" if report.matches else " (not every join ran as planned)"
        lines.append(f"  query {outcome.name}: {report.result_rows} rows into "
                     f"{result_table(outcome.name)} in {report.seconds:.2f} s{planned}")
    return lines
