"""The compiled core's ``reachable`` (:class:`aspen.engine.native.NativeClosure`) against the
hand-derived formulas of tiny graphs, the from-scratch oracle, the Python reference runtime
(every formula equal, in one manager) and the meaning of provenance.

The core must be built (``make setup``): without it these tests fail, they are not skipped.
"""

from __future__ import annotations

import gc
import random
import warnings
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.baselines.oracles import Scratch, base_state, reachable
from aspen.engine.batch import BaseFact, Batch
from aspen.engine.native import NativeClosure, core_available
from aspen.errors import EngineError
from aspen.provenance import ProvenanceManager
from aspen.runtime.local import LocalRuntime


def closure_of(m: ProvenanceManager, links: list[tuple[str, str, str]]) -> NativeClosure:
    closure = NativeClosure(m)
    closure.add_links([(s, d, m.var(v)) for s, d, v in links])
    closure.run()
    return closure


def as_dict(closure: NativeClosure) -> dict:
    return dict(closure.items())


# -- tiny literal graphs ---------------------------------------------------------------------


def test_chain(m):
    closure = closure_of(m, [("a", "b", "p"), ("b", "c", "q"), ("c", "d", "r")])
    p, q, r = m.var("p"), m.var("q"), m.var("r")
    assert as_dict(closure) == {("a", "b"): p, ("b", "c"): q, ("c", "d"): r,
                                ("a", "c"): p & q, ("b", "d"): q & r, ("a", "d"): p & q & r}
    assert closure.get(("d", "a")) is None and ("a", "d") in closure and len(closure) == 6


def test_cycle_terminates_by_absorption(m):
    closure = closure_of(m, [("a", "b", "p"), ("b", "c", "q"), ("c", "a", "r")])
    p, q, r = m.var("p"), m.var("q"), m.var("r")
    everything = p & q & r
    assert as_dict(closure) == {
        ("a", "b"): p, ("b", "c"): q, ("c", "a"): r,
        ("a", "c"): p & q, ("b", "a"): q & r, ("c", "b"): r & p,
        ("a", "a"): everything, ("b", "b"): everything, ("c", "c"): everything}
    assert closure.stats()["absorbed"] > 0


def test_diamond_ors_both_paths(m):
    closure = closure_of(m, [("a", "b", "p"), ("a", "c", "q"), ("b", "d", "r"), ("c", "d", "s")])
    p, q, r, s = (m.var(v) for v in "pqrs")
    assert closure.get(("a", "d")) == (p & r) | (q & s)
    assert closure.delete_vars(["r"]) == 2  # (b, d) goes, (a, d) keeps the path over c
    assert closure.get(("a", "d")) == q & s and ("b", "d") not in closure


def test_self_loop(m):
    closure = closure_of(m, [("a", "a", "p"), ("a", "b", "q")])
    p, q = m.var("p"), m.var("q")
    # the walk a→a→b is implied by a→b: absorbed
    assert as_dict(closure) == {("a", "a"): p, ("a", "b"): q}


def test_two_instances_of_one_link_and_deleting_one(m):
    closure = closure_of(m, [("a", "b", "p1"), ("a", "b", "p2"), ("b", "c", "q")])
    p1, p2, q = m.var("p1"), m.var("p2"), m.var("q")
    assert closure.get_link(("a", "b")) == p1 | p2
    assert closure.get(("a", "c")) == (p1 | p2) & q
    assert closure.delete_vars(["p1"]) == 2
    assert as_dict(closure) == {("a", "b"): p2, ("b", "c"): q, ("a", "c"): p2 & q}
    assert closure.delete_vars(["p2"]) == 2
    assert as_dict(closure) == {("b", "c"): q}
    assert dict(closure.link_items()) == {("b", "c"): q}
    assert closure.delete_vars(["never-declared"]) == 0


def test_a_link_added_to_a_built_closure(m):
    closure = closure_of(m, [("b", "c", "q"), ("c", "d", "r")])
    closure.add_link("a", "b", m.var("p"))
    assert ("a", "d") not in closure  # queued until run
    assert closure.run() > 0
    p, q, r = m.var("p"), m.var("q"), m.var("r")
    assert closure.get(("a", "d")) == p & q & r


def test_deletion_before_run_restricts_pending_derivations(m):
    closure = closure_of(m, [("b", "c", "q")])
    closure.add_links([("a", "b", m.var("p") & m.var("x")), ("a", "b", m.var("y"))])
    closure.delete_vars(["x"])  # the pending derivation of (a, b) still names x
    closure.run()
    assert closure.get(("a", "c")) == m.var("y") & m.var("q")
    assert closure.get_link(("a", "b")) == m.var("y")


def test_membership_tracking(m):
    closure = closure_of(m, [("a", "b", "p"), ("b", "c", "q")])
    closure.track_membership()
    closure.delete_vars(["q"])
    closure.add_link("c", "d", m.var("r"))
    closure.add_link("b", "c", m.var("s"))
    closure.run()
    assert closure.membership_changes() == {("b", "c"): True, ("a", "c"): True,
                                            ("c", "d"): False, ("b", "d"): False,
                                            ("a", "d"): False}
    assert closure.membership_changes() == {}  # tracking stopped


def test_set_restores_entries_without_deriving(m):
    built = closure_of(m, [("a", "b", "p1"), ("a", "b", "p2"), ("b", "a", "q")])
    restored = NativeClosure(m)
    restored.set_links([("a", "b", m.var("p1")), ("a", "b", m.var("p2")), ("b", "a", m.var("q"))])
    restored.set_many(built.items())
    assert restored.run() == 0 and as_dict(restored) == as_dict(built)
    assert restored.get_link(("a", "b")) == m.var("p1") | m.var("p2")
    with pytest.raises(EngineError, match="false"):
        restored.set(("a", "c"), m.false)
    assert restored.index() == 0  # indexed at the end of run
    # restored and built closures go on alike: a deletion, then a new link
    for closure in (built, restored):
        assert closure.delete_vars(["p1"]) == 3  # (a, b), (a, a), (b, b)
        closure.add_link("b", "c", m.var("r"))
        closure.run()
    assert as_dict(restored) == as_dict(built)
    assert restored.get(("a", "c")) == m.var("p2") & m.var("r")


def test_close_releases_every_reference(m):
    baseline = len(m.bdd)
    closure = closure_of(m, [(f"n{i}", f"n{(i + 1) % 5}", f"v{i}") for i in range(5)])
    assert len(closure) == 25 and len(m.bdd) > baseline
    closure.close()
    closure.close()
    gc.collect()
    assert len(m.bdd) == baseline
    with pytest.raises(EngineError, match="closed"):
        closure.run()


def test_out_of_memory_is_an_error_and_leaks_nothing(m):
    from aspen.bench.common import topology

    links = topology(100, 2.4, 0).links
    formulas = [m.var(f"v{i}") for i in range(len(links))]
    baseline = len(m.bdd)
    m.bdd.configure(reordering=False)
    closure = NativeClosure(m)
    closure.add_links((link.src, link.dst, f) for link, f in zip(links, formulas, strict=True))
    with warnings.catch_warnings():  # dd notes that "mem" is in bytes since 0.5.7
        warnings.simplefilter("ignore", UserWarning)
        in_use = int(m.bdd.statistics()["mem"])
    m.bdd.configure(max_memory=in_use + 2**20)  # CUDD returns NULL before the build is done
    with pytest.raises(EngineError, match="out of memory"):
        closure.run()
    assert closure.stats()["failed"] == 1
    with pytest.raises(EngineError, match="failed earlier"):
        closure.add_link("x", "y", formulas[0])
    assert len(closure) == len(list(closure.items())) > 0  # reads still work
    closure.close()
    gc.collect()
    assert len(m.bdd) == baseline


def test_formulas_of_another_manager_are_refused(m):
    other = ProvenanceManager(backend="cudd")
    closure = NativeClosure(m)
    with pytest.raises(EngineError, match="another BDD manager"):
        closure.add_link("a", "b", other.var("p"))
    with pytest.raises(EngineError, match="another BDD manager"):
        closure.set(("a", "b"), other.var("p"))
    assert len(closure) == 0 and closure.stats()["links"] == 0


def test_python_backend_is_refused():
    manager = ProvenanceManager(backend="python")
    assert not core_available(manager)
    with pytest.raises(EngineError, match="not available"):
        NativeClosure(manager)


# -- random graphs against the oracle and the reference runtime ------------------------------

NODES = tuple(f"n{i}" for i in range(7))
node = st.sampled_from(NODES)
op = st.one_of(st.tuples(st.just("insert"), node, node),
               st.tuples(st.just("insert"), node, node),
               st.tuples(st.just("delete"), node, node))
programs = st.lists(st.lists(op, min_size=1, max_size=8), min_size=1, max_size=5)


@dataclass
class Model:
    """The live link instances: variable → (src, dst)."""

    live: dict[str, tuple[str, str]] = field(default_factory=dict)
    seq: int = 0

    def batch(self, ops: list[tuple[str, str, str]]) -> Batch:
        inserts: list[BaseFact] = []
        deletes: set[str] = set()
        for kind, src, dst in ops:
            if kind == "insert":
                self.seq += 1
                var = f"v{self.seq}"
                inserts.append(BaseFact("link", (src, dst, 1.0), var))
            elif kind == "drop":  # kills the oldest instance of the key live before this batch
                deletes |= next(({v} for v, key in self.live.items()
                                 if key == (src, dst) and v not in deletes), set())
            else:  # kills every instance of the key live before this batch
                deletes |= {v for v, key in self.live.items() if key == (src, dst)}
        for var in deletes:
            del self.live[var]
        for fact in inserts:
            self.live[fact.var] = fact.values[:2]
        return Batch(inserts=tuple(inserts), deletes=frozenset(deletes))

    def reachable(self, variables: set[str] | None = None) -> set[tuple]:
        links = [(s, d, 1.0) for v, (s, d) in self.live.items()
                 if variables is None or v in variables]
        return reachable(Scratch(base_state({"link": links})), {})


@settings(max_examples=80, deadline=None)
@given(program=programs, partitions=st.sampled_from([1, 3]), seed=st.integers(0, 2**16))
def test_random_batches_equal_oracle_reference_and_meaning(program, partitions, seed):
    m = ProvenanceManager(backend="cudd")
    reference = LocalRuntime(views=("reachable",), partitions=partitions, mode="lazy",
                             manager=m, core="reference")
    assert reference.core == "reference"  # the Python operators, not this kernel again
    closure = NativeClosure(m)
    model = Model()
    rng = random.Random(seed)
    try:
        for ops in program:
            batch = model.batch(ops)
            delta = reference.apply(batch)["reachable"]
            reference.flush()
            closure.track_membership()
            closure.delete_vars(batch.deletes)
            closure.add_links((f.values[0], f.values[1], m.var(f.var)) for f in batch.inserts)
            closure.run()
            changes = closure.membership_changes()
            expected = model.reachable()
            assert set(closure) == expected
            assert as_dict(closure) == dict(reference.view("reachable"))
            assert {k for k, was in changes.items() if not was and k in closure} \
                == delta.inserted
            assert {k for k, was in changes.items() if was and k not in closure} \
                == delta.deleted
            for _ in range(3):  # a formula is true under S iff its pair is reachable over S
                subset = {v for v in model.live if rng.random() < 0.6}
                over_subset = model.reachable(subset)
                for key, formula in closure.items():
                    assert m.evaluate(formula, subset) == (key in over_subset), (key, subset)
    finally:
        closure.close()


# -- lazy mode: alternatives buffered until a deletion needs them or a flush ------------------


def lazy_closure_of(m: ProvenanceManager, links: list[tuple[str, str, str]]) -> NativeClosure:
    closure = NativeClosure(m, lazy=True)
    closure.add_links([(s, d, m.var(v)) for s, d, v in links])
    closure.run()
    return closure


def implies(f, g) -> bool:
    return (f | g) == g


DIAMOND = [("a", "b", "p"), ("a", "c", "q"), ("b", "d", "r"), ("c", "d", "s")]


def test_lazy_diamond_buffers_the_second_path_and_ships_it_when_the_first_dies(m):
    closure = lazy_closure_of(m, [*DIAMOND, ("x", "a", "t")])
    over_b, over_c = m.var("p") & m.var("r"), m.var("q") & m.var("s")
    first = closure.get(("a", "d"))
    assert first in (over_b, over_c)  # one path propagated, the other buffered
    second = over_c if first == over_b else over_b
    assert dict(closure.buffered_items()) == {("a", "d"): second}
    assert closure.pending_alternatives() == 1 and closure.stats()["buffered"] == 1
    # the first path's second link dies: (a, d) keeps the buffered path, which ships
    dead = "s" if first == over_c else "r"
    closure.track_membership()
    closure.delete_vars([dead])
    assert closure.get(("a", "d")) == second and closure.pending_alternatives() == 0
    assert closure.stats()["shipped"] == 1
    assert ("x", "d") not in closure  # it had only the first path; the second one is on its way
    closure.run()
    changes = closure.membership_changes()
    assert ("a", "d") in closure and changes == {(dead_src(dead), "d"): True, ("x", "d"): True}
    assert closure.get(("x", "d")) == m.var("t") & second
    closure.close()


def test_lazy_derivations_of_a_waiting_entry_coalesce_rather_than_buffer(m):
    closure = lazy_closure_of(m, [("b", "c", "q")])
    # (a, c) is new, so it waits; the walk a→b→c reaches it before it is propagated
    closure.add_links([("a", "c", m.var("u")), ("a", "b", m.var("p"))])
    closure.run()
    assert closure.get(("a", "c")) == m.var("u") | (m.var("p") & m.var("q"))
    assert closure.pending_alternatives() == 0 and closure.stats()["buffered"] == 0


def dead_src(var: str) -> str:
    return {"r": "b", "s": "c"}[var]


def test_lazy_deletion_restricts_buffers_through_the_index(m):
    closure = lazy_closure_of(m, DIAMOND)
    first = closure.get(("a", "d"))
    buffered_var = "r" if first == m.var("q") & m.var("s") else "s"
    kept_var = "s" if buffered_var == "r" else "r"
    assert closure.delete_vars([buffered_var]) == 1  # only its own link's entry changed
    assert closure.get(("a", "d")) == first and closure.pending_alternatives() == 0
    assert closure.delete_vars([kept_var]) == 2  # nothing left to ship: (a, d) leaves
    closure.run()
    assert set(closure) == {("a", "b"), ("a", "c")}
    closure.close()


RING = ([(f"n{i}", f"n{(i + 1) % 8}", f"r{i}") for i in range(8)]
        + [(f"n{i}", f"n{(i + 3) % 8}", f"c{i}") for i in range(0, 8, 2)])


def test_a_lazy_build_with_cycles_stores_less_and_flushes_to_the_eager_formulas(m):
    lazy, eager = lazy_closure_of(m, RING), closure_of(m, RING)
    assert set(lazy) == set(eager)
    assert all(implies(f, eager.get(key)) for key, f in lazy.items())
    assert lazy.stats()["derivations"] < eager.stats()["derivations"]
    lazy_size = sum(m.node_count(f) for _, f in lazy.items())
    assert lazy_size < sum(m.node_count(f) for _, f in eager.items())
    assert lazy.pending_alternatives() > 0
    assert lazy.flush() > 0
    assert as_dict(lazy) == as_dict(eager) and lazy.pending_alternatives() == 0
    assert eager.flush() == 0  # eager: nothing buffered
    # after a flush the lazy kernel buffers again
    for closure in (lazy, eager):
        closure.delete_vars(["r0"])
        closure.add_link("n0", "n2", m.var("x"))
        closure.run()
    assert set(lazy) == set(eager)
    lazy.flush()
    assert as_dict(lazy) == as_dict(eager)
    lazy.close()
    eager.close()


def test_a_lazy_closure_releases_its_buffers(m):
    baseline = len(m.bdd)
    closure = lazy_closure_of(m, RING)
    assert closure.pending_alternatives() > 0
    closure.delete_vars(["r1", "c2"])  # some buffers ship, some are restricted
    closure.run()
    assert closure.pending_alternatives() > 0
    closure.close()
    gc.collect()
    assert len(m.bdd) == baseline


def test_lazy_native_runtime_dumps_formulas_with_their_alternatives():
    rt = LocalRuntime(views=("reachable",), partitions=2, mode="lazy", core="native")
    rt.apply(Batch(inserts=tuple(BaseFact("link", (s, d, 1.0), v) for s, d, v in DIAMOND)))
    m = rt.manager
    kernel = rt.native["reachable"]
    assert kernel.pending() == 1
    full = (m.var("p") & m.var("r")) | (m.var("q") & m.var("s"))
    assert rt.view("reachable")[("a", "d")] != full
    loaded = LocalRuntime.load_state(rt.dump_state(), core="native")
    assert loaded.view("reachable")[("a", "d")] == loaded.manager.or_(
        loaded.manager.and_(loaded.manager.var("p"), loaded.manager.var("r")),
        loaded.manager.and_(loaded.manager.var("q"), loaded.manager.var("s")))
    rt.flush()
    assert kernel.pending() == 0 and rt.view("reachable")[("a", "d")] == full


# dense graphs on four nodes, then mostly deletions: formulas die while alternatives are buffered
few = st.sampled_from(NODES[:4])
change = st.tuples(st.sampled_from(["insert", "delete", "drop", "drop"]), few, few)
setup = st.lists(st.tuples(st.just("insert"), few, few), min_size=6, max_size=16)
lazy_programs = st.tuples(setup, st.lists(st.lists(change, min_size=1, max_size=4), min_size=1,
                                          max_size=5)).map(lambda t: [t[0], *t[1]])


@settings(max_examples=80, deadline=None)
@given(program=lazy_programs, flushes=st.lists(st.booleans(), min_size=6, max_size=6))
def test_lazy_batches_keep_exact_membership_and_flush_to_the_full_provenance(program, flushes):
    m = ProvenanceManager(backend="cudd")
    reference = LocalRuntime(views=("reachable",), partitions=3, mode="lazy", manager=m,
                             core="reference")
    lazy, eager = NativeClosure(m, lazy=True), NativeClosure(m)
    model = Model()
    dead: set[str] = set()
    try:
        for ops, flush in zip(program, flushes, strict=False):
            batch = model.batch(ops)
            dead |= batch.deletes
            reference.apply(batch)
            for closure in (lazy, eager):
                closure.delete_vars(batch.deletes)
                closure.add_links((f.values[0], f.values[1], m.var(f.var))
                                  for f in batch.inserts)
                closure.run()
            assert set(lazy) == model.reachable()  # exact membership, not flushed
            buffered = dict(lazy.buffered_items())
            assert len(buffered) == lazy.pending_alternatives()
            for key, formula in lazy.items():  # sound: never more than the full provenance
                assert formula != m.false, key
                received = formula | buffered.get(key, m.false)
                assert implies(received, eager.get(key)), key
                assert not m.support(received) & dead, key
            assert set(buffered) <= set(lazy)
            if flush:
                lazy.flush()
                reference.flush()
                assert as_dict(lazy) == as_dict(eager) == dict(reference.view("reachable"))
                assert lazy.pending_alternatives() == 0
        lazy.flush()
        assert as_dict(lazy) == as_dict(eager)
    finally:
        lazy.close()
        eager.close()
