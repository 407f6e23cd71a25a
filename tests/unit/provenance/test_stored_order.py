"""Decoding in the stored order: :func:`stored_order` recovers an order under which every stored
node list rebuilds as it was, and :meth:`ProvenanceManager.decode_each` decodes exactly what
:meth:`ProvenanceManager.decode` does, in either backend."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provenance_testkit import BACKENDS, VARS, build, exprs, subsets, truth

from aspen.errors import ProvenanceError
from aspen.provenance.bdd import ProvenanceManager
from aspen.provenance.codec import names_order, read_names, stored_order


def test_the_order_of_a_literal_formula_is_its_stored_order() -> None:
    m = ProvenanceManager(backend="python")
    m.set_order(["z", "y", "x"])
    f = m.or_(m.var("x"), m.and_(m.var("y"), m.var("z")))
    assert stored_order([m.encode(f)]) == ["z", "y", "x"]


def test_small_encodings_can_be_left_out() -> None:
    m = ProvenanceManager(backend="python")
    big = m.encode(m.and_(m.var("a"), m.var("b")))
    small = m.encode(m.var("c"))
    assert stored_order([big, small], min_bytes=len(big)) == ["a", "b"]


def test_formulas_stored_under_opposite_orders_still_give_an_order() -> None:
    first, second = ProvenanceManager(backend="python"), ProvenanceManager(backend="python")
    first.set_order(["a", "b"])
    second.set_order(["b", "a"])
    data = [m.encode(m.and_(m.var("a"), m.var("b"))) for m in (first, second)]
    assert sorted(stored_order(data)) == ["a", "b"]  # the cycle is broken, nothing is lost


def test_a_bad_encoding_is_refused() -> None:
    with pytest.raises(ProvenanceError):
        stored_order([b"\x00\x01"])


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=150, deadline=None)
@given(formulas=st.lists(exprs, min_size=1, max_size=6), order=st.permutations(VARS))
def test_decoding_in_the_stored_order_rebuilds_every_node_list(backend: str, formulas: list,
                                                               order: list[str]) -> None:
    source = ProvenanceManager(backend=backend)
    source.set_order(order)
    encodings = [source.encode(build(source, expr)) for expr in formulas]

    target = ProvenanceManager(backend=backend)
    target.fix_order()
    target.declare_in_order(stored_order(encodings))
    decoded = target.decode_each(encodings)
    # an order the stored node lists agree with rebuilds each of them node for node
    assert [target.node_count(f) for f in decoded] == [source.node_count(
        source.decode(data)) for data in encodings]
    for expr, formula in zip(formulas, decoded, strict=True):
        for true_vars in subsets(VARS[:4]):
            assert target.evaluate(formula, set(true_vars)) == truth(expr, true_vars)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None)
@given(formulas=st.lists(exprs, min_size=1, max_size=5))
def test_decode_each_equals_decode(backend: str, formulas: list) -> None:
    source = ProvenanceManager(backend=backend)
    encodings = [source.encode(build(source, expr)) for expr in formulas]
    target = ProvenanceManager(backend=backend)
    assert target.decode_each(encodings) == [target.decode(data) for data in encodings]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=150, deadline=None)
@given(formulas=st.lists(exprs, min_size=1, max_size=6), order=st.permutations(VARS))
def test_the_name_lists_give_an_order_that_rebuilds_every_node_list(
        backend: str, formulas: list, order: list[str]) -> None:
    """Names are listed in the writer's level order, so their order alone suffices: decoding
    many rows at once (compiled with CUDD) rebuilds each node list node for node."""
    source = ProvenanceManager(backend=backend)
    source.set_order(order)
    encodings = [source.encode(build(source, expr)) for expr in formulas]
    listed = names_order(encodings)
    place = {name: i for i, name in enumerate(listed)}
    for data in encodings:  # every row's names keep their order in it
        names = read_names(data, 1)[0]
        assert [place[n] for n in names] == sorted(place[n] for n in names)
    target = ProvenanceManager(backend=backend)
    target.fix_order()
    decoded = target.decode_each(encodings)
    assert [target.encode(f) for f in decoded] == encodings  # byte for byte: same node lists
    for expr, formula in zip(formulas, decoded, strict=True):
        for true_vars in subsets(VARS[:4]):
            assert target.evaluate(formula, set(true_vars)) == truth(expr, true_vars)


@pytest.mark.parametrize("backend", BACKENDS)
def test_decoding_many_refuses_a_corrupt_row_and_keeps_nothing_of_it(backend: str) -> None:
    m = ProvenanceManager(backend=backend)
    good = m.encode(m.or_(m.var("a"), m.and_(m.var("b"), m.var("c"))))
    for bad in (good[:-1], good + b"\x00", good[:-2] + bytes([0x7F]) + good[-1:]):
        with pytest.raises(ProvenanceError):
            ProvenanceManager(backend=backend).decode_each([good, bad])
