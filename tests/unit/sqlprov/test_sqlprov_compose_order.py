"""The up-front variable order when answer rows share tuples through their groups (TPC-H Q12's
shape: per answer row a group of order ∧ line products, an order's lines split between two
answer rows): every answer's formula stays linear in size, and the functions are the ones
composed in row order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.provenance.bdd import ProvenanceManager
from aspen.sqlprov.formula import Composer
from aspen.sqlprov.shape import Group, Leaf, Part

#: An answer row: a unit without variables (its group key) over an EXISTS group of products.
SHAPE = (Part("u", keys=("k",), groups=(Group("exists", (
    Part("o", (Leaf("o", "var"),)), Part("l", (Leaf("l", "var"),))), "m"),)),)


def _answers(orders: int, split: list[bool]) -> list[list[dict]]:
    """Two answer rows (A, B); order i has a line in A, and one in B where ``split[i]``."""
    a = [{"u": 1, "k": "A", "m": 1, "o": f"o{i:03}", "l": f"l{i:03}a"} for i in range(orders)]
    b = [{"u": 1, "k": "B", "m": 1, "o": f"o{i:03}", "l": f"l{i:03}b"}
         for i in range(orders) if split[i]]
    return [a, b] if b else [a]


def test_shared_orders_keep_each_answer_linear() -> None:
    orders = 14
    answers = _answers(orders, [True] * orders)
    m = ProvenanceManager()
    m.fix_order()  # as compose does: CUDD's sifting would pick its own order
    composer = Composer(m)
    composer.declare(answers, SHAPE)
    # declared answer by answer, B's lines would sit below every order: 2^14 nodes
    for rows in answers:
        assert m.node_count(composer.answer(rows, SHAPE)) <= 2 * orders


@settings(max_examples=15, deadline=None)
@given(split=st.lists(st.booleans(), min_size=8, max_size=8))
def test_the_same_functions_as_in_row_order(split: list[bool]) -> None:
    answers = _answers(8, split)
    m = ProvenanceManager()
    ordered = Composer(m)
    ordered.declare(answers, SHAPE)
    got = [ordered.answer(rows, SHAPE) for rows in answers]
    plain = Composer(m, memo=False)
    assert got == [plain.answer(rows, SHAPE) for rows in answers]
    expected = [m.disj([m.and_(m.var(r["o"]), m.var(r["l"])) for r in rows]) for rows in answers]
    assert got == expected
