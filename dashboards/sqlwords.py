"""An SQL answer row's provenance in words: base tuples named as an operator reads them
(links ``a → b``, sensors by id), witnesses as rows of a table, the links a witness holds and
the route they make.

Names come parsed (:func:`sqlview.tuple_parts`: ``("link", ("a", "b"))``); this module only
words them and reads nothing.

>>> tuple_words(("link", ("a", "b"))), tuple_words(("triggered", ("s7",)))
('link a → b', 'sensor s7 triggered')
>>> tuple_words(None, "v12")
'v12'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import pandas as pd

__all__ = ["WITNESS_COLUMNS", "Parsed", "chain_of", "tuple_words", "witness_links",
           "witness_table"]

#: A parsed base tuple name: ``(relation, key values)``, ``None`` when it is no base tuple.
Parsed = tuple[str, tuple[str, ...]] | None
#: The columns of a witness table.
WITNESS_COLUMNS = ["witness", "links", "sensors and others", "size"]


def tuple_words(parsed: Parsed, name: str = "") -> str:
    """One base tuple in words (plain text): ``link a → b``, ``sensor s7``, ``sensor s7
    triggered``, ``seed s7 of region r1``, ``reading 42``; ``name`` itself when it is not a
    base tuple.

    >>> tuple_words(("region_seed", ("r1", "s7"))), tuple_words(("reading", ("42",)))
    ('seed s7 of region r1', 'reading 42')
    """
    if parsed is None:
        return name
    relation, values = parsed
    if relation == "link" and len(values) == 2:
        return f"link {values[0]} → {values[1]}"
    if relation == "sensor" and values:
        return f"sensor {values[0]}"
    if relation == "triggered" and values:
        return f"sensor {values[0]} triggered"
    if relation == "region_seed" and len(values) == 2:
        return f"seed {values[1]} of region {values[0]}"
    if relation == "reading" and values:
        return f"reading {values[0]}"
    return name or f"{relation}({', '.join(values)})"


def witness_links(witness: Iterable[Parsed]) -> list[tuple[str, str]]:
    """The links ``(src, dst)`` among a witness's parsed tuples, in the order given.

    >>> witness_links([("link", ("a", "b")), ("sensor", ("s1",)), None])
    [('a', 'b')]
    """
    return [(p[1][0], p[1][1]) for p in witness
            if p is not None and p[0] == "link" and len(p[1]) == 2]


def chain_of(links: Sequence[tuple[str, str]]) -> list[str] | None:
    """The nodes of the one route ``links`` form (each link used once, from the node no link
    enters), ``None`` when they form no single route (a fork, two pieces, a cycle).

    >>> chain_of([("b", "c"), ("a", "b")]), chain_of([("a", "b"), ("a", "c")])
    (['a', 'b', 'c'], None)
    >>> chain_of([("a", "b"), ("b", "a")]), chain_of([])
    (None, None)
    """
    if not links or len(set(links)) != len(links):
        return None
    out = dict(links)
    if len(out) != len(links) or len(set(out.values())) != len(links):
        return None  # a node with two links out, or two in
    starts = set(out) - set(out.values())
    if len(starts) != 1:
        return None
    route = [starts.pop()]
    while route[-1] in out:
        route.append(out[route[-1]])
    return route if len(route) == len(links) + 1 else None


def witness_table(witnesses: Sequence[Sequence[str]], parse: Callable[[str], Parsed]
                  ) -> pd.DataFrame:
    """One row per witness (numbered from 1): its links (as a route ``a → b → c`` when they
    make one, else ``a → b, c → d``), its other tuples in words, and its size.

    >>> parse = {"link:a:b": ("link", ("a", "b")), "link:b:c": ("link", ("b", "c")),
    ...          "sensor:s1": ("sensor", ("s1",))}.get
    >>> witness_table([["link:a:b", "link:b:c", "sensor:s1"]], parse).to_dict("records")
    [{'witness': 1, 'links': 'a → b → c', 'sensors and others': 'sensor s1', 'size': 3}]
    """
    rows = []
    for number, witness in enumerate(witnesses, start=1):
        parsed = [(name, parse(name)) for name in witness]
        links = witness_links(p for _, p in parsed)
        route = chain_of(links)
        others = [tuple_words(p, name) for name, p in parsed
                  if p is None or p[0] != "link"]
        rows.append({
            "witness": number,
            "links": " → ".join(route) if route else ", ".join(f"{a} → {b}" for a, b in links),
            "sensors and others": ", ".join(others),
            "size": len(witness),
        })
    return pd.DataFrame(rows, columns=WITNESS_COLUMNS)
