"""cost_of on 2- and 3-relation plans worked out by hand from the formulas (docs/optimizer.md),
with round parameters so each term is visible."""

from __future__ import annotations

import math

import pytest

from aspen.errors import ConfigError
from aspen.optimizer.cost import card, cost_of
from aspen.optimizer.exhaustive import best_plan
from aspen.optimizer.query import Query
from aspen.optimizer.space import SearchSpace
from aspen.optimizer.stats import Stats

PARAMS = {"scan_byte": 0.001, "cpu_row": 0.01, "net_byte": 0.001, "hash_build_row": 0.1,
          "sort_row": 0.01, "executors": 2, "broadcast_limit": 500, "broadcast_penalty": 10}
TWO = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
STATS = Stats.from_json({"tables": {"t": {"rows": 100, "width": 10},
                                    "u": {"rows": 10, "width": 5},
                                    "v": {"rows": 1000, "width": 1}},
                         "params": PARAMS})
SCAN_A = 100 * 10 * 0.001 + 100 * 0.01  # 2.0
SCAN_B = 10 * 5 * 0.001 + 10 * 0.01  # 0.15


def sort(rows: float, width: float) -> float:
    return rows * width * 0.001 + rows * math.log2(rows + 2) * 0.01


def join(method: str, left: dict, right: dict, **extra: str) -> dict:
    return {"join": method, "left": left, "right": right, **extra}


A, B, C = {"scan": "a"}, {"scan": "b"}, {"scan": "c"}


def test_sizes() -> None:
    # ndv defaults to rows: 1 / max(100, 10)
    assert card(TWO, STATS, {"a", "b"}) == pytest.approx(100 * 10 / 100)


def test_broadcast_hash_of_the_small_side() -> None:
    # ship b (50 bytes ≤ limit) to 2 executors, build 10 rows, probe 100, emit 10
    local = 50 * 0.001 * 2 + 10 * 0.1 + 100 * 0.01 + 10 * 0.01
    assert cost_of(join("broadcast_hash", A, B), TWO, STATS) == pytest.approx(
        SCAN_A + SCAN_B + local)


def test_broadcast_hash_over_the_limit_pays_the_penalty() -> None:
    # ship a: 1000 bytes > 500, so ×10
    local = 1000 * 0.001 * 2 * 10 + 100 * 0.1 + 10 * 0.01 + 10 * 0.01
    assert cost_of(join("broadcast_hash", B, A), TWO, STATS) == pytest.approx(
        SCAN_A + SCAN_B + local)


def test_shuffle_hash() -> None:
    local = (1000 + 50) * 0.001 + 10 * 0.1 + 100 * 0.01 + 10 * 0.01
    assert cost_of(join("shuffle_hash", A, B), TWO, STATS) == pytest.approx(
        SCAN_A + SCAN_B + local)


def test_sort_merge_sorts_both_scans() -> None:
    local = (100 + 10) * 0.01 + 10 * 0.01
    expected = SCAN_A + SCAN_B + local + sort(100, 10) + sort(10, 5)
    assert cost_of(join("sort_merge", A, B), TWO, STATS) == pytest.approx(expected)
    keyed = join("sort_merge", A, B, key="a.k=b.k")
    assert cost_of(keyed, TWO, STATS) == pytest.approx(expected)


THREE = Query.from_json({
    "relations": {"a": "t", "b": "u", "c": "v"}, "joins": ["a.k = b.k", "b.k = c.k"],
    "filters": [{"relation": "c", "predicate": "x < 5"}]})  # default selectivity 0.1


def test_three_relations_reuse_a_sort_order() -> None:
    # card(c) = 1000 · 0.1 = 100; card(abc) = 100·10·100 / 100 / 1000 = 1
    assert card(THREE, STATS, {"a", "b", "c"}) == pytest.approx(1.0)
    scans = SCAN_A + SCAN_B + (1000 * 1 * 0.001 + 1000 * 0.01)  # c scans all 1000 rows
    inner = (100 + 10) * 0.01 + 10 * 0.01 + sort(100, 10) + sort(10, 5)
    # the inner sort-merge's output is sorted on the class {a.k, b.k, c.k}: only c is sorted
    outer = (10 + 100) * 0.01 + 1 * 0.01 + sort(100, 1)
    plan = join("sort_merge", join("sort_merge", A, B), C)
    assert cost_of(plan, THREE, STATS) == pytest.approx(scans + inner + outer)
    # a hash join in between loses the order: the outer join sorts (ab) again (10 rows, 15 B)
    hashed = join("sort_merge", join("shuffle_hash", A, B), C)
    shuffle = (1000 + 50) * 0.001 + 10 * 0.1 + 100 * 0.01 + 10 * 0.01
    assert cost_of(hashed, THREE, STATS) == pytest.approx(
        scans + shuffle + outer + sort(10, 15))


def test_three_relations_broadcast_bushy() -> None:
    # c ⋈ (a ⋈ b): broadcast (ab) (10 rows × 15 B = 150 B) to c
    inner = 50 * 0.001 * 2 + 10 * 0.1 + 100 * 0.01 + 10 * 0.01
    outer = 150 * 0.001 * 2 + 10 * 0.1 + 100 * 0.01 + 1 * 0.01
    scans = SCAN_A + SCAN_B + 11.0
    plan = join("broadcast_hash", C, join("broadcast_hash", A, B))
    assert cost_of(plan, THREE, STATS) == pytest.approx(scans + inner + outer)
    assert best_plan(SearchSpace(THREE), STATS)[0] <= cost_of(plan, THREE, STATS) + 1e-12


@pytest.mark.parametrize("query, plan, fragment", [
    (TWO, join("broadcast_hash", A, A), "with itself"),
    (THREE, join("shuffle_hash", A, C), "cross product"),
    (TWO, join("nested_loop", A, B), "unknown join method"),
    (TWO, join("sort_merge", A, B, key="a.x=b.x"), "not a join key class"),
    (TWO, A, "not every relation"),
])
def test_bad_plans_are_config_errors(query: Query, plan: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        cost_of(plan, query, STATS)
