"""The compiled core's path family (:class:`aspen.engine.native.NativePaths`) on tiny graphs
whose best paths and formulas are derived by hand: a tie, a promotion after a deletion, a
cycle, a link with two costs, instances of one link, and the kernel's lifetime and errors.

The core must be built (``make setup``): without it these tests fail, they are not skipped.
"""

from __future__ import annotations

import gc
import warnings

import pytest

from aspen.engine.batch import BaseFact, Batch
from aspen.engine.native import NativePaths
from aspen.engine.native.paths import view_rows
from aspen.errors import EngineError
from aspen.provenance import ProvenanceManager
from aspen.runtime.local import LocalRuntime


def paths_of(m: ProvenanceManager, links: list[tuple[str, str, float, str]]) -> NativePaths:
    paths = NativePaths(m)
    paths.add_links([(s, d, c, m.var(v)) for s, d, c, v in links])
    paths.run()
    return paths


def view(paths: NativePaths, name: str) -> dict:
    return view_rows(name, paths.bests())


def test_a_tie_keeps_both_paths_and_ors_them(m):
    paths = paths_of(m, [("a", "b", 1.0, "p"), ("b", "d", 1.0, "r"),
                         ("a", "c", 1.0, "q"), ("c", "d", 1.0, "s")])
    p, q, r, s = (m.var(v) for v in "pqrs")
    assert view(paths, "min_cost")[("a", "d", 2.0)] == (p & r) | (q & s)
    assert view(paths, "min_hops")[("a", "d", 2)] == (p & r) | (q & s)
    cheapest = {k: f for k, f in view(paths, "cheapest_path").items() if k[:2] == ("a", "d")}
    assert cheapest == {("a", "d", ("a", "b", "d"), 2.0): p & r,
                        ("a", "d", ("a", "c", "d"), 2.0): q & s}
    pairs = {k for k in view(paths, "shortest_cheapest_path") if k[:2] == ("a", "d")}
    assert len(pairs) == 4  # 2 cheapest × 2 fewest


def test_a_deleted_best_promotes_the_next_with_its_whole_formula(m):
    paths = paths_of(m, [("a", "b", 1.0, "v1"), ("b", "c", 1.0, "v2"), ("a", "d", 1.0, "v3"),
                         ("d", "e", 1.0, "v4"), ("e", "c", 1.0, "v5"), ("x", "a", 1.0, "v6")])
    v1, v2, v3, v4, v5, v6 = (m.var(f"v{i}") for i in range(1, 7))
    # [a, d, e, c] is neither the cheapest nor the fewest-hop path of (a, c): pruned
    assert view(paths, "min_cost")[("x", "c", 3.0)] == v6 & v1 & v2
    assert set(view(paths, "cheapest_path")) >= {("a", "c", ("a", "b", "c"), 2.0)}
    assert ("x", "c", ("x", "a", "d", "e", "c"), 4.0) not in view(paths, "cheapest_path")
    paths.track_membership()
    assert paths.delete_vars(["v2"]) > 0
    paths.run()
    rows = view(paths, "min_cost")
    assert rows[("a", "c", 3.0)] == v3 & v4 & v5
    assert rows[("x", "c", 4.0)] == v6 & v3 & v4 & v5  # the promoted path went upstream
    assert ("x", "c", 3.0) not in rows and ("b", "c", 1.0) not in rows
    before, after = paths.changes()
    assert ("x", "c", 3.0) in view_rows("min_cost", before, formulas=False)
    assert ("x", "c", 4.0) in view_rows("min_cost", after, formulas=False)
    assert paths.stats()["promoted"] == 1


def test_a_cycle_gives_simple_paths_only(m):
    paths = paths_of(m, [("a", "b", 1.0, "p"), ("b", "a", 1.0, "q"), ("b", "c", 1.0, "r"),
                         ("c", "c", 0.5, "s")])
    p, q, r, s = (m.var(v) for v in "pqrs")
    rows = view(paths, "cheapest_path")
    assert ("a", "a", ("a", "b", "a"), 2.0) not in rows  # x ∉ p1: a is on [b, a]
    assert rows[("c", "c", ("c", "c"), 0.5)] == s  # a self-loop link is a one-hop path
    assert rows[("a", "c", ("a", "b", "c"), 2.0)] == p & r
    assert ("b", "c", ("b", "c", "c"), 1.5) not in rows and len(rows) == 5
    assert set(view(paths, "min_hops")) == {("a", "b", 1), ("b", "a", 1), ("b", "c", 1),
                                           ("a", "c", 2), ("c", "c", 1)}
    assert view(paths, "min_cost")[("b", "a", 1.0)] == q
    assert view(paths, "min_cost")[("a", "c", 2.0)] == p & r


def test_a_link_with_two_costs(m):
    paths = paths_of(m, [("a", "b", 1.0, "v1"), ("a", "b", 3.0, "v2"), ("b", "c", 1.0, "v3")])
    v1, v2, v3 = (m.var(f"v{i}") for i in range(1, 4))
    assert view(paths, "min_cost") == {("a", "b", 1.0): v1, ("b", "c", 1.0): v3,
                                       ("a", "c", 2.0): v1 & v3}
    # both costs are one hop: both tuples tie at the fewest hops, their rows merge
    assert view(paths, "fewest_hops")[("a", "b", ("a", "b"), 1)] == v1 | v2
    assert view(paths, "min_hops")[("a", "c", 2)] == (v1 | v2) & v3
    paths.delete_vars(["v1"])
    paths.run()
    assert view(paths, "min_cost")[("a", "c", 4.0)] == v2 & v3
    assert paths.stats()["links"] == 2


def test_instances_of_one_link_or_and_outlive_each_other(m):
    paths = paths_of(m, [("a", "b", 1.0, "v1"), ("b", "c", 1.0, "v2")])
    paths.add_links([("a", "b", 1.0, m.var("v3"))])  # a renewal: a fresh variable
    paths.run()
    v1, v2, v3 = (m.var(f"v{i}") for i in range(1, 4))
    assert view(paths, "min_cost")[("a", "c", 2.0)] == (v1 | v3) & v2
    paths.track_membership()
    paths.delete_vars(["v1"])
    paths.run()
    assert view(paths, "min_cost")[("a", "c", 2.0)] == v3 & v2
    before, after = paths.changes()
    assert view_rows("min_cost", before, formulas=False) == \
        view_rows("min_cost", after, formulas=False)


def test_a_deletion_before_run_restricts_pending_derivations(m):
    paths = NativePaths(m)
    paths.add_links([("a", "b", 1.0, m.var("p")), ("b", "c", 1.0, m.var("q"))])
    paths.delete_vars(["p"])
    paths.run()
    assert set(view(paths, "min_cost")) == {("b", "c", 1.0)}


def test_close_releases_every_reference(m):
    baseline = len(m.bdd)
    paths = paths_of(m, [(f"n{i}", f"n{(i + 1) % 5}", 1.0, f"v{i}") for i in range(5)])
    assert len(view(paths, "min_cost")) == 20 and len(m.bdd) > baseline  # no (x, x): simple
    paths.close()
    paths.close()
    gc.collect()
    assert len(m.bdd) == baseline
    with pytest.raises(EngineError, match="closed"):
        paths.run()


def test_out_of_memory_is_an_error_and_leaks_nothing(m):
    from aspen.bench.common import topology

    links = topology(60, 2.4, 0).links
    formulas = [m.var(f"v{i}") for i in range(len(links))]
    baseline = len(m.bdd)
    m.bdd.configure(reordering=False)
    paths = NativePaths(m)
    paths.add_links((link.src, link.dst, link.cost, f)
                    for link, f in zip(links, formulas, strict=True))
    with warnings.catch_warnings():  # dd notes that "mem" is in bytes since 0.5.7
        warnings.simplefilter("ignore", UserWarning)
        in_use = int(m.bdd.statistics()["mem"])
    m.bdd.configure(max_memory=in_use + 2**20)  # CUDD returns NULL before the build is done
    with pytest.raises(EngineError, match="out of memory"):
        paths.run()
    assert paths.stats()["failed"] == 1
    with pytest.raises(EngineError, match="failed earlier"):
        paths.add_links([("x", "y", 1.0, formulas[0])])
    assert paths.bests()  # reads still work
    paths.close()
    gc.collect()
    assert len(m.bdd) == baseline


def test_formulas_of_another_manager_are_refused(m):
    other = ProvenanceManager(backend="cudd")
    paths = NativePaths(m)
    with pytest.raises(EngineError, match="another BDD manager"):
        paths.add_links([("a", "b", 1.0, other.var("p"))])
    assert paths.stats()["links"] == 0


def test_the_runtime_runs_the_family_natively_only_under_the_default_plan():
    native = LocalRuntime(views=("min_cost", "fewest_hops"), partitions=2, core="native")
    assert set(native.native) == {"min_cost", "fewest_hops"}
    assert len(native._kernels) == 1 and not native.nodes[0]  # one kernel, no path operators
    for choices in ({"aggsel": False}, {"aggsel": "single"}):
        rt = LocalRuntime(views=("min_cost",), partitions=2, core="native", **choices)
        assert not rt.native and "path.fix" in rt.nodes[0]
    d = native.apply(Batch(inserts=(BaseFact("link", ("a", "b", 2.0), "v1"),)))
    assert d["min_cost"].inserted == {("a", "b", 2.0)}
    assert d["fewest_hops"].inserted == {("a", "b", ("a", "b"), 1)}
