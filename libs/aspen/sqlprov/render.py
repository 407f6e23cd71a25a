"""A formula as JSON: ``{"var": NAME}``, ``{"and": [...]}``, ``{"or": [...]}``, ``{"not": F}``,
``true``, ``false``.

The rendering is a DNF read off the BDD, never an if-then-else: a **monotone** formula (no
negation: joins, unions, projections, EXISTS, thresholds) is the OR of its minimal witness sets
(its prime implicants, :func:`aspen.provenance.explain.minimal_witnesses`), each an AND of
variables; a formula with negation (EXCEPT, NOT EXISTS, a LEFT join's unmatched row) is an
irredundant sum of products of literals (Minato-Morreale ISOP over the BDD; shortest products
first). One-element ANDs and ORs are written as their element.

>>> from aspen.provenance.bdd import ProvenanceManager
>>> m = ProvenanceManager()
>>> a, b, c = m.var("a"), m.var("b"), m.var("c")
>>> to_json(m, m.or_(m.and_(a, b), c))
{'or': [{'var': 'c'}, {'and': [{'var': 'a'}, {'var': 'b'}]}]}
>>> to_json(m, m.and_(a, ~b))
{'and': [{'var': 'a'}, {'not': {'var': 'b'}}]}
>>> to_json(m, m.true), to_json(m, m.false)
(True, False)
"""

from __future__ import annotations

from typing import Any

from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.provenance.explain import is_monotone, minimal_witnesses

__all__ = ["isop", "to_json", "to_text"]


def _all(kind: str, items: list[Any]) -> Any:
    return items[0] if len(items) == 1 else {kind: items}


def isop(manager: ProvenanceManager, formula: Formula) -> list[list[tuple[str, bool]]]:
    """An irredundant sum of products of ``formula`` (Minato-Morreale ISOP over the BDD): each
    product a list of (variable, value), no product removable, none of its literals either.

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager()
    >>> a, b, c = m.var("a"), m.var("b"), m.var("c")
    >>> sorted(isop(m, m.or_(c, m.and_(a, ~b))))
    [[('a', True), ('b', False)], [('c', True)]]
    """
    bdd = manager.bdd
    memo: dict[tuple[int, int], tuple[list[list[tuple[str, bool]]], Formula]] = {}

    def go(low: Formula, up: Formula) -> tuple[list[list[tuple[str, bool]]], Formula]:
        if low == manager.false:
            return [], manager.false
        if up == manager.true:
            return [[]], manager.true
        key = (int(low), int(up))
        if key in memo:
            return memo[key]
        top = min((u for u in (low, up) if u.var is not None), key=lambda u: u.level).var
        l0, l1 = bdd.let({top: False}, low), bdd.let({top: True}, low)
        u0, u1 = bdd.let({top: False}, up), bdd.let({top: True}, up)
        c0, f0 = go(l0 & ~u1, u0)
        c1, f1 = go(l1 & ~u0, u1)
        cs, fs = go((l0 & ~f0) | (l1 & ~f1), u0 & u1)
        v = manager.var(top)
        cover = [[(top, False), *c] for c in c0] + [[(top, True), *c] for c in c1] + cs
        memo[key] = out = (cover, (~v & f0) | (v & f1) | fs)
        return out

    return go(formula, formula)[0]


def to_json(manager: ProvenanceManager, formula: Formula) -> Any:
    """``formula`` as JSON (see the module)."""
    if manager.is_true(formula):
        return True
    if manager.is_false(formula):
        return False
    if is_monotone(manager, formula):
        terms = [_all("and", [{"var": v} for v in sorted(w)])
                 for w in minimal_witnesses(manager, formula)]
    else:
        terms = [_all("and", [{"var": v} if value else {"not": {"var": v}}
                              for v, value in sorted(cube)])
                 for cube in sorted(isop(manager, formula), key=lambda c: (len(c), sorted(c)))]
    return _all("or", terms)


def to_text(rendered: Any) -> str:
    """A rendered formula (:func:`to_json`) as one line: ``∧``, ``∨``, ``¬``.

    >>> to_text({"or": [{"var": "c"}, {"and": [{"var": "a"}, {"not": {"var": "b"}}]}]})
    'c ∨ (a ∧ ¬b)'
    >>> to_text(True)
    'true'
    """
    if rendered is True or rendered is False:
        return "true" if rendered else "false"
    if "var" in rendered:
        return str(rendered["var"])
    if "not" in rendered:
        return "¬" + to_text(rendered["not"])
    kind = "and" if "and" in rendered else "or"
    sign = " ∧ " if kind == "and" else " ∨ "
    parts = []
    for item in rendered[kind]:
        text = to_text(item)
        parts.append(f"({text})" if isinstance(item, dict) and ("and" in item or "or" in item)
                     else text)
    return sign.join(parts)
