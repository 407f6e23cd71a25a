"""Inferred operator properties hold on data: every inferred key is unique and its node has no
duplicate rows; every equivalence class holds on every row (hypothesis, random lakes, every
node of the corpus' queries); set semantics and needed columns on golden queries."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from test_sqlprov_meaning import CORPUS, frames, lakes

from aspen.sqlprov.algebra import children
from aspen.sqlprov.engines import run_duckdb
from aspen.sqlprov.instrument import _Gen
from aspen.sqlprov.parse import parse_sql
from aspen.sqlprov.properties import classes, keys, needed, set_semantics
from aspen.sqlprov.tables import SQL_TABLES

EXTRA = [
    "SELECT DISTINCT l.src, l.dst, s.x FROM link l JOIN sensor s ON s.id = l.src",
    "SELECT x.src, y.dst FROM link x JOIN link y ON x.dst = y.src WHERE x.dst = 'b'",
    "SELECT g.s, g.n FROM (SELECT src AS s, COUNT(*) AS n FROM link GROUP BY src) g "
    "WHERE g.s = 'a'",
    "SELECT l.src, t.id FROM link l LEFT JOIN triggered t ON t.id = l.dst",
    "SELECT src FROM link WHERE src = 'a' INTERSECT SELECT id FROM sensor",
]
QUERIES = [parse_sql(sql) for _, sql, _, _ in CORPUS[::2]] + [parse_sql(sql) for sql in EXTRA]


def _nodes(node):
    yield node
    for child in children(node):
        yield from _nodes(child)


@settings(max_examples=3, deadline=None)
@given(tuples=lakes())
def test_keys_and_classes_hold_on_every_node(tuples) -> None:
    data = frames(tuples)
    gen = _Gen(SQL_TABLES)
    for query in QUERIES:
        nodes = list(_nodes(query.root))
        sqls = [gen.plain(n).sql(dialect="duckdb") for n in nodes]
        for node, rows in zip(nodes, run_duckdb(data, sqls), strict=True):
            names = node.outputs
            for key in keys(node):
                index = [names.index(c) for c in key]
                seen = Counter(tuple(r[i] for i in index) for r in rows)
                assert all(n == 1 for n in seen.values()), (node, key)
            for cls in classes(node):
                index = [names.index(c) for c in cls.columns]
                for r in rows:
                    values = {r[i] for i in index}
                    assert len(values) == 1, (node, cls, r)
                    if cls.constant is not None:
                        assert values == {cls.constant.strip("'")}, (node, cls, r)


def test_keys_of_a_foreign_key_join_keep_the_many_side() -> None:
    q = parse_sql("SELECT l.src, l.dst, s.x FROM link l JOIN sensor s ON s.id = l.src")
    join = q.root.child
    assert frozenset({"l__src", "l__dst"}) in keys(join)
    # a left join keeps the left's keys, never the right's alone
    q = parse_sql("SELECT t.id FROM triggered t LEFT JOIN sensor s ON s.id = t.id")
    assert keys(q.root.child) == {frozenset({"t__id"})}


def test_set_semantics_stops_at_aggregates_and_reaches_set_operations() -> None:
    q = parse_sql("SELECT COUNT(*) AS n FROM (SELECT DISTINCT dst AS d FROM link) q")
    flags = set_semantics(q.root)
    from aspen.sqlprov.algebra import Distinct

    (distinct,) = [n for n in _nodes(q.root) if isinstance(n, Distinct)]
    assert not flags[id(distinct)]  # COUNT reads its duplicates: it must stay
    assert flags[id(distinct.child)]  # its own input's duplicates do not matter
    q = parse_sql("SELECT src FROM link EXCEPT SELECT id FROM triggered")
    flags = set_semantics(q.root)
    assert flags[id(q.root.left)] and flags[id(q.root.right)] and not flags[id(q.root)]


def test_needed_columns_under_distinct_are_all() -> None:
    q = parse_sql("SELECT q.a FROM (SELECT DISTINCT src AS a, dst AS b FROM link) q")
    wanted = needed(q.root)
    distinct = q.root.child
    assert wanted[id(distinct)] == {"_o1"}
    assert wanted[id(distinct.child)] == set(distinct.child.outputs)
