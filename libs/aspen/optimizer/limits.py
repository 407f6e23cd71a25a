"""How large a query the optimizer plans, and the one-line refusal beyond it.

Search spaces grow exponentially with the relations of a query: a clique of ``n`` relations has
``3^n + 1 − 2^(n+1)`` ordered join pairs, a star ``(n − 1) · 2^(n−1)`` (Liu 2016, §5.3), and
enumerating the splits of a set of ``k`` relations looks at ``2^k`` subsets. Two limits keep
every accepted query within about ten seconds on this machine, whatever the method (they all
enumerate the same space; docs/optimizer.md has the measurements):

- :data:`MAX_RELATIONS` relations (a star of 10 plans in ≈ 10 s, of 11 in ≈ 20 s);
- :data:`MAX_JOIN_PAIRS` ordered pairs of connected, joined sub-queries — what makes densely
  joined queries dear (a clique of 7 has 1,932, of 8 has 6,050).

:func:`check_size` refuses a query beyond either with one :class:`ConfigError` line;
:func:`aspen.optimizer.methods.make_optimizer` calls it, so every caller is covered.

>>> from aspen.optimizer.query import Query
>>> def clique(n):
...     return Query.from_json({"relations": {f"r{i}": "t" for i in range(n)},
...         "joins": [f"r{i}.k{i}_{j} = r{j}.k{i}_{j}" for i in range(n) for j in range(i)]})
>>> join_pairs(clique(7))
1932
>>> check_size(clique(8))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
aspen.errors.ConfigError: query 'query': ... more than 5000 ordered join pairs, ...
"""

from __future__ import annotations

from aspen.errors import ConfigError
from aspen.optimizer.query import Query

__all__ = ["MAX_JOIN_PAIRS", "MAX_RELATIONS", "check_size", "join_pairs"]

#: The most relations a query may join (any method: they share the search space).
MAX_RELATIONS = 10
#: The most ordered pairs (left, right) of connected, joined, disjoint sub-queries.
MAX_JOIN_PAIRS = 5000


def join_pairs(query: Query, stop: int | None = None) -> int:
    """The ordered pairs ``(L, R)`` of disjoint connected relation sets with a join between
    them — one per join alternative of one join method without properties; counting stops
    once past ``stop`` (the count returned is then some number above it).

    >>> q = Query.from_json({"relations": {"a": "t", "b": "u", "c": "v"},
    ...                      "joins": ["a.k = b.k", "b.k = c.k"]})
    >>> join_pairs(q)  # (a|b), (b|c), (a|bc), (ab|c), each both ways
    8
    """
    aliases = query.aliases
    bit = {a: 1 << i for i, a in enumerate(aliases)}
    neighbours = [0] * len(aliases)
    for pred in query.joins:
        left, right = sorted(pred.aliases)
        neighbours[aliases.index(left)] |= bit[right]
        neighbours[aliases.index(right)] |= bit[left]
    # connected sets level by level (each from one a level below plus a neighbour)
    connected: set[int] = set(bit.values())
    level, pairs = set(connected), 0
    while level:
        grown: set[int] = set()
        for mask in level:
            reach = 0
            for i in range(len(aliases)):
                if mask >> i & 1:
                    reach |= neighbours[i]
            reach &= ~mask
            while reach:
                low = reach & -reach
                reach ^= low
                grown.add(mask | low)
        grown -= connected
        for mask in grown:
            sub = (mask - 1) & mask
            while sub:  # the proper non-empty subsets: both halves connected
                if sub in connected and (mask ^ sub) in connected:
                    pairs += 1
                sub = (sub - 1) & mask
            connected.add(mask)
            if stop is not None and pairs > stop:
                return pairs
        level = grown
    return pairs


def check_size(query: Query) -> None:
    """Refuse (one-line :class:`ConfigError`) a query beyond :data:`MAX_RELATIONS` or
    :data:`MAX_JOIN_PAIRS`; the limits hold for every method.

    >>> check_size(Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]}))
    """
    n = len(query.relations)
    if n > MAX_RELATIONS:
        raise ConfigError(f"query {query.name!r}: {n} relations; the optimizer plans at most "
                          f"{MAX_RELATIONS} (with any method): split the query")
    pairs = join_pairs(query, stop=MAX_JOIN_PAIRS)
    if pairs > MAX_JOIN_PAIRS:
        raise ConfigError(f"query {query.name!r}: its {n} relations are too densely joined — "
                          f"more than {MAX_JOIN_PAIRS} ordered join pairs, which every method "
                          "would search (a clique plans up to 7 relations): drop joins or split "
                          "the query")
