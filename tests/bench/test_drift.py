"""The pure parts of the drift benchmark (aspen.bench.drift): the drift's shapes, the change
batches between two slices' statistics, plan labels, the hindsight candidates and the arms'
summary. No SparkSession."""

from __future__ import annotations

import math

import pytest

from aspen.bench.drift import (
    DRIFT_SQL,
    DriftParams,
    DriftRun,
    SlicePlan,
    SliceShape,
    csv_rows,
    drift_shapes,
    executors_of,
    hindsight_plans,
    markdown,
    plan_id,
    plan_label,
    stats_change,
    summarize,
)
from aspen.optimizer.brute import plans
from aspen.optimizer.cost import cost_of
from aspen.optimizer.declarative import DeclarativeOptimizer
from aspen.optimizer.exhaustive import best_plan
from aspen.optimizer.query import Query
from aspen.optimizer.space import SearchSpace
from aspen.optimizer.stats import Stats
from aspen.queries.sql import parse_query


def _stats(shape: SliceShape, executors: float = 1.0, observed: bool = True) -> Stats:
    """Statistics of a slice as the lake would give them (uniform links, exact counts), with
    the selectivity of the seeds' links a run observes (hot seeds have many links each)."""
    rows = shape.expected_rows()
    sensors = float(rows["sensor"])
    seen = {"l.src=s.id": rows["seed_links"] / (rows["region_seed"] * rows["link"])}
    return Stats.from_json({
        "tables": {
            "sensor": {"rows": sensors, "width": 13, "columns": {"id": {"ndv": sensors}}},
            "triggered": {"rows": rows["triggered"], "width": 13,
                          "columns": {"id": {"ndv": rows["triggered"]}}},
            "link": {"rows": rows["link"], "width": 34,
                     "columns": {"src": {"ndv": sensors},
                                 "dst": {"ndv": float(shape.params.sensors)}}},
            "region_seed": {"rows": rows["region_seed"], "width": 20,
                            "columns": {"id": {"ndv": rows["region_seed"]}}}},
        "selectivity": seen if observed else {},
        "params": {"executors": executors}})


def test_the_drift_grows_geometrically_and_monotonically() -> None:
    shapes = drift_shapes(8, DriftParams())
    assert [s.index for s in shapes] == list(range(8))
    assert shapes[0].triggered == pytest.approx(0.05)
    assert shapes[-1].triggered == pytest.approx(0.5)
    assert shapes[0].hot_sensors == 50 and shapes[-1].hot_sensors == 30_000
    ratios = [b.triggered / a.triggered for a, b in zip(shapes, shapes[1:], strict=False)]
    assert max(ratios) == pytest.approx(min(ratios))
    for a, b in zip(shapes, shapes[1:], strict=False):
        assert b.hot_sensors >= a.hot_sensors
        assert all(b.expected_rows()[t] >= a.expected_rows()[t] for t in a.expected_rows())
    last = shapes[-1].expected_rows()
    assert last["link"] == 1_000_000 + 30_000 * 100
    # the seeds' links start far below the triggered sensors and end far above them
    first = shapes[0].expected_rows()
    assert first["seed_links"] * 5 < first["triggered"]
    assert last["seed_links"] > 5 * last["triggered"]
    with pytest.raises(ValueError):
        drift_shapes(1)
    with pytest.raises(ValueError):
        DriftParams.scaled(0)
    for bad in ({"sensors": 10**8}, {"hot_first": 10, "hot_last": 5}, {"hot_degree": 0},
                {"triggered_first": 0.6}, {"seeds_per_region": 10**6}):
        with pytest.raises(ValueError):
            DriftParams(**bad)


def test_a_scaled_shape_keeps_its_proportions() -> None:
    small = DriftParams.scaled(0.1)
    assert (small.sensors, small.hot_first, small.hot_last) == (100_000, 5, 3000)
    assert small.hot_degree == DriftParams().hot_degree


def test_the_query_parses_into_a_chain_of_four() -> None:
    parsed = parse_query("drift", DRIFT_SQL)
    assert parsed.query.relations == {"r": "region_seed", "s": "sensor", "l": "link",
                                      "t": "triggered"}
    assert [p.id for p in parsed.query.joins] == ["l.dst=t.id", "l.src=s.id", "r.id=s.id"]


def test_a_change_batch_turns_the_old_statistics_into_the_new() -> None:
    shapes = drift_shapes(4, DriftParams.scaled(0.1))
    old = _stats(shapes[0], observed=False)
    new = _stats(shapes[2]).changed({"selectivity": {"l.src=s.id": 1e-5}})[0]
    change, vanished = stats_change(old, new)
    assert vanished == []
    assert set(change) == {"rows", "ndv", "selectivity"}
    assert old.changed(change)[0].values == new.values
    assert stats_change(new, new) == ({}, [])
    assert stats_change(new, old)[1] == [("selectivity", "l.src=s.id")]


def test_incremental_reoptimization_over_the_drift_matches_planning_from_scratch() -> None:
    parsed = parse_query("drift", DRIFT_SQL)
    space = SearchSpace(parsed.query)
    optimizer = DeclarativeOptimizer(SearchSpace(parsed.query))
    current = None
    chosen = []
    for shape in drift_shapes(8, DriftParams()):
        stats = _stats(shape)
        if current is None:
            result = optimizer.optimize(stats)
        else:
            change, vanished = stats_change(current, stats)
            assert not vanished
            result = optimizer.reoptimize(change)
        current = stats
        want, _ = best_plan(space, stats)
        assert math.isclose(result.cost, want, rel_tol=1e-9)
        chosen.append(plan_label(result.plan))
    # the drift moves the plan: the first slice broadcasts the seeds' links, the last one the
    # triggered sensors
    assert chosen[0] == "t ⋈b (l ⋈b (s ⋈b r))"
    assert chosen[-1] == "(l ⋈b t) ⋈b (s ⋈b r)"


def test_plan_labels_and_ids() -> None:
    plan = {"join": "sort_merge", "key": "a.k=b.k",
            "left": {"join": "shuffle_hash", "left": {"scan": "a"}, "right": {"scan": "c"}},
            "right": {"scan": "b"}}
    assert plan_label(plan) == "(a ⋈h c) ⋈m b"
    assert plan_label({"scan": "a"}) == "a"
    assert plan_id(plan) == plan_id(dict(reversed(list(plan.items()))))


def test_hindsight_plans_rank_by_the_summed_estimate() -> None:
    query = Query.from_json({"relations": {"a": "t", "b": "u", "c": "v"},
                             "joins": ["a.k = b.k", "b.j = c.j"]})
    early = Stats.from_json({"tables": {"t": {"rows": 1e6}, "u": {"rows": 1e5},
                                        "v": {"rows": 10}}})
    late = early.changed({"rows": {"v": 1e7}})[0]
    two = hindsight_plans(query, [early, late], 2)
    assert len(two) == 2 and plan_id(two[0]) != plan_id(two[1])
    totals = [sum(cost_of(p, query, s) for s in (early, late)) for p in two]
    assert totals[0] <= totals[1]
    assert all(sum(cost_of(p, query, s) for s in (early, late)) >= totals[1] - 1e-12
               for p in plans(query) if plan_id(p) not in {plan_id(x) for x in two})
    rest = hindsight_plans(query, [early, late], 1, exclude=[plan_id(two[0])])
    assert plan_id(rest[0]) == plan_id(two[1])
    assert hindsight_plans(query, [early], 0) == []


def test_the_summary_takes_medians_and_the_best_total_in_hindsight() -> None:
    times = {"p": [[1.0, 9.0, 1.2], [6.0, 6.0, 6.0], [7.0, 7.0, 7.0]],
             "q": [[2.0, 2.0, 2.0], [3.0, 3.0, 3.0], [3.0, 3.0, 3.0]],
             "r": [[1.5, 1.5, 1.5], [3.5, 3.5, 3.5], [2.5, 2.5, 2.5]]}
    s = summarize(times, ["p", "q", "r"], optimize_seconds=0.5, stats_seconds=4.0)
    assert s.adaptive == [1.2, 3.0, 2.5]
    assert s.first_slice == [1.2, 6.0, 7.0] and s.first_plan == "p"
    assert s.best_static_plan == "r" and s.best_static == [1.5, 3.5, 2.5]
    assert s.totals == pytest.approx({"adaptive": 6.7, "first_slice": 14.2, "best_static": 7.5})
    assert s.ratios["adaptive/best_static"] == pytest.approx(6.7 / 7.5)
    assert s.ratios["adaptive+reopt/first_slice"] == pytest.approx(7.2 / 14.2)


def test_the_tables_name_every_slice_and_candidate() -> None:
    shapes = drift_shapes(2, DriftParams.scaled(0.01))
    a = {"join": "broadcast_hash", "left": {"scan": "l"}, "right": {"scan": "t"}}
    b = {"join": "shuffle_hash", "left": {"scan": "t"}, "right": {"scan": "l"}}
    adaptive = [SlicePlan(k, plan, 1.0, 0.2, 0.001, 5, k > 0, {}, {}, {"link": 10.0 * (k + 1)})
                for k, plan in enumerate((a, b))]
    run = DriftRun(shapes, adaptive, {plan_id(a): a, plan_id(b): b},
                   {plan_id(a): [[1.0], [4.0]], plan_id(b): [[2.0], [2.0]]},
                   estimates={plan_id(a): [0.1, 0.4], plan_id(b): [0.2, 0.2]})
    s = summarize(run.times, [plan_id(a), plan_id(b)])
    text = "\n".join(markdown(run, s))
    assert "`l ⋈b t`" in text and "`t ⋈h l`" in text
    assert "adaptive / best static = **0.750**" in text
    rows = csv_rows(run)
    assert len(rows) == 4
    assert {(r["slice"], r["plan"]) for r in rows if r["adaptive"]} == {(1, "l ⋈b t"),
                                                                       (2, "t ⋈h l")}
    assert {r["plan"] for r in rows if r["first_slice"]} == {"l ⋈b t"}
    assert [r["estimated_cost"] for r in rows if r["plan"] == "l ⋈b t"] == [0.1, 0.4]


def test_executors_follow_the_master() -> None:
    assert executors_of("local[*]") == 1
    assert executors_of("k8s://host", "12") == 12
    assert executors_of("yarn", "0") == 8
