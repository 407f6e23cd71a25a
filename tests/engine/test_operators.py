"""Each operator on tiny literal inputs."""

from __future__ import annotations

import pytest

from aspen.engine.operators import (
    Aggregate,
    AggSel,
    Fixpoint,
    FormulaCodec,
    GroupAggregate,
    MinShip,
    PipelinedHashJoin,
)
from aspen.engine.records import DEL, INS, Update
from aspen.errors import AspenError, EngineError
from aspen.provenance import ProvenanceManager


@pytest.fixture
def m() -> ProvenanceManager:
    return ProvenanceManager(backend="python")


def ins(values: tuple, pv, relation: str = "r") -> Update:
    return Update.ins(relation, values, pv)


# -- Fixpoint ----------------------------------------------------------------------------------
def test_fixpoint_first_derivation_then_absorption(m):
    fp = Fixpoint(m, "r")
    p1, p2 = m.var("p1"), m.var("p2")
    out = fp.process("base", ins(("a", "b"), p1))
    assert [(u.op, u.tuple) for u in out] == [(INS, ("a", "b"))]
    assert fp.process("rec", ins(("a", "b"), m.and_(p1, p2))) == []  # absorbed: nothing
    assert fp.get(("a", "b")) == p1


def test_fixpoint_forwards_the_incoming_derivation_not_a_difference(m):
    fp = Fixpoint(m, "r")
    p1, p2 = m.var("p1"), m.var("p2")
    fp.process("base", ins(("a", "b"), p1))
    out = fp.process("rec", ins(("a", "b"), p2))
    assert len(out) == 1 and out[0].pv == p2  # decision 3: monotone u.pv
    assert fp.get(("a", "b")) == m.or_(p1, p2)


def test_fixpoint_restricts_and_removes_on_deletion(m):
    fp = Fixpoint(m, "r")
    p1, p2, p3 = m.var("p1"), m.var("p2"), m.var("p3")
    fp.process("base", ins(("a", "b"), m.or_(p1, p2)))
    fp.process("base", ins(("a", "c"), m.and_(p1, p3)))
    out = fp.process("base", Update.delete("r", (), frozenset({"p1"})))
    assert [(u.op, u.tuple, u.deleted) for u in out] == [(DEL, ("a", "c"), frozenset({"p1"}))]
    assert fp.get(("a", "b")) == p2
    assert fp.get(("a", "c")) is None


def test_fixpoint_retraction_removes_the_tuple(m):
    fp = Fixpoint(m, "r")
    fp.process("base", ins(("a",), m.var("x")))
    out = fp.process("rec", Update.delete("r", ("a",), frozenset()))
    assert [(u.op, u.tuple) for u in out] == [(DEL, ("a",))]
    assert fp.get(("a",)) is None


# -- PipelinedHashJoin -------------------------------------------------------------------------
def reach_join(m, **kw) -> PipelinedHashJoin:
    return PipelinedHashJoin(m, "reachable", left_key=lambda t: t[0], right_key=lambda t: t[1],
                             combine=lambda r, link: (link[0], r[1]), **kw)


def test_join_outputs_incoming_pv_and_partner(m):
    j = reach_join(m)
    p1, p2, p3 = m.var("p1"), m.var("p2"), m.var("p3")
    assert j.process("left", ins(("b", "c"), p2)) == []
    out = j.process("right", ins(("a", "b", 1.0), p1, "link"))
    assert [(u.tuple, u.pv) for u in out] == [(("a", "c"), m.and_(p1, p2))]
    out = j.process("left", ins(("b", "c"), p3))  # a new derivation of the left tuple
    assert [(u.tuple, u.pv) for u in out] == [(("a", "c"), m.and_(p3, p1))]  # u.pv ∧ p_j


def test_join_absorbed_derivation_emits_nothing(m):
    j = reach_join(m)
    p1, p2 = m.var("p1"), m.var("p2")
    j.process("right", ins(("a", "b", 1.0), p1, "link"))
    j.process("left", ins(("b", "c"), p2))
    assert j.process("left", ins(("b", "c"), m.and_(p1, p2))) == []


def test_join_set_buckets_and_deletion_cascade(m):
    j = reach_join(m)
    p1, p2, p3 = m.var("p1"), m.var("p2"), m.var("p3")
    j.process("left", ins(("b", "c"), p2))
    j.process("left", ins(("b", "d"), p3))  # same key: both kept (bucket is a set)
    out = j.process("right", ins(("a", "b", 1.0), p1, "link"))
    assert {u.tuple for u in out} == {("a", "c"), ("a", "d")}
    out = j.delete_vars(frozenset({"p2"}))
    assert [(u.op, u.tuple) for u in out] == [(DEL, ("a", "c"))]
    assert set(j.side_state("left")) == {("b", "d")}
    out = j.process("right", ins(("x", "b", 1.0), m.var("p9"), "link"))
    assert {u.tuple for u in out} == {("x", "d")}


def test_join_filter_and_window_hook(m):
    def expire_old(update, state):
        # the window keeps one link: inserting a second one expires the first (count window)
        if update.op == INS and len(state) > 1:
            return [(t, frozenset(m.support(f))) for t, f in state.items() if t != update.tuple]
        return []

    j = PipelinedHashJoin(m, "p", left_key=lambda t: t[0], right_key=lambda t: t[1],
                          combine=lambda r, link: None if link[0] == r[1] else (link[0], r[1]),
                          window_right=expire_old)
    j.process("left", ins(("b", "c"), m.var("q")))
    assert j.process("right", ins(("c", "b", 1.0), m.var("l1"), "link")) == []  # filtered
    out = j.process("right", ins(("a", "b", 1.0), m.var("l2"), "link"))
    assert ("a", "c") in {u.tuple for u in out if u.op == INS}
    assert set(j.side_state("right")) == {("a", "b", 1.0)}  # ("c","b") expired


def test_join_bad_port(m):
    with pytest.raises(EngineError):
        reach_join(m).process("middle", ins(("a",), m.var("x")))


# -- MinShip -----------------------------------------------------------------------------------
def test_minship_ships_first_buffers_rest_lazy(m):
    ms = MinShip(m, "lazy")
    p1, p2, p3 = m.var("p1"), m.var("p2"), m.var("p3")
    assert len(ms.process("in", ins(("a", "c"), p1))) == 1
    assert ms.process("in", ins(("a", "c"), m.and_(p1, p2))) == []  # absorbed by B_sent
    assert ms.pending() == 0
    assert ms.process("in", ins(("a", "c"), p2)) == []
    assert ms.process("in", ins(("a", "c"), p3)) == []
    assert ms.pending() == 1  # one tuple buffered: p2 ∨ p3
    out = ms.delete_vars(frozenset({"p1"}))
    assert [u.op for u in out] == [INS, DEL]  # alternatives before deletions (decision 5)
    assert out[0].pv == m.or_(p2, p3)
    assert ms.sent[("a", "c")] == m.or_(p2, p3)
    assert ms.pending() == 0


def test_minship_lazy_keeps_buffer_when_sent_unchanged(m):
    ms = MinShip(m, "lazy")
    p1, p2 = m.var("p1"), m.var("p2")
    ms.process("in", ins(("a", "c"), p1))
    ms.process("in", ins(("a", "c"), p2))
    ms.process("in", ins(("a", "d"), p1))
    out = ms.delete_vars(frozenset({"p2"}))  # only the buffer mentions p2
    assert out == [] and ms.pending() == 0


def test_minship_eager_batch_threshold_and_timer(m):
    ms = MinShip(m, "eager", batch_size=2)
    v = [m.var(f"x{i}") for i in range(5)]
    for i, key in enumerate(["a", "b"]):
        assert len(ms.process("in", ins((key,), v[i]))) == 1
    assert ms.process("in", ins(("a",), v[2])) == []
    out = ms.process("in", ins(("b",), v[3]))  # W = 2 buffered tuples: ship the batch
    assert {(u.tuple, u.pv) for u in out} == {(("a",), v[2]), (("b",), v[3])}
    assert ms.process("in", ins(("a",), v[4])) == []
    assert [u.pv for u in ms.flush()] == [v[4]]  # the timer
    assert ms.sent[("a",)] == m.disj([v[0], v[2], v[4]])


def test_minship_rejects_bad_mode(m):
    with pytest.raises(AspenError):
        MinShip(m, "sometimes")


# -- AggSel ------------------------------------------------------------------------------------
COST = Aggregate("cost", "min", 2)
HOPS = Aggregate("hops", "min", 3)


def test_aggsel_keeps_ties_and_prunes_worse(m):
    sel = AggSel(m, (0, 1), (COST,))
    assert len(sel.process("in", ins(("a", "b", 3.0, "p"), m.var("x")))) == 1
    assert [u.op for u in sel.process("in", ins(("a", "b", 3.0, "q"), m.var("y")))] == [INS]
    assert sel.process("in", ins(("a", "b", 4.0, "r"), m.var("z"))) == []
    (value, tied), = sel.best[("a", "b")]
    assert value == 3.0 and tied == {("a", "b", 3.0, "p"), ("a", "b", 3.0, "q")}


def test_aggsel_better_tuple_retracts_old_bests(m):
    sel = AggSel(m, (0, 1), (COST,))
    sel.process("in", ins(("a", "b", 3.0, "p"), m.var("x")))
    sel.process("in", ins(("a", "b", 3.0, "q"), m.var("y")))
    out = sel.process("in", ins(("a", "b", 1.0, "s"), m.var("w")))
    assert out[0].op == INS and out[0].tuple == ("a", "b", 1.0, "s")
    assert {u.tuple for u in out[1:] if u.op == DEL and not u.deleted} == {
        ("a", "b", 3.0, "p"), ("a", "b", 3.0, "q")}


def test_aggsel_forwards_provenance_only_change_of_best(m):
    sel = AggSel(m, (0, 1), (COST,))
    x, y = m.var("x"), m.var("y")
    sel.process("in", ins(("a", "b", 3.0, "p"), x))
    out = sel.process("in", ins(("a", "b", 3.0, "p"), y))
    assert [(u.op, u.pv) for u in out] == [(INS, y)]
    assert sel.process("in", ins(("a", "b", 3.0, "p"), m.and_(x, y))) == []  # absorbed


def test_aggsel_promotes_next_best_on_delete(m):
    sel = AggSel(m, (0, 1), (COST,))
    x, y, z = m.var("x"), m.var("y"), m.var("z")
    sel.process("in", ins(("a", "b", 1.0, "p"), x))
    sel.process("in", ins(("a", "b", 5.0, "q"), y))  # pruned, kept in H
    sel.process("in", ins(("a", "b", 5.0, "r"), m.or_(y, z)))
    out = sel.delete_vars(frozenset({"x"}))
    promoted = {(u.tuple, u.pv) for u in out if u.op == INS}
    assert promoted == {(("a", "b", 5.0, "q"), y), (("a", "b", 5.0, "r"), m.or_(y, z))}
    out = sel.delete_vars(frozenset({"y"}))  # q dies, r survives through z: no promotion
    assert [u for u in out if u.op == INS] == []
    assert sel.best[("a", "b")][0][1] == {("a", "b", 5.0, "r")}
    sel.delete_vars(frozenset({"z"}))
    assert ("a", "b") not in sel.best


def test_multi_aggsel_never_loses_a_best_for_any_aggregate(m):
    sel = AggSel(m, (0, 1), (COST, HOPS))
    sel.process("in", ins(("a", "b", 10.0, 1), m.var("x")))     # best hops
    out = sel.process("in", ins(("a", "b", 2.0, 3), m.var("y")))  # best cost
    assert [u.op for u in out] == [INS]  # x stays (best hops): no retraction
    assert sel.process("in", ins(("a", "b", 11.0, 2), m.var("z"))) == []


def test_aggsel_count_sum_never_prune(m):
    sel = AggSel(m, (0,), (Aggregate("n", "count"),))
    assert len(sel.process("in", ins(("a", 1), m.var("x")))) == 1
    assert len(sel.process("in", ins(("a", 0), m.var("y")))) == 1


def test_aggregate_rejects_unknown_function():
    with pytest.raises(EngineError):
        Aggregate("x", "median", 0)


# -- GroupAggregate ----------------------------------------------------------------------------
def test_group_min_support_formula_and_disappearing_group(m):
    agg = GroupAggregate(m, "min_cost", (0, 1), "min", 2)
    x, y, z = m.var("x"), m.var("y"), m.var("z")
    assert [u.tuple for u in agg.process("in", ins(("a", "b", 3.0), x))] == [("a", "b", 3.0)]
    agg.process("in", ins(("a", "b", 3.0, "q"), y))
    agg.process("in", ins(("a", "b", 7.0), z))
    assert agg.rows() == {("a", "b", 3.0): m.or_(x, y)}
    out = agg.delete_vars(frozenset({"x", "y"}))
    assert [(u.op, u.tuple) for u in out] == [(DEL, ("a", "b", 3.0)), (INS, ("a", "b", 7.0))]
    out = agg.delete_vars(frozenset({"z"}))
    assert [(u.op, u.tuple) for u in out] == [(DEL, ("a", "b", 7.0))]
    assert agg.rows() == {}


def test_group_count_sum_max(m):
    count = GroupAggregate(m, "n", (0,), "count")
    total = GroupAggregate(m, "s", (0,), "sum", 1)
    top = GroupAggregate(m, "mx", (0,), "max", 1)
    for i, v in enumerate([2, 5, 3]):
        u = ins(("g", v), m.var(f"x{i}"))
        for agg in (count, total, top):
            agg.process("in", u)
    assert set(count.rows()) == {("g", 3)}
    assert set(total.rows()) == {("g", 10)}
    assert set(top.rows()) == {("g", 5)}
    for agg in (count, total, top):
        agg.process("in", Update.delete("r", ("g", 5), frozenset()))  # retraction
    assert set(count.rows()) == {("g", 2)} and set(total.rows()) == {("g", 5)}
    assert set(top.rows()) == {("g", 3)}


# -- state round trip --------------------------------------------------------------------------
def test_operator_state_round_trip(m):
    sel = AggSel(m, (0, 1), (COST,))
    sel.process("in", ins(("a", "b", 1.0, "p"), m.var("x")))
    sel.process("in", ins(("a", "b", 2.0, "q"), m.var("y")))
    codec = FormulaCodec(m)
    state = sel.dump_state(codec)
    m2 = ProvenanceManager(backend="python")
    copy = AggSel(m2, (0, 1), (COST,))
    copy.load_state(state, FormulaCodec(m2, codec.export()))
    out = copy.delete_vars(frozenset({"x"}))
    assert [(u.op, u.tuple) for u in out if u.op == INS] == [(INS, ("a", "b", 2.0, "q"))]
