"""SQL → join graph and execution spec (aspen.queries.sql), on literal SQL: golden outputs and
the one-line refusals of what is not supported."""

from __future__ import annotations

import pytest

from aspen.errors import ConfigError
from aspen.queries.spec import final_select
from aspen.queries.sql import parse_query
from aspen.queries.tables import TableColumns

THREE_WAY = """
    SELECT a.src, b.dst, a.cost + b.cost AS total, s.x
    FROM link a, link b, sensor s
    WHERE a.dst = b.src AND b.dst = s.id AND a.cost > 2 AND s.y < 2
      AND (b.cost < 3 OR b.cost > 8)
"""

GOLDEN = [
    (
        THREE_WAY,
        {"name": "q", "relations": {"a": "link", "b": "link", "s": "sensor"},
         "joins": ["a.dst = b.src", "b.dst = s.id"],
         "filters": [{"relation": "a", "predicate": "cost > 2"},
                     {"relation": "b", "predicate": "cost < 3 OR cost > 8"},
                     {"relation": "s", "predicate": "y < 2"}]},
        {"relations": [
            {"alias": "a", "table": "link", "columns": ["cost", "dst", "src"],
             "filters": ["cost > 2"]},
            {"alias": "b", "table": "link", "columns": ["cost", "dst", "src"],
             "filters": ["cost < 3 OR cost > 8"]},
            {"alias": "s", "table": "sensor", "columns": ["id", "x"], "filters": ["y < 2"]}],
         "outputs": [{"name": "src", "sql": "a__src", "aggregate": False},
                     {"name": "dst", "sql": "b__dst", "aggregate": False},
                     {"name": "total", "sql": "a__cost + b__cost", "aggregate": False},
                     {"name": "x", "sql": "s__x", "aggregate": False}],
         "group_by": [], "distinct": False},
    ),
    (  # explicit JOIN … ON, every aggregate, conditions of WHERE and ON together
        """select a.src, count(*) as n, sum(b.cost) as c, min(r.dst) AS m, max(a.cost) mx,
                  avg(b.cost) av
           from link a join reachable r on r.src = a.src and r.dst = a.dst
                       join link b on b.src = a.dst
           where r.src <> 'n0' group by a.src""",
        {"name": "q", "relations": {"a": "link", "r": "reachable", "b": "link"},
         "joins": ["a.dst = b.src", "a.dst = r.dst", "a.src = r.src"],
         "filters": [{"relation": "r", "predicate": "src <> 'n0'"}]},
        None,
    ),
    (  # GROUP BY a position; a one-relation query; a table without an alias
        "SELECT UPPER(src) AS u, COUNT(DISTINCT dst) AS d FROM link GROUP BY 1",
        {"name": "q", "relations": {"link": "link"}, "joins": [], "filters": []},
        {"relations": [{"alias": "link", "table": "link", "columns": ["dst", "src"],
                        "filters": []}],
         "outputs": [{"name": "u", "sql": "UPPER(link__src)", "aggregate": False},
                     {"name": "d", "sql": "COUNT(DISTINCT link__dst)", "aggregate": True}],
         "group_by": ["UPPER(link__src)"], "distinct": False},
    ),
    (  # DISTINCT, one relation's star, an unqualified column, a same-relation equality
        "SELECT DISTINCT s.*, region FROM sensor s JOIN region_seed g ON g.id = s.id "
        "WHERE s.x = s.y",
        {"name": "q", "relations": {"s": "sensor", "g": "region_seed"},
         "joins": ["g.id = s.id"], "filters": [{"relation": "s", "predicate": "x = y"}]},
        {"relations": [
            {"alias": "s", "table": "sensor", "columns": ["id", "x", "y"], "filters": ["x = y"]},
            {"alias": "g", "table": "region_seed", "columns": ["id", "region"], "filters": []}],
         "outputs": [{"name": "id", "sql": "s__id", "aggregate": False},
                     {"name": "x", "sql": "s__x", "aggregate": False},
                     {"name": "y", "sql": "s__y", "aggregate": False},
                     {"name": "region", "sql": "g__region", "aggregate": False}],
         "group_by": [], "distinct": True},
    ),
]


@pytest.mark.parametrize("sql, query_json, spec_json", GOLDEN)
def test_golden_translation(sql: str, query_json: dict, spec_json: dict | None) -> None:
    parsed = parse_query("q", sql)
    assert parsed.query.to_json() == query_json
    if spec_json is not None:
        assert parsed.spec.to_json() == spec_json


def test_filter_ids_are_the_statistics_names() -> None:
    parsed = parse_query("q", THREE_WAY)
    assert [f.id for f in parsed.query.filters] == [
        "a: cost > 2", "b: cost < 3 OR cost > 8", "s: y < 2"]
    assert [p.id for p in parsed.query.joins] == ["a.dst=b.src", "b.dst=s.id"]


def test_the_final_select_over_the_joined_rows() -> None:
    parsed = parse_query("q", GOLDEN[1][0])
    assert final_select(parsed.spec, "j") == (
        "SELECT a__src AS src, COUNT(*) AS n, SUM(b__cost) AS c, MIN(r__dst) AS m, "
        "MAX(a__cost) AS mx, AVG(b__cost) AS av FROM j GROUP BY a__src")
    assert final_select(parse_query("q", GOLDEN[3][0]).spec, "j").startswith("SELECT DISTINCT")


def test_group_by_an_output_name_and_repeated_conditions() -> None:
    parsed = parse_query("q", "SELECT a.src AS s, COUNT(*) AS n FROM link a, link b "
                              "WHERE a.dst = b.src AND b.src = a.dst GROUP BY s")
    assert parsed.spec.group_by == ("a__src",)
    assert [p.id for p in parsed.query.joins] == ["a.dst=b.src"]


def test_other_tables_can_be_named() -> None:
    tables = {"orders": TableColumns(("o_id", "o_cust"), ("o_id", "o_cust")),
              "customer": TableColumns(("c_id", "c_seg"), ("c_id", "c_seg"))}
    parsed = parse_query("tpch", "SELECT c.c_seg, COUNT(*) AS n FROM customer c, orders o "
                                 "WHERE c.c_id = o.o_cust GROUP BY c.c_seg", tables)
    assert parsed.tables == ("customer", "orders")


REFUSED = [
    ("SELECT a.src FROM link a LEFT JOIN link b ON a.dst = b.src",
     "LEFT OUTER JOIN is not supported"),
    ("SELECT a.src FROM link a, link b WHERE a.dst < b.src",
     "condition 'a.dst < b.src' across relations a, b is not an equality of two columns"),
    ("SELECT a.src FROM link a, link b WHERE a.dst = b.src OR b.cost > 1",
     "combines relations a, b with OR"),
    ("SELECT a.src FROM link a JOIN link b ON a.dst = UPPER(b.src)",
     "must equate two columns of two relations"),
    ("SELECT a.src FROM link a WHERE a.dst IN (SELECT id FROM sensor)",
     "subqueries are not supported"),
    ("SELECT x.src FROM (SELECT src FROM link) x", "subqueries are not supported"),
    ("WITH t AS (SELECT src FROM link) SELECT src FROM t", "WITH (a common table expression)"),
    ("SELECT src FROM link a, link b WHERE a.dst = b.src", "column 'src' is ambiguous (in a, b)"),
    ("SELECT a.src FROM link a, sensor a", "alias 'a' names two relations"),
    ("SELECT src FROM link, link", "table 'link' appears twice"),
    ("SELECT link.src FROM link a", "unknown relation 'link' in 'link.src' (table link is "
                                    "called 'a' here)"),
    ("SELECT s.x FROM link sensor, sensor s WHERE sensor.dst = s.id",
     "alias 'sensor' of table link is the name of another table"),
    ("SELECT a.nope FROM link a", "table link (a) has no column 'nope'"),
    ("SELECT nope FROM link a", "unknown column 'nope'"),
    ("SELECT a.src FROM links a", "unknown table 'links'"),
    ("SELECT a.src FROM db.link a", "qualified table names are not supported"),
    ("SELECT a.src, s.id FROM link a, sensor s", "join graph is not connected"),
    ("SELECT a.src FROM link a ORDER BY a.src", "ORDER BY is not supported"),
    ("SELECT a.src FROM link a LIMIT 5", "LIMIT is not supported"),
    ("SELECT a.src, COUNT(*) AS n FROM link a GROUP BY a.src HAVING COUNT(*) > 1",
     "HAVING is not supported"),
    ("SELECT a.src, STDDEV(a.cost) AS sd FROM link a GROUP BY a.src",
     "aggregate STDDEV is not supported"),
    ("SELECT a.src, a.dst, COUNT(*) AS n FROM link a GROUP BY a.src",
     "output 'dst' uses a.dst, which is neither aggregated nor in GROUP BY"),
    ("SELECT a.src, COUNT(*) FROM link a GROUP BY a.src", "name the output 'COUNT(*)' with AS"),
    ("SELECT a.src AS x, a.dst AS x FROM link a", "output column 'x' appears twice"),
    ("SELECT MAX(COUNT(*)) AS m FROM link a", "nested aggregates are not supported"),
    ("SELECT a.src, ROW_NUMBER() OVER (ORDER BY a.cost) AS r FROM link a",
     "window functions are not supported"),
    ("SELECT a.src FROM link a UNION SELECT b.src FROM link b", "one SELECT block"),
    ("SELECT a.src FROM link a JOIN sensor s USING (id)", "JOIN … USING is not supported"),
    ("SELECT a.src FROM link a WHERE 1 = 1", "condition '1 = 1' names no column"),
    ("SELECT a.src FROM link a WHERE COUNT(*) > 1", "aggregates (HAVING is not supported)"),
    ("SELECT 1 AS one", "a query needs FROM"),
    ("SELECT a.src FROM link a; SELECT 1 AS one", "expected one SELECT statement, got 2"),
    ("DELETE FROM link", "expected a SELECT statement"),
    ("SELECT a.src FROM link a WHERE (", "the SQL does not parse at line 1"),
    ("   ", "the SQL is empty"),
]


@pytest.mark.parametrize("sql, fragment", REFUSED)
def test_unsupported_sql_is_refused_in_one_line(sql: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_query("q", sql)
    message = str(info.value)
    assert message.startswith("query 'q': ")
    assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize("name", ["", "9lives", "my-query", "a b", "x" * 65])
def test_a_query_name_is_an_identifier(name: str) -> None:
    with pytest.raises(ConfigError, match="must be an identifier"):
        parse_query(name, "SELECT src FROM link")
