"""A query node's state bytes: only new formulas are encoded per dump, garbage is compacted, and
publishing lists exactly the rows that changed."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import aspen.engine.segmented_codec as segmented_codec
from aspen.engine.batch import BaseFact, Batch
from aspen.engine.records import Update
from aspen.engine.segmented_codec import SegmentedCodec
from aspen.provenance import ProvenanceManager
from aspen.provenance.bdd import default_backend
from aspen.runtime.node import NodeRuntime, decode_messages, encode_messages
from aspen.runtime.rounds import SHARED_CACHE_SLOTS, NodeCache, RoundRuntime, publish_node

# a ring a→b→c→d→a plus a chord: every pair reachable, several derivations each
LINKS = [("a", "b", 1.0), ("b", "c", 1.0), ("c", "d", 1.0), ("d", "a", 1.0), ("a", "c", 1.0)]
FACTS = tuple(BaseFact("link", link, f"v{i}") for i, link in enumerate(LINKS))


def _built_node() -> NodeRuntime:
    node = NodeRuntime(0, 1, ("reachable",), backend="python")
    for fact in FACTS:
        node.insert(fact)
    node.run(flush=True)
    return node


def _functions(node: NodeRuntime, m: ProvenanceManager) -> dict:
    """``node``'s share of ``reachable`` with each formula rebuilt in ``m`` (to compare nodes
    whose managers differ)."""
    return {k: m.decode(node.manager.encode(f)) for k, f in node.view("reachable").items()}


def _segments(state: bytes) -> list[bytes]:
    import pickle

    return pickle.loads(state)["segments"]


def test_a_dump_without_changes_adds_no_segment():
    node = _built_node()
    first = _segments(node.dump())
    assert len(first) == 1
    assert _segments(node.dump()) == first


def test_a_deletion_encodes_only_the_changed_formulas():
    node = _built_node()
    before = _segments(node.dump())
    node.kill(frozenset({"v4"}))  # the chord: only pairs derived through it change
    node.run(flush=True)
    after = _segments(node.dump())
    assert after[:len(before)] == before and len(after) == len(before) + 1
    new_roots = SegmentedCodec(ProvenanceManager(backend="python"), after[-1:]).roots
    all_roots = SegmentedCodec(ProvenanceManager(backend="python"), before).roots
    assert 0 < len(new_roots) < len(all_roots)


def test_reloaded_node_equals_the_original():
    node = _built_node()
    node.kill(frozenset({"v4"}))
    node.run(flush=True)
    copy = NodeRuntime.load(node.dump(), backend="python")
    m = ProvenanceManager(backend="python")
    original = _functions(node, m)
    restored = _functions(copy, m)
    assert restored == original


def test_a_dump_after_publishing_reuses_the_operators_part_and_stays_exact():
    import pickle

    node = _built_node()
    dumped: list[str] = []
    for name, op in node.nodes[node.me].items():
        def counted(codec, _dump=op.dump_state, _name=name):
            dumped.append(_name)
            return _dump(codec)
        op.dump_state = counted
    first = pickle.loads(node.dump())
    operators = len(dumped)
    node.view_changes()  # publishing changes only what the node remembers as published
    second = pickle.loads(node.dump())
    assert len(dumped) == operators > 0  # not walked again
    assert second["ops"] == first["ops"]
    assert second["segments"] == first["segments"] and second["published"]
    node.kill(frozenset({"v4"}))  # an operator change: the operators' part is dumped afresh
    node.run(flush=True)
    third = pickle.loads(node.dump())
    assert len(dumped) == 2 * operators and third["ops"] != first["ops"]
    copy = NodeRuntime.load(node.dump(), backend="python")
    m = ProvenanceManager(backend="python")
    assert _functions(copy, m) == _functions(node, m)
    for op in node.nodes[node.me].values():
        del op.dump_state  # the counters' bound methods would keep the BDD manager alive


def test_garbage_is_compacted_into_one_segment(monkeypatch):
    monkeypatch.setattr(segmented_codec, "COMPACTION_SLACK", 0)
    rt = RoundRuntime(views=("reachable",), partitions=2, backend="python")
    rt.apply(Batch(inserts=FACTS))
    for var in ("v4", "v0", "v2"):
        rt.apply(Batch(deletes=frozenset({var})))
    for state in rt.states.values():
        codec = SegmentedCodec(ProvenanceManager(backend="python"), _segments(state))
        node = NodeRuntime.load(state, backend="python")
        live = sum(len(list(op.formulas())) for op in node.nodes[node.me].values()) \
            + sum(len(rows) for rows in node.published.values())
        assert len(codec.roots) <= 2 * live  # compacted: garbage never outgrows the live set
    assert set(rt.view("reachable")) == {("b", "c"), ("d", "a")}  # links left: b→c, d→a


@pytest.mark.parametrize("cache", [None, NodeCache()])
@pytest.mark.parametrize("compact_over", [0, 2**40])
def test_publish_lists_upserts_and_deletes_once(cache, compact_over):
    node = _built_node()
    out = publish_node(node.dump(), backend="python", cache=cache, me=0,
                       compact_over=compact_over)
    upserts, deletes = out.changes["reachable"]
    assert len(upserts) == 16 and deletes == []  # 4 nodes, all pairs
    assert out.view_rows == 16 and out.prov_bytes == sum(len(d) for _v, d in upserts)
    # dumped every time (a budget of 0), or journalled: the publish is the journal's entry
    assert out.dumped == (compact_over == 0) and len(out.journal) == (compact_over != 0)
    again = publish_node(out.state, backend="python", cache=cache, me=0, journal=out.journal,
                         compact_over=compact_over)
    assert again.changes == {} and again.prov_bytes == out.prov_bytes  # nothing changed since
    assert again.journal == out.journal and again.state == out.state  # nothing to remember
    node, _how = NodeCache().restore(0, again.state, "python", again.journal)
    node.kill(frozenset({"v0"}))  # the only link into b: every pair (·, b) goes
    node.run(flush=True)
    last = publish_node(node.dump(), backend="python", cache=cache, me=0)
    upserts, deletes = last.changes["reachable"]
    assert sorted(deletes) == [("a", "b"), ("b", "b"), ("c", "b"), ("d", "b")]
    assert all(values not in deletes for values, _data in upserts)
    assert last.view_rows == 12


class Workers:
    """Python workers of a Spark executor: each step lands on one of them at random."""

    def __init__(self, count: int, seed: int) -> None:
        import random

        self.caches = [NodeCache() for _ in range(count)]
        self.rng = random.Random(seed)
        self.current = self.caches[0]

    @property
    def hits(self) -> int:
        return sum(c.hits for c in self.caches)

    def restore(self, me, state, backend=None, journal=(), blank=None):
        self.current = self.rng.choice(self.caches)
        return self.current.restore(me, state, backend, journal, blank)

    @property
    def replayed(self) -> int:
        return sum(c.replayed for c in self.caches)

    def put(self, me, state, node, applied=0):
        self.current.put(me, state, node, applied)


@pytest.mark.parametrize("stored", [False, True])
def test_steps_landing_on_any_worker_give_the_same_views_with_warm_loads(stored):
    from aspen.bench.common import topology

    topo = topology(0, 2.4, 0, tiny=True)
    facts = [BaseFact("link", (ln.src, ln.dst, ln.cost), f"v{i}")
             for i, ln in enumerate(topo.links)]
    workers = Workers(2, seed=1)
    cached = RoundRuntime(views=("reachable", "min_cost"), partitions=3, backend="python",
                          cache=workers, stored=stored)
    plain = RoundRuntime(views=("reachable", "min_cost"), partitions=3, backend="python")
    batches = [Batch(inserts=tuple(facts[:-5])), Batch(deletes=frozenset({"v0", "v3"})),
               Batch(inserts=tuple(facts[-5:]))]
    m = ProvenanceManager(backend="python")
    for batch in batches:
        cached.apply(batch)
        plain.apply(batch)
        for view in ("reachable", "min_cost"):
            assert cached.view(view, m) == plain.view(view, m)
    warm = sum(c.warm for c in workers.caches)
    cold = sum(c.cold for c in workers.caches)
    assert warm > 0 and workers.hits > 0, (warm, cold, workers.hits)
    assert workers.replayed > 0  # a worker brought its older copy up to date from the journal
    if stored:  # stored bytes are read on a miss only, never on a hit
        assert 0 < len(cached.fetched) <= warm + cold, (cached.fetched, warm, cold)


def test_a_node_restored_from_its_journal_equals_the_node_that_ran():
    from aspen.engine.plan import PlanChoices
    from aspen.runtime.rounds import step_node

    def step(state, journal, cache, facts=(), dead=()):
        return step_node(0, 1, ("reachable",), PlanChoices(), state, journal=journal, facts=facts,
                         dead=dead, flush=True, backend="python", cache=cache,
                         compact_over=2**40)  # journalled, whatever a round takes

    ran = NodeCache()
    first = step(None, (), ran, facts=FACTS[:3])
    assert first.dumped and first.journal == ()  # a new node is dumped once
    second = step(first.state, (), ran, facts=FACTS[3:])
    third = step(second.state, second.journal, ran, dead=("v4",))
    assert not second.dumped and not third.dumped and len(third.journal) == 2
    assert third.state == first.state  # no dump: the bytes of the batch start
    elsewhere = NodeCache()
    out = publish_node(third.state, backend="python", cache=elsewhere, me=0,
                       journal=third.journal, compact_over=2**40)
    assert elsewhere.replayed == 2 and elsewhere.cold == 1 and out.restored
    here = publish_node(third.state, backend="python", cache=ran, me=0, journal=third.journal,
                        compact_over=2**40)
    assert ran.replayed == 0 and ran.hits >= 2 and not here.restored
    assert out.journal == here.journal and len(here.journal) == 3  # the publish joined it
    assert not here.dumped and here.state == first.state
    # the next batch's round, on a third worker, replays the rounds and the publish
    later = NodeCache()
    fourth = step(here.state, here.journal, later, dead=("v0",))
    assert later.replayed == 3 and later.cold == 1 and len(fourth.journal) == 4
    again = publish_node(fourth.state, backend="python", cache=ran, me=0,
                         journal=fourth.journal, compact_over=2**40)
    assert set(again.changes) == {"reachable"} and ran.replayed == 1  # the worker that ran it
    m = ProvenanceManager(backend="python")
    assert out.changes["reachable"][1] == here.changes["reachable"][1] == []
    rows = [{values: m.decode(data) for values, data in p.changes["reachable"][0]}
            for p in (out, here)]
    assert rows[0] == rows[1] and len(rows[0]) == 16  # every pair of a, b, c, d


def test_publishing_a_cached_node_brings_its_deletion_index_up_to_date():
    node = _built_node()
    stores = [store for op in node.nodes[node.me].values() for store in op.stores()]
    assert any(store.unindexed for store in stores)  # a build leaves the index to be built
    cache = NodeCache()
    state = node.dump()
    cache.put(0, state, node)
    publish_node(state, cache=cache, me=0)  # a hit: the very node
    assert not any(store.unindexed for store in stores)
    cold = NodeRuntime.load(state, backend="python")  # loaded from bytes: indexed lazily
    assert any(store.unindexed for op in cold.nodes[0].values() for store in op.stores())


@pytest.mark.parametrize("backend", ["python", "cudd"])
def test_a_bundle_of_messages_decodes_to_the_same_updates_in_order(backend):
    """Messages to one node in one step travel as one bundle (one BDD forest); a single message
    as Aspen wrote them before (a journal may hold one) still decodes."""
    sender, receiver = ProvenanceManager(backend=backend), ProvenanceManager(backend=backend)
    x, y, z = (sender.var(name) for name in ("x", "y", "z"))
    shared = sender.or_(sender.and_(x, y), z)
    messages = [("r.fix", "base", Update.ins("r", ("a", "b"), shared)),
                ("r.fix", "base", Update.delete("r", ("a", "c"), {"y"})),
                ("r.fix", "step", Update.ins("r", ("a", "d"), sender.and_(shared, x))),
                ("r.fix", "base", Update("DEL", "r", ("a", "b")))]
    got = decode_messages(encode_messages(messages, sender), receiver)
    assert [(t, p, u.op, u.relation, u.tuple, u.deleted) for t, p, u in got] == [
        (t, p, u.op, u.relation, u.tuple, u.deleted) for t, p, u in messages]
    assert [u.pv is None for _t, _p, u in got] == [u.pv is None for _t, _p, u in messages]
    for (_t, _p, sent), (_t2, _p2, taken) in zip(messages, got, strict=True):
        if sent.pv is not None:  # the same function: equal on every assignment
            for true_vars in ({"x"}, {"x", "y"}, {"z"}, set(), {"x", "y", "z"}):
                assert sender.evaluate(sent.pv, true_vars) == receiver.evaluate(taken.pv,
                                                                                true_vars)
    legacy = pickle.dumps(("r.fix", "base", "INS", "r", ("a", "b"), sender.encode(shared), ()))
    [(target, port, update)] = decode_messages(legacy, receiver)
    assert (target, port, update.tuple) == ("r.fix", "base", ("a", "b"))
    assert receiver.support(update.pv) == {"x", "y", "z"}


def _built_then_chord_deleted(cache: NodeCache) -> RoundRuntime:
    rt = RoundRuntime(views=("reachable",), partitions=3, backend="python", cache=cache,
                      hosts=1)
    rt.apply(Batch(inserts=FACTS))
    rt.apply(Batch(deletes=frozenset({"v4"})))
    return rt


def test_the_nodes_one_cache_restores_share_its_manager():
    cache = NodeCache()
    rt = _built_then_chord_deleted(cache)
    nodes = [cache.restore(me, rt.states[me], "python", rt.journals.get(me, ()))[0]
             for me in range(3)]
    assert all(node.manager is cache.manager("python") for node in nodes)
    assert NodeCache(share_manager=False).manager("python") is None
    if default_backend() == "cudd":  # the computed table's growth is capped
        slots = NodeCache().manager("cudd").bdd.configure()["max_cache_hard"]
        assert slots == SHARED_CACHE_SLOTS
    m = ProvenanceManager(backend="python")
    alone = _built_then_chord_deleted(NodeCache(share_manager=False))
    assert rt.view("reachable", m) == alone.view("reachable", m)
    assert len(rt.view("reachable", m)) == 16


def test_a_warm_load_extends_a_node_in_a_manager_that_met_other_variables_first():
    from aspen.engine.plan import PlanChoices
    from aspen.runtime.rounds import step_node

    def step(state, cache, facts):
        return step_node(0, 1, ("reachable",), PlanChoices(), state, facts=facts, flush=True,
                         backend="python", cache=cache, compact_over=0)  # dumped every time

    ran = NodeCache()
    first = step(None, ran, FACTS[:3])
    other = NodeCache()  # another worker: its manager declared another node's variable first
    other.manager("python").var("w_elsewhere")
    node, how = other.restore(0, first.state, "python")
    assert how == "cold" and node.manager.order[0] == "w_elsewhere"
    other.put(0, first.state, node)
    second = step(first.state, ran, FACTS[3:])  # the node grew elsewhere: one more segment
    assert _segments(second.state)[:1] == _segments(first.state)
    node, how = other.restore(0, second.state, "python")
    assert how == "warm" and other.warm == 1 and node.manager is other.manager("python")
    m = ProvenanceManager(backend="python")
    fresh = NodeRuntime.load(second.state, backend="python")
    assert {k: m.decode(m.encode(f)) for k, f in node.view("reachable").items()} == {
        k: m.decode(m.encode(f)) for k, f in fresh.view("reachable").items()}


GOLDEN_V2 = Path(__file__).parent / "golden" / "node_state_v2.bin"


def test_a_node_state_of_version_2_still_loads_and_goes_on():
    """A lake maintained before the operators' part was pickled on its own (state version 2,
    MinShip's relation kept per tuple) keeps its node states: the golden file is
    ``_built_node()`` after ``view_changes()``, dumped by Aspen at eeb1255."""
    old = NodeRuntime.load(GOLDEN_V2.read_bytes(), backend="python")
    new = _built_node()
    new.view_changes()
    m = ProvenanceManager(backend="python")

    assert _functions(old, m) == _functions(new, m) and len(_functions(new, m)) == 16
    assert set(old.published["reachable"]) == set(new.published["reachable"])
    for node in (old, new):  # the chord's deletion: MinShip ships under the old relations
        node.kill(frozenset({"v4"}))
        node.run(flush=True)
    assert _functions(old, m) == _functions(new, m)
    assert pickle.loads(old.dump())["version"] == 3
