"""Small random cross-checks of the views against tiny inline oracles (the full oracle and the
property suite live in tests/properties)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from aspen.engine.batch import BaseFact, Batch
from aspen.runtime.local import LocalRuntime

PATH_VIEWS = ("min_cost", "min_hops", "cheapest_path", "fewest_hops", "shortest_cheapest_path")


# -- oracles -----------------------------------------------------------------------------------
def oracle_reachable(links) -> set[tuple]:
    out = {(s, d) for s, d, _c in links}
    while True:
        new = {(s, y) for s, z, _c in links for z2, y in out if z == z2} - out
        if not new:
            return out
        out |= new


def oracle_paths(links) -> set[tuple]:
    """path(x,y,p,c,l): base links; extend by a link (x,z) when x is not in p."""
    paths = {(s, d, (s, d), c, 1) for s, d, c in links}
    frontier = set(paths)
    while frontier:
        new = set()
        for x, z, c1 in links:
            for p in frontier:
                if p[0] == z and x not in p[2]:
                    new.add((x, p[1], (x, *p[2]), c1 + p[3], p[4] + 1))
        frontier = new - paths
        paths |= frontier
    return paths


def oracle_path_views(links) -> dict[str, set[tuple]]:
    groups: dict[tuple, list[tuple]] = {}
    for p in oracle_paths(links):
        groups.setdefault((p[0], p[1]), []).append(p)
    out: dict[str, set[tuple]] = {v: set() for v in PATH_VIEWS}
    for (s, d), ps in groups.items():
        c = min(p[3] for p in ps)
        h = min(p[4] for p in ps)
        out["min_cost"].add((s, d, c))
        out["min_hops"].add((s, d, h))
        cheap = {(s, d, p[2], p[3]) for p in ps if p[3] == c}
        few = {(s, d, p[2], p[4]) for p in ps if p[4] == h}
        out["cheapest_path"] |= cheap
        out["fewest_hops"] |= few
        out["shortest_cheapest_path"] |= {(s, d, a[2], a[3], b[2], b[3])
                                          for a in cheap for b in few}
    return out


def oracle_regions(sensors, triggered, seeds, k) -> set[tuple]:
    pos = {sid: (x, y) for sid, x, y in sensors}
    active = {(r, s) for r, s in seeds if s in pos and s in triggered}
    while True:
        new = {(r, y) for r, x in active for y in triggered
               if y in pos and y != x and math.dist(pos[x], pos[y]) < k} - active
        if not new:
            return active
        active |= new


# -- helpers -----------------------------------------------------------------------------------
def random_links(rng: random.Random, nodes: int, count: int) -> list[tuple]:
    names = [f"n{i}" for i in range(nodes)]
    pairs = rng.sample([(a, b) for a in names for b in names if a != b], count)
    return [(a, b, float(rng.choice([1, 2, 3]))) for a, b in pairs]


CONFIGS = [
    dict(partitions=1, mode="lazy"),
    dict(partitions=3, mode="eager", batch_size=2),
    dict(partitions=4, mode="lazy", shuffle_seed=5),
    dict(partitions=5, mode="eager", shuffle_seed=9, coalesce=False),
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_reachable_matches_oracle_under_deletions(seed, config):
    rng = random.Random(seed)
    links = random_links(rng, 6, 12)
    facts = [BaseFact("link", link, f"v{i}") for i, link in enumerate(links)]
    rt = LocalRuntime(views=("reachable",), backend="python", **config)
    live: dict[int, tuple] = {}
    current = set(rt.view("reachable"))
    for start in range(0, len(facts), 4):  # insert in chunks, then delete a few one by one
        delta = rt.apply(Batch(inserts=tuple(facts[start:start + 4])))
        live.update((i, links[i]) for i in range(start, min(start + 4, len(links))))
        new = set(rt.view("reachable"))
        assert delta["reachable"].inserted == new - current
        current = new
        assert current == oracle_reachable(live.values())
    for i in rng.sample(sorted(live), 6):
        delta = rt.apply(Batch(deletes=frozenset({f"v{i}"})))
        del live[i]
        expected = oracle_reachable(live.values())
        assert set(rt.view("reachable")) == expected
        assert delta["reachable"].deleted == current - expected
        current = expected
        m = rt.manager
        assert all(not m.is_false(f) and f"v{i}" not in m.support(f)
                   for f in rt.view("reachable").values())


def test_reachable_provenance_semantics_on_subsets():
    rng = random.Random(11)
    links = random_links(rng, 4, 7)
    rt = LocalRuntime(views=("reachable",), partitions=2, mode="lazy", backend="python")
    rt.apply(Batch(inserts=tuple(BaseFact("link", link, f"v{i}") for i, link in enumerate(links))))
    rt.flush()
    view = rt.view("reachable")
    for r in range(len(links) + 1):
        for subset in itertools.combinations(range(len(links)), r):
            truth = oracle_reachable([links[i] for i in subset])
            true_vars = {f"v{i}" for i in subset}
            for key, formula in view.items():
                assert rt.manager.evaluate(formula, true_vars) == (key in truth)


@pytest.mark.parametrize("aggsel", [True, False])
@pytest.mark.parametrize("config", CONFIGS[:3], ids=str)
def test_path_views_match_oracle(aggsel, config):
    rng = random.Random(3)
    links = random_links(rng, 5, 11)
    rt = LocalRuntime(views=PATH_VIEWS, backend="python", aggsel=aggsel, **config)
    live = dict(enumerate(links))
    rt.apply(Batch(inserts=tuple(BaseFact("link", link, f"v{i}") for i, link in live.items())))
    for victim in [None, *rng.sample(sorted(live), 4)]:
        if victim is not None:
            rt.apply(Batch(deletes=frozenset({f"v{victim}"})))
            del live[victim]
        expected = oracle_path_views(list(live.values()))
        for view in PATH_VIEWS:
            assert set(rt.view(view)) == expected[view], view


def test_min_cost_formula_is_or_of_tied_paths():
    links = [("a", "b", 1.0), ("b", "c", 1.0), ("a", "c", 2.0), ("a", "d", 1.0), ("d", "c", 5.0)]
    rt = LocalRuntime(views=("min_cost", "cheapest_path"), partitions=2, backend="python")
    rt.apply(Batch(inserts=tuple(BaseFact("link", link, f"v{i}") for i, link in enumerate(links))))
    rt.flush()
    m = rt.manager
    v = [m.var(f"v{i}") for i in range(5)]
    assert rt.view("min_cost")[("a", "c", 2.0)] == m.or_(m.and_(v[0], v[1]), v[2])
    assert set(k for k in rt.view("cheapest_path") if k[:2] == ("a", "c")) == {
        ("a", "c", ("a", "b", "c"), 2.0), ("a", "c", ("a", "c"), 2.0)}
    rt.apply(Batch(deletes=frozenset({"v2"})))
    assert rt.view("min_cost")[("a", "c", 2.0)] == m.and_(v[0], v[1])
    rt.apply(Batch(deletes=frozenset({"v1"})))  # promotion of the next best: a→d→c
    assert ("a", "c", 6.0) in rt.view("min_cost")


def test_single_aggsel_refuses_hop_views():
    from aspen.errors import EngineError

    with pytest.raises(EngineError):
        LocalRuntime(views=("min_hops",), aggsel="single", backend="python")
    rt = LocalRuntime(views=("min_cost",), aggsel="single", backend="python")
    rt.apply(Batch(inserts=(BaseFact("link", ("a", "b", 1.0), "x"),)))
    assert set(rt.view("min_cost")) == {("a", "b", 1.0)}


def random_sensors(rng: random.Random, count: int) -> list[tuple]:
    return [(f"s{i}", round(rng.uniform(0, 60), 2), round(rng.uniform(0, 60), 2))
            for i in range(count)]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_regions_match_oracle(seed, config):
    rng = random.Random(seed)
    k = 20.0
    sensors = random_sensors(rng, 14)
    ids = [s[0] for s in sensors]
    trig = set(rng.sample(ids, 9))
    seeds = [("r1", ids[0]), ("r2", rng.choice(ids)), ("r3", rng.choice(ids))]
    facts = [BaseFact("sensor", s, f"s:{s[0]}") for s in sensors]
    facts += [BaseFact("triggered", (t,), f"t:{t}") for t in sorted(trig)]
    facts += [BaseFact("region_seed", s, f"g:{s[0]}") for s in seeds]
    rng.shuffle(facts)
    rt = LocalRuntime(views=("active_region", "region_sizes", "largest_regions"),
                      backend="python", k=k, **config)
    rt.apply(Batch(inserts=tuple(facts)))
    for victim in [None, *rng.sample(sorted(trig), 5)]:
        if victim is not None:
            rt.apply(Batch(deletes=frozenset({f"t:{victim}"})))
            trig.discard(victim)
        expected = oracle_regions(sensors, trig, seeds, k)
        assert set(rt.view("active_region")) == expected
        sizes: dict[str, int] = {}
        for r, _s in expected:
            sizes[r] = sizes.get(r, 0) + 1
        assert rt.view("region_sizes") == {(r, n): None for r, n in sizes.items()}
        top = max(sizes.values(), default=None)
        assert set(rt.view("largest_regions")) == {(r, n) for r, n in sizes.items() if n == top}
