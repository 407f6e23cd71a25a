"""The provenance-aware transformations (PATs, seed 001 §3.3) over the algebra, one rule per
module, run as a tuple of passes (as sqlglot's optimizer runs its rules): each pass takes a
:class:`~aspen.sqlprov.algebra.Query` and a :class:`~aspen.sqlprov.pats.common.Context` and
returns an equivalent query — the same answer and the same formula per row — on which the
instrumented SQL is cheaper.

:data:`RULES` are applied whenever their precondition holds (the seed's heuristic PATs);
:data:`CHOICE_RULES` register a choice point per place they apply (PAT 3: remove a DISTINCT
under set semantics, or keep it), decided by cost (:mod:`aspen.sqlprov.choose`).

>>> from aspen.sqlprov.parse import parse_sql
>>> context = Context()
>>> q = rewrite(parse_sql("SELECT DISTINCT src, dst FROM link WHERE dst = 'c'"), RULES, context)
>>> context.fired
['remove_distinct_by_key']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aspen.sqlprov.algebra import Query
from aspen.sqlprov.pats.common import Choose, Context, first_option
from aspen.sqlprov.pats.prune_columns import prune_columns
from aspen.sqlprov.pats.push_equalities import push_equalities
from aspen.sqlprov.pats.remove_distinct_by_key import remove_distinct_by_key
from aspen.sqlprov.pats.remove_distinct_by_set import remove_distinct_by_set

__all__ = ["CHOICE_RULES", "RULES", "Choose", "Context", "Rule", "first_option", "rewrite"]

#: A rewrite rule: an equivalent query, given the context.
Rule = Callable[[Query, Context], Query]

#: The rules applied whenever they apply, in order.
RULES: tuple[Rule, ...] = (remove_distinct_by_key, push_equalities, prune_columns)
#: The rules whose every application is a choice point.
CHOICE_RULES: tuple[Rule, ...] = (remove_distinct_by_set,)


def rewrite(query: Query, rules: Sequence[Rule], context: Context | None = None) -> Query:
    """``query`` after each rule of ``rules`` in turn."""
    context = Context() if context is None else context
    for rule in rules:
        query = rule(query, context)
    return query
