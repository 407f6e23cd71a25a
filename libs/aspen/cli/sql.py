"""``aspen sql "SQL"``: run one read-only statement over the lake; with ``--provenance`` each
row's formula over base tuples (docs/sql-provenance.md).

``--format json`` prints one JSON array of ``{"values": {...}, "provenance": F}``; ``--why N``
prints row N's minimal witness sets and critical tuples; ``--explain`` prints the rewrites
applied, the instrumentation choices with each plan's estimated cost, the plain and the
instrumented SQL without running them. The query runs on Spark unless ``--engine duckdb`` (in
process: delta-rs, then DuckDB).
"""

from __future__ import annotations

import argparse
import json
import sys

from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sql",
        help="run a read-only SQL statement over the lake, with provenance if asked",
        description="Example: aspen sql \"SELECT a.src, b.dst FROM link a JOIN link b ON "
        "a.dst = b.src\" --provenance --engine duckdb",
    )
    p.add_argument("statement", metavar="SQL", help="one SELECT statement (Spark SQL)")
    p.add_argument("--provenance", action="store_true",
                   help="compose each row's formula over base tuples")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument("--why", type=int, default=None, metavar="N",
                   help="explain row N (from 0): minimal witness sets and critical tuples")
    p.add_argument("--limit", type=int, default=20,
                   help="--why: at most this many witness sets (default 20)")
    p.add_argument("--explain", action="store_true",
                   help="print the rewrites, the instrumentation choices with their estimated "
                   "costs, the plain and the instrumented SQL; run nothing")
    p.add_argument("--engine", choices=("spark", "duckdb"), default="spark",
                   help="where the query runs (default spark; duckdb: in process)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.errors import ConfigError
    from aspen.sqlprov.run import explain_sql, run_sql

    if args.limit < 0:
        raise ConfigError(f"--limit must not be negative, got {args.limit}")
    if args.why is not None and args.why < 0:
        raise ConfigError(f"--why must be a row number from 0, got {args.why}")
    if args.explain:  # the rules, the choices with their estimated costs, both statements
        print(explain_sql(settings, args.statement, args.engine))
        return 0
    provenance = args.provenance or args.why is not None
    answer = run_sql(settings, args.statement, provenance=provenance, engine=args.engine)
    if args.why is not None:
        return print_why(answer, args.why, args.format, args.limit)
    return print_answer(answer, args.format, provenance)


def print_answer(answer, fmt: str, provenance: bool) -> int:  # noqa: ANN001 - a SqlAnswer
    """Print ``answer`` in ``fmt`` (its notes on stderr); also ``aspen query run``'s."""
    from aspen.cli._output import print_rows, printable
    from aspen.sqlprov.render import to_text

    for note in answer.notes:
        print(f"note: {printable(note)}", file=sys.stderr)
    if fmt == "json":
        print(json.dumps(answer.as_json(), indent=1))
        return 0
    columns = list(answer.columns)
    rows = [list(r) for r in answer.rows]
    if provenance:
        columns.append("provenance")
        for i, row in enumerate(rows):
            rendered = answer.provenance(i)
            row.append(json.dumps(rendered) if fmt == "csv" else to_text(rendered))
    print_rows(columns, rows, fmt)
    return 0


def print_why(answer, index: int, fmt: str, limit: int) -> int:  # noqa: ANN001 - a SqlAnswer
    """Print row ``index``'s witness sets and critical tuples; also ``aspen query run``'s."""
    from aspen.cli._output import cell_text, printable

    explained = answer.why(index, limit=limit)
    values = answer.values(index)
    if fmt == "json":
        print(json.dumps({"row": index, "values": values,
                          "provenance": answer.provenance(index),
                          "witnesses": explained.witnesses, "critical": explained.critical,
                          "truncated": explained.truncated, "exact": answer.exact}, indent=1))
        return 0
    shown = ", ".join(printable(cell_text(v)) for v in answer.rows[index])
    print(f"row {index}: ({shown})")
    count = f"{len(explained.witnesses)}{'+' if explained.truncated else ''}"
    print(f"  {count} minimal witness set(s):")
    for i, w in enumerate(explained.witnesses, 1):
        print(f"  {i:>3}. {printable(' ∧ '.join(w) or '(none: always true)')}")
    critical = ", ".join(explained.critical) or "none"
    print(f"  critical (each alone removes it): {printable(critical)}")
    for note in answer.notes:
        print(f"  note: {printable(note)}")
    return 0
