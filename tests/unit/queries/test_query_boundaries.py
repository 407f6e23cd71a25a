"""What a continuous query may be: hostile SQL is refused at registration in one line (exit 2,
no traceback) — functions outside the allowlist, deep nesting, huge text, too many relations —
and a hostile query registered by older code is refused at run time and recorded as failed."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.cli.main import main
from aspen.errors import ConfigError
from aspen.queries import limits
from aspen.queries.execute import RunReport
from aspen.queries.registry import QUERIES_TABLE, RegisteredQuery, list_queries, register
from aspen.queries.runner import run_query, run_registered
from aspen.queries.sql import parse_query
from aspen.queries.status import FAILED, read_statuses

_TOO_MANY = limits.MAX_RELATIONS + 1
JAVA = "SELECT a.src, java_method('java.lang.System','getenv','HOME') AS s FROM link a"
#: Per hostile query, a fragment of its one-line refusal.
HOSTILE = [
    (JAVA, "function java_method is not allowed"),
    ("SELECT reflect('java.lang.Thread', 'sleep', 100000) AS s FROM link a",
     "function reflect is not allowed"),
    ("SELECT a.src FROM link a WHERE try_reflect('java.lang.System', 'exit', 0) IS NULL",
     "function try_reflect is not allowed"),
    ("SELECT my_udf(a.src) AS s FROM link a", "function my_udf is not allowed"),
    ("SELECT a.src FROM link a WHERE a.src RLIKE '(a+)+$'", "function regexp_like"),
    ("SELECT CAST(a.src AS ARRAY<INT>) AS x FROM link a", "CAST to ARRAY<INT> is not allowed"),
    ("SELECT a.src FROM link a WHERE " + "(" * 50 + "a.cost > 1" + ")" * 50,
     "brackets nest 50 deep (at most 16)"),
    ("SELECT a.src FROM link a WHERE " + "(" * 500 + "a.cost > 1" + ")" * 500,
     "brackets nest 500 deep"),
    ("SELECT a.src FROM link a WHERE " + " AND ".join(f"a.cost <> {i}" for i in range(6500)),
     "bytes (at most 16,384"),
    ("SELECT a.src FROM link a WHERE " + " AND ".join(f"a.cost <> {i}" for i in range(900)),
     "nest more than 64 deep"),
    ("SELECT a.src FROM link a WHERE a.cost > " + "+".join("1" for _ in range(5000)),
     "nest more than 64 deep"),
    ("SELECT a.src FROM link a WHERE " + "NOT " * 3000 + "a.cost > 1",
     "3000 prefix operators"),
    ("SELECT a0.src FROM " + ", ".join(f"link a{i}" for i in range(_TOO_MANY)) + " WHERE "
     + " AND ".join(f"a{i}.dst = a{i + 1}.src" for i in range(_TOO_MANY - 1)),
     f"joins {_TOO_MANY} relations (at most {limits.MAX_RELATIONS})"),
]


def _aspen(lake, *argv: str) -> int:
    try:
        return main(["--lake", lake.lake, *argv])
    except SystemExit as exit_info:
        return int(exit_info.code or 0)


@pytest.mark.parametrize("sql, fragment", HOSTILE, ids=[f"hostile{i}" for i in range(len(HOSTILE))])
def test_hostile_sql_is_refused_in_one_line(lake, capsys, sql, fragment) -> None:
    assert _aspen(lake, "query", "register", "probe", "--sql", sql) == 2
    err = capsys.readouterr().err
    assert fragment in err, err[:300]
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert len(err) < 400
    assert list_queries(lake) == []


def test_allowed_functions_and_operators_still_register(lake) -> None:
    sql = ("SELECT a.src, CAST(a.cost AS DECIMAL(10, 2)) AS c, upper(a.dst) AS u, "
           "CASE WHEN a.cost > 1 THEN 'far' ELSE 'near' END AS k, coalesce(a.cost, 0) + 1 AS z, "
           "round(abs(a.cost) * 2, 1) AS r, a.src || '-' || a.dst AS pair "
           "FROM link a WHERE a.src LIKE 'n%' AND a.cost BETWEEN 1 AND 3 AND a.dst IN ('a', 'b')"
           " AND NOT a.cost IS NULL")
    assert register(lake, "fine", sql).name == "fine"


def test_the_relation_bound_is_the_optimizers() -> None:
    from aspen.optimizer.limits import MAX_RELATIONS

    assert limits.MAX_RELATIONS == MAX_RELATIONS
    chain = ("SELECT a0.src FROM " + ", ".join(f"link a{i}" for i in range(MAX_RELATIONS))
             + " WHERE " + " AND ".join(f"a{i}.dst = a{i + 1}.src"
                                        for i in range(MAX_RELATIONS - 1)))
    assert len(parse_query("chain", chain).query.relations) == MAX_RELATIONS


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="()[]{}'\"`-/*\nab ", max_size=80))
def test_bracket_depth_never_exceeds_a_plain_count(text: str) -> None:
    """The scan skips strings and comments: never deeper than counting every bracket."""
    assert 0 <= limits.bracket_depth(text) <= sum(text.count(c) for c in "([{")


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(0, 400), kind=st.sampled_from(["paren", "not", "neg", "plus-chain"]))
def test_any_nesting_is_a_one_line_refusal_or_a_parse(depth: int, kind: str) -> None:
    """Whatever the depth, parsing either succeeds or raises one-line ConfigError: never a
    RecursionError."""
    body = {"paren": "(" * depth + "a.cost > 1" + ")" * depth,
            "not": "NOT " * depth + "a.cost > 1",
            "neg": "a.cost > " + "- " * depth + "1",
            "plus-chain": "a.cost > " + " + ".join(["1"] * (depth + 1))}[kind]
    try:
        parse_query("deep", f"SELECT a.src FROM link a WHERE {body}")
    except ConfigError as err:
        assert "\n" not in str(err)
        assert depth > 8


def test_an_old_hostile_row_is_refused_at_run_time_and_recorded(lake, capsys) -> None:
    """A row written by code without the checks: the round refuses it (no Spark needed: the
    refusal comes before any job) and records it as failed; a good query still runs."""
    from aspen.queries.keyed_table import rewrite
    from aspen.queries.registry import _schema

    register(lake, "good", "SELECT COUNT(*) AS n FROM link")
    hostile = RegisteredQuery("evil", JAVA, datetime.now(UTC), json.dumps({}), json.dumps({}))

    def add(rows: dict) -> dict:
        from dataclasses import asdict

        rows["evil"] = asdict(hostile)
        return rows

    rewrite(lake, QUERIES_TABLE, _schema(), "name", add)
    ran: list[str] = []

    def run_one(name: str, group: str) -> RunReport:
        if name == "evil":  # the real path: refused before it touches Spark
            return run_query(object(), lake, name, batch_id=4, record=False)  # type: ignore[arg-type]
        ran.append(name)
        return RunReport(name, "r-" + name, {}, 1.0, 1, 0.1, ())

    outcomes = {o.name: o for o in run_registered(None, lake, batch_id=4, time_limit=5.0,
                                                  run_one=run_one, cancel=lambda g: None)}
    assert ran == ["good"]
    assert outcomes["evil"].status == FAILED
    assert "function java_method is not allowed" in outcomes["evil"].reason
    status = read_statuses(lake)
    assert status["evil"].status == FAILED and status["evil"].batch_id == 4
    assert "java_method" in status["evil"].reason and "\n" not in status["evil"].reason
    assert status["good"].status == "ok" and status["good"].run_id == "r-good"
    assert _aspen(lake, "query", "show", "evil") == 0
    out = capsys.readouterr().out
    assert "last outcome at" in out and "failed after batch 4: query 'evil': function " \
        "java_method is not allowed" in out
    assert "refused (it does not run): query 'evil': function java_method" in out


def test_list_and_show_name_the_failure(lake, capsys) -> None:
    from aspen.queries.status import QueryStatus, record_statuses

    register(lake, "good", "SELECT COUNT(*) AS n FROM link")
    record_statuses(lake, [QueryStatus("good", "timed out", "cancelled after 2 s", 9, None,
                                       datetime.now(UTC), 2.0)])
    assert _aspen(lake, "query", "list", "--format", "csv") == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line.startswith("good,link,-,timed out,") and line.endswith("cancelled after 2 s")
    assert _aspen(lake, "query", "show", "good") == 0
    assert "timed out after batch 9: cancelled after 2 s" in capsys.readouterr().out


#: Every function and operator docs/queries.md lists as allowed, as Spark SQL writes it.
DOCUMENTED = [
    "a.cost + 1 - 2 * 3 / 4 % 5", "a.cost DIV 2", "-a.cost", "~a.cost", "a.cost <=> 1",
    "a.src ILIKE 'x%'", "a.src || a.dst", "IF(a.cost > 1, 1, 2)", "NULLIF(a.cost, 1)",
    "TRY_CAST(a.src AS INT)", "CAST(a.src AS TIMESTAMP)", "CAST(a.src AS DATE)",
    "CAST(a.cost AS STRING)", "CAST(a.src AS BOOLEAN)", "CAST(a.src AS BIGINT)",
    "CAST(a.src AS VARCHAR(3))", "CAST(a.cost AS FLOAT)", "floor(a.cost)", "ceil(a.cost)",
    "sqrt(a.cost)", "ln(a.cost)", "log(10, a.cost)", "exp(a.cost)", "pow(a.cost, 2)",
    "sign(a.cost)", "greatest(a.cost, 1)", "least(a.cost, 1)", "lower(a.src)",
    "length(a.src)", "substring(a.src, 1, 2)", "trim(a.src)", "concat(a.src, a.dst)",
    "concat_ws('-', a.src, a.dst)", "replace(a.src, 'a', 'b')", "instr(a.src, 'a')",
    "locate('a', a.src)", "left(a.src, 2)", "right(a.src, 2)", "initcap(a.src)",
    "lpad(a.src, 3, '0')", "rpad(a.src, 3, '0')", "year(a.src)", "quarter(a.src)",
    "month(a.src)", "weekofyear(a.src)", "day(a.src)", "dayofweek(a.src)",
    "dayofmonth(a.src)", "dayofyear(a.src)", "hour(a.src)", "minute(a.src)", "second(a.src)",
    "date_add(a.src, 1)", "date_sub(a.src, 1)", "datediff(a.src, a.dst)", "to_date(a.src)",
    "to_timestamp(a.src)", "date_trunc('day', a.src)", "last_day(a.src)", "current_date()",
    "current_timestamp()", "from_unixtime(a.cost)", "unix_timestamp(a.src)",
    "months_between(a.src, a.dst)", "a.src + INTERVAL 1 DAY",
]


@pytest.mark.parametrize("expression", DOCUMENTED)
def test_every_documented_function_is_allowed(expression: str) -> None:
    parse_query("documented", f"SELECT {expression} AS x FROM link a")
