"""Variable orders: Fig. 9 orders, DFS validity, incremental labeling vs from-scratch DFS."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provenance_testkit import BACKENDS

from aspen.errors import UnknownKeyError
from aspen.provenance.bdd import ProvenanceManager
from aspen.provenance.ordering import (
    IncrementalDfsLabeling,
    _adjacency,
    _dfs,
    _first_mentions,
    arrival_order,
    bfs_edge_order,
    dfs_edge_order,
    dfs_order_violation,
    is_dfs_order,
    order_variables,
)

FIG9 = [("A", "B"), ("B", "F"), ("B", "C"), ("C", "F"), ("A", "D"), ("D", "F"), ("A", "E"),
        ("E", "D")]
VAR_OF = {e: f"p{i}" for i, e in enumerate(FIG9)}


def fig9_formula(m: ProvenanceManager):
    p = [m.var(f"p{i}") for i in range(8)]
    return m.or_(
        m.and_(p[0], m.or_(p[1], m.and_(p[2], p[3]))),
        m.and_(m.or_(p[4], m.and_(p[6], p[7])), p[5]),
    )


def test_fig9_dfs_and_bfs_orders():
    assert [FIG9.index(e) for e in dfs_edge_order(FIG9)] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert [FIG9.index(e) for e in bfs_edge_order(FIG9)] == [0, 4, 6, 1, 2, 5, 7, 3]
    graph = nx.DiGraph(FIG9)
    assert dfs_edge_order(graph) == dfs_edge_order(FIG9)
    assert is_dfs_order(dfs_edge_order(FIG9), FIG9)
    assert not is_dfs_order(bfs_edge_order(FIG9), FIG9)
    assert arrival_order(FIG9 + FIG9[:2]) == FIG9


@pytest.mark.parametrize("backend", BACKENDS)
def test_order_variables_gives_the_fig9_sizes(backend):
    m = ProvenanceManager(backend=backend)
    f = fig9_formula(m)
    assert order_variables(m, dfs_edge_order(FIG9), VAR_OF) == [f"p{i}" for i in range(8)]
    assert m.node_count(f) == 9
    placed = order_variables(m, bfs_edge_order(FIG9), lambda e: VAR_OF[e])
    assert placed == ["p0", "p4", "p6", "p1", "p2", "p5", "p7", "p3"]
    assert m.node_count(f) == 18 and f == fig9_formula(m)


def test_order_variables_several_instances_and_missing():
    m = ProvenanceManager(backend="python")
    names = order_variables(m, [("a", "b"), ("b", "c"), ("c", "d")],
                            {("a", "b"): ["v7", "v3"], ("c", "d"): "v1"})
    assert names == ["v7", "v3", "v1"] and m.order == names


def test_roots_parameter_and_cycles():
    cycle = [("a", "b"), ("b", "c"), ("c", "a")]
    assert dfs_edge_order(cycle) == cycle
    assert dfs_edge_order(cycle, roots=["b"]) == [("b", "c"), ("c", "a"), ("a", "b")]
    assert bfs_edge_order(cycle, roots=["c"]) == [("c", "a"), ("a", "b"), ("b", "c")]
    # a source is preferred as root over the first-arrived edge's source
    assert dfs_edge_order([("b", "c"), ("a", "b")]) == [("a", "b"), ("b", "c")]


def test_dfs_order_violations():
    g = [("a", "b"), ("b", "c"), ("a", "c")]
    assert dfs_order_violation([("a", "b"), ("b", "c"), ("a", "c")], g) is None
    assert "twice" in dfs_order_violation([("a", "b"), ("a", "b"), ("b", "c"), ("a", "c")], g)
    assert "missing" in dfs_order_violation([("a", "b"), ("b", "c")], g)
    # b finished before its edge b→c was examined
    assert "finishes" in dfs_order_violation([("a", "b"), ("a", "c"), ("b", "c")], g)
    xyz = [("x", "y"), ("y", "z"), ("x", "z")]
    assert "finishes" in dfs_order_violation([("x", "z"), ("y", "z"), ("x", "y")], xyz)
    assert dfs_order_violation([], []) is None


def test_labels_on_fig9():
    lab = IncrementalDfsLabeling(FIG9)
    assert is_dfs_order(lab.edges, FIG9)
    assert lab.start_index["A"] == 0 and lab.end_index["A"] == len(FIG9) - 1
    b, c = lab.start_index["B"], lab.end_index["B"]
    assert {lab.edges[i] for i in range(b, c + 1)} == {("B", "F"), ("B", "C"), ("C", "F")}
    assert "F" not in lab.start_index and lab.end_index["F"] == lab.position(("B", "F"))
    assert lab.is_root("A") and not lab.is_root("B")


def test_the_four_insert_cases():
    lab = IncrementalDfsLabeling()
    lab.insert(("a", "b"))
    assert lab.last_case == "a"
    lab.insert(("b", "c"))
    assert lab.last_case == "c"  # b had an incoming edge, no outgoing
    lab.insert(("x", "b"))
    assert lab.last_case == "b-append"  # b is not a root
    lab.insert(("r", "a"))
    assert lab.last_case == "b-before"  # a was a root: r goes right before it
    assert lab.edges[0] == ("r", "a")
    lab.insert(("a", "d"))
    assert lab.last_case == "d"
    assert lab.position(("a", "d")) == lab.end_index["a"]
    assert not lab.insert(("a", "d"))
    assert is_dfs_order(lab.edges, lab.edges)


def test_move_and_its_documented_fallback():
    lab = IncrementalDfsLabeling([("r", "x"), ("r", "q"), ("q", "y"), ("y", "z")])
    lab.insert(("x", "y"))  # y is reached first by the new edge: its sub-vector moves
    assert lab.last_case == "c+move"
    assert lab.edges == (("r", "x"), ("x", "y"), ("y", "z"), ("r", "q"), ("q", "y"))
    lab = IncrementalDfsLabeling(
        [("r", "x"), ("r", "q"), ("q", "w"), ("w", "z"), ("q", "y"), ("y", "w")]
    )
    lab.insert(("x", "y"))  # the moved y→w reaches w, first seen in between: re-traverse
    assert lab.last_case == "c+move+retraverse"
    assert lab.edges == (
        ("r", "x"), ("x", "y"), ("y", "w"), ("w", "z"), ("r", "q"), ("q", "w"), ("q", "y"),
    )


def test_delete_reattaches_orphans_and_keeps_unreached_edges():
    lab = IncrementalDfsLabeling([("a", "b"), ("b", "c"), ("c", "d"), ("a", "e"), ("e", "c")])
    lab.delete(("a", "b"))  # orphans b, c, d; e→c re-attaches c and d right after it
    assert lab.last_case == "del+retraverse"
    assert lab.edges == (("a", "e"), ("e", "c"), ("c", "d"), ("b", "c"))  # b: a new root
    lab.delete(("b", "c"))
    assert lab.last_case == "del"
    assert lab.edges == (("a", "e"), ("e", "c"), ("c", "d"))
    with pytest.raises(UnknownKeyError):
        lab.delete(("a", "b"))


def replay(vector):
    return _dfs(_adjacency(vector), _first_mentions(vector))


@settings(max_examples=40, deadline=None)
@given(edges=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=25))
def test_retraversal_reproduces_a_dfs_vector(edges):
    vector = dfs_edge_order(edges)
    assert is_dfs_order(vector, edges)
    assert replay(vector) == vector
    assert len(vector) == len(set(edges))


operations = st.lists(
    st.tuples(st.booleans(), st.integers(0, 6), st.integers(0, 6), st.integers(0, 1000)),
    max_size=40,
)


@settings(max_examples=80, deadline=None)
@given(ops=operations)
def test_incremental_labeling_stays_a_dfs_order(ops):
    lab = IncrementalDfsLabeling()
    current: list[tuple[int, int]] = []
    for is_delete, x, y, pick in ops:
        if is_delete and current:
            edge = current.pop(pick % len(current))
            lab.delete(edge)
        else:
            added = lab.insert((x, y))
            assert added == ((x, y) not in current)
            if added:
                current.append((x, y))
        # the property we guarantee, against the same check on a from-scratch DFS
        assert dfs_order_violation(lab.edges, current) is None, lab.last_case
        assert is_dfs_order(dfs_edge_order(current), current)
        assert sorted(lab.edges) == sorted(current)
        assert replay(lab.edges) == list(lab.edges)
        # labels: each node's interval holds its out-edges; intervals nest or are disjoint
        for node, start in lab.start_index.items():
            end = lab.end_index[node]
            assert all(start <= lab.position(e) <= end for e in current if e[0] == node)
        spans = [(lab.start_index[n], lab.end_index[n]) for n in lab.start_index]
        for s1, e1 in spans:
            for s2, e2 in spans:
                assert e1 < s2 or e2 < s1 or (s1 <= s2 and e2 <= e1) or (s2 <= s1 and e1 <= e2)
