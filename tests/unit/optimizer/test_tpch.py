"""The benchmark queries' join graphs and the TPC-H statistics derived from the specification."""

from __future__ import annotations

import pytest
from join_graphs import assert_close

from aspen.errors import ConfigError
from aspen.optimizer.exhaustive import best_plan
from aspen.optimizer.space import SearchSpace
from aspen.optimizer.systemr import SystemR
from aspen.optimizer.tpch import (
    FILTER_SELECTIVITY,
    QUERIES,
    collision_probability,
    expected_distinct,
    row_width,
    tpch_stats,
)


def test_the_queries_shapes() -> None:
    sizes = {name: (len(q.relations), len(q.joins), len(q.filters)) for name, q in QUERIES.items()}
    assert sizes == {"Q3": (3, 2, 3), "Q3S": (3, 2, 3), "Q5": (6, 6, 2), "Q5S": (6, 6, 2),
                     "Q10": (4, 3, 2), "Q8Join": (8, 7, 0), "Q8": (8, 7, 3)}
    assert set(QUERIES["Q8Join"].relations.values()) == {
        "orders", "lineitem", "customer", "part", "partsupp", "supplier", "nation", "region"}
    assert sorted(QUERIES["Q8"].relations.values()).count("nation") == 2
    # Q5's cycle customer–orders–lineitem–supplier closes on the nation keys
    assert "c.c_nationkey=s.s_nationkey" in {p.id for p in QUERIES["Q5"].joins}


def test_specification_numbers() -> None:
    s = tpch_stats()
    assert [s.rows(t) for t in ("lineitem", "orders", "customer", "part", "supplier",
                                "partsupp", "nation", "region")] == [
        6_001_215, 1_500_000, 150_000, 200_000, 10_000, 800_000, 25, 5]
    assert s.ndv("orders", "o_custkey") == 100_000  # customers with orders
    assert row_width("lineitem") == 141 and row_width("orders") == 134
    assert FILTER_SELECTIVITY["c_mktsegment = 'MACHINERY'"] == 0.2
    # order dates: 2406 days from 1992-01-01; 1993 is 365 of them
    assert FILTER_SELECTIVITY[
        "o_orderdate >= '1993-01-01' and o_orderdate < '1994-01-01'"] == pytest.approx(365 / 2406)
    assert 0.24 < FILTER_SELECTIVITY["l_returnflag = 'R'"] < 0.26
    for query in QUERIES.values():
        for flt in query.filters:
            assert 0 < s.selectivity(flt.id) <= 1


def test_scale_factor_scales_all_but_nation_and_region() -> None:
    s = tpch_stats(10)
    assert s.rows("orders") == 15_000_000 and s.ndv("customer", "c_custkey") == 1_500_000
    assert s.rows("nation") == 25 and s.ndv("nation", "n_nationkey") == 25
    with pytest.raises(ConfigError, match="scale factor"):
        tpch_stats(0)
    with pytest.raises(ConfigError, match="skew"):
        tpch_stats(skew=-1)


def test_skew_raises_the_selectivity_of_joins_of_two_skewed_columns() -> None:
    flat, skewed = tpch_stats(), tpch_stats(skew=0.5)
    pred = "c.c_nationkey=s.s_nationkey"
    assert flat.selectivity(pred) is None  # 1 / 25 from the ndvs
    assert skewed.selectivity(pred) == pytest.approx(collision_probability(25, 0.5))
    assert skewed.selectivity(pred) > 1 / 25
    # foreign keys lose a few distinct values; keys keep theirs; key joins keep 1/N
    assert skewed.ndv("orders", "o_custkey") < flat.ndv("orders", "o_custkey")
    assert skewed.ndv("customer", "c_custkey") == flat.ndv("customer", "c_custkey")
    assert skewed.selectivity("c.c_custkey=o.o_custkey") is None
    assert collision_probability(25, 0.0) == pytest.approx(1 / 25)
    assert expected_distinct(10, 1e9, 0.5) == pytest.approx(10)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_each_query_plans(name: str) -> None:
    query = QUERIES[name]
    for stats in (tpch_stats(), tpch_stats(skew=0.5)):
        exact, plan = best_plan(SearchSpace(query), stats)
        assert_close(SystemR(SearchSpace(query)).optimize(stats).cost, exact)
        assert plan
