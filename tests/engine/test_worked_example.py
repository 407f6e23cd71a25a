"""Liu et al. 2008, Figs. 2-3: the 4-link example reproduces the paper's provenance table."""

from __future__ import annotations

import pytest

from aspen.engine.batch import BaseFact, Batch
from aspen.runtime.local import LocalRuntime

LINKS = [("A", "B", "p1"), ("B", "C", "p2"), ("C", "A", "p3"), ("C", "B", "p4")]


def build(partitions: int, mode: str) -> LocalRuntime:
    rt = LocalRuntime(views=("reachable",), partitions=partitions, mode=mode, backend="python")
    rt.apply(Batch(inserts=tuple(BaseFact("link", (s, d, 1.0), v) for s, d, v in LINKS)))
    rt.flush()
    return rt


def expected_table(rt: LocalRuntime) -> dict[tuple, object]:
    m = rt.manager
    p1, p2, p3, p4 = (m.var(n) for n in ("p1", "p2", "p3", "p4"))
    a = m.and_
    return {
        ("A", "A"): a(p1, a(p2, p3)),
        ("A", "B"): p1,
        ("A", "C"): a(p1, p2),
        ("B", "A"): a(p2, p3),
        ("B", "B"): m.or_(a(p2, p4), a(p1, a(p2, p3))),
        ("B", "C"): p2,
        ("C", "A"): p3,
        ("C", "B"): m.or_(p4, a(p1, p3)),
        ("C", "C"): m.or_(a(p2, p4), a(p1, a(p2, p3))),
    }


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_fixpoint_table(partitions: int, mode: str) -> None:
    rt = build(partitions, mode)
    assert rt.view("reachable") == expected_table(rt)


@pytest.mark.parametrize("partitions", [1, 3])
def test_eager_is_exact_without_explicit_flush(partitions: int) -> None:
    rt = LocalRuntime(views=("reachable",), partitions=partitions, mode="eager", backend="python")
    rt.apply(Batch(inserts=tuple(BaseFact("link", (s, d, 1.0), v) for s, d, v in LINKS)))
    assert rt.view("reachable") == expected_table(rt)


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_delete_p4_removes_nothing(partitions: int, mode: str) -> None:
    rt = build(partitions, mode)
    delta = rt.apply(Batch(deletes=frozenset({"p4"})))
    rt.flush()
    assert not delta["reachable"]
    m = rt.manager
    p1, p2, p3 = m.var("p1"), m.var("p2"), m.var("p3")
    view = rt.view("reachable")
    assert len(view) == 9
    assert view[("B", "B")] == m.conj([p1, p2, p3])
    assert view[("C", "B")] == m.and_(p1, p3)
    assert view[("C", "C")] == m.conj([p1, p2, p3])
    assert all("p4" not in m.support(f) for f in view.values())


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_delete_p2_leaves_three(partitions: int, mode: str) -> None:
    rt = build(partitions, mode)
    delta = rt.apply(Batch(deletes=frozenset({"p2"})))
    assert set(rt.view("reachable")) == {("A", "B"), ("C", "A"), ("C", "B")}
    assert delta["reachable"].deleted == {("A", "A"), ("A", "C"), ("B", "A"), ("B", "B"),
                                          ("B", "C"), ("C", "C")}
    m = rt.manager
    assert rt.view("reachable")[("C", "B")] == m.or_(m.var("p4"), m.and_(m.var("p1"), m.var("p3")))


def test_lazy_without_flush_is_exact_in_membership_and_sound() -> None:
    rt = LocalRuntime(views=("reachable",), partitions=3, mode="lazy", backend="python")
    rt.apply(Batch(inserts=tuple(BaseFact("link", (s, d, 1.0), v) for s, d, v in LINKS)))
    exact = expected_table(rt)
    lazy = rt.view("reachable")
    assert set(lazy) == set(exact)
    m = rt.manager
    for key, formula in lazy.items():  # receiver provenance implies the true provenance
        assert m.or_(formula, exact[key]) == exact[key]
    # deleting p4 in lazy mode still keeps every tuple: buffered alternatives are shipped
    rt.apply(Batch(deletes=frozenset({"p4"})))
    assert set(rt.view("reachable")) == set(exact)


def test_delete_p4_costs_only_notices_with_one_partition_per_node() -> None:
    rt = build(3, "eager")
    before = rt.metrics.total().messages
    rt.apply(Batch(deletes=frozenset({"p4"})))
    after = rt.metrics.total()
    assert after.messages - before == 2  # the broadcast to the two other nodes (paper §4)
    assert after.deletion_notices == 2
