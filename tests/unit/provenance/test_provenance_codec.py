"""The byte codec and size metrics of ProvenanceManager, on both backends."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provenance_testkit import BACKENDS, VARS, build, exprs, subsets, truth

from aspen.errors import ProvenanceError
from aspen.provenance.bdd import ProvenanceManager, decode, encode

FIG9_DFS = [f"p{i}" for i in range(8)]
FIG9_BFS = ["p0", "p4", "p6", "p1", "p2", "p5", "p7", "p3"]
BACKEND_NAMES = ["cudd", "python"]


def fig9(m: ProvenanceManager):
    """Liu 2016, Fig. 9: reachable(A,F) = p0(p1 + p2p3) + (p4 + p6p7)p5."""
    p = [m.var(f"p{i}") for i in range(8)]
    return m.or_(
        m.and_(p[0], m.or_(p[1], m.and_(p[2], p[3]))),
        m.and_(m.or_(p[4], m.and_(p[6], p[7])), p[5]),
    )


def manager(backend: str, order: list[str]) -> ProvenanceManager:
    m = ProvenanceManager(backend=backend)
    m.set_order(order)
    return m


@settings(max_examples=60, deadline=None)
@given(
    expr=exprs,
    src=st.sampled_from(BACKEND_NAMES),
    dst=st.sampled_from(BACKEND_NAMES),
    orders=st.tuples(st.permutations(VARS), st.permutations(VARS)),
)
def test_round_trip_across_backends_and_orders(expr, src, dst, orders):
    m1, m2 = manager(src, list(orders[0])), manager(dst, list(orders[1]))
    f1 = build(m1, expr)
    data = encode(f1)
    f2 = decode(m2, data)
    assert f2 == build(m2, expr)  # same function, canonical in the receiving manager
    assert decode(m1, data) == f1
    for s in subsets(m1.support(f1)):
        assert m2.evaluate(f2, set(s)) == truth(expr, s)
    # the bytes depend only on the function and the order, not on the backend
    m3 = manager("python" if src == "cudd" else "cudd", list(orders[0]))
    assert encode(build(m3, expr)) == data
    assert m1.node_count(f1) == m3.node_count(build(m3, expr))


@pytest.mark.parametrize("backend", BACKENDS)
def test_constants_round_trip(backend):
    m = ProvenanceManager(backend=backend)
    for f in (m.false, m.true):
        assert decode(m, encode(f)) == f
    assert len(encode(m.false)) == 4 and m.node_count(m.false) == 0
    assert m.node_count(m.var("x")) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_fig9_sizes_under_dfs_and_bfs_orders(backend):
    dfs, bfs = manager(backend, FIG9_DFS), manager(backend, FIG9_BFS)
    f_dfs, f_bfs = fig9(dfs), fig9(bfs)
    assert dfs.node_count(f_dfs) == 9
    assert bfs.node_count(f_bfs) == 18
    assert len(encode(f_dfs)) < len(encode(f_bfs))
    # reordering one manager moves between the two sizes and keeps the function
    dfs.set_order(FIG9_BFS)
    assert dfs.order[:8] == FIG9_BFS
    assert dfs.node_count(f_dfs) == 18
    assert f_dfs == fig9(dfs)


@settings(max_examples=40, deadline=None)
@given(expr=exprs, backend=st.sampled_from(BACKEND_NAMES), seed=st.integers(0, 2**16))
def test_reordering_never_changes_a_function(expr, backend, seed):
    m = ProvenanceManager(backend=backend)
    f = build(m, expr)
    before = {s: m.evaluate(f, set(s)) for s in subsets(m.support(f))}
    order = list(VARS)
    random.Random(seed).shuffle(order)
    m.set_order(order)
    assert m.order == order
    assert {s: m.evaluate(f, set(s)) for s in subsets(m.support(f))} == before
    assert f == build(m, expr)


def corrupt_cases(data: bytes) -> dict[str, bytes]:
    name_at = 3  # magic, #names, len(name0) → first name byte
    dangling = bytearray(data)
    dangling[-2] = 0x7F  # the high ref of the last node points past the table
    return {
        "empty": b"",
        "bad magic": b"\x00" + data[1:],
        "truncated": data[:-1],
        "half": data[: len(data) // 2],
        "bad utf-8 name": data[:name_at] + b"\xff" + data[name_at + 1 :],
        "trailing bytes": data + b"\x00",
        "dangling ref": bytes(dangling),
        "bad root": data[:-1] + b"\x7f",
    }


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(corrupt_cases(b"\xa5" * 8)))
def test_corrupt_bytes_raise_provenance_error(backend, case):
    src = ProvenanceManager(backend=backend)
    data = encode(fig9(src))
    target = ProvenanceManager(backend=backend)
    with pytest.raises(ProvenanceError):
        decode(target, corrupt_cases(data)[case])
    assert target.order == []  # nothing was declared from corrupt bytes


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_strict_prefix_is_rejected(backend):
    data = encode(fig9(ProvenanceManager(backend=backend)))
    for cut in range(len(data)):
        with pytest.raises(ProvenanceError):
            decode(ProvenanceManager(backend=backend), data[:cut])


def test_unknown_backend_is_a_provenance_error():
    with pytest.raises(ProvenanceError):
        ProvenanceManager(backend="zdd")
