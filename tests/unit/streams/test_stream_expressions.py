"""SQL scalar expressions compiled to Python callables (aspen.streams.expressions): exact tests
on tiny literal rows for each construct and its NULL semantics, the errors, pickling, and on
random arithmetic / comparison / CASE expressions the values against DuckDB's."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark import cloudpickle

from aspen.errors import ConfigError, EngineError
from aspen.streams.expressions import attributes_of, compile_expression, compile_predicate


def ev(sql: str, **row: Any) -> Any:
    return compile_expression(sql)(row)


# --- columns and literals --------------------------------------------------------------------

@pytest.mark.parametrize("sql, row, value", [
    ("x", {"x": 3}, 3),
    ("x", {"x": None}, None),
    ("`my col`", {"my col": "a"}, "a"),
    ("X", {"X": 1, "x": 2}, 1),  # names are case-sensitive, as written
    ("x", {"x": 2, "X": 1}, 2),
])
def test_a_column_reads_the_attribute_of_its_name(sql: str, row: dict, value: Any) -> None:
    assert compile_expression(sql)(row) == value


def test_a_row_lacking_an_attribute_is_an_engine_error_naming_it() -> None:
    f = compile_expression("x + speed")
    with pytest.raises(EngineError, match="'speed'"):
        f({"x": 1})


@pytest.mark.parametrize("sql, value", [
    ("42", 42), ("1.5", 1.5), (".5", 0.5), ("1e3", 1000.0), ("'abc'", "abc"),
    ("TRUE", True), ("false", False), ("NULL", None),
])
def test_literals(sql: str, value: Any) -> None:
    got = ev(sql)
    assert got == value and type(got) is type(value)


# --- arithmetic ------------------------------------------------------------------------------

@pytest.mark.parametrize("sql, value", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 - 10", -3), ("-x", -4), ("- -x", 4),
    ("7 / 2", 3.5), ("x / 2", 2.0), ("1 / 0", None), ("1.5 / 0.0", None),
    ("7 % 3", 1), ("-7 % 3", -1), ("7 % -3", 1), ("7.5 % 2", 1.5), ("7 % 0", None),
    ("x + NULL", None), ("NULL * 2", None), ("-NULL", None), ("n / 2", None),
    ("'ab' || 'cd'", "abcd"), ("'ab' || NULL", None), ("'n=' || x", "n=4"),
])
def test_arithmetic_and_null_propagation(sql: str, value: Any) -> None:
    got = ev(sql, x=4, n=None)
    assert got == value and type(got) is type(value)


# --- comparisons and predicates --------------------------------------------------------------

@pytest.mark.parametrize("sql, value", [
    ("x = 4", True), ("x == 4", True), ("x <> 4", False), ("x != 3", True),
    ("x < 5", True), ("x <= 4", True), ("x > 4", False), ("x >= 4.5", False),
    ("s = 'ab'", True), ("s < 'b'", True),
    ("x = n", None), ("n <> 1", None), ("n < n", None), ("NULL = NULL", None),
])
def test_comparisons_are_null_when_a_side_is_null(sql: str, value: Any) -> None:
    assert ev(sql, x=4, s="ab", n=None) is value


@pytest.mark.parametrize("sql, value", [
    ("n IS NULL", True), ("x IS NULL", False), ("n IS NOT NULL", False), ("x IS NOT NULL", True),
    ("x BETWEEN 1 AND 4", True), ("x BETWEEN 5 AND 9", False), ("x NOT BETWEEN 5 AND 9", True),
    ("n BETWEEN 1 AND 4", None), ("x BETWEEN n AND 9", None), ("x BETWEEN n AND 3", False),
    ("x IN (1, 4)", True), ("x IN (1, 2)", False), ("x NOT IN (1, 2)", True),
    ("n IN (1, 2)", None), ("x IN (1, NULL)", None), ("x IN (4, NULL)", True),
    ("x NOT IN (1, NULL)", None),
    ("s LIKE 'a%'", True), ("s LIKE 'a_c'", True), ("s LIKE 'a_'", False), ("s LIKE '%'", True),
    ("s LIKE 'ABC'", False), ("s NOT LIKE 'b%'", True), ("n LIKE 'a%'", None),
    ("s LIKE n", None), ("'a.c' LIKE 'a.c'", True), ("'abc' LIKE 'a.c'", False),
    (r"'a%' LIKE 'a\%'", True), (r"'ab' LIKE 'a\%'", False), ("s LIKE p", True),
])
def test_is_null_between_in_and_like(sql: str, value: Any) -> None:
    assert ev(sql, x=4, s="abc", p="_b%", n=None) is value


T, F, N = True, False, None


@pytest.mark.parametrize("a, b, conj, disj", [
    (T, T, T, T), (T, F, F, T), (T, N, N, T),
    (F, T, F, T), (F, F, F, F), (F, N, F, N),
    (N, T, N, T), (N, F, F, N), (N, N, N, N),
])
def test_and_or_follow_three_valued_logic(a: Any, b: Any, conj: Any, disj: Any) -> None:
    assert ev("a AND b", a=a, b=b) is conj
    assert ev("a OR b", a=a, b=b) is disj


@pytest.mark.parametrize("a, value", [(T, F), (F, T), (N, N)])
def test_not_of_null_is_null(a: Any, value: Any) -> None:
    assert ev("NOT a", a=a) is value


def test_and_or_short_circuit_on_the_deciding_side() -> None:
    assert ev("FALSE AND missing > 1") is False
    assert ev("TRUE OR missing > 1") is True


# --- conditionals ----------------------------------------------------------------------------

@pytest.mark.parametrize("sql, x, value", [
    ("CASE WHEN x > 2 THEN 'big' WHEN x > 0 THEN 'small' ELSE 'none' END", 3, "big"),
    ("CASE WHEN x > 2 THEN 'big' WHEN x > 0 THEN 'small' ELSE 'none' END", 1, "small"),
    ("CASE WHEN x > 2 THEN 'big' WHEN x > 0 THEN 'small' ELSE 'none' END", None, "none"),
    ("CASE WHEN x > 2 THEN 'big' END", 1, None),
    ("CASE x WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'many' END", 2, "two"),
    ("CASE x WHEN 1 THEN 'one' ELSE 'other' END", None, "other"),  # NULL matches no WHEN
    ("CASE x WHEN NULL THEN 'null' ELSE 'other' END", None, "other"),
    ("IF(x > 2, 'big', 'small')", 3, "big"),
    ("IF(x > 2, 'big', 'small')", None, "small"),  # a NULL condition takes the ELSE side
    ("COALESCE(x, 7)", None, 7),
    ("COALESCE(x, 7)", 3, 3),
    ("COALESCE(x, NULL)", None, None),
    ("NULLIF(x, 3)", 3, None),
    ("NULLIF(x, 3)", 4, 4),
    ("NULLIF(x, NULL)", 4, 4),
    ("NULLIF(x, 3)", None, None),
])
def test_case_if_coalesce_nullif(sql: str, x: Any, value: Any) -> None:
    assert ev(sql, x=x) == value


# --- functions -------------------------------------------------------------------------------

@pytest.mark.parametrize("sql, value", [
    ("ABS(-3)", 3), ("ABS(-2.5)", 2.5),
    ("ROUND(2.5)", 3.0), ("ROUND(-2.5)", -3.0), ("ROUND(0.5)", 1.0), ("ROUND(1.5)", 2.0),
    ("ROUND(2.345, 2)", 2.35), ("ROUND(1.005, 2)", 1.01), ("ROUND(-1.25, 1)", -1.3),
    ("ROUND(15, -1)", 20), ("ROUND(7)", 7), ("ROUND(x, 2)", 0.13),
    ("FLOOR(-1.5)", -2), ("FLOOR(2)", 2), ("CEIL(1.2)", 2), ("CEILING(-1.2)", -1),
    ("SQRT(16)", 4.0), ("SQRT(-1)", None), ("LN(1)", 0.0), ("LN(0)", None), ("LN(-1)", None),
    ("LOG10(1000)", 3.0), ("LOG10(0)", None), ("EXP(0)", 1.0),
    ("POWER(2, 10)", 1024.0), ("POW(4, 0.5)", 2.0), ("POWER(-8, 0.5)", None),
    ("SIGN(-3)", -1.0), ("SIGN(0)", 0.0), ("SIGN(2.5)", 1.0),
    ("LEAST(3, 1, 2)", 1), ("GREATEST(3, 1, 2)", 3),
    ("LEAST(3, NULL, 2)", 2), ("GREATEST(NULL, 1)", 1), ("GREATEST(NULL, NULL)", None),
    ("UPPER('aBc')", "ABC"), ("LOWER('aBc')", "abc"), ("LENGTH('abc')", 3), ("LENGTH('')", 0),
    ("SUBSTRING('hello', 2, 3)", "ell"), ("SUBSTR('hello', 2)", "ello"),
    ("SUBSTR('hello', 0, 2)", "he"), ("SUBSTR('hello', -3, 2)", "ll"),
    ("SUBSTR('hello', 9)", ""), ("SUBSTR('hello', 2, -1)", ""),
    ("CONCAT('a', 'b', 'c')", "abc"), ("CONCAT('a', 1, TRUE)", "a1true"),
    ("CONCAT('a', NULL)", None),
    ("TRIM('  a b  ')", "a b"), ("LTRIM('  a ')", "a "), ("RTRIM('  a ')", "  a"),
    ("TRIM(BOTH 'x' FROM 'xxaxx')", "a"),
    ("ABS(NULL)", None), ("ROUND(NULL, 1)", None), ("UPPER(NULL)", None),
    ("SUBSTR(NULL, 1)", None), ("SUBSTR('abc', NULL)", None), ("POWER(2, NULL)", None),
])
def test_functions(sql: str, value: Any) -> None:
    got = ev(sql, x=0.125)
    assert got == value and type(got) is type(value), got


@pytest.mark.parametrize("sql, value", [
    ("CAST(x AS DOUBLE)", 3.0), ("CAST('2.5' AS FLOAT)", 2.5), ("CAST('abc' AS DOUBLE)", None),
    ("CAST(3.7 AS INT)", 3), ("CAST(-3.7 AS BIGINT)", -3), ("CAST(' 12 ' AS INT)", 12),
    ("CAST('1.9' AS INT)", 1), ("CAST('abc' AS INT)", None), ("CAST(TRUE AS INT)", 1),
    ("CAST(x AS STRING)", "3"), ("CAST(TRUE AS STRING)", "true"),
    ("CAST('yes' AS BOOLEAN)", True), ("CAST('F' AS BOOLEAN)", False),
    ("CAST('maybe' AS BOOLEAN)", None), ("CAST(0 AS BOOLEAN)", False),
    ("CAST(NULL AS INT)", None),
])
def test_cast(sql: str, value: Any) -> None:
    got = ev(sql, x=3)
    assert got == value and type(got) is type(value)


# --- predicates and attributes ---------------------------------------------------------------

@pytest.mark.parametrize("x, value", [(5, True), (1, False), (None, False)])
def test_a_predicate_counts_null_as_false(x: Any, value: bool) -> None:
    assert compile_predicate("x > 2")({"x": x}) is value


def test_a_predicate_that_is_not_a_boolean_is_an_engine_error() -> None:
    with pytest.raises(EngineError, match="not a boolean"):
        compile_predicate("x + 1")({"x": 1})


def test_values_of_the_wrong_type_are_an_engine_error() -> None:
    with pytest.raises(EngineError, match="x < 1"):
        compile_expression("x < 1")({"x": "a"})


@pytest.mark.parametrize("sql, names", [
    ("1 + 2", set()),
    ("x + y * x", {"x", "y"}),
    ("CASE WHEN `a b` > 0 THEN UPPER(s) ELSE COALESCE(t, 'z') END", {"a b", "s", "t"}),
])
def test_attributes_of_names_the_columns_read(sql: str, names: set[str]) -> None:
    assert attributes_of(sql) == names


# --- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("sql, construct", [
    ("sum(value) > 3", "SUM(value)"),
    ("avg(x) OVER ()", "AVG(x) OVER ()"),
    ("count(*)", "COUNT(*)"),
    ("*", "*"),
    ("foo(x)", "FOO(x)"),
    ("x IN (SELECT 1)", "x IN (SELECT 1)"),
    ("(SELECT 1)", "(SELECT 1)"),
    ("t.x > 1", "t.x"),
    ("x IS TRUE", "x IS TRUE"),
    ("CAST(x AS DECIMAL(10, 2))", "CAST(x AS DECIMAL(10, 2))"),
    ("ROUND(x, y)", "y"),
    ("x AS y", "x AS y"),
])
def test_unsupported_constructs_are_config_errors_naming_them(sql: str, construct: str) -> None:
    for compile_ in (compile_expression, compile_predicate, attributes_of):
        with pytest.raises(ConfigError) as err:
            compile_(sql)
        message = str(err.value)
        assert message.startswith(f"unsupported in a stream expression: {construct}")
        assert message.endswith(f" in {sql!r}") and "\n" not in message


def test_the_error_message_of_the_brief() -> None:
    with pytest.raises(ConfigError) as err:
        compile_predicate("sum(value) > 3")
    assert str(err.value) == "unsupported in a stream expression: SUM(value) in 'sum(value) > 3'"


@pytest.mark.parametrize("sql", ["", "   ", "x +", "'abc", "x BETWEEN 1 AND", "1 +\n* 2"])
def test_empty_or_unparsable_text_is_a_one_line_config_error(sql: str) -> None:
    with pytest.raises(ConfigError) as err:
        compile_expression(sql)
    assert repr(sql) in str(err.value) and "\n" not in str(err.value)


# --- pickling --------------------------------------------------------------------------------

def test_compiled_callables_survive_cloudpickle() -> None:
    f = cloudpickle.loads(cloudpickle.dumps(compile_expression(
        "CASE WHEN s LIKE 'a%' THEN ROUND(x / 3, 2) ELSE CAST(x AS STRING) END")))
    p = cloudpickle.loads(cloudpickle.dumps(
        compile_predicate("x BETWEEN 1 AND 5 AND s IS NOT NULL")))
    assert f({"x": 2, "s": "abc"}) == 0.67 and f({"x": 2, "s": "b"}) == "2"
    assert p({"x": 2, "s": "a"}) is True and p({"x": 2, "s": None}) is False
    with pytest.raises(EngineError, match="'x'"):
        f({"s": "a"})


# --- against DuckDB --------------------------------------------------------------------------

# DuckDB parses 1.5 as DECIMAL and raises on overflow: only small integer literals, and values
# small enough that a few products stay finite. No division and no functions, whose NULL and
# error semantics differ between DuckDB and Spark.
# Small whole values too, so that equalities and BETWEEN bounds are sometimes met.
values = st.floats(-1e3, 1e3, allow_nan=False) | st.integers(-3, 7).map(float) | st.none()
leaves = st.sampled_from(["x", "y", "0", "1", "2", "7"])


def _numeric(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    comparisons = st.builds(lambda a, op, b: f"{a} {op} {b}",
                            inner, st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), inner)
    return st.one_of(
        st.builds(lambda a, op, b: f"({a} {op} {b})", inner, st.sampled_from("+-*"), inner),
        st.builds(lambda a: f"(-{a})", inner),
        st.builds(lambda c, a, b: f"CASE WHEN {c} THEN {a} ELSE {b} END",
                  comparisons, inner, inner),
        st.builds(lambda c, a: f"CASE WHEN {c} THEN {a} END", comparisons, inner),
    )


numeric = st.recursive(leaves, _numeric, max_leaves=8)
booleans = st.recursive(
    st.builds(lambda a, op, b: f"{a} {op} {b}",
              numeric, st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), numeric)
    | st.builds(lambda a: f"{a} IS NULL", numeric)
    | st.builds(lambda a, b, c: f"{a} BETWEEN {b} AND {c}", numeric, numeric, numeric)
    | st.builds(lambda a, b, c: f"{a} IN ({b}, {c})", numeric, numeric, numeric),
    lambda inner: st.builds(lambda a, op, b: f"({a} {op} {b})", inner,
                            st.sampled_from(["AND", "OR"]), inner)
    | st.builds(lambda a: f"(NOT {a})", inner),
    max_leaves=4,
)


@pytest.fixture(scope="module")
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    with duckdb.connect() as con:
        yield con


@settings(max_examples=300, deadline=None)
@given(sql=numeric | booleans, x=values, y=values)
def test_values_agree_with_duckdb(duck: duckdb.DuckDBPyConnection, sql: str,
                                  x: float | None, y: float | None) -> None:
    (want,) = duck.execute(
        f"SELECT {sql} FROM (SELECT $1::DOUBLE AS x, $2::DOUBLE AS y)", [x, y]).fetchone()
    got = compile_expression(sql)({"x": x, "y": y})
    if want is None or isinstance(want, bool):
        assert got is want, (sql, x, y, got, want)
    else:
        assert math.isclose(got, float(want), rel_tol=1e-9, abs_tol=1e-9), (sql, x, y, got, want)
