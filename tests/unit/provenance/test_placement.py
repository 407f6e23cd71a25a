"""Variable placement: the ideal order, the placed order under changes, drift and relabel, and
``ProvenanceManager.place`` on both backends."""

from __future__ import annotations

import pickle

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provenance_testkit import BACKENDS

from aspen.errors import ProvenanceError
from aspen.provenance import placement as placement_module
from aspen.provenance.bdd import ProvenanceManager
from aspen.provenance.ordering import dfs_edge_order, is_dfs_order
from aspen.provenance.placement import (
    SENSOR_ORDERS,
    VariablePlacement,
    sensor_field_order,
)

FIG9 = [("A", "B"), ("B", "F"), ("B", "C"), ("C", "F"), ("A", "D"), ("D", "F"), ("A", "E"),
        ("E", "D")]


def link(var, src, dst, cost=1.0):
    return (var, "link", (src, dst, cost))


def link_part(p: VariablePlacement, order: list[str]) -> list[tuple]:
    """The link keys of an order, each once, in order of first appearance."""
    keys: dict[tuple, None] = {}
    for var in order:
        relation, values = p._facts[var]
        if relation == "link":
            keys.setdefault((values[0], values[1]), None)
    return list(keys)


# -- the ideal order ---------------------------------------------------------------------------
def test_links_follow_the_dfs_edge_order_of_a_networkx_graph():
    graph = nx.DiGraph()
    graph.add_edges_from(FIG9)
    arrival = list(reversed(FIG9))  # arrival order is not the DFS order
    p = VariablePlacement.build([link(f"v{i}", *e) for i, e in enumerate(arrival)])
    assert link_part(p, p.ideal()) == dfs_edge_order(arrival)
    assert is_dfs_order(link_part(p, p.ideal()), graph)
    assert p.order == p.ideal() and p.drift() == 0.0


def test_instances_of_one_link_are_consecutive_oldest_first():
    p = VariablePlacement()
    p.apply([link("v1", "a", "b"), link("v2", "b", "c")])
    p.apply([link("v3", "a", "b")])  # a renewal of a→b
    p.apply([link("v4", "a", "b")], deletes=["v1"])
    assert p.ideal() == ["v3", "v4", "v2"]
    assert p.order == ["v3", "v4", "v2"]


def test_renewal_in_one_batch_keeps_the_key_in_place():
    p = VariablePlacement()
    p.apply([link("v1", "a", "b"), link("v2", "x", "y"), link("v3", "b", "c")])
    before = p._labeling.edges
    p.apply([link("v4", "a", "b")], deletes=["v1"])
    assert p._labeling.edges == before
    assert p.order == ["v4", "v3", "v2"]


def test_sensor_slots_seeds_then_sensors_then_triggered_and_homeless_last():
    facts = [
        ("t2", "triggered", ("s2",)),
        ("x1", "sensor", ("s1", 0.0, 0.0)),
        ("q1", "ping", ("anything",)),
        ("x2", "sensor", ("s2", 10.0, 0.0)),
        ("t9", "triggered", ("s9",)),          # no position: a slot at the end of the block
        ("r1", "region_seed", ("rA", "s1")),
        ("t1", "triggered", ("s1",)),
        ("r2", "region_seed", ("rB", "s1")),
        ("l1", "link", ("a", "b", 1.0)),
        ("r8", "region_seed", ("rA", "s8")),   # homeless too, later than t9
        ("x3", "sensor", ("s1", 0.0, 0.0)),    # a renewal of s1's position
    ]
    p = VariablePlacement.build(facts, k=15.0)
    assert p.ideal() == ["l1", "r1", "r2", "x1", "x3", "t1", "x2", "t2", "t9", "r8", "q1"]


def test_a_sensor_gaining_a_position_moves_its_slot_in_the_ideal_only():
    p = VariablePlacement(k=15.0)
    p.apply([("x1", "sensor", ("s1", 0.0, 0.0)), ("t2", "triggered", ("s2",)),
             ("x3", "sensor", ("s3", 20.0, 0.0))])
    assert p.order == ["x1", "x3", "t2"]
    p.apply([("x2", "sensor", ("s2", 10.0, 0.0))])
    assert p.ideal() == ["x1", "x2", "t2", "x3"]
    assert p.order == ["x1", "x2", "x3", "t2"]   # t2 stays; x2 after x1, its placed predecessor
    assert len(p.relabel()) == 1 and p.order == p.ideal()


def test_field_orders_on_a_literal_grid():
    # a 3 × 2 grid, spacing 10: with k = 15 the 8-neighbourhood
    grid = {f"s{i}": (5.0 + 10 * (i % 3), 5.0 + 10 * (i // 3)) for i in range(6)}
    assert sensor_field_order(grid, 15.0, "dfs") == ["s0", "s3", "s4", "s1", "s2", "s5"]
    assert sensor_field_order(grid, 15.0, "sweep") == ["s0", "s3", "s1", "s4", "s2", "s5"]
    # four cells of size 10: the Hilbert curve visits (0,0), (0,1), (1,1), (1,0)
    cells = {"a": (0.0, 0.0), "b": (0.0, 10.0), "c": (10.0, 10.0), "d": (10.0, 0.0)}
    assert sensor_field_order(cells, 10.0, "hilbert") == ["a", "b", "c", "d"]
    # dfs: two components; a new tree starts at the lowest unvisited (x, y)
    apart = {"far": (100.0, 0.0), "p": (0.0, 0.0), "q": (0.0, 5.0), "near": (101.0, 0.0)}
    assert sensor_field_order(apart, 10.0, "dfs") == ["p", "q", "far", "near"]
    assert sensor_field_order({}, 10.0, "dfs") == []


def test_dfs_field_takes_neighbours_nearest_first():
    pos = {"c": (0.0, 0.0), "n1": (9.0, 0.0), "n2": (3.0, 0.0), "n3": (0.0, 6.0)}
    # from c: n2 (3 m); from n2: n1 (6 m) before n3 (6.7 m); n1 has no unvisited neighbour
    assert sensor_field_order(pos, 10.0, "dfs") == ["c", "n2", "n1", "n3"]


def test_sweep_lines_run_across_the_shorter_side():
    tall = {"a": (0.0, 0.0), "b": (5.0, 0.0), "c": (0.0, 30.0), "d": (5.0, 30.0)}
    assert sensor_field_order(tall, 10.0, "sweep") == ["a", "b", "c", "d"]
    wide = {"a": (0.0, 0.0), "b": (0.0, 5.0), "c": (30.0, 0.0), "d": (30.0, 5.0)}
    assert sensor_field_order(wide, 10.0, "sweep") == ["a", "b", "c", "d"]


def test_bad_parameters_are_one_line_errors():
    with pytest.raises(ProvenanceError, match="sensor order"):
        VariablePlacement(sensor_order="zigzag")
    with pytest.raises(ProvenanceError, match="positive"):
        VariablePlacement(k=0.0)
    with pytest.raises(ProvenanceError, match="sensor order"):
        sensor_field_order({"a": (0.0, 0.0)}, 1.0, "zigzag")
    p = VariablePlacement()
    p.apply([link("v1", "a", "b")])
    with pytest.raises(ProvenanceError, match="fresh variable"):
        p.apply([link("v1", "b", "c")])


# -- the placed order --------------------------------------------------------------------------
def test_new_variables_go_after_their_nearest_placed_predecessor():
    p = VariablePlacement()
    p.apply([link("v1", "a", "b"), link("v2", "e", "f"), link("v3", "c", "d")])
    assert p.order == ["v1", "v2", "v3"]
    p.apply([link("v4", "b", "c"), link("v5", "d", "x"), link("v6", "z", "a")])
    # ideal: z→a, a→b, b→c, c→d, d→x, e→f; v6 has no placed predecessor: first
    assert p.ideal() == ["v6", "v1", "v4", "v3", "v5", "v2"]
    assert p.order == ["v6", "v1", "v4", "v2", "v3", "v5"]
    assert p.drift() == pytest.approx(1 / 6)
    p.apply([], deletes=["v4", "unknown"])
    assert p.order == ["v6", "v1", "v2", "v3", "v5"]


def test_drift_and_relabel_agree():
    p = VariablePlacement()
    p.apply([link("v1", "a", "b"), link("v2", "e", "f"), link("v3", "c", "d")])
    p.apply([link("v4", "b", "c")])
    assert p.ideal() == ["v1", "v4", "v3", "v2"] and p.order == ["v1", "v4", "v2", "v3"]
    assert p.drift() == 0.25
    assert p.relabel() == ["v2"]
    assert p.order == p.ideal() and p.drift() == 0.0 and p.relabel() == []


def test_a_big_batch_of_links_is_retraversed_into_a_dfs_order():
    edges = [(i, (i * 7 + 3) % 40) for i in range(40)] + [(i, (i + 1) % 40) for i in range(40)]
    p = VariablePlacement()
    p.apply([link(f"a{i}", *e) for i, e in enumerate(edges[:10])])
    assert len(edges) - 10 > placement_module.INCREMENTAL_LINK_CHANGES
    p.apply([link(f"b{i}", *e) for i, e in enumerate(edges[10:])], deletes=["a0", "a1"])
    live = edges[2:]
    assert is_dfs_order(link_part(p, p.ideal()), live)
    assert sorted(p.order) == sorted(p._facts) and len(p.order) == len(live)


def test_pickles_and_carries_on_identically():
    p = VariablePlacement(k=15.0, sensor_order="dfs")
    p.apply([link("v1", "a", "b"), ("x1", "sensor", ("s1", 0.0, 0.0)),
             ("t1", "triggered", ("s1",))])
    q = pickle.loads(pickle.dumps(p))
    batch = [link("v2", "b", "a"), ("x2", "sensor", ("s2", 5.0, 0.0))]
    p.apply(batch, deletes=["t1"])
    q.apply(batch, deletes=["t1"])
    assert q.order == p.order and q.ideal() == p.ideal() and q.sensor_order == "dfs"


# -- random changes ----------------------------------------------------------------------------
NODES = "abcdef"
SENSORS = ("s0", "s1", "s2", "s3")
COORDS = (0.0, 6.0, 12.0, 20.0, 35.0)

op = st.one_of(
    st.tuples(st.just("link"), st.sampled_from(NODES), st.sampled_from(NODES)),
    st.tuples(st.just("renew"), st.integers(0, 99)),
    st.tuples(st.just("kill-key"), st.integers(0, 99)),
    st.tuples(st.just("expire"), st.integers(0, 99)),
    st.tuples(st.just("sensor"), st.sampled_from(SENSORS), st.sampled_from(COORDS),
              st.sampled_from(COORDS)),
    st.tuples(st.just("trig"), st.sampled_from(SENSORS)),
    st.tuples(st.just("seed"), st.sampled_from(("r1", "r2")), st.sampled_from(SENSORS)),
)
programs = st.lists(st.lists(op, max_size=12), min_size=1, max_size=6)


def interpret(program):
    """Batches of (inserts, deletes) over fresh variables, valid against the live facts."""
    live: dict[str, tuple[str, tuple]] = {}
    counter = 0
    out = []
    for ops in program:
        inserts, deletes = [], set()
        for o in ops:
            kind = o[0]
            keys = sorted({(r, v[:2]) for r, v in live.values() if r == "link"})
            if kind in ("link", "sensor", "trig", "seed") or kind == "renew" and keys:
                counter += 1
                var = f"v{counter}"
                if kind == "link":
                    values = (o[1], o[2], 1.0)
                elif kind == "renew":
                    values = (*keys[o[1] % len(keys)][1], 1.0)
                elif kind == "sensor":
                    values = (o[1], o[2], o[3])
                elif kind == "trig":
                    values = (o[1],)
                else:
                    values = (o[1], o[2])
                relation = {"renew": "link", "trig": "triggered", "seed": "region_seed"}.get(
                    kind, kind)
                inserts.append((var, relation, values))
            elif kind == "kill-key" and keys:
                key = keys[o[1] % len(keys)][1]
                deletes |= {v for v, (r, vals) in live.items() if r == "link" and vals[:2] == key}
            elif kind == "expire" and live:
                deletes.add(sorted(live)[o[1] % len(live)])
        for var in deletes:
            del live[var]
        live.update((var, (relation, tuple(values))) for var, relation, values in inserts)
        out.append((inserts, deletes, dict(live)))
    return out


def check_invariants(p: VariablePlacement, live: dict[str, tuple[str, tuple]]) -> None:
    order = p.order
    assert len(order) == len(set(order)) == len(live) and set(order) == set(live)
    ideal = p.ideal()
    assert sorted(ideal) == sorted(order)
    keys = link_part(p, ideal)
    live_keys = {v[:2] for r, v in live.values() if r == "link"}
    assert set(keys) == live_keys
    assert is_dfs_order(keys, list(live_keys))
    # each key's instances are consecutive in the ideal order, oldest (smallest number) first
    links = [v for v in ideal if live[v][0] == "link"]
    runs = [live[v][1][:2] for v in links]
    assert len([i for i in range(len(runs)) if i == 0 or runs[i] != runs[i - 1]]) == len(keys)
    for key in keys:
        numbers = [int(v[1:]) for v in links if live[v][1][:2] == key]
        assert numbers == sorted(numbers)


@settings(max_examples=120, deadline=None)
@given(program=programs, strategy=st.sampled_from(SENSOR_ORDERS))
def test_random_changes_keep_the_placement_invariants(program, strategy):
    p = VariablePlacement(k=15.0, sensor_order=strategy)
    for inserts, deletes, live in interpret(program):
        before = p.order
        p.apply(inserts, deletes)
        check_invariants(p, live)
        # live variables never move relative to each other
        fresh = {i[0] for i in inserts}
        kept = [v for v in before if v in live and v not in fresh]
        assert [v for v in p.order if v in set(kept)] == kept
        # a new variable sits right after its ideal predecessor (which is placed), or first
        ideal, order = p.ideal(), p.order
        for var in fresh:
            at, placed_at = ideal.index(var), order.index(var)
            assert (order[placed_at - 1] if placed_at else None) == (
                ideal[at - 1] if at else None)
        assert 0.0 <= p.drift() <= 1.0
    drift, size = p.drift(), len(p)
    clone = pickle.loads(pickle.dumps(p))
    moved = p.relabel()
    assert len(moved) == round(drift * size)
    assert p.order == p.ideal() and p.drift() == 0.0
    # a rebuild from the live facts in arrival order holds a DFS link order, placed = ideal
    facts = [(v, *clone._facts[v]) for v in sorted(clone._facts, key=clone._born.__getitem__)]
    rebuilt = VariablePlacement.build(facts, k=15.0, sensor_order=strategy)
    check_invariants(rebuilt, dict(clone._facts))
    assert rebuilt.order == rebuilt.ideal()


# -- ProvenanceManager.place -------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_place_declares_new_variables_below_their_predecessor(backend):
    m = ProvenanceManager(backend)
    m.fix_order()
    a, c, dead = m.var("a"), m.var("c"), m.var("dead")
    m.place(["a", "c"])
    f = m.or_(m.and_(a, c), dead)
    size = m.node_count(f)
    assert m.place(["n0", "a", "b1", "b2", "c", "d"]) is False
    assert m.order == ["n0", "a", "b1", "b2", "c", "d", "dead"]
    assert m.node_count(f) == size and f == m.or_(m.and_(m.var("a"), m.var("c")), m.var("dead"))
    assert m.place(["n0", "a", "b1", "b2", "c", "d"]) is False  # nothing to do


@pytest.mark.parametrize("backend", BACKENDS)
def test_place_reorders_when_the_declared_ones_disagree(backend):
    m = ProvenanceManager(backend)
    m.fix_order()
    for name in ["a", "x", "b", "y"]:
        m.var(name)
    f = m.or_(m.and_(m.var("a"), m.var("b")), m.var("y"))
    assert m.place(["b", "a", "c"]) is True
    order = m.order
    assert [v for v in order if v in {"a", "b", "c"}] == ["b", "a", "c"]
    assert [v for v in order if v in {"x", "y"}] == ["x", "y"]   # dead ones keep their order
    assert f == m.or_(m.and_(m.var("a"), m.var("b")), m.var("y"))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None)
@given(program=programs)
def test_place_makes_the_manager_agree_with_the_placement(backend, program):
    m = ProvenanceManager(backend)
    m.fix_order()
    p = VariablePlacement(k=15.0)
    formulas = []
    for inserts, deletes, live in interpret(program):
        p.apply(inserts, deletes)
        assert m.place(p.order) is False  # apply never moves a live variable
        assert [v for v in m.order if v in live] == p.order
        names = p.order
        if names:  # a formula over the live variables keeps its function across places
            f = m.or_(m.conj(m.var(v) for v in names[::2]), m.var(names[-1]))
            formulas.append((f, set(names[::2]), names[-1]))
    p.relabel()
    m.place(p.order)
    assert [v for v in m.order if v in p] == p.order
    for f, conj, last in formulas:
        assert m.evaluate(f, conj) and m.evaluate(f, {last})
        assert not m.evaluate(f, set())
