"""``aspen query register|list|show|plan|run|reoptimize|history|drop``: continuous SQL queries
over the lake's tables, planned by the optimizer (docs/queries.md).

``register`` and ``drop`` change the ``queries`` table, ``list``, ``show`` and ``history`` read
it and the plan history (no Spark); ``plan`` reads the statistics of the query's tables and
stores the optimizer's plan; ``run`` runs the query with its plan into ``q_NAME`` and prints
each join's estimated and observed rows — or, with ``--provenance`` (and always for a query
registered with ``--provenance``), runs its SQL through the provenance instrumentation and
prints or keeps each row's formula (docs/queries.md, "Provenance"); ``reoptimize``
re-optimizes queries incrementally from their saved optimizer state and adopts a changed plan
(what the ``aspen_reoptimize`` DAG runs).
"""

from __future__ import annotations

import argparse
import json
import sys

from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    from aspen.optimizer.methods import METHODS
    from aspen.queries.planner import DEFAULT_METHOD
    from aspen.queries.reoptimize import DEFAULT_REOPTIMIZER

    p = sub.add_parser(
        "query", help="continuous SQL queries over the lake's tables, planned by the optimizer",
        description="Example: aspen query register hot --sql \"SELECT a.src, COUNT(*) AS n "
        "FROM link a JOIN link b ON a.dst = b.src GROUP BY a.src\"; aspen query run hot")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    actions.required = True
    reg = actions.add_parser("register", help="register a query (its SQL is checked)")
    reg.add_argument("name", metavar="NAME", help="an identifier; the result is table q_NAME")
    reg.add_argument("--sql", required=True, help="one SELECT block (docs/queries.md)")
    reg.add_argument("--replace", action="store_true", help="replace a query of that name")
    reg.add_argument("--provenance", action="store_true",
                     help="every run keeps each result row's formula (column provenance of "
                     "q_NAME); always a full instrumented run")
    lst = actions.add_parser("list", help="the registered queries")
    lst.add_argument("--format", choices=("table", "csv", "json"), default="table")
    show = actions.add_parser("show", help="a query: its SQL, join graph, plan and last run")
    show.add_argument("name", metavar="NAME")
    plan = actions.add_parser("plan", help="plan a query from the lake's statistics; store it")
    plan.add_argument("name", metavar="NAME")
    run = actions.add_parser("run", help="run a query (planned first if it has no plan)")
    run.add_argument("name", metavar="NAME")
    run.add_argument("--replan", action="store_true", help="plan it again first")
    run.add_argument("--provenance", action="store_true",
                     help="run it through the provenance instrumentation and print each row "
                     "with its formula")
    run.add_argument("--format", choices=("table", "json", "csv"), default=None,
                     help="with --provenance: how to print (default table)")
    run.add_argument("--why", type=int, default=None, metavar="N",
                     help="with --provenance: explain row N (from 0)")
    run.add_argument("--limit", type=int, default=20,
                     help="--why: at most this many witness sets (default 20)")
    run.add_argument("--engine", choices=("spark", "duckdb"), default=None,
                     help="with provenance: where the query runs (default spark; duckdb: in "
                     "process)")
    for command in (plan, run):
        command.add_argument("--method", choices=tuple(METHODS), default=None,
                             help=f"the optimizer (default {DEFAULT_METHOD})")
    reopt = actions.add_parser(
        "reoptimize", help="re-optimize queries incrementally as their statistics moved; adopt "
                           "a changed plan")
    reopt.add_argument("names", metavar="NAME", nargs="*", help="default: every query")
    reopt.add_argument("--method", choices=tuple(METHODS), default=DEFAULT_REOPTIMIZER,
                       help=f"the optimizer (default {DEFAULT_REOPTIMIZER})")
    history = actions.add_parser("history", help="the plan changes of a query (or of all)")
    history.add_argument("name", metavar="NAME", nargs="?")
    history.add_argument("--format", choices=("table", "json"), default="table")
    drop = actions.add_parser("drop", help="unregister a query and delete its result table")
    drop.add_argument("name", metavar="NAME")
    for action in actions.choices.values():  # `aspen query run X --lake L` works as well
        action.add_argument("--lake", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    p.set_defaults(func=main)


def main(args: argparse.Namespace, settings: Settings) -> int:
    return {"register": _register, "list": _list, "show": _show, "plan": _plan, "run": _run,
            "reoptimize": _reoptimize, "history": _history, "drop": _drop}[args.action](
        args, settings)


def _register(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.queries.names import result_table
    from aspen.queries.registry import register as add

    entry = add(settings, args.name, args.sql, replace_existing=args.replace,
                provenance=args.provenance)
    query = entry.parsed().query
    kept = " (with each row's formula in column provenance)" if entry.provenance else ""
    print(f"registered query {entry.name}: {len(query.relations)} relation(s) of "
          f"{', '.join(sorted(set(query.relations.values())))}, {len(query.joins)} join "
          f"predicate(s), {len(query.filters)} filter(s); result table "
          f"{result_table(entry.name)}{kept}")
    return 0


def _list(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.cli._output import print_rows
    from aspen.queries.registry import list_queries
    from aspen.queries.status import read_statuses

    statuses = read_statuses(settings)
    rows = []
    for q in list_queries(settings):
        last = statuses.get(q.name)
        rows.append((q.name, ",".join(sorted(set(json.loads(q.query_json)["relations"].values()))),
                     "-" if q.plan_cost is None else f"{q.plan_cost:.4g}",
                     "-" if last is None else last.status,
                     f"{q.registered_at:%Y-%m-%d %H:%M:%S}", q.sql,
                     "" if last is None or last.reason is None else last.reason))
    print_rows(("name", "tables", "plan_cost", "last_status", "registered_at", "sql", "reason"),
               rows, args.format)
    return 0


def _show(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.errors import ConfigError
    from aspen.optimizer.stats import Stats
    from aspen.queries.names import result_table
    from aspen.queries.planner import plan_lines
    from aspen.queries.registry import get_query
    from aspen.queries.runs import last_run
    from aspen.queries.status import read_statuses

    entry = get_query(settings, args.name)
    print(f"query {entry.name} (registered {entry.registered_at:%Y-%m-%d %H:%M:%S} UTC)")
    print(f"  sql: {entry.sql}")
    last = read_statuses(settings).get(entry.name)
    if last is not None:
        print(f"  last outcome at {last.finished_at:%Y-%m-%d %H:%M:%S} UTC: {last.describe()}")
    try:
        parsed = entry.parsed()
    except ConfigError as err:  # registered by older code; the checks refuse it now
        print(f"  refused (it does not run): {err}")
        return 0
    query, spec = parsed.query, parsed.spec
    print("  relations: " + ", ".join(f"{a} = {t}" for a, t in query.relations.items()))
    print("  joins: " + (", ".join(p.id for p in query.joins) or "none"))
    print("  filters: " + ("; ".join(f.id for f in query.filters) or "none"))
    print("  outputs: " + ", ".join(f"{o.name} = {o.sql}" for o in spec.outputs)
          + (f"; group by {', '.join(spec.group_by)}" if spec.group_by else "")
          + ("; distinct" if spec.distinct else ""))
    from aspen.queries.incremental.compile import NotIncremental, compile_query

    compiled = compile_query(parsed)
    if entry.provenance:
        print(f"  provenance: kept; each row's formula in column provenance of "
              f"{result_table(entry.name)}")
        print("  maintained: recomputed whole with provenance after every batch (the "
              "instrumented SQL; never incrementally" + ("" if isinstance(
                  compiled, NotIncremental) else ", though the query alone would be") + ")")
    else:
        print("  maintained: " + (f"recomputed on Spark after every batch ({compiled.reason})"
                                  if isinstance(compiled, NotIncremental) else
                                  "incrementally after every batch (state + merge, in process)"))
    if entry.plan is None or entry.stats is None:
        print("  plan: none yet (aspen query plan NAME)")
    else:
        print(f"  plan ({entry.optimizer}, cost {entry.plan_cost:.4g}, "
              f"{entry.planned_at:%Y-%m-%d %H:%M:%S} UTC):")
        for line in plan_lines(entry.plan, query, Stats.from_json(entry.stats)):
            print("    " + line)
    from aspen.queries.follow import plan_story

    for line in plan_story(settings, entry):
        print("  " + line)
    rows = last_run(settings, entry.name, entry.registered_at)
    if rows:
        print(f"  last run {rows[0].run_id} at {rows[0].started_at:%Y-%m-%d %H:%M:%S} UTC: "
              f"{rows[0].result_rows} rows in {rows[0].seconds:.2f} s")
    return 0


def _print_plan(planned) -> None:
    from aspen.queries.planner import plan_lines

    for line in plan_lines(planned.plan, planned.parsed.query, planned.stats):
        print("  " + line)


def _spark_for(settings: Settings, name: str):
    """The Spark session, once the query is registered and its tables exist (a missing one
    is reported before Spark starts)."""
    from aspen.queries.registry import get_query
    from aspen.queries.stats import table_versions
    from aspen.spark.session import get_spark

    table_versions(settings, get_query(settings, name).parsed().tables)
    return get_spark("aspen-query")


def _plan(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.queries.runner import plan_query

    planned = plan_query(_spark_for(settings, args.name), settings, args.name, args.method)
    print(f"query {args.name}: plan of cost {planned.cost:.4g} (stored)")
    _print_plan(planned)
    return 0


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.queries.names import result_table
    from aspen.queries.registry import get_query
    from aspen.queries.runner import run_query

    _check_run_options(args)
    entry = get_query(settings, args.name)
    if args.provenance or entry.provenance:
        return _run_with_provenance(args, settings, entry.sql, entry.provenance)
    if args.engine is not None:
        from aspen.errors import ConfigError

        raise ConfigError("--engine is for runs with provenance (add --provenance); a planned "
                          "run is on Spark")
    report = run_query(_spark_for(settings, args.name), settings, args.name,
                       replan=args.replan, method=args.method)
    print(f"query {args.name}: {report.result_rows} rows into {result_table(args.name)} in "
          f"{report.seconds:.2f} s (run {report.run_id}, plan cost {report.plan_cost:.4g})")
    table = [("node", "relations", "planned", "executed", "estimated_rows", "observed_rows")]
    table += [(n.node, n.relations, n.operator, n.executed or "not found",
               f"{n.estimated_rows:.4g}", "-" if n.observed_rows is None else str(n.observed_rows))
              for n in report.nodes]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    if not report.matches:
        print("warning: Spark did not run every join as planned (see 'executed')")
    return 0


def _check_run_options(args: argparse.Namespace) -> None:
    """Refuse, in one line, options that do not go together."""
    from aspen.errors import ConfigError

    for option, value in (("--why", args.why), ("--format", args.format)):
        if value is not None and not args.provenance:
            raise ConfigError(f"{option} needs --provenance (aspen query run {args.name} "
                              f"--provenance {option} …)")
    if args.provenance and (args.replan or args.method is not None):
        raise ConfigError("--replan and --method choose a plan, and a run with provenance "
                          "uses none: leave them out")
    if args.why is not None and args.why < 0:
        raise ConfigError(f"--why must be a row number from 0, got {args.why}")
    if args.limit < 0:
        raise ConfigError(f"--limit must not be negative, got {args.limit}")


def _run_with_provenance(args: argparse.Namespace, settings: Settings, sql: str,
                         keep: bool) -> int:
    """Run the query with provenance; ``keep`` (registered with provenance): write q_NAME with
    each row's formula. Without ``--provenance`` only the run's line is printed."""
    from aspen.cli.sql import print_answer, print_why
    from aspen.errors import ConfigError
    from aspen.queries.names import result_table
    from aspen.queries.query_provenance import run_with_provenance

    if not args.provenance and (args.replan or args.method is not None):
        raise ConfigError(f"query {args.name} keeps provenance and is run without a plan: "
                          "leave out --replan and --method")
    report, answer = run_with_provenance(settings, args.name, sql, args.engine or "spark",
                                         write=keep)
    where = (f"into {result_table(args.name)}" if keep else f"printed; {result_table(args.name)}"
             " not written (registered without --provenance)")
    line = (f"query {args.name}: {report.result_rows} rows with provenance {where} in "
            f"{report.seconds:.2f} s ({report.engine})")
    if not args.provenance:
        print(line)
        return 0
    if args.why is not None:
        code = print_why(answer, args.why, args.format or "table", args.limit)
    else:
        code = print_answer(answer, args.format or "table", provenance=True)
    print(line, file=sys.stderr)  # after the answer: a refused --why stays one line
    return code


def _reoptimize(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.queries.reoptimize_run import reoptimize_queries

    return 1 if reoptimize_queries(settings, args.names, args.method) else 0


def _history(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.cli._output import printable
    from aspen.queries.plans import plan_history
    from aspen.queries.registry import get_query

    if args.name is not None:
        get_query(settings, args.name)
    changes = plan_history(settings, args.name)
    if args.format == "json":
        for change in changes:
            print(json.dumps({"query": change.query, "changed_at": change.changed_at.isoformat(),
                              "method": change.method, "reason": change.reason,
                              "old_plan": change.old_plan and json.loads(change.old_plan),
                              "new_plan": json.loads(change.new_plan),
                              "old_cost": change.old_cost, "new_cost": change.new_cost,
                              "changes": change.change_list}))
        return 0
    if not changes:
        print("no plan changes recorded" + (f" for {args.name}" if args.name else ""))
        return 0
    for change in changes:
        old = "-" if change.old_cost is None else f"{change.old_cost:.4g}"
        print(printable(f"{change.changed_at:%Y-%m-%d %H:%M:%S} UTC  {change.query}  "
                        f"{change.reason} ({change.method}): cost {old} → "
                        f"{change.new_cost:.4g}"))
        for moved in change.change_list[:5]:
            before = "none" if moved["old"] is None else f"{moved['old']:,.6g}"
            print(printable(f"    {moved['kind']} of {moved['name']} {before} → "
                            f"{moved['new']:,.6g}"))
        if len(change.change_list) > 5:
            print(f"    … and {len(change.change_list) - 5} more")
    return 0


def _drop(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.queries.names import result_table
    from aspen.queries.registry import drop

    deleted = drop(settings, args.name)
    print(f"dropped query {args.name}" + (f" and its table {result_table(args.name)}" if deleted
                                          else ""))
    return 0
