"""Query nodes sharing hosts: mail between nodes of one host is delivered within the round.

Exact checks on a tiny chain a→b→c→d→e whose hops all cross nodes; the random workloads run
with hosts in tests/properties/test_rounds_match_local.py.
"""

from __future__ import annotations

import pickle

import pandas as pd
import pytest

from aspen.engine.batch import BaseFact, Batch
from aspen.engine.partitioning import owner
from aspen.engine.plan import PlanChoices
from aspen.engine.records import Update
from aspen.errors import EngineError
from aspen.pipeline.spark_rounds import ROUND_COLUMNS, RoundConfig, host_round
from aspen.provenance import ProvenanceManager
from aspen.runtime.node import encode_messages
from aspen.runtime.rounds import NodeCache, RoundRuntime, host_of, run_host

PARTITIONS = 4
CHAIN = ["a", "b", "c", "d", "e"]
FACTS = tuple(BaseFact("link", (src, dst, 1.0), f"v{i}")
              for i, (src, dst) in enumerate(zip(CHAIN, CHAIN[1:], strict=False)))


def _run(hosts: int | None) -> RoundRuntime:
    rt = RoundRuntime(views=("reachable",), partitions=PARTITIONS, hosts=hosts,
                      backend="python", cache=NodeCache())
    rt.apply(Batch(inserts=FACTS))
    rt.apply(Batch(deletes=("v1",)))  # b→c: a, b no longer reach c, d, e
    return rt


def test_the_chain_crosses_nodes():
    owners = [owner(name, PARTITIONS) for name in CHAIN]
    assert len(set(owners)) > 2, owners  # else the test would not exercise the network


@pytest.mark.parametrize("hosts", [1, 2, 3])
def test_shared_hosts_give_the_same_views_and_formulas_in_fewer_rounds(hosts):
    alone, shared = _run(None), _run(hosts)
    assert set(alone.view("reachable")) == set(shared.view("reachable")) == {
        ("a", "b"), ("c", "d"), ("c", "e"), ("d", "e")}
    assert alone.view("reachable") == shared.view("reachable")  # the same formula bytes
    assert shared.rounds <= alone.rounds
    if hosts == 1:  # every hop is delivered within the round: a batch is a round and a flush
        assert shared.rounds <= 4 < alone.rounds


def test_a_host_runs_only_its_own_nodes():
    with pytest.raises(EngineError, match="other hosts"):
        run_host(0, 2, PARTITIONS, ("reachable",), PlanChoices(), {}, {}, [1], backend="python")


@pytest.mark.parametrize("reverse", [False, True])
def test_a_channel_stays_fifo_however_its_mail_arrives(reverse):
    """Node 3 retracts ``region_sizes(r2, 1)`` from node 0's ``largest_regions`` and sends a new
    derivation of it in the same round (its only member got a new formula). Delivered in reverse,
    as a Spark reducer may, the new derivation must still come last: node 0 keeps the row."""
    manager, views, row = ProvenanceManager(backend="python"), ("largest_regions",), ("r2", 1)

    def mail(place: int, update: Update) -> tuple[int, int, bytes]:
        return 3, place, encode_messages([("largest_regions.sel", "in", update)], manager)

    rounds = [[mail(0, Update.ins("region_sizes", row, manager.var("x")))],
              [mail(4, Update("DEL", "region_sizes", row)),
               mail(9, Update.ins("region_sizes", row, manager.var("y")))]]
    states: dict = {}
    journals: dict = {}
    for inbox in rounds:
        run_host(0, PARTITIONS, PARTITIONS, views, PlanChoices(), states, journals, [],
                 inbox={0: inbox[::-1] if reverse else inbox}, backend="python")
    node, _how = NodeCache().restore(0, states[0], "python", journals[0])
    assert set(node.view("largest_regions")) == {row}


def _frame(rows: list[dict]) -> pd.DataFrame:
    full = [{**dict.fromkeys(ROUND_COLUMNS), **row} for row in rows]
    return pd.DataFrame(full, columns=list(ROUND_COLUMNS)).astype(
        {"node": "int32", "src": "Int32", "pending": "boolean", "changed": "boolean"})


def test_host_round_delivers_local_mail_and_returns_idle_states_as_given():
    """One host holding every node of two: the link's node tells the owner of its destination
    within the round (``local_rows``), nothing leaves, and a node that did not run comes back
    with the state row it was given."""
    hosts, src, dst = 1, "a", "b"
    me, other = owner(src, 2), owner(dst, 2)
    assert me != other
    idle = {"node": other, "kind": "state", "pending": False, "changed": False,
            "value": 3.0, "journal": b"", "digest": b"d" * 16}
    # a stored state is fetched only if its node runs: the idle node's never is
    config = RoundConfig(partitions=2, views=("reachable",), choices=None, hosts=hosts,
                         state_uri="file:///nonexistent/node_state", state_version=0)
    fact = BaseFact("link", (src, dst, 1.0), "v1")
    out = host_round(config, _frame([
        {"node": me, "kind": "fact", "payload": pickle.dumps(fact)}]))
    assert set(out["node"]) <= {me, other} and host_of(me, hosts) == host_of(other, hosts)
    assert not (out["kind"] == "msg").any()
    local = out[(out["kind"] == "sent") & (out["name"] == "local_rows")]
    assert list(zip(local["src"], local["node"], strict=True)) == [(me, other)]
    subrounds = out[(out["kind"] == "stat") & (out["name"] == "subrounds")]["value"]
    assert list(subrounds) == [2.0]
    states = out[out["kind"] == "state"].set_index("node")
    assert set(states.index) == {me, other} and states["changed"].all()

    # a node the round does not wake: its row comes back as given, not run
    out = host_round(config, _frame([
        idle, {"node": me, "kind": "fact", "payload": pickle.dumps(
            BaseFact("link", (src, "a2", 1.0), "v2"))}]))
    assert owner("a2", 2) == me  # so nothing is sent to the other node
    row = out[(out["kind"] == "state") & (out["node"] == other)].iloc[0]
    assert not row["changed"] and bytes(row["digest"]) == b"d" * 16 and row["value"] == 3.0
    assert not out[out["kind"] == "stat"]["node"].isin([other]).any()
