"""The compiled core's region view (:class:`aspen.engine.native.NativeRegions`) on tiny literal
sensor fields whose members and formulas are derived by hand: a chain, the strict distance,
instances of one key, a sensor at two positions, a region cut and joined again, lazy buffers,
and the closure's targets mode it runs on; then the region family in the runtime.

The core must be built (``make setup``): without it these tests fail, they are not skipped.
"""

from __future__ import annotations

from aspen.engine.batch import BaseFact, Batch
from aspen.engine.native import NativeClosure, NativeRegions
from aspen.provenance import ProvenanceManager
from aspen.runtime.local import LocalRuntime

VIEWS = ("active_region", "region_sizes", "largest_regions")


def field(m: ProvenanceManager, facts: list[tuple], lazy: bool = False) -> NativeRegions:
    """A kernel over ``facts`` (relation, *values, variable), run."""
    regions = NativeRegions(m, k=20.0, lazy=lazy)
    regions.insert([BaseFact(relation, tuple(values), var) for relation, *values, var in facts])
    regions.run()
    return regions


def rows(regions: NativeRegions) -> dict:
    return dict(regions.items())


def test_a_chain_ands_the_seed_every_sensor_and_every_trigger(m):
    regions = field(m, [("sensor", "a", 0.0, 0.0, "sa"), ("sensor", "b", 15.0, 0.0, "sb"),
                        ("sensor", "c", 30.0, 0.0, "sc"), ("triggered", "a", "ta"),
                        ("triggered", "b", "tb"), ("triggered", "c", "tc"),
                        ("region_seed", "r", "a", "seed")])
    v = {name: m.var(name) for name in ("sa", "sb", "sc", "ta", "tb", "tc", "seed")}
    got = rows(regions)
    assert set(got) == {("r", "a"), ("r", "b"), ("r", "c")}
    assert got[("r", "a")] == v["seed"] & v["sa"] & v["ta"]
    assert got[("r", "c")] == m.conj(v.values())  # a and c are 30 apart: only through b
    # the kernel holds the region rows and nothing else (targets mode)
    assert len(regions.closure) == 3 and regions.closure.stats()["links"] == 5
    regions.close()


def test_a_distance_of_exactly_k_is_not_near_and_an_untriggered_sensor_is_not_a_member(m):
    regions = field(m, [("sensor", "a", 0.0, 0.0, "sa"), ("sensor", "b", 12.0, 16.0, "sb"),
                        ("sensor", "c", 0.0, -19.0, "sc"), ("sensor", "d", 0.0, -5.0, "sd"),
                        ("triggered", "a", "ta"), ("triggered", "b", "tb"),
                        ("triggered", "c", "tc"), ("region_seed", "r", "a", "seed")])
    assert set(rows(regions)) == {("r", "a"), ("r", "c")}  # |ab| = 20, d not triggered
    regions.track_membership()
    regions.insert([BaseFact("triggered", ("d",), "td")])
    regions.run()
    assert regions.delta() == ({("r", "d")}, set())
    regions.close()


def test_instances_of_one_key_or_and_a_deletion_keeps_the_row_on_the_other(m):
    regions = field(m, [("sensor", "a", 0.0, 0.0, "sa"), ("sensor", "b", 5.0, 0.0, "sb"),
                        ("triggered", "a", "ta"), ("triggered", "b", "tb1"),
                        ("triggered", "b", "tb2"), ("region_seed", "r", "a", "seed1"),
                        ("region_seed", "r", "a", "seed2")])
    sa, sb, ta, tb1, tb2, seed1, seed2 = (m.var(x) for x in
                                          ("sa", "sb", "ta", "tb1", "tb2", "seed1", "seed2"))
    assert rows(regions)[("r", "b")] == (seed1 | seed2) & sa & ta & sb & (tb1 | tb2)
    regions.track_membership()
    assert regions.delete_vars(["tb1", "seed2"]) == 2
    regions.run()
    assert regions.delta() == (set(), set())
    assert rows(regions)[("r", "b")] == seed1 & sa & ta & sb & tb2
    regions.track_membership()
    regions.delete_vars(["tb2"])
    regions.run()
    assert regions.delta() == (set(), {("r", "b")})
    regions.close()


def test_a_sensor_at_two_positions_is_near_through_the_near_one_only(m):
    regions = field(m, [("sensor", "a", 0.0, 0.0, "sa"), ("sensor", "b", 10.0, 0.0, "near"),
                        ("sensor", "b", 100.0, 0.0, "far"), ("triggered", "a", "ta"),
                        ("triggered", "b", "tb"), ("region_seed", "r", "a", "seed")])
    sa, near, ta, tb, seed = (m.var(x) for x in ("sa", "near", "ta", "tb", "seed"))
    assert rows(regions)[("r", "b")] == seed & sa & ta & near & tb
    regions.delete_vars(["near"])
    regions.run()
    assert set(rows(regions)) == {("r", "a")}
    # b comes back at its far position once a triggered sensor stands next to it
    regions.insert([BaseFact("sensor", ("c", 90.0, 0.0), "sc"),
                    BaseFact("sensor", ("e", 50.0, 0.0), "se")])
    regions.run()
    assert set(rows(regions)) == {("r", "a")}  # c and e are not triggered, nor near a
    regions.close()


def test_a_cut_region_joins_again_through_a_new_bridge(m):
    facts = [("sensor", s, x, 0.0, f"s{s}") for s, x in (("a", 0.0), ("b", 15.0), ("c", 30.0))]
    facts += [("triggered", s, f"t{s}") for s in "abc"] + [("region_seed", "r", "a", "seed")]
    regions = field(m, facts)
    regions.delete_vars(["tb"])
    regions.run()
    assert set(rows(regions)) == {("r", "a")}
    regions.insert([BaseFact("sensor", ("d", 15.0, 5.0), "sd"),
                    BaseFact("triggered", ("d",), "td")])
    regions.run()
    got = rows(regions)
    assert set(got) == {("r", "a"), ("r", "c"), ("r", "d")}
    assert got[("r", "c")] == m.conj(m.var(x) for x in ("seed", "sa", "ta", "sd", "td",
                                                        "sc", "tc"))
    regions.close()


def test_lazy_mode_buffers_a_second_route_and_ships_it_when_the_first_dies(m):
    # a seeds r; b and c both lie within k of a and of d: two routes into d
    facts = [("sensor", "a", 0.0, 0.0, "sa"), ("sensor", "b", 10.0, 5.0, "sb"),
             ("sensor", "c", 10.0, -5.0, "sc"), ("sensor", "d", 22.0, 0.0, "sd")]
    facts += [("triggered", s, f"t{s}") for s in "abcd"] + [("region_seed", "r", "a", "seed")]
    v = {name: m.var(name) for name in ("sa", "sb", "sc", "sd", "ta", "tb", "tc", "td", "seed")}
    later = [BaseFact("sensor", ("c", 10.0, -5.0), "sc"), BaseFact("triggered", ("c",), "tc")]
    first = [f for f in facts if f[1] != "c"]
    eager, lazy = field(m, first), field(m, first, lazy=True)
    for regions in (eager, lazy):  # c comes later: the route through it meets a settled d
        regions.insert(later)
        regions.run()
    full = rows(eager)[("r", "d")]
    assert full == (v["seed"] & v["sa"] & v["ta"] & v["sd"] & v["td"]
                    & ((v["sb"] & v["tb"]) | (v["sc"] & v["tc"])))
    assert set(rows(lazy)) == set(rows(eager))
    assert lazy.pending() >= 1 and rows(lazy)[("r", "d")] != full
    lazy.delete_vars(["tb"])
    eager.delete_vars(["tb"])
    lazy.run()
    eager.run()
    assert rows(lazy) == rows(eager)  # the shipped alternative is the whole formula left
    lazy.flush()
    assert lazy.pending() == 0
    eager.close()
    lazy.close()


def test_targets_mode_keeps_the_plain_closure_s_column_of_each_target(m):
    links = [("a", "b", "v1"), ("b", "c", "v2"), ("c", "a", "v3"), ("b", "t", "v4"),
             ("c", "u", "v5")]
    plain = NativeClosure(m)
    targeted = NativeClosure(m)
    targeted.add_targets(["t"])
    for closure in (plain, targeted):
        closure.add_links([(s, d, m.var(v)) for s, d, v in links])
        closure.run()
    assert dict(targeted.items()) == {k: f for k, f in plain.items() if k[1] == "t"}
    assert len(targeted) == 3  # (a, t), (b, t), (c, t)
    targeted.add_targets(["u"])  # a new target: links into it derive from now on
    targeted.add_links([("a", "u", m.var("v6"))])
    targeted.run()
    assert set(targeted) == {("a", "t"), ("b", "t"), ("c", "t"), ("a", "u"), ("b", "u"),
                             ("c", "u")}
    # c → u came before u was a target: its base case was never derived (hence the rule)
    assert targeted.get(("c", "u")) == m.var("v3") & m.var("v6")
    plain.close()
    targeted.close()


def test_the_runtime_runs_the_region_family_natively_and_counts_from_its_rows(m):
    rt = LocalRuntime(views=VIEWS, partitions=4, manager=m, core="native")
    assert set(rt.native) == set(VIEWS)
    assert not any(name.startswith(("active_region.", "neighbor.", "seed."))
                   for name in rt.nodes[0])
    facts = [BaseFact("sensor", (s, x, 0.0), f"s{s}")
             for s, x in (("a", 0.0), ("b", 15.0), ("c", 60.0))]
    facts += [BaseFact("triggered", (s,), f"t{s}") for s in "abc"]
    facts += [BaseFact("region_seed", ("r", "a"), "ra"), BaseFact("region_seed", ("q", "c"), "qc")]
    delta = rt.apply(Batch(inserts=tuple(facts)))
    assert delta["region_sizes"].inserted == {("r", 2), ("q", 1)}
    assert delta["largest_regions"].inserted == {("r", 2)}
    assert rt.view("region_sizes") == {("r", 2): None, ("q", 1): None}
    delta = rt.apply(Batch(inserts=(BaseFact("sensor", ("d", 45.0, 0.0), "sd"),
                                    BaseFact("triggered", ("d",), "td"))))
    assert delta["active_region"].inserted == {("q", "d")}
    sizes, largest = delta["region_sizes"], delta["largest_regions"]
    assert (sizes.inserted, sizes.deleted) == ({("q", 2)}, {("q", 1)})
    assert (largest.inserted, largest.deleted) == ({("q", 2)}, set())  # a tie: both kept
    assert rt.view_placement("largest_regions") == {("r", 2): 0, ("q", 2): 0}
    assert rt.state_bytes() > 0
