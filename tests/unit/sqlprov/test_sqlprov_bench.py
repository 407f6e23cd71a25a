"""The SQL provenance benchmark's logic on tiny inputs: TPC-H-shaped tables of a few rows (the
TPC-H queries it runs parse, and optimized and unoptimized instrumentation give the same rows
and formulas), and one measurement over tiny lake-shaped tables."""

from __future__ import annotations

import datetime as dt
import random

import pandas as pd
import pyarrow as pa
import pytest
from sqlprov_helpers import answer_of, assert_same

from aspen.bench.sql_provenance import TPCH_QUERIES, measure, table_lines, tpch_catalog
from aspen.provenance.bdd import ProvenanceManager
from aspen.sqlprov.optimize import plan_sql
from aspen.sqlprov.run import run_frames

COLUMNS = {
    "lineitem": "l_orderkey l_partkey l_suppkey l_linenumber l_quantity l_extendedprice "
                "l_discount l_tax l_returnflag l_linestatus l_shipdate l_commitdate "
                "l_receiptdate l_shipinstruct l_shipmode l_comment",
    "orders": "o_orderkey o_custkey o_orderstatus o_totalprice o_orderdate o_orderpriority "
              "o_clerk o_shippriority o_comment",
    "customer": "c_custkey c_name c_address c_nationkey c_phone c_acctbal c_mktsegment c_comment",
    "nation": "n_nationkey n_name n_regionkey n_comment",
    "region": "r_regionkey r_name r_comment",
    "supplier": "s_suppkey s_name s_address s_nationkey s_phone s_acctbal s_comment",
}


def tiny_tpch(seed: int = 4) -> dict[str, pa.Table]:
    """A few rows per table; with seed 4 every query below keeps some rows."""
    rng = random.Random(seed)
    day = dt.date(1993, 6, 1)

    def date() -> dt.date:
        return day + dt.timedelta(days=rng.randrange(0, 700))

    def value(column: str, i: int) -> object:
        name = column.split("_", 1)[1]
        if name.endswith("key") or name in ("linenumber", "shippriority"):
            return i if name == "linenumber" else rng.randrange(1, 4)
        if name.endswith("date"):
            return date()
        if name in ("quantity", "extendedprice", "totalprice", "acctbal"):
            return float(rng.randrange(1, 400))
        if name in ("discount", "tax"):
            return rng.choice([0.04, 0.05, 0.06])
        return rng.choice({
            "returnflag": ["R", "N"], "linestatus": ["O", "F"], "shipmode": ["MAIL", "SHIP"],
            "orderpriority": ["1-URGENT", "3-MEDIUM"], "mktsegment": ["BUILDING"],
            "name": ["ASIA", "EUROPE"]}.get(name, ["x", "y"]))

    sizes = {"lineitem": 30, "orders": 8, "customer": 3, "nation": 3, "region": 2,
             "supplier": 3}
    out = {}
    for table, names in COLUMNS.items():
        columns = names.split()
        rows = [{c: value(c, i + 1) for c in columns} for i in range(sizes[table])]
        for i, row in enumerate(rows):  # primary keys 1..n (lineitem: order, line)
            row[columns[0]] = i + 1 if table != "lineitem" else 1 + i % 8
        out[table] = pa.Table.from_pylist(rows)
    return out


@pytest.mark.parametrize("name", sorted(TPCH_QUERIES))
def test_tpch_queries_give_the_same_formulas_optimized_or_not(name: str) -> None:
    tables = tiny_tpch()
    catalog = tpch_catalog(tables)
    sql = TPCH_QUERIES[name]
    m = ProvenanceManager()
    fixed = plan_sql(sql, catalog, optimize=False).inst
    reference = answer_of(fixed, tuple(f"c{i}" for i in range(len(fixed.outputs))), tables, m)
    optimized = run_frames(tables, sql, manager=m, tables=catalog, strategy="exhaustive")
    assert optimized.rows and optimized.rows == reference.rows  # ORDER BY: the same order
    assert_same(reference, optimized, name)


def test_a_measurement_over_tiny_lake_tables() -> None:
    frames = {"link": pd.DataFrame({"src": ["a", "a", "b"], "dst": ["b", "c", "c"],
                                    "cost": [1.0, 9.0, 2.0]}),
              "sensor": pd.DataFrame({"id": ["s1", "s2"], "x": [0.0, 1.0], "y": [0.0, 0.0]}),
              "triggered": pd.DataFrame({"id": ["s2"]})}
    queries = (("two_hop", "SELECT a.src, b.dst FROM link a JOIN link b ON a.dst = b.src"),
               ("quiet", "SELECT s.id FROM sensor s WHERE NOT EXISTS "
                         "(SELECT 1 FROM triggered t WHERE t.id = s.id)"))
    rows = measure(frames, queries, repeats=1, all_plans=True)
    assert [r["query"] for r in rows] == ["two_hop", "quiet"]
    assert [r["witness_rows"] for r in rows] == [1, 2]  # a→b→c; s1 and s2 (s2 negated)
    assert all(r["compose_s"] >= 0 and r["plans"] for r in rows)
    assert table_lines(rows)[1].split()[0] == "two_hop"
