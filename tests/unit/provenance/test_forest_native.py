"""The compiled forest decoder decodes what the portable decoder decodes, and rejects what it
rejects; the compiled encoder writes the portable encoder's bytes; ``make setup`` builds them,
so with CUDD they must be in use."""

from __future__ import annotations

import gc

import dd.cudd  # noqa: F401  (locked: a missing binding fails the tests, it is not skipped)
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provenance_testkit import VARS, build, exprs, subsets, truth

from aspen.errors import ProvenanceError
from aspen.provenance import codec
from aspen.provenance.bdd import ProvenanceManager, decode_forest, encode, encode_forest
from aspen.provenance.forest_native import LIBRARY, encode_native, forest_decoder


def cudd(order: list[str]) -> ProvenanceManager:
    m = ProvenanceManager(backend="cudd")
    m.bdd.configure(reordering=False)
    m.set_order(order)
    return m


def portable(data: bytes, order: list[str]) -> list:
    m = cudd(order)
    m._aspen_forest_decoder = None  # type: ignore[attr-defined]  # force the Python loop
    return decode_forest(m, data), m


def test_setup_built_the_library_and_cudd_managers_use_it():
    assert LIBRARY.is_file(), "make setup compiles libs/aspen/provenance/forest.c"
    assert forest_decoder(cudd(VARS)) is not None
    assert forest_decoder(ProvenanceManager(backend="python")) is None


@settings(max_examples=60, deadline=None)
@given(forest=st.lists(exprs, min_size=0, max_size=8),
       orders=st.tuples(st.permutations(VARS), st.permutations(VARS)))
def test_native_decoding_equals_the_portable_decoder(forest, orders):
    source = cudd(list(orders[0]))
    formulas = [build(source, expr) for expr in forest] + [source.false, source.true]
    data = encode_forest(formulas)
    target = cudd(list(orders[1]))
    decoded = decode_forest(target, data)
    assert decoded == [build(target, expr) for expr in forest] + [target.false, target.true]
    expected, _m = portable(data, list(orders[1]))
    assert [encode_forest([f]) for f in decoded] == [encode_forest([f]) for f in expected]
    for expr, f in zip(forest, decoded, strict=False):
        for s in subsets(target.support(f)):
            assert target.evaluate(f, set(s)) == truth(expr, s)


def test_decoded_formulas_survive_garbage_collection_and_release_the_rest():
    m = cudd(VARS)
    p = [m.var(v) for v in VARS]
    shared = m.or_(m.and_(p[0], p[1]), p[2])
    data = encode_forest([m.and_(shared, p[3]), m.or_(shared, p[4])])
    target = cudd(VARS)
    before = len(target.bdd)
    first, second = decode_forest(target, data)
    del first
    gc.collect()
    target.bdd.configure(reordering=False)
    target.bdd.reorder({v: i for i, v in enumerate(reversed(VARS))})  # forces a CUDD GC
    assert second == m_rebuilt(target)
    del second
    gc.collect()
    target.bdd.reorder({v: i for i, v in enumerate(VARS)})
    assert len(target.bdd) == before  # only the variables stay referenced


def m_rebuilt(m: ProvenanceManager):
    p = [m.var(v) for v in VARS]
    return m.or_(m.or_(m.and_(p[0], p[1]), p[2]), p[4])


@pytest.mark.parametrize("case", ["dangling", "bad root", "truncated", "trailing"])
def test_corrupt_forests_raise_the_portable_decoders_errors(case):
    m = cudd(VARS)
    data = bytearray(encode_forest([m.or_(m.var("p0"), m.and_(m.var("p1"), m.var("p2")))]))
    if case == "dangling":  # first node's high child points at itself (node refs are k + 2)
        names_end = data.index(b"p2") + 2
        data[names_end + 1 + 2] = 2
    elif case == "bad root":
        data[-1] = 99
    elif case == "truncated":
        data = data[:-2]
    else:
        data += b"\x00"
    with pytest.raises(ProvenanceError) as native:
        decode_forest(cudd(VARS), bytes(data))
    with pytest.raises(ProvenanceError) as python:
        portable(bytes(data), VARS)
    assert native.value.args[0].split(" (")[0] == python.value.args[0].split(" (")[0]


def portable_bytes(formulas: list, *, forest: bool) -> bytes:
    magic = codec.FOREST_MAGIC if forest else codec.MAGIC
    return codec.portable_bytes(magic, formulas, with_count=forest)


@settings(max_examples=60, deadline=None)
@given(forest=st.lists(st.tuples(exprs, st.booleans()), min_size=0, max_size=8),
       order=st.permutations(VARS))
def test_native_encoding_writes_the_portable_encoders_bytes(forest, order):
    m = cudd(list(order))
    # negated members reach CUDD nodes through complemented edges as well as regular ones
    formulas = [~build(m, expr) if negate else build(m, expr) for expr, negate in forest]
    formulas += [m.false, m.true] + formulas[:2]
    assert encode_forest(formulas) == portable_bytes(formulas, forest=True)
    for f in formulas:
        assert encode(f) == portable_bytes([f], forest=False)
    target = cudd(VARS)
    expected = [~build(target, expr) if negate else build(target, expr) for expr, negate in forest]
    expected += [target.false, target.true] + expected[:2]
    assert decode_forest(target, encode_forest(formulas)) == expected


@settings(max_examples=60, deadline=None)
@given(forest=st.lists(st.tuples(exprs, st.booleans()), min_size=0, max_size=12),
       order=st.permutations(VARS))
def test_encoding_each_formula_in_one_call_writes_each_ones_portable_bytes(forest, order):
    m = cudd(list(order))
    formulas = [~build(m, expr) if negate else build(m, expr) for expr, negate in forest]
    formulas += [m.false, m.true] + formulas[:2]
    assert m.encode_each(formulas) == [portable_bytes([f], forest=False) for f in formulas]


def test_encoding_each_formula_grows_its_buffers_past_a_large_formula():
    m = cudd(VARS)
    chain = m.false
    for i in range(3000):  # 3,000 nodes: more bytes than the first buffer holds
        chain = m.or_(chain, m.and_(m.var(f"c{2 * i}"), m.var(f"c{2 * i + 1}")))
    small = [m.or_(m.var("p0"), m.var("p1")), ~m.var("p2"), m.true]
    formulas = [*small, chain, ~chain, *small]
    assert m.encode_each(formulas) == [portable_bytes([f], forest=False) for f in formulas]
    assert m.encode_each([]) == []


def test_cudd_managers_encode_with_the_compiled_walk():
    m = cudd(VARS)
    f = m.or_(m.and_(m.var("p0"), m.var("p1")), m.var("p2"))
    assert encode_native(codec.FOREST_MAGIC, [f], True) is not None
    python_true = ProvenanceManager(backend="python").true
    assert encode_native(codec.FOREST_MAGIC, [python_true], True) is None
