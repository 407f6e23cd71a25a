"""The bytes of the provenance codec are fixed: formulas and forests encode to the exact bytes
the codec wrote before its varints moved to :mod:`aspen.provenance.varint` (stored formulas in
every lake depend on it), on both backends."""

from __future__ import annotations

import hashlib

import pytest
from provenance_testkit import BACKENDS

from aspen.provenance.bdd import ProvenanceManager, decode, decode_forest, encode, encode_forest

#: formula → the hex of its bytes, as the codec wrote them before.
GOLDEN = {
    "false": "a5000000",
    "true": "a5000001",
    "v0": "a5010276300100000102",
    "or": "a5020276300276310201000100020103",
    "and_or": "a5040276300276310276320276330403000102000201030100030405",
}
#: the forest of ``or`` and ``and_or``.
GOLDEN_FOREST = "a60402763002763102763202763306010001000201030001020004010501000506020307"
#: the OR of 100 disjoint pairs: 1678 bytes, with two-byte varints (more than 127 names, nodes).
WIDE_SHA256 = "86f362c669026766fbb2a5209458b97fc4f26dd077f6986922beb44bcd102b99"


def formulas(m: ProvenanceManager) -> dict:
    x = [m.var(f"v{i}") for i in range(200)]
    wide = m.false
    for i in range(0, 200, 2):
        wide = m.or_(wide, m.and_(x[i], x[i + 1]))
    return {
        "false": m.false, "true": m.true, "v0": x[0], "or": m.or_(x[0], x[1]),
        "and_or": m.or_(m.and_(x[0], x[1]), m.and_(x[2], x[3])), "wide": wide,
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_formula_bytes_are_unchanged(backend: str) -> None:
    m = ProvenanceManager(backend=backend)
    found = formulas(m)
    for name, hexed in GOLDEN.items():
        assert encode(found[name]).hex() == hexed, name
        assert decode(ProvenanceManager(backend=backend), bytes.fromhex(hexed)) is not None
    wide = encode(found["wide"])
    assert (len(wide), hashlib.sha256(wide).hexdigest()) == (1678, WIDE_SHA256)
    again = ProvenanceManager(backend=backend)
    assert encode(decode(again, wide)) == wide


@pytest.mark.parametrize("backend", BACKENDS)
def test_forest_bytes_are_unchanged(backend: str) -> None:
    m = ProvenanceManager(backend=backend)
    found = formulas(m)
    data = encode_forest([found["or"], found["and_or"]])
    assert data.hex() == GOLDEN_FOREST
    back = decode_forest(m, data)
    assert back == [found["or"], found["and_or"]]
