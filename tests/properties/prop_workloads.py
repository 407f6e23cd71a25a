"""Random update workloads for the property suite, and the checks every test shares.

A workload is drawn as abstract operations and interpreted against a small model of the live
base instances, so that every Batch is valid: deletions name variables live at the start of
the batch, a link or sensor insert *replaces* the live instances with another cost/position
(delete + insert, as Liu et al. 2008, §4.3 treat a replacement), re-inserts and renewals get
a fresh variable (decision 4).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from aspen.baselines import scratch
from aspen.engine.batch import BaseFact, Batch

__all__ = [
    "mixed_programs",
    "network_programs",
    "region_programs",
    "NODES",
    "SENSORS",
    "Step",
    "batches",
    "check_hygiene",
    "check_meaning",
    "check_views",
    "network_ops",
    "region_ops",
    "view_keys",
]

NODES = ("a", "b", "c", "d", "e")
SENSORS = ("s0", "s1", "s2", "s3", "s4")
REGIONS = ("r1", "r2")
#: grid coordinates: pairs at distance exactly k = 20 exist, e.g. (0,0)–(12,16) and (0,0)–(20,0)
COORDS = (0, 6, 12, 16, 20, 28, 40)

_index = st.integers(0, 63)
_delete = st.tuples(st.just("delete"), _index)
_expire = st.tuples(st.just("expire"), _index)
_reinsert = st.tuples(st.just("reinsert"), _index)
link_op = st.tuples(
    st.just("link"), st.sampled_from(NODES), st.sampled_from(NODES), st.integers(0, 3)
)
sensor_op = st.tuples(
    st.just("sensor"), st.sampled_from(SENSORS), st.sampled_from(COORDS), st.sampled_from(COORDS)
)
trig_op = st.tuples(st.just("trig"), st.sampled_from(SENSORS))
seed_op = st.tuples(st.just("seed"), st.sampled_from(REGIONS), st.sampled_from(SENSORS))

#: weighted: inserts are more frequent than deletes, so views grow and then shrink
network_ops = st.one_of(link_op, link_op, _delete, _expire, _reinsert)
region_ops = st.one_of(sensor_op, trig_op, trig_op, seed_op, seed_op, _delete, _expire, _reinsert)


def batches(ops: st.SearchStrategy, max_batches: int = 6, max_ops: int = 5) -> st.SearchStrategy:
    """Lists of batches of abstract operations."""
    return st.lists(
        st.lists(ops, min_size=1, max_size=max_ops), min_size=min(1, max_batches),
        max_size=max_batches,
    )


def network_programs(max_batches: int = 6, max_ops: int = 5, setup: int = 7) -> st.SearchStrategy:
    """A first batch of 2..``setup`` links, then random batches."""
    first = st.lists(link_op, min_size=2, max_size=setup)
    return st.builds(lambda f, rest: [f, *rest], first, batches(network_ops, max_batches, max_ops))


def region_programs(max_batches: int = 6, max_ops: int = 5) -> st.SearchStrategy:
    """A first batch placing every sensor, triggering most and seeding regions, then batches."""
    coords = st.sampled_from(COORDS)
    first = st.builds(
        lambda placed, triggered, seeds: [
            *(("sensor", sid, x, y) for sid, (x, y) in zip(SENSORS, placed, strict=True)),
            *(("trig", sid) for sid, on in zip(SENSORS, triggered, strict=True) if on),
            *seeds,
        ],
        st.lists(st.tuples(coords, coords), min_size=len(SENSORS), max_size=len(SENSORS)),
        st.lists(st.sampled_from([True, True, False]), min_size=len(SENSORS),
                 max_size=len(SENSORS)),
        st.lists(seed_op, min_size=1, max_size=3),
    )
    return st.builds(lambda f, rest: [f, *rest], first, batches(region_ops, max_batches, max_ops))


def mixed_programs(max_batches: int = 5, max_ops: int = 6) -> st.SearchStrategy:
    """Network and region setup in one first batch, then mixed random batches."""
    return st.builds(
        lambda net, reg, rest: [net[0] + reg[0], *rest],
        network_programs(0), region_programs(0),
        batches(st.one_of(network_ops, region_ops), max_batches, max_ops),
    )


@dataclass
class Step:
    """One batch and the live instances after it."""

    batch: Batch
    live: dict[str, BaseFact]


@dataclass
class _Model:
    live: dict[str, BaseFact] = field(default_factory=dict)
    dead: list[tuple[str, tuple]] = field(default_factory=list)
    counter: int = 0

    def fresh(self) -> str:
        self.counter += 1
        return f"v{self.counter}"


def _key(relation: str, values: tuple) -> tuple:
    """What a replacement is keyed on: a link's (src,dst), a sensor's id, else the tuple."""
    if relation == "link":
        return (relation, values[:2])
    if relation == "sensor":
        return (relation, values[:1])
    return (relation, values)


class _BatchBuilder:
    """One batch under construction against the instances live at its start."""

    def __init__(self, model: _Model) -> None:
        self.model = model
        self.start = dict(model.live)
        self.inserts: list[BaseFact] = []
        self.deletes: set[str] = set()
        self.inserted_keys: set[tuple] = set()

    def insert(self, relation: str, values: tuple) -> None:
        key = _key(relation, values)
        if key in self.inserted_keys:
            return  # one instance per key and batch keeps replacement unambiguous
        self.inserted_keys.add(key)
        for var, fact in self.start.items():
            if _key(fact.relation, fact.values) == key and fact.values != values:
                self.deletes.add(var)
        self.inserts.append(BaseFact(relation, values, self.model.fresh()))

    def op(self, op: tuple) -> None:
        kind = op[0]
        if kind == "link":
            self.insert("link", (op[1], op[2], float(op[3])))
        elif kind == "sensor":
            self.insert("sensor", (op[1], float(op[2]), float(op[3])))
        elif kind == "trig":
            self.insert("triggered", (op[1],))
        elif kind == "seed":
            self.insert("region_seed", (op[1], op[2]))
        elif kind == "delete":
            tuples = sorted({(f.relation, f.values) for f in self.start.values()}, key=repr)
            if tuples:
                chosen = tuples[op[1] % len(tuples)]
                self.deletes |= {
                    v for v, f in self.start.items() if (f.relation, f.values) == chosen
                }
        elif kind == "expire":
            variables = sorted(self.start)
            if variables:
                self.deletes.add(variables[op[1] % len(variables)])
        elif kind == "reinsert":
            if self.model.dead:
                self.insert(*self.model.dead[op[1] % len(self.model.dead)])
        else:  # pragma: no cover - strategy and interpreter out of step
            raise AssertionError(op)

    def commit(self) -> Step:
        for var in self.deletes:
            fact = self.model.live.pop(var)
            self.model.dead.append((fact.relation, fact.values))
        self.model.live.update((f.var, f) for f in self.inserts)
        batch = Batch(tuple(self.inserts), frozenset(self.deletes))
        return Step(batch, dict(self.model.live))


def interpret(program: Sequence[Sequence[tuple]]) -> list[Step]:
    """Turn abstract operations into valid Batches (see the module docstring)."""
    model = _Model()
    steps: list[Step] = []
    for ops in program:
        builder = _BatchBuilder(model)
        for op in ops:
            builder.op(op)
        steps.append(builder.commit())
    return steps


def view_keys(rt: Any, view: str) -> set[tuple]:
    """A runtime's view as a set of tuples (engine dict or baseline set)."""
    return set(rt.view(view))


def check_views(rt: Any, step: Step, views: Iterable[str], before: dict[str, set] | None,
                delta: dict | None, k: float = 20.0) -> dict[str, set]:
    """Each view equals the oracle; the returned delta is the net change. Returns the views."""
    now: dict[str, set] = {}
    expected_all = scratch.evaluate_all(step.live, k=k, views=tuple(views))
    for view in views:
        got = view_keys(rt, view)
        expected = expected_all[view]
        assert got == expected, (
            f"{view}: missing {sorted(expected - got, key=repr)}, "
            f"extra {sorted(got - expected, key=repr)}; batch {step.batch}; live {step.live}"
        )
        if before is not None and delta is not None and view in delta:
            assert set(delta[view].inserted) == got - before[view], view
            assert set(delta[view].deleted) == before[view] - got, view
        now[view] = got
    return now


def check_hygiene(rt: Any, views: Iterable[str], live_vars: set[str]) -> None:
    """No stored formula is false or mentions a dead variable."""
    for view in views:
        for t, formula in rt.view(view).items():
            if formula is None:
                continue
            assert not rt.manager.is_false(formula), (view, t)
            dead = rt.manager.support(formula) - live_vars
            assert not dead, (view, t, sorted(dead))


def _subsets(variables: list[str], cap: int, seed: int) -> Iterable[set[str]]:
    if len(variables) <= cap:
        for r in range(len(variables) + 1):
            for combo in itertools.combinations(variables, r):
                yield set(combo)
        return
    rnd = random.Random(seed)
    yield set()
    yield set(variables)
    for _ in range(2**cap):
        yield {v for v in variables if rnd.random() < 0.5}


def check_meaning(rt: Any, live: dict[str, BaseFact], views: Iterable[str], k: float = 20.0,
                  cap: int = 8) -> None:
    """A tuple's formula is true with exactly S true iff the tuple is derivable from S."""
    formulas = {view: dict(rt.view(view)) for view in views}
    for subset in _subsets(sorted(live), cap, seed=len(live)):
        facts = [live[v] for v in subset]
        expected = scratch.evaluate_all(facts, k=k, views=tuple(views))
        for view, by_tuple in formulas.items():
            assert expected[view] <= set(by_tuple), (view, "derivable from S but not in view")
            for t, formula in by_tuple.items():
                value = rt.manager.evaluate(formula, subset)
                assert value == (t in expected[view]), (
                    f"{view}{t}: formula gives {value} with exactly {sorted(subset)} true"
                )
