"""The expressions the incremental path evaluates give DuckDB's values for the same SQL (NULLs
and three-valued logic included), and state values survive the codec."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

import duckdb
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.errors import QueryRunError
from aspen.queries.incremental.codec import dumps, loads
from aspen.queries.incremental.expr import NotIncrementalError, compile_sql

EXPRESSIONS = (
    "k + v * 2", "v - k", "k / v", "k % 3", "-k", "abs(v - 2)",
    "k > v", "k = v", "k <> v", "k <=> v", "k >= 1 AND v < 2", "k > 1 OR v IS NULL",
    "NOT k > 1", "k IN (1, 3)", "k BETWEEN 1 AND 2", "s LIKE 'a%'", "s LIKE '_b'",
    "CASE WHEN k > 1 THEN 'big' WHEN k IS NULL THEN 'none' ELSE 'small' END",
    "COALESCE(k, v, 0)", "IF(k > v, k, v)", "upper(s)", "length(s)", "s || 'x'",
    "concat(s, '-', s)", "ROUND(w, 1)", "CAST(k AS DOUBLE)", "greatest(k, v)", "least(k, v)",
)
_VALUES = st.fixed_dictionaries({
    "k": st.one_of(st.none(), st.integers(-3, 3)),
    "v": st.one_of(st.none(), st.integers(-3, 3)),
    "w": st.one_of(st.none(), st.sampled_from([0.25, 1.5, -2.75, 3.0])),
    "s": st.one_of(st.none(), st.sampled_from(["ab", "bb", "a", ""])),
})


def _duckdb(row: dict) -> tuple:
    """Every expression of :data:`EXPRESSIONS` over ``row``, in DuckDB (one query)."""
    select = ", ".join(f"{sql} AS x{i}" for i, sql in enumerate(EXPRESSIONS))
    text = sqlglot.transpile(f"SELECT {select} FROM t", read="spark", write="duckdb")[0]
    connection = duckdb.connect()
    connection.execute("CREATE TABLE t (k BIGINT, v BIGINT, w DOUBLE, s VARCHAR)")
    connection.execute("INSERT INTO t VALUES (?, ?, ?, ?)",
                       [row["k"], row["v"], row["w"], row["s"]])
    values = connection.execute(text).fetchone()
    connection.close()
    return values


@settings(max_examples=40, deadline=None)
@given(_VALUES)
def test_expressions_give_duckdb_values(row: dict) -> None:
    for sql, theirs in zip(EXPRESSIONS, _duckdb(row), strict=True):
        try:
            ours = compile_sql(sql, lambda name: lambda r, n=name: r[n])(row)
        except QueryRunError:  # Spark's ANSI mode fails a zero divisor; DuckDB gives NULL
            assert "/" in sql and row["v"] == 0 and theirs is None, (sql, row)
            continue
        if isinstance(theirs, float) or isinstance(ours, float):
            assert (ours is None) == (theirs is None), sql
            if ours is not None:
                assert ours == pytest.approx(theirs), sql
        else:
            assert ours == theirs, (sql, row)


def test_what_spark_refuses_fails_the_query() -> None:
    """Spark's ANSI mode fails an invalid CAST and a zero divisor; TRY_CAST gives NULL."""
    column = lambda name: lambda r, n=name: r[n]  # noqa: E731
    with pytest.raises(QueryRunError, match="CAST_INVALID_INPUT"):
        compile_sql("CAST(s AS INT)", column)({"s": "a"})
    with pytest.raises(QueryRunError, match="DIVIDE_BY_ZERO"):
        compile_sql("k / v", column)({"k": 1, "v": 0})
    with pytest.raises(QueryRunError, match="DIVIDE_BY_ZERO"):
        compile_sql("k % v", column)({"k": 1, "v": 0})
    assert compile_sql("TRY_CAST(s AS INT)", column)({"s": "a"}) is None
    assert compile_sql("CAST(s AS INT)", column)({"s": "12"}) == 12


def test_casts_truncate_as_spark_does() -> None:
    """Spark's CAST of a double to BIGINT truncates (DuckDB's rounds: not the oracle here)."""
    cast = compile_sql("CAST(w AS BIGINT)", lambda name: lambda r, n=name: r[n])
    assert [cast({"w": w}) for w in (1.5, -1.5, 2.99, None)] == [1, -1, 2, None]


def test_a_timestamp_compared_with_text_is_refused_not_guessed() -> None:
    check = compile_sql("t > '2026-01-01'", lambda name: lambda r, n=name: r[n])
    with pytest.raises(NotIncrementalError, match="comparison"):
        check({"t": datetime(2026, 2, 1, tzinfo=UTC)})


_PLAIN = st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5),
                   st.booleans(), st.datetimes(timezones=st.just(UTC)),
                   st.fractions().map(Fraction), st.binary(max_size=4))


@given(st.recursive(_PLAIN, lambda inner: st.one_of(
    st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.one_of(st.integers(), st.text(max_size=3)), st.integers(-3, 3),
                    max_size=3)), max_leaves=8))
def test_state_values_survive_the_codec(value: object) -> None:
    assert loads(dumps(value)) == value
    assert dumps(loads(dumps(value))) == dumps(value)
