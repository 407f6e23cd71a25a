"""Transit-stub topologies: the paper's shape, variants, determinism, scale."""

from __future__ import annotations

from collections import Counter, defaultdict

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.errors import ConfigError
from aspen.generators.topology import (
    Topology,
    TransitStubParams,
    scaled_params,
    transit_stub,
)

COSTS = {"transit-transit": 50.0, "transit-stub": 10.0, "stub-stub": 2.0}


def as_graph(topology: Topology) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(topology.node_ids)
    graph.add_weighted_edges_from(topology.links, weight="cost")
    return graph


def assert_well_formed(topology: Topology) -> None:
    ids = set(topology.node_ids)
    assert len(ids) == len(topology.nodes)
    tuples = [(link.src, link.dst) for link in topology.links]
    assert len(set(tuples)) == len(tuples), "duplicate link tuple"
    by_pair = {(link.src, link.dst): link.cost for link in topology.links}
    for link in topology.links:
        assert link.src != link.dst
        assert {link.src, link.dst} <= ids
        assert by_pair[(link.dst, link.src)] == link.cost, "link missing in one direction"
    graph = as_graph(topology)
    assert nx.is_strongly_connected(graph)
    assert topology.is_connected()


@pytest.mark.parametrize("seed", [0, 1, 7, 42])
def test_default_topology_has_the_papers_shape(seed: int) -> None:
    topology = transit_stub(seed=seed)
    kinds = Counter(node.kind for node in topology.nodes)
    assert len(topology.nodes) == 100
    assert kinds == {"transit": 4, "stub": 96}
    stubs = Counter((n.domain, n.transit, n.stub) for n in topology.nodes if n.kind == "stub")
    assert len(stubs) == 12 and set(stubs.values()) == {8}
    # Stated tolerance: the degree target is met exactly, 200 links = 400 tuples.
    assert len(topology.links) == 400
    assert_well_formed(topology)


def test_costs_follow_the_link_kind_and_stubs_hang_off_their_transit_node() -> None:
    topology = transit_stub(seed=3)
    node = {n.id: n for n in topology.nodes}
    uplinks: dict[tuple, int] = defaultdict(int)
    for link in topology.links:
        kinds = sorted((node[link.src].kind, node[link.dst].kind), reverse=True)
        assert link.cost == COSTS[f"{kinds[0]}-{kinds[1]}"]
        assert topology.link_kind(link) == f"{kinds[0]}-{kinds[1]}"
        a, b = node[link.src], node[link.dst]
        if a.kind == "stub" and b.kind == "stub":
            assert (a.domain, a.transit, a.stub) == (b.domain, b.transit, b.stub)
        if a.kind == "transit" and b.kind == "stub":
            assert (a.domain, a.transit) == (b.domain, b.transit), "stub wired to another transit"
            uplinks[(b.domain, b.transit, b.stub)] += 1
    assert len(uplinks) == 12 and set(uplinks.values()) == {1}
    costs = Counter(link.cost for link in topology.links)
    assert costs[10.0] == 24 and costs[50.0] >= 6 and costs[2.0] >= 2 * 12 * 7


def test_node_ids_follow_the_documented_scheme() -> None:
    topology = transit_stub(seed=0)
    for node in topology.nodes:
        if node.kind == "transit":
            assert node.id == f"t{node.domain}.{node.transit}"
        else:
            prefix, index = node.id.rsplit(".", 1)
            assert prefix == f"s{node.domain}.{node.transit}.{node.stub}"
            assert int(index) in range(8)


def test_dense_has_twice_the_links_of_sparse() -> None:
    dense = transit_stub(TransitStubParams(variant="dense"), seed=5)
    sparse = transit_stub(TransitStubParams(variant="sparse"), seed=5)
    assert dense.average_degree == pytest.approx(4.0)
    assert sparse.average_degree == pytest.approx(2.0)
    assert len(sparse.links) == 200
    assert_well_formed(sparse)
    assert_well_formed(dense)


def test_custom_average_degree_and_edge_probability() -> None:
    six = transit_stub(TransitStubParams(avg_degree=6.0), seed=1)
    assert six.average_degree == pytest.approx(6.0)
    tree = transit_stub(TransitStubParams(extra_edge_prob=0.0), seed=1)
    assert len(tree.links) == 2 * 99  # a spanning tree
    full = transit_stub(TransitStubParams(transit_domains=2, extra_edge_prob=1.0), seed=1)
    # every pair inside a transit domain or stub, every stub uplink, the one domain pair
    assert len(full.links) == 2 * (2 * (6 + 12 * 28) + 2 * 12 + 1)
    around = [
        len(transit_stub(TransitStubParams(extra_edge_prob=0.4), seed=s).links) for s in (1, 2)
    ]
    assert all(300 < n < 500 for n in around)
    assert around[0] != around[1]


def test_same_seed_same_topology_different_seed_different() -> None:
    assert transit_stub(seed=11) == transit_stub(seed=11)
    assert transit_stub(seed=11).links != transit_stub(seed=12).links
    sparse = TransitStubParams(variant="sparse")
    assert transit_stub(sparse, seed=3).links == transit_stub(sparse, seed=3).links
    assert transit_stub(sparse, seed=3).links != transit_stub(sparse, seed=4).links


@pytest.mark.parametrize("variant", ["dense", "sparse"])
def test_ten_thousand_nodes_stay_connected(variant: str) -> None:
    params = scaled_params(10_000, variant)
    topology = transit_stub(params, seed=9)
    assert len(topology.nodes) >= 10_000
    assert topology.average_degree == pytest.approx(4.0 if variant == "dense" else 2.0, abs=0.01)
    assert topology.is_connected()
    assert nx.is_strongly_connected(as_graph(topology))


def test_several_transit_domains_are_joined_by_transit_links() -> None:
    topology = transit_stub(TransitStubParams(transit_domains=5), seed=2)
    node = {n.id: n for n in topology.nodes}
    across = {
        frozenset((node[link.src].domain, node[link.dst].domain))
        for link in topology.links
        if node[link.src].domain != node[link.dst].domain
    }
    domains = nx.Graph(tuple(pair) for pair in across)
    assert set(domains) == set(range(5)) and nx.is_connected(domains)
    for link in topology.links:
        if node[link.src].domain != node[link.dst].domain:
            assert node[link.src].kind == node[link.dst].kind == "transit"
            assert link.cost == 50.0
    assert_well_formed(topology)


@settings(max_examples=25, deadline=None)
@given(
    domains=st.integers(1, 3),
    per_transit=st.integers(1, 5),
    stubs=st.integers(0, 3),
    per_stub=st.integers(1, 6),
    variant=st.sampled_from(["dense", "sparse"]),
    seed=st.integers(0, 10_000),
)
def test_any_shape_is_connected_and_symmetric(
    domains: int, per_transit: int, stubs: int, per_stub: int, variant: str, seed: int
) -> None:
    params = TransitStubParams(domains, per_transit, stubs, per_stub, variant=variant)
    topology = transit_stub(params, seed=seed)
    assert (
        len(topology.nodes) == params.node_count == domains * per_transit * (1 + stubs * per_stub)
    )
    if len(topology.nodes) > 1:
        assert len(topology.links) >= 2 * (len(topology.nodes) - 1)
        assert_well_formed(topology)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"nodes_per_stub": 0},
        {"transit_domains": -1},
        {"stubs_per_transit_node": -1},
        {"variant": "medium"},
        {"extra_edge_prob": 1.5},
        {"avg_degree": float("nan")},
        {"avg_degree": 4.0, "extra_edge_prob": 0.1},
    ],
)
def test_bad_parameters_are_config_errors(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        TransitStubParams(**kwargs)


def test_scaled_params_adds_transit_domains() -> None:
    assert scaled_params(100).transit_domains == 1
    assert scaled_params(101).transit_domains == 2
    assert scaled_params(10_000).node_count == 10_000
    with pytest.raises(ConfigError):
        scaled_params(0)
