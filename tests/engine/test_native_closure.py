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


@pytest.fixture
def m() -> ProvenanceManager:
    manager = ProvenanceManager(backend="cudd")
    assert core_available(manager), "make setup builds libs/aspen/engine/native/_core.so"
    return manager


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
