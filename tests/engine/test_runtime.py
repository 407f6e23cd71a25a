"""The local runtime: API contract, errors, persistence, metrics, order independence."""

from __future__ import annotations

import random

import pytest

from aspen.engine.batch import BaseFact, Batch
from aspen.engine.plan import PlanChoices
from aspen.errors import AspenError, EngineError, UnknownViewError
from aspen.runtime.local import LocalRuntime, ViewDelta
from aspen.views import build_dataflow

LINKS = [("a", "b", 1.0), ("b", "c", 2.0), ("c", "a", 1.0), ("c", "d", 1.0), ("d", "b", 4.0),
         ("a", "d", 7.0)]


def facts(links=LINKS, prefix="v"):
    return tuple(BaseFact("link", link, f"{prefix}{i}") for i, link in enumerate(links))


def test_unknown_view_and_bad_arguments():
    with pytest.raises(UnknownViewError):
        LocalRuntime(views=("reach",), backend="python")
    with pytest.raises(EngineError):
        LocalRuntime(partitions=0, backend="python")
    with pytest.raises(AspenError):
        LocalRuntime(mode="sometimes", backend="python")
    rt = LocalRuntime(views=("reachable",), backend="python")
    with pytest.raises(UnknownViewError):
        rt.view("min_cost")
    with pytest.raises(EngineError):
        rt.apply(Batch(inserts=(BaseFact("road", ("a", "b"), "x"),)))
    with pytest.raises(EngineError):
        rt.apply(Batch(inserts=(BaseFact("link", ("a", "b"), "x"),)))
    rt.apply(Batch(inserts=(BaseFact("link", ("a", "b", 1.0), "x"),)))
    with pytest.raises(EngineError):  # variables are fresh per instance
        rt.apply(Batch(inserts=(BaseFact("link", ("a", "c", 1.0), "x"),)))


def test_several_instances_or_and_renewal():
    rt = LocalRuntime(views=("reachable",), partitions=2, backend="python")
    rt.apply(Batch(inserts=(BaseFact("link", ("a", "b", 1.0), "x1"),
                            BaseFact("link", ("a", "b", 1.0), "x2"))))
    m = rt.manager
    assert rt.view("reachable")[("a", "b")] == m.or_(m.var("x1"), m.var("x2"))
    assert not rt.apply(Batch(deletes=frozenset({"x1"})))["reachable"]
    assert rt.live_vars == {"x2"}
    d = rt.apply(Batch(deletes=frozenset({"x2"})))
    assert d["reachable"] == ViewDelta(set(), {("a", "b")})


@pytest.mark.parametrize("views", [("reachable",), ("min_cost", "cheapest_path")])
def test_dump_and_load_round_trip(views):
    rt = LocalRuntime(views=views, partitions=3, mode="lazy", backend="python")
    rt.apply(Batch(inserts=facts()))
    data = rt.dump_state()
    assert isinstance(data, bytes)
    copy = LocalRuntime.load_state(data, backend="python")
    for view in views:
        assert set(copy.view(view)) == set(rt.view(view))
        for key, f in rt.view(view).items():
            assert copy.manager.encode(copy.view(view)[key]) == rt.manager.encode(f) or \
                copy.manager.to_expr(copy.view(view)[key]) == rt.manager.to_expr(f)
    # both continue identically: a deletion whose alternative is still buffered (lazy)
    for runtime in (rt, copy):
        runtime.apply(Batch(deletes=frozenset({"v0", "v3"})))
    for view in views:
        assert set(copy.view(view)) == set(rt.view(view))
    assert copy.live_vars == rt.live_vars
    assert copy.metrics.batches == rt.metrics.batches


def test_load_state_rejects_garbage():
    with pytest.raises(EngineError):
        LocalRuntime.load_state(b"not a state")


def test_metrics_and_state_bytes():
    rt = LocalRuntime(views=("reachable",), partitions=3, backend="python")
    rt.apply(Batch(inserts=facts()))
    total = rt.metrics.total()
    assert total.messages > 0 and total.prov_bytes > 0 and total.processed > 0
    assert rt.state_bytes() == sum(n.state_bytes for n in rt.metrics.nodes) > 0
    d = rt.metrics.as_dict()
    assert len(d["nodes"]) == 3 and d["total"]["messages"] == total.messages
    quiet = LocalRuntime(views=("reachable",), partitions=3, backend="python",
                         measure_bytes=False)
    quiet.apply(Batch(inserts=facts()))
    assert quiet.metrics.total().prov_bytes == 0


def test_lazy_ships_less_than_eager():
    rng = random.Random(2)
    names = [f"n{i}" for i in range(7)]
    links = [(a, b, 1.0) for a in names for b in names if a != b and rng.random() < 0.5]
    counts = {}
    for mode in ("lazy", "eager"):
        rt = LocalRuntime(views=("reachable",), partitions=4, mode=mode, backend="python",
                          measure_bytes=False)
        rt.apply(Batch(inserts=facts(links)))
        counts[mode] = rt.metrics.total().messages
    assert counts["lazy"] < counts["eager"]


@pytest.mark.parametrize("views", [("reachable",), ("shortest_cheapest_path", "min_hops")])
def test_order_and_partition_independence(views):
    results = set()
    for partitions, seed in [(1, None), (2, 1), (4, 2), (7, 3)]:
        rt = LocalRuntime(views=views, partitions=partitions, shuffle_seed=seed, backend="python")
        rt.apply(Batch(inserts=facts()))
        rt.apply(Batch(deletes=frozenset({"v1"})))
        rt.flush()
        results.add(tuple(frozenset(rt.view(v)) for v in views))
    assert len(results) == 1


def test_plans_are_data_with_named_choices():
    base = PlanChoices()
    flow = build_dataflow(("min_cost",), base.with_choices(mode="eager", batch_size=4))
    ship = flow.op("path.ship")
    assert ship.param("mode") == "eager" and ship.param("batch_size") == 4
    assert [op.name for op in build_dataflow(("min_cost",), base.with_choices(aggsel=False)).ops
            if op.kind == "aggsel"] == []
    flow = build_dataflow(("reachable",), base.with_choices(step_placement="broadcast"))
    assert {r.by for src in flow.sources for r in src.routes} == {"owner", "broadcast"}
    rt = LocalRuntime(views=("reachable",), partitions=3, backend="python",
                      choices=base.with_choices(step_placement="broadcast"))
    rt.apply(Batch(inserts=facts()))
    ref = LocalRuntime(views=("reachable",), partitions=3, backend="python")
    ref.apply(Batch(inserts=facts()))
    assert set(rt.view("reachable")) == set(ref.view("reachable"))


def test_region_broadcast_placement_agrees():
    sensors = [("s1", 0.0, 0.0), ("s2", 10.0, 0.0), ("s3", 25.0, 0.0), ("s4", 60.0, 0.0)]
    batch = Batch(inserts=tuple(
        [BaseFact("sensor", s, f"p{s[0]}") for s in sensors]
        + [BaseFact("triggered", (s[0],), f"t{s[0]}") for s in sensors]
        + [BaseFact("region_seed", ("r", "s1"), "g1")]))
    out = []
    for placement in ("repartition", "broadcast"):
        rt = LocalRuntime(views=("active_region",), partitions=3, backend="python",
                          choices=PlanChoices(region_step_placement=placement))
        rt.apply(batch)
        out.append(set(rt.view("active_region")))
    assert out[0] == out[1] == {("r", "s1"), ("r", "s2"), ("r", "s3")}
