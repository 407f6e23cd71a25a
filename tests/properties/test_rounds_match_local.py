"""The round protocol (what the Spark runtime runs per partition) gives the local runtime's views
and provenance functions, and the from-scratch views, after every batch.

Every node is restored from bytes each round and messages cross nodes as bytes, so this also
checks the node codec; with a large ``compact_over`` a node is never dumped after its first round,
so every round replays its journal (rounds and publishes of every batch so far) on bytes fetched
as a :class:`StoredState`; with ``0`` it is dumped every round. Modes: eager / lazy MinShip; 1, 4
and 12 partitions; a host per node, or nodes sharing 1, 2 or 5 hosts (mail between nodes of a
host delivered within the round). And retried: every host round and publish runs twice, the
first attempt thrown away (though the worker cache keeps what it did) and each attempt seeing
the mail in another order, as a retried Spark task may.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from prop_workloads import interpret, mixed_programs

from aspen.baselines import scratch
from aspen.catalog import VIEWS
from aspen.runtime.local import LocalRuntime
from aspen.runtime.rounds import NodeCache, RoundRuntime

K = 20.0
HOSTS = st.sampled_from([None, 1, 2, 5])
#: Found by the retry test: in the last batch node 3 retracts region_sizes(r1 or r2, 1) from
#: node 0 and sends a new derivation of it in the same round; mail taken out of channel order
#: lost the row.
RETRACT_THEN_REDERIVE = [
    [("link", "a", "d", 0), ("link", "a", "a", 0), ("link", "a", "a", 0), ("link", "b", "a", 0),
     ("link", "a", "a", 0), ("link", "c", "a", 0), ("link", "e", "a", 0), ("sensor", "s0", 0, 0),
     ("sensor", "s1", 40, 0), ("sensor", "s2", 0, 0), ("sensor", "s3", 0, 0),
     ("sensor", "s4", 0, 0), ("trig", "s0"), ("trig", "s2"), ("trig", "s4"),
     ("seed", "r1", "s3"), ("seed", "r1", "s3")],
    [("expire", 24), ("sensor", "s0", 0, 0), ("delete", 24), ("delete", 26), ("trig", "s0")],
    [("sensor", "s0", 0, 20), ("trig", "s1"), ("sensor", "s4", 0, 0)],
    [("seed", "r2", "s1"), ("reinsert", 32), ("seed", "r1", "s1")],
    [("expire", 24), ("trig", "s0"), ("trig", "s1")],
]


@pytest.mark.parametrize("mode", ["eager", "lazy"])
@settings(max_examples=15, deadline=None)
@given(program=mixed_programs(max_batches=4, max_ops=5), partitions=st.sampled_from([1, 4, 12]),
       hosts=HOSTS)
def test_rounds_equal_local_and_scratch(mode, program, partitions, hosts):
    check_rounds(mode, program, partitions, compact_over=2**40, stored=True, hosts=hosts)


@pytest.mark.parametrize("mode", ["eager", "lazy"])
@settings(max_examples=5, deadline=None)
@given(program=mixed_programs(max_batches=4, max_ops=5), partitions=st.sampled_from([1, 4, 12]),
       hosts=HOSTS)
def test_rounds_dumping_every_round_equal_local_and_scratch(mode, program, partitions, hosts):
    check_rounds(mode, program, partitions, compact_over=0, hosts=hosts)


@pytest.mark.parametrize("mode", ["eager", "lazy"])
@settings(max_examples=8, deadline=None)
@given(program=mixed_programs(max_batches=4, max_ops=5), partitions=st.sampled_from([1, 4, 12]),
       hosts=HOSTS, seed=st.integers(0, 2**32 - 1), compact_over=st.sampled_from([None, 0]))
@example(program=RETRACT_THEN_REDERIVE, partitions=4, hosts=None, seed=5239, compact_over=0)
def test_retried_rounds_with_mail_in_another_order_equal_local_and_scratch(
        mode, program, partitions, hosts, seed, compact_over):
    check_rounds(mode, program, partitions, compact_over=compact_over, stored=True, hosts=hosts,
                 cache=NodeCache(), disorder=random.Random(seed))


def check_rounds(mode, program, partitions, compact_over, stored=False, hosts=None, cache=None,
                 disorder=None):
    local = LocalRuntime(views=VIEWS, partitions=partitions, mode=mode, k=K)
    rounds = RoundRuntime(views=VIEWS, partitions=partitions, mode=mode,
                          compact_over=compact_over, stored=stored, hosts=hosts, cache=cache,
                          disorder=disorder)
    for step in interpret(program):
        local.apply(step.batch)
        local.flush()
        rounds.apply(step.batch)
        live = list(step.live.values())
        for view in VIEWS:
            expected = local.view(view)
            got = rounds.view(view, local.manager)
            assert set(got) == set(expected), view
            assert set(got) == scratch.evaluate(view, live, k=K), view
            for values, formula in expected.items():
                assert got[values] == formula, (view, values)
