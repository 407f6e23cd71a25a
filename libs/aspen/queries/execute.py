"""Running a query on Spark following a given plan, into its result table ``q_<name>``.

Each relation is its table at a pinned Delta version, its filters applied, its columns renamed
``alias__column``. The plan's joins are built bottom-up in its order, each with the hint of
its method on its right (build) input: ``broadcast`` for ``broadcast_hash``, ``shuffle_hash``,
``merge`` for ``sort_merge``. Spark keeps that order: a hinted join is never flattened by its
join reordering (``ReorderJoin`` leaves joins with hints alone; cost-based reordering is off
too), and adaptive execution is off for the run (:data:`EXECUTION_CONF`), so it switches no
join strategy. The outputs, grouping and DISTINCT are one SELECT over the joined rows.

The result is computed once by a local checkpoint — which runs the frame's own query
execution, so its executed plan then holds the SQL metrics (:mod:`aspen.queries.physical`) —
then written to ``q_<name>`` (Delta overwrite; the commit's ``userMetadata`` is the run id).
Each plan node becomes a row of ``query_runs``: the operator planned and the one that ran,
estimated and observed rows.

>>> JOIN_HINTS["sort_merge"], EXECUTION_CONF["spark.sql.adaptive.enabled"]
('merge', 'false')
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import reduce
from typing import TYPE_CHECKING, Any

from aspen.optimizer.cost import cost_of
from aspen.optimizer.stats import Stats
from aspen.queries.base_tuples import is_base_table
from aspen.queries.names import flat_name, result_table
from aspen.queries.physical import (
    describe,
    find_join,
    input_rows,
    matches,
    physical_tree,
    scan_rows,
)
from aspen.queries.planner import plan_nodes
from aspen.queries.runs import RunRow, append_runs
from aspen.queries.spec import ParsedQuery, RelationSpec, final_select
from aspen.queries.stats import read_relation, table_versions
from aspen.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from aspen.optimizer.query import Query

__all__ = ["EXECUTION_CONF", "JOIN_HINTS", "RunReport", "execute", "plan_frame"]

#: The Spark join hint that makes each planned join method run (on the right input).
JOIN_HINTS: dict[str, str] = {
    "broadcast_hash": "broadcast",
    "shuffle_hash": "shuffle_hash",
    "sort_merge": "merge",
}
#: The SQL conf of a run: Spark neither reorders the joins nor re-plans them adaptively.
EXECUTION_CONF: dict[str, str] = {
    "spark.sql.cbo.joinReorder.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
}


@dataclass(frozen=True)
class RunReport:
    """One run: its id, the plan and its cost, the result's rows, the seconds, and per plan
    node its ``query_runs`` row."""

    query: str
    run_id: str
    plan: dict[str, Any]
    plan_cost: float
    result_rows: int
    seconds: float
    nodes: tuple[RunRow, ...]

    @property
    def matches(self) -> bool:
        """Whether every join ran as the operator its plan chose."""
        return all(n.matches for n in self.nodes)


def _relation_frame(spark: SparkSession, settings: Settings, rel: RelationSpec,
                    version: int) -> DataFrame:
    from pyspark.sql import functions as F

    frame = read_relation(spark, settings, rel.table, version)
    for predicate in rel.filters:
        frame = frame.filter(F.expr(predicate))
    return frame.select(*(F.col(f"`{c}`").alias(flat_name(rel.alias, c)) for c in rel.columns))


def _aliases(plan: Mapping[str, Any]) -> frozenset[str]:
    if "scan" in plan:
        return frozenset({str(plan["scan"])})
    return _aliases(plan["left"]) | _aliases(plan["right"])


def _joined(plan: Mapping[str, Any], frames: Mapping[str, DataFrame], query: Query) -> DataFrame:
    """The joins of ``plan``, in its order, each hinted with its method."""
    from pyspark.sql import functions as F

    if "scan" in plan:
        return frames[str(plan["scan"])]
    left, right = _joined(plan["left"], frames, query), _joined(plan["right"], frames, query)
    preds = query.joins_between(_aliases(plan["left"]), _aliases(plan["right"]))
    condition = reduce(lambda a, b: a & b, (
        F.col(flat_name(*p.left.split(".", 1))) == F.col(flat_name(*p.right.split(".", 1)))
        for p in preds))
    return left.join(right.hint(JOIN_HINTS[str(plan["join"])]), on=condition, how="inner")


def plan_frame(spark: SparkSession, settings: Settings, parsed: ParsedQuery,
               plan: Mapping[str, Any], versions: Mapping[str, int]) -> tuple[DataFrame, str]:
    """The query's result as a DataFrame that follows ``plan``, and the temporary view of the
    joined rows it selects from (drop it when done)."""
    frames = {rel.alias: _relation_frame(spark, settings, rel, versions[rel.table])
              for rel in parsed.spec.relations}
    joined = _joined(plan, frames, parsed.query)
    view = f"aspen_query_{parsed.name}_{uuid.uuid4().hex[:8]}"
    joined.createOrReplaceTempView(view)
    return spark.sql(final_select(parsed.spec, view)), view


def execute(spark: SparkSession, settings: Settings, parsed: ParsedQuery,
            plan: Mapping[str, Any], stats: Stats, versions: Mapping[str, int] | None = None,
            batch_id: int | None = None, record: bool = True) -> RunReport:
    """Run ``parsed`` following ``plan`` (estimates from ``stats``), write ``q_<name>`` and
    append the run to ``query_runs`` (unless ``record`` is false: the caller appends the
    report's rows, e.g. a whole round's in one commit).

    Example, on a lake::

        execute(spark, lake, parsed, plan, stats).result_rows
        # 42
    """
    from aspen.spark.checkpoint import checkpointed, checkpointed_rdd
    from aspen.spark.session import temporary_conf

    query = parsed.query
    cost = cost_of(plan, query, stats)  # also refuses a plan that is not of this query
    nodes = plan_nodes(plan, query, stats)
    versions = dict(versions or table_versions(settings, parsed.tables))
    run_id, started_at = uuid.uuid4().hex, datetime.now(UTC)
    clock = time.monotonic()
    with temporary_conf(spark, EXECUTION_CONF):
        frame, view = plan_frame(spark, settings, parsed, plan, versions)
        try:
            result = checkpointed(frame, spark)  # runs frame's execution: its metrics fill
            tree = physical_tree(frame)
        finally:
            spark.catalog.dropTempView(view)
    rows = result.count()
    (result.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
     .option("userMetadata", run_id).save(settings.table_uri(result_table(parsed.name))))
    checkpointed_rdd(result).unpersist(False)
    seconds = time.monotonic() - clock

    known = set(query.relations)
    base = dict(query=parsed.name, run_id=run_id, batch_id=batch_id, started_at=started_at,
                seconds=seconds, result_rows=rows, plan=json.dumps(plan), plan_cost=cost,
                versions=json.dumps(versions))
    out = []
    for node in nodes:
        relations = ",".join(sorted(node.aliases))
        if node.operator == "scan":
            alias = next(iter(node.aliases))
            observed = scan_rows(tree, alias, known, is_base_table(query.relations[alias]))
            out.append(RunRow(**base, node=node.path, relations=relations, operator="scan",
                              executed="scan", matches=True, estimated_rows=node.estimated_rows,
                              observed_rows=observed, left_rows=None, right_rows=None))
            continue
        assert node.left is not None and node.right is not None
        found, swapped = find_join(tree, node.left, node.right, known)
        executed = None if found is None else describe(found) + (" (inputs swapped)"
                                                                  if swapped else "")
        left_rows = right_rows = None
        if found is not None:
            first, second = (input_rows(c) for c in found.children)
            left_rows, right_rows = (second, first) if swapped else (first, second)
        out.append(RunRow(
            **base, node=node.path, relations=relations, operator=node.operator,
            executed=executed,
            matches=found is not None and not swapped and matches(node.operator, found),
            estimated_rows=node.estimated_rows,
            observed_rows=None if found is None else found.rows,
            left_rows=left_rows, right_rows=right_rows))
    if record:
        append_runs(settings, out)
    return RunReport(parsed.name, run_id, dict(plan), cost, rows, seconds, tuple(out))
