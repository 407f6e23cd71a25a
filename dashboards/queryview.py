"""Helpers of the Queries page: the continuous queries' registry rows, their last outcomes,
the path each takes after a batch (incremental or recomputed, and why), plans drawn as trees,
runs per operator, the cost of the last batches and plan histories, from the ``queries``,
``query_status``, ``query_runs``, ``query_batches`` and ``plans`` tables (read by
``lakeview``). Pure functions over frames: no Streamlit call, no lake access.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields

import pandas as pd
from lakeview import _dot_escaped, _quote, when_text

from aspen.errors import ConfigError
from aspen.optimizer.query import Query
from aspen.optimizer.stats import Stats
from aspen.queries.batch_costs import BATCHES_TABLE
from aspen.queries.planner import PlanNode, plan_nodes
from aspen.queries.plans import PLANS_TABLE
from aspen.queries.registry import QUERIES_TABLE, RegisteredQuery
from aspen.queries.reoptimize import StatChange
from aspen.queries.runs import RUNS_TABLE
from aspen.queries.status import OK, STATUS_TABLE

__all__ = [
    # re-exported from the package for the Queries page
    "BATCHES_TABLE",
    "OK",
    "PLANS_TABLE",
    "QUERIES_TABLE",
    "RUNS_TABLE",
    "STATUS_TABLE",
    "RegisteredQuery",
    # this module's own
    "BATCH_COST_COLUMNS",
    "PLAN_HISTORY_COLUMNS",
    "PLAN_NODE_FILLS",
    "PLAN_TREE_COLUMNS",
    "RUN_TABLE_COLUMNS",
    "changes_text",
    "cost_change_text",
    "batch_cost_rows",
    "latest_run",
    "maintenance_path",
    "operator_label",
    "outcome_text",
    "plan_dot",
    "plan_history_rows",
    "plan_text",
    "plan_tree",
    "query_list",
    "registered_queries",
    "rows_text",
    "run_table",
    "same_plan",
    "stat_change_text",
    "status_of",
    "stored_plan",
]


def stored_plan(entry: RegisteredQuery) -> tuple[list[PlanNode], dict[str, str]]:
    """The operators of ``entry``'s stored plan (:func:`aspen.queries.planner.plan_nodes`, rows
    estimated under its stored statistics) and its aliases → tables. Raises what a join graph,
    plan or statistics document that cannot be read raises (ValueError, KeyError, …).

    >>> from datetime import datetime
    >>> graph = '{"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]}'
    >>> plan = '{"join": "shuffle_hash", "left": {"scan": "a"}, "right": {"scan": "b"}}'
    >>> entry = RegisteredQuery("q", "SELECT 1", datetime(2026, 1, 1), graph, "{}", plan)
    >>> nodes, relations = stored_plan(entry)
    >>> [n.operator for n in nodes], relations
    (['scan', 'scan', 'shuffle_hash'], {'a': 't', 'b': 'u'})
    """
    query = Query.from_json(json.loads(entry.query_json))
    nodes = plan_nodes(entry.plan or {}, query, Stats.from_json(entry.stats or {}))
    return nodes, dict(query.relations)


def _missing(value: object) -> bool:
    """Whether ``value`` is a missing scalar (None, NaN, NaT, NA)."""
    if value is None:
        return True
    try:
        return bool(pd.isna(value))  # type: ignore[call-overload]
    except (TypeError, ValueError):  # a list or array is a value
        return False


def registered_queries(frame: pd.DataFrame) -> list[RegisteredQuery]:
    """The rows of the ``queries`` table as :class:`RegisteredQuery`, by name; a missing value
    (NaN, NaT) or column is None.

    >>> frame = pd.DataFrame({"name": ["b", "a"], "sql": ["SELECT 2", "SELECT 1"],
    ...                       "plan_cost": [1.5, float("nan")]})
    >>> [(q.name, q.sql, q.plan_cost, q.plan) for q in registered_queries(frame)]
    [('a', 'SELECT 1', None, None), ('b', 'SELECT 2', 1.5, None)]
    """
    names = [f.name for f in fields(RegisteredQuery)]
    out = []
    for record in frame.to_dict("records"):
        values = {n: None if _missing(record.get(n)) else record.get(n) for n in names}
        values["name"] = str(values["name"])
        values["sql"] = "" if values["sql"] is None else str(values["sql"])
        out.append(RegisteredQuery(**values))  # type: ignore[arg-type]
    return sorted(out, key=lambda q: q.name)


def query_list(queries: Sequence[RegisteredQuery], runs: pd.DataFrame | None,
               statuses: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per query: its name, optimizer, when it was planned, the plan's cost, how often
    it ran and when last (``runs`` is the ``query_runs`` table, one row per plan node per run),
    and its SQL; with ``statuses`` (the ``query_status`` table) also its last outcome after a
    batch (:func:`outcome_text`).

    >>> q = RegisteredQuery("hot", "SELECT 1", pd.Timestamp("2026-01-01", tz="UTC"), "{}", "{}",
    ...                     plan_cost=2.5, optimizer="exhaustive")
    >>> runs = pd.DataFrame({"query": ["hot", "hot", "hot"], "run_id": ["r1", "r1", "r2"],
    ...     "started_at": pd.to_datetime(["2026-01-02", "2026-01-02", "2026-01-03"], utc=True)})
    >>> query_list([q], runs).to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
    [{'name': 'hot', 'optimizer': 'exhaustive', 'planned at': '–', 'cost': 2.5, 'runs': 2,
      'last run': '2026-01-03 00:00:00', 'sql': 'SELECT 1'}]
    >>> statuses = pd.DataFrame({"query": ["hot"], "status": ["failed"], "batch_id": [7],
    ...                          "reason": ["division by zero"]})
    >>> query_list([q], runs, statuses)["last outcome"].tolist()
    ['failed after batch 7: division by zero']
    """
    rows = []
    for query in queries:
        mine = None
        if runs is not None and not runs.empty and {"query", "run_id", "started_at"} <= set(runs):
            mine = runs[runs["query"].astype(str) == query.name]
        ran = mine is not None and not mine.empty
        row = {
            "name": query.name,
            "optimizer": query.optimizer or "",
            "planned at": when_text(query.planned_at),
            "cost": float("nan") if query.plan_cost is None else float(query.plan_cost),
            "runs": int(mine["run_id"].nunique()) if ran else 0,  # type: ignore[index]
            "last run": when_text(mine["started_at"].max()) if ran else "–",  # type: ignore[index]
        }
        if statuses is not None:
            row["last outcome"] = outcome_text(status_of(statuses, query.name))
        row["sql"] = query.sql
        rows.append(row)
    columns = ["name", "optimizer", "planned at", "cost", "runs", "last run"]
    columns += ["last outcome"] if statuses is not None else []
    return pd.DataFrame(rows, columns=[*columns, "sql"])


def status_of(statuses: pd.DataFrame | None, query: str) -> dict[str, object] | None:
    """The ``query_status`` row of ``query`` (its last outcome after a batch), or None.

    >>> frame = pd.DataFrame({"query": ["a", "b"], "status": ["ok", "timed out"]})
    >>> status_of(frame, "b")["status"], status_of(frame, "c"), status_of(None, "a")
    ('timed out', None, None)
    """
    if statuses is None or statuses.empty or "query" not in statuses:
        return None
    mine = statuses[statuses["query"].astype(str) == query]
    return None if mine.empty else mine.iloc[-1].to_dict()


def outcome_text(row: Mapping[str, object] | None) -> str:
    """A query's last outcome in words: the status, the batch it ran after and the reason
    (one line); ``–`` when it never ran after a batch.

    >>> outcome_text({"status": "ok", "batch_id": 3.0, "reason": None})
    'ok after batch 3'
    >>> outcome_text({"status": "timed out", "batch_id": None, "reason": "cancelled after 120 s"})
    'timed out: cancelled after 120 s'
    >>> outcome_text(None)
    '–'
    """
    if row is None or _missing(row.get("status")):
        return "–"
    text = str(row["status"])
    batch = row.get("batch_id")
    if not _missing(batch):
        text += f" after batch {int(batch)}"  # type: ignore[call-overload]
    reason = row.get("reason")
    if not _missing(reason) and str(reason):
        text += f": {reason}"
    return text


def latest_run(runs: pd.DataFrame, query: str) -> pd.DataFrame:
    """The rows of the latest run of ``query`` (by ``started_at``) in the ``query_runs`` table,
    by node path (``root`` first, then its left subtree, then its right); empty when it never
    ran.

    >>> runs = pd.DataFrame({"query": ["q", "q", "q", "p"], "run_id": ["r1", "r2", "r2", "r3"],
    ...     "started_at": pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-02",
    ...                                   "2026-01-09"], utc=True),
    ...     "node": ["root", "root.L", "root", "root"]})
    >>> latest_run(runs, "q")[["run_id", "node"]].values.tolist()
    [['r2', 'root'], ['r2', 'root.L']]
    >>> latest_run(runs, "nope").empty
    True
    """
    if runs.empty or "query" not in runs:
        return runs.iloc[:0]
    mine = runs[runs["query"].astype(str) == query]
    if mine.empty:
        return mine
    latest = mine.loc[mine["started_at"].idxmax(), "run_id"]
    rows = mine[mine["run_id"] == latest]
    return rows.sort_values("node", key=lambda s: s.astype(str)).reset_index(drop=True)


def _canonical_plan(plan: object) -> str | None:
    """A plan (JSON text or tree) as canonical JSON; None when it is missing or not JSON."""
    if _missing(plan):
        return None
    try:
        tree = json.loads(plan) if isinstance(plan, str) else plan
        return json.dumps(tree, sort_keys=True)
    except (TypeError, ValueError):
        return None


def same_plan(first: object, second: object) -> bool:
    """Whether two plans (JSON text or trees) are the same tree.

    >>> same_plan('{"scan": "a"}', {"scan": "a"}), same_plan('{"scan": "a"}', '{"scan": "b"}')
    (True, False)
    >>> same_plan(None, None), same_plan("not json", "not json")
    (False, False)
    """
    key = _canonical_plan(first)
    return key is not None and key == _canonical_plan(second)


def rows_text(value: object) -> str:
    """A number of rows as a label shows it: thousands separated, ``–`` when unknown.

    >>> rows_text(4800.0), rows_text(12), rows_text(0.25), rows_text(None), rows_text("x")
    ('4,800', '12', '0.25', '–', '–')
    """
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "–"
    if number != number:  # NaN
        return "–"
    return f"{number:,.0f}" if abs(number) >= 1 or number == 0 else f"{number:.3g}"


def operator_label(operator: object, relations: object, tables: Mapping[str, str]) -> str:
    """A plan node's operator as the page names it: the join method, or ``scan alias (table)``
    (``tables``: alias → table).

    >>> operator_label("scan", "a", {"a": "link"}), operator_label("broadcast_hash", "a,b", {})
    ('scan a (link)', 'broadcast_hash')
    """
    if str(operator) != "scan":
        return str(operator)
    alias = str(relations)
    return f"scan {alias} ({tables[alias]})" if alias in tables else f"scan {alias}"


def _ratio(observed: object, estimated: object) -> float:
    """Observed over estimated rows; NaN when either is unknown or the estimate is 0."""
    if _missing(observed) or _missing(estimated) or float(estimated) == 0:  # type: ignore[arg-type]
        return float("nan")
    return float(observed) / float(estimated)  # type: ignore[arg-type]


#: Columns of :func:`plan_tree`.
PLAN_TREE_COLUMNS = ["node", "operator", "relations", "estimated rows", "observed rows",
                     "executed", "matches"]


def plan_tree(nodes: Iterable[PlanNode], tables: Mapping[str, str],
              run: pd.DataFrame | None = None, by_path: bool = True) -> pd.DataFrame:
    """The plan's nodes (:func:`aspen.queries.planner.plan_nodes`) by path, each with its
    operator label, relations and estimated rows, and from ``run`` (the ``query_runs`` rows of
    one run) its observed rows, the Spark operator that ran it and whether that is the planned
    one.

    ``by_path`` pairs nodes with the run's rows by path: the run executed this plan. Otherwise
    (the run executed an earlier plan) the observed rows are those of the run's node over the
    same relations, which are the same rows whatever the join order, and the operators are not
    compared (``executed`` and ``matches`` are missing).

    >>> from aspen.queries.planner import PlanNode
    >>> nodes = [PlanNode("root.L", "scan", frozenset("a"), 240.0),
    ...          PlanNode("root.R", "scan", frozenset("b"), 240.0),
    ...          PlanNode("root", "shuffle_hash", frozenset("ab"), 960.0)]
    >>> run = pd.DataFrame({"node": ["root", "root.L", "root.R"], "relations": ["a,b", "a", "b"],
    ...     "executed": ["SortMergeJoin", "scan", "scan"], "matches": [False, True, True],
    ...     "observed_rows": [4800, 240, 240]})
    >>> plan_tree(nodes, {"a": "link", "b": "link"}, run).values.tolist()
    ... # doctest: +NORMALIZE_WHITESPACE
    [['root', 'shuffle_hash', 'a,b', 960.0, 4800, 'SortMergeJoin', False],
     ['root.L', 'scan a (link)', 'a', 240.0, 240, 'scan', True],
     ['root.R', 'scan b (link)', 'b', 240.0, 240, 'scan', True]]
    >>> plan_tree(nodes, {}, run, by_path=False)[["observed rows", "matches"]].values.tolist()
    [[4800, <NA>], [240, <NA>], [240, <NA>]]
    """
    found: dict[str, dict[str, object]] = {}
    if run is not None and not run.empty:
        key = "node" if by_path else "relations"
        found = {str(r[key]): r for r in run.to_dict("records")}
    rows = []
    for node in sorted(nodes, key=lambda n: n.path):
        relations = ",".join(sorted(node.aliases))
        seen = found.get(node.path if by_path else relations, {})
        observed = seen.get("observed_rows")
        executed = seen.get("executed") if by_path else None
        matches = seen.get("matches") if by_path else None
        rows.append((node.path, operator_label(node.operator, relations, tables), relations,
                     float(node.estimated_rows), None if _missing(observed) else int(observed),
                     None if _missing(executed) else str(executed),
                     None if _missing(matches) else bool(matches)))
    frame = pd.DataFrame(rows, columns=PLAN_TREE_COLUMNS)
    return frame.astype({"observed rows": "Int64", "matches": "boolean"})


#: Fill colour of a plan node: the planned operator ran, another one did, not compared.
PLAN_NODE_FILLS = {True: "honeydew", False: "mistyrose", None: "white"}
_HASH_JOINS = ("broadcast_hash", "shuffle_hash")


def plan_dot(tree: pd.DataFrame) -> str:
    """A DOT digraph of a :func:`plan_tree`: one box per operator, its children below it (the
    edge to a hash join's right input says ``build``), labelled with the operator, the estimated
    and observed rows and, for a join, the Spark operator that ran it: ``✓`` when it is the
    planned one, ``✗`` otherwise. Every label is quoted and escaped.

    >>> tree = pd.DataFrame({"node": ["root", "root.L", "root.R"],
    ...     "operator": ["broadcast_hash", "scan a (link)", 'scan "b" (link)'],
    ...     "estimated rows": [960.0, 240.0, 240.0], "observed rows": [4800, 240, None],
    ...     "executed": ["BroadcastHashJoin(BuildRight)", "scan", None],
    ...     "matches": [True, True, None]})
    >>> print(plan_dot(tree))
    digraph plan {
      node [shape=box, style="rounded,filled", fontname=Helvetica];
      "root" [label="broadcast_hash\\nestimated 960 rows\\nobserved 4,800 rows (×5)\\n\
ran BroadcastHashJoin(BuildRight) ✓", fillcolor=honeydew];
      "root.L" [label="scan a (link)\\nestimated 240 rows\\nobserved 240 rows (×1)", \
fillcolor=honeydew];
      "root.R" [label="scan \\"b\\" (link)\\nestimated 240 rows", fillcolor=white];
      "root" -> "root.L" [label="left"];
      "root" -> "root.R" [label="right (build)"];
    }
    """
    lines = ["digraph plan {", '  node [shape=box, style="rounded,filled", fontname=Helvetica];']
    operators: dict[str, str] = {}
    edges = []
    for row in tree.to_dict("records"):
        path, operator = str(row["node"]), str(row["operator"])
        operators[path] = operator
        estimated, observed = row["estimated rows"], row["observed rows"]
        label = [operator, f"estimated {rows_text(estimated)} rows"]
        if not _missing(observed):
            ratio = _ratio(observed, estimated)
            times = "" if ratio != ratio else f" (×{ratio:.3g})"
            label.append(f"observed {rows_text(observed)} rows{times}")
        matches = None if _missing(row["matches"]) else bool(row["matches"])
        executed = None if _missing(row["executed"]) else str(row["executed"])
        if not operator.startswith("scan") and matches is not None:
            ran = f"ran {executed}" if executed is not None else "not found in Spark's plan"
            label.append(f"{ran} {'✓' if matches else '✗'}")
        text_label = "\\n".join(_dot_escaped(line) for line in label)
        lines.append(f'  {_quote(path)} [label="{text_label}", '
                     f"fillcolor={PLAN_NODE_FILLS[matches]}];")
        parent, dot, side = path.rpartition(".")
        if dot:
            edges.append((parent, path, side))
    for parent, path, side in edges:
        name = "left" if side == "L" else "right"
        if side == "R" and operators.get(parent) in _HASH_JOINS:
            name += " (build)"
        lines.append(f"  {_quote(parent)} -> {_quote(path)} [label={_quote(name)}];")
    lines.append("}")
    return "\n".join(lines)


#: Columns of :func:`run_table`.
RUN_TABLE_COLUMNS = ["node", "operator", "executed", "matches", "estimated rows",
                     "observed rows", "observed / estimated", "left rows", "right rows"]


def run_table(run: pd.DataFrame, tables: Mapping[str, str]) -> pd.DataFrame:
    """One row per operator of one run (its ``query_runs`` rows): the planned and the executed
    operator, whether they match, the estimated and observed rows and their ratio, and a join's
    observed input rows.

    >>> run = pd.DataFrame({"node": ["root.L", "root"], "relations": ["a", "a,b"],
    ...     "operator": ["scan", "broadcast_hash"], "executed": ["scan", None],
    ...     "matches": [True, False], "estimated_rows": [240.0, 960.0],
    ...     "observed_rows": [240, None], "left_rows": [None, 240], "right_rows": [None, 240]})
    >>> run_table(run, {"a": "link"}).values.tolist()  # doctest: +NORMALIZE_WHITESPACE
    [['root', 'broadcast_hash', '', False, 960.0, <NA>, nan, 240, 240],
     ['root.L', 'scan a (link)', 'scan', True, 240.0, 240, 1.0, <NA>, <NA>]]
    """
    def count(value: object) -> int | None:
        return None if _missing(value) else int(value)  # type: ignore[call-overload]

    rows = []
    for row in run.sort_values("node", key=lambda s: s.astype(str)).to_dict("records"):
        observed, estimated = row.get("observed_rows"), row.get("estimated_rows")
        rows.append((
            str(row["node"]), operator_label(row["operator"], row["relations"], tables),
            "" if _missing(row.get("executed")) else str(row["executed"]),
            not _missing(row.get("matches")) and bool(row["matches"]),
            float("nan") if _missing(estimated) else float(estimated),  # type: ignore[arg-type]
            count(observed), _ratio(observed, estimated),
            count(row.get("left_rows")), count(row.get("right_rows")),
        ))
    frame = pd.DataFrame(rows, columns=RUN_TABLE_COLUMNS)
    return frame.astype({"observed rows": "Int64", "left rows": "Int64", "right rows": "Int64"})


def stat_change_text(change: Mapping[str, object]) -> str:
    """One statistic change of ``plans.changes`` (``{kind, name, old, new}``) in words, the way
    ``aspen query reoptimize`` prints it; a malformed one as its values.

    >>> stat_change_text({"kind": "rows", "name": "link", "old": 240, "new": 4800})
    'rows of link 240 → 4,800'
    >>> stat_change_text({"kind": "selectivity", "name": "b: cost > 1", "old": None, "new": 0.5})
    'selectivity of b: cost > 1 none → 0.5'
    >>> stat_change_text({"kind": "rows", "name": "t", "new": "many"})
    'rows of t None → many'
    """
    kind, name = str(change.get("kind", "?")), str(change.get("name", "?"))
    old, new = change.get("old"), change.get("new")
    try:
        before = None if old is None else float(old)  # type: ignore[arg-type]
        after = float(new)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"{kind} of {name} {old} → {new}"
    return StatChange(kind, name, before, after).text()


def changes_text(raw: object) -> str:
    """The statistic changes of one ``plans`` row (its ``changes`` JSON list) in words, ``; ``
    between them; empty when none moved.

    >>> changes_text('[{"kind": "rows", "name": "link", "old": 240, "new": 4800}, '
    ...              '{"kind": "ndv", "name": "link.src", "old": 60, "new": 61}]')
    'rows of link 240 → 4,800; ndv of link.src 60 → 61'
    >>> changes_text("[]"), changes_text(None), changes_text("{oops")
    ('', '', '(unreadable changes)')
    """
    if _missing(raw):
        return ""
    try:
        changes = json.loads(raw) if isinstance(raw, str) else raw
        return "; ".join(stat_change_text(dict(c)) for c in changes)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return "(unreadable changes)"


def cost_change_text(old: object, new: object) -> str:
    """Old plan cost → new plan cost (4 significant digits, as the CLI prints them); ``–`` for
    a missing one (the first plan has no old one).

    >>> cost_change_text(12.5, 3.25), cost_change_text(None, 3.25), cost_change_text(1e6, 2e5)
    ('12.5 → 3.25', '– → 3.25', '1e+06 → 2e+05')
    """
    def one(value: object) -> str:
        if _missing(value):
            return "–"
        try:
            return f"{float(value):.4g}"  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return "–"

    return f"{one(old)} → {one(new)}"


def plan_text(plan: object) -> str:
    """A plan tree (JSON text or tree) as one line: its join order with each join's method;
    ``–`` when it is missing or cannot be read.

    >>> plan_text({"join": "broadcast_hash", "left": {"join": "sort_merge",
    ...     "left": {"scan": "a"}, "right": {"scan": "b"}}, "right": {"scan": "c"}})
    '((a sort_merge b) broadcast_hash c)'
    >>> plan_text('{"scan": "a"}'), plan_text(None), plan_text("{oops")
    ('a', '–', '–')
    """
    if _missing(plan):
        return "–"

    def one(node: Mapping[str, object]) -> str:
        if "scan" in node:
            return str(node["scan"])
        return (f"({one(node['left'])} {node.get('join', 'join')} "  # type: ignore[arg-type]
                f"{one(node['right'])})")  # type: ignore[arg-type]

    try:
        tree = json.loads(plan) if isinstance(plan, str) else plan
        return one(tree)  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
        return "–"


#: Columns of :func:`plan_history_rows`.
PLAN_HISTORY_COLUMNS = ["changed at", "reason", "method", "plan (old → new)",
                        "cost (old → new)", "statistics that moved"]


def plan_history_rows(plans: pd.DataFrame, query: str) -> pd.DataFrame:
    """The plan changes of ``query`` in the ``plans`` table, newest first: when, why, by which
    optimizer method, the old plan → the new one (:func:`plan_text`), the old plan's cost
    under the new statistics → the new plan's, and the statistics that moved, in words.

    >>> plans = pd.DataFrame({"query": ["q", "q", "p"],
    ...     "changed_at": pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-03"], utc=True),
    ...     "method": ["exhaustive", "declarative", "exhaustive"],
    ...     "reason": ["initial", "statistics", "initial"], "old_cost": [None, 40.0, None],
    ...     "new_cost": [10.0, 12.0, 1.0],
    ...     "changes": ["[]", '[{"kind": "rows", "name": "link", "old": 240, "new": 4800}]', "[]"],
    ...     "old_plan": [None, '{"scan": "a"}', None], "new_plan": ['{"scan": "a"}'] * 3})
    >>> plan_history_rows(plans, "q").values.tolist()  # doctest: +NORMALIZE_WHITESPACE
    [['2026-01-02 00:00:00', 'statistics', 'declarative', 'a → a', '40 → 12',
      'rows of link 240 → 4,800'],
     ['2026-01-01 00:00:00', 'initial', 'exhaustive', '– → a', '– → 10', '']]
    """
    if plans.empty or "query" not in plans:
        return pd.DataFrame(columns=PLAN_HISTORY_COLUMNS)
    mine = plans[plans["query"].astype(str) == query]
    mine = mine.sort_values("changed_at", ascending=False, kind="stable")
    rows = [
        (when_text(r.get("changed_at")), str(r.get("reason", "")), str(r.get("method", "")),
         f"{plan_text(r.get('old_plan'))} → {plan_text(r.get('new_plan'))}",
         cost_change_text(r.get("old_cost"), r.get("new_cost")), changes_text(r.get("changes")))
        for r in mine.to_dict("records")
    ]
    return pd.DataFrame(rows, columns=PLAN_HISTORY_COLUMNS)


def maintenance_path(sql: str) -> tuple[bool, str]:
    """Whether a registered query's SQL is maintained incrementally after every batch (by its
    state, in process) and the path in words — or why it is recomputed on Spark.

    >>> maintenance_path("SELECT src, COUNT(*) AS n FROM link GROUP BY src")
    (True, 'maintained incrementally after every batch (state + merge, in process)')
    >>> maintenance_path("SELECT year(first_inserted_at) AS y FROM link")[1]
    'recomputed on Spark after every batch: Year is not maintained incrementally'
    """
    from aspen.queries.incremental.compile import NotIncremental, compile_query
    from aspen.queries.sql import parse_query

    try:
        compiled = compile_query(parse_query("q", sql))
    except ConfigError as err:
        reason = str(err).removeprefix("query 'q': ")
        return False, f"not run: its SQL is refused now ({reason})"
    if isinstance(compiled, NotIncremental):
        return False, f"recomputed on Spark after every batch: {compiled.reason}"
    return True, "maintained incrementally after every batch (state + merge, in process)"


#: Columns of :func:`batch_cost_rows`.
BATCH_COST_COLUMNS = ["batch", "finished at", "path", "step", "seconds", "rows changed",
                      "result rows", "state rows"]


def batch_cost_rows(batches: pd.DataFrame | None, query: str, last: int = 20) -> pd.DataFrame:
    """The last ``last`` rounds of ``query`` in the ``query_batches`` table, oldest first: the
    batch, when it finished, the path it took, the incremental step, its seconds, the result
    rows it changed (incremental) or wrote (recomputed) and its state's rows.

    >>> batches = pd.DataFrame({"query": ["q", "q", "p"], "batch_id": [3, 4, 4],
    ...     "finished_at": pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-02"], utc=True),
    ...     "path": ["incremental", "recomputed", "failed"], "mode": ["built", None, None],
    ...     "seconds": [0.5, 21.0, 0.1], "rows_changed": [12, None, None],
    ...     "result_rows": [None, 12, None], "state_rows": [40, None, None]})
    >>> batch_cost_rows(batches, "q").values.tolist()  # doctest: +NORMALIZE_WHITESPACE
    [[3, '2026-01-01 00:00:00', 'incremental', 'built', 0.5, 12, <NA>, 40],
     [4, '2026-01-02 00:00:00', 'recomputed', '', 21.0, <NA>, 12, <NA>]]
    >>> batch_cost_rows(None, "q").empty
    True
    """
    if batches is None or batches.empty or "query" not in batches:
        return pd.DataFrame(columns=BATCH_COST_COLUMNS)
    mine = batches[batches["query"].astype(str) == query]
    mine = mine.sort_values("finished_at", kind="stable").tail(last)

    def number(value: object) -> int | None:
        return None if _missing(value) else int(value)  # type: ignore[call-overload]

    rows = [(number(r.get("batch_id")), when_text(r.get("finished_at")), str(r.get("path", "")),
             "" if _missing(r.get("mode")) else str(r.get("mode")),
             float(r.get("seconds", float("nan"))), number(r.get("rows_changed")),
             number(r.get("result_rows")), number(r.get("state_rows")))
            for r in mine.to_dict("records")]
    frame = pd.DataFrame(rows, columns=BATCH_COST_COLUMNS)
    return frame.astype({"batch": "Int64", "rows changed": "Int64", "result rows": "Int64",
                         "state rows": "Int64"})
