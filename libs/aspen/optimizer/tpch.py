"""The benchmark queries as join graphs, and TPC-H statistics derived from the specification.

Queries (:data:`QUERIES`; aggregates, projections and ORDER BY dropped — the optimizer plans
joins):

- ``Q3``, ``Q5``, ``Q10``: TPC-H Q3 (3 relations), Q5 (6, with the cycle customer–orders–
  lineitem–supplier through ``c_nationkey = s_nationkey``) and Q10 (4), with their filters. Q3
  and Q10 use the specification's validation parameters; Q5 those of Liu 2016, Table 2
  (``'AMERICA'``, 1993).
- ``Q3S``: Q3 without aggregates, the running example of Liu 2016, §4.1 (``'MACHINERY'``).
- ``Q5S``: Q5's join graph without aggregates (Liu 2016, Table 2).
- ``Q8Join``: the 8-way join of Liu 2016, Table 2 — orders, lineitem, customer, part, partsupp,
  supplier, nation, region, no filters.
- ``Q8``: TPC-H Q8's own 8-way join — part, supplier, lineitem, orders, customer, nation twice
  (``n1`` of the customer, ``n2`` of the supplier), region — with its filters.

:func:`tpch_stats` gives statistics for all of them at a scale factor: row counts of the
specification (lineitem 6,001,215 · SF, orders 1.5M · SF, …; nation and region fixed), distinct
values of the join columns (``o_custkey``: the two thirds of the customers that have orders),
row widths summed from the column types (identifier and integer 4 bytes, decimal 8, date 4,
text its declared length — variable text at its maximum) and filter selectivities from the
value distributions (:data:`FILTER_SELECTIVITY`).

>>> q = QUERIES["Q3S"]
>>> q.aliases
('c', 'l', 'o')
>>> s = tpch_stats()
>>> s.rows("lineitem"), s.width("orders"), s.ndv("orders", "o_custkey")
(6001215.0, 134.0, 100000.0)
>>> s.selectivity("c: c_mktsegment = 'MACHINERY'")
0.2
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from aspen.errors import ConfigError
from aspen.optimizer.query import Query
from aspen.optimizer.stats import StatKey, Stats

__all__ = [
    "FILTER_SELECTIVITY",
    "QUERIES",
    "SCHEMA",
    "collision_probability",
    "expected_distinct",
    "row_width",
    "tpch_stats",
]

#: Every table's columns and their types (TPC-H specification, §1.4).
SCHEMA: dict[str, tuple[tuple[str, str], ...]] = {
    "part": (("p_partkey", "identifier"), ("p_name", "varchar(55)"), ("p_mfgr", "char(25)"),
             ("p_brand", "char(10)"), ("p_type", "varchar(25)"), ("p_size", "integer"),
             ("p_container", "char(10)"), ("p_retailprice", "decimal"),
             ("p_comment", "varchar(23)")),
    "supplier": (("s_suppkey", "identifier"), ("s_name", "char(25)"),
                 ("s_address", "varchar(40)"), ("s_nationkey", "identifier"),
                 ("s_phone", "char(15)"), ("s_acctbal", "decimal"),
                 ("s_comment", "varchar(101)")),
    "partsupp": (("ps_partkey", "identifier"), ("ps_suppkey", "identifier"),
                 ("ps_availqty", "integer"), ("ps_supplycost", "decimal"),
                 ("ps_comment", "varchar(199)")),
    "customer": (("c_custkey", "identifier"), ("c_name", "varchar(25)"),
                 ("c_address", "varchar(40)"), ("c_nationkey", "identifier"),
                 ("c_phone", "char(15)"), ("c_acctbal", "decimal"), ("c_mktsegment", "char(10)"),
                 ("c_comment", "varchar(117)")),
    "orders": (("o_orderkey", "identifier"), ("o_custkey", "identifier"),
               ("o_orderstatus", "char(1)"), ("o_totalprice", "decimal"),
               ("o_orderdate", "date"), ("o_orderpriority", "char(15)"), ("o_clerk", "char(15)"),
               ("o_shippriority", "integer"), ("o_comment", "varchar(79)")),
    "lineitem": (("l_orderkey", "identifier"), ("l_partkey", "identifier"),
                 ("l_suppkey", "identifier"), ("l_linenumber", "integer"),
                 ("l_quantity", "decimal"), ("l_extendedprice", "decimal"),
                 ("l_discount", "decimal"), ("l_tax", "decimal"), ("l_returnflag", "char(1)"),
                 ("l_linestatus", "char(1)"), ("l_shipdate", "date"), ("l_commitdate", "date"),
                 ("l_receiptdate", "date"), ("l_shipinstruct", "char(25)"),
                 ("l_shipmode", "char(10)"), ("l_comment", "varchar(44)")),
    "nation": (("n_nationkey", "identifier"), ("n_name", "char(25)"),
               ("n_regionkey", "identifier"), ("n_comment", "varchar(152)")),
    "region": (("r_regionkey", "identifier"), ("r_name", "char(25)"),
               ("r_comment", "varchar(152)")),
}

#: Rows per table at scale factor 1 (nation and region do not scale).
_ROWS = {"lineitem": 6_001_215, "orders": 1_500_000, "customer": 150_000, "part": 200_000,
         "supplier": 10_000, "partsupp": 800_000, "nation": 25, "region": 5}
_FIXED = {"nation", "region"}

#: Distinct values of the join columns at SF 1, and the table whose key each foreign key names
#: (None: a primary key). Only customers whose key is not a multiple of 3 have orders.
_KEYS: dict[tuple[str, str], tuple[float, str | None]] = {
    ("customer", "c_custkey"): (150_000, None), ("orders", "o_orderkey"): (1_500_000, None),
    ("part", "p_partkey"): (200_000, None), ("supplier", "s_suppkey"): (10_000, None),
    ("nation", "n_nationkey"): (25, None), ("region", "r_regionkey"): (5, None),
    ("orders", "o_custkey"): (100_000, "customer"), ("lineitem", "l_orderkey"): (1_500_000, None),
    ("lineitem", "l_partkey"): (200_000, "part"), ("lineitem", "l_suppkey"): (10_000, "supplier"),
    ("partsupp", "ps_partkey"): (200_000, None), ("partsupp", "ps_suppkey"): (10_000, None),
    ("customer", "c_nationkey"): (25, "nation"), ("supplier", "s_nationkey"): (25, "nation"),
    ("nation", "n_regionkey"): (5, None),
}
# lineitem.l_orderkey (1–7 lines per order) and partsupp's keys (4 suppliers per part) follow
# the generator's fixed structure, and nation.n_regionkey is a fixed table: none is skewed.

# The date domain of the data (TPC-H §4.2.3): order dates are uniform over [START, END − 151].
_START, _CURRENT, _END = date(1992, 1, 1), date(1995, 6, 17), date(1998, 12, 31)
_LAST_ORDER = _END - timedelta(days=151)
_ORDER_DAYS = (_LAST_ORDER - _START).days + 1


def _width(kind: str) -> int:
    if kind in ("identifier", "integer", "date"):
        return 4
    if kind == "decimal":
        return 8
    match = re.fullmatch(r"(?:var)?char\((\d+)\)", kind)
    if match is None:
        raise ConfigError(f"unknown column type {kind!r}")
    return int(match.group(1))


def row_width(table: str) -> float:
    """Bytes per row of a TPC-H table, summed from its column types.

    >>> row_width("region")
    181.0
    """
    return float(sum(_width(kind) for _, kind in SCHEMA[table]))


def _ordered_by(day: date) -> float:
    """The fraction of orders dated on or before ``day``."""
    return min(max((day - _START).days + 1, 0), _ORDER_DAYS) / _ORDER_DAYS


def _ordered_in(first: date, last: date) -> float:
    """The fraction of orders dated in ``[first, last]``."""
    return max(_ordered_by(last) - _ordered_by(first - timedelta(days=1)), 0.0)


def _shipped_after(day: date) -> float:
    """The fraction of lineitems shipped after ``day``: ship date = order date + 1..121 days."""
    return sum(1 - _ordered_by(day - timedelta(days=k)) for k in range(1, 122)) / 121


def _received_by(day: date) -> float:
    """The fraction of lineitems received on or before ``day`` (ship date + 1..30 days)."""
    return sum(_ordered_by(day - timedelta(days=k + r))
               for k in range(1, 122) for r in range(1, 31)) / (121 * 30)


#: Each filter's selectivity from the specification's value distributions: 5 market segments,
#: 5 regions, 150 part types, order dates uniform over 2406 days, ship dates 1–121 days after
#: the order, return flag 'R' for half the lineitems received by the current date 1995-06-17.
FILTER_SELECTIVITY: dict[str, float] = {
    "c_mktsegment = 'BUILDING'": 1 / 5,
    "c_mktsegment = 'MACHINERY'": 1 / 5,
    "r_name = 'AMERICA'": 1 / 5,
    "p_type = 'ECONOMY ANODIZED STEEL'": 1 / 150,
    "o_orderdate < '1995-03-15'": _ordered_by(date(1995, 3, 14)),
    "l_shipdate > '1995-03-15'": _shipped_after(date(1995, 3, 15)),
    "o_orderdate >= '1993-01-01' and o_orderdate < '1994-01-01'":
        _ordered_in(date(1993, 1, 1), date(1993, 12, 31)),
    "o_orderdate >= '1993-10-01' and o_orderdate < '1994-01-01'":
        _ordered_in(date(1993, 10, 1), date(1993, 12, 31)),
    "o_orderdate between '1995-01-01' and '1996-12-31'":
        _ordered_in(date(1995, 1, 1), date(1996, 12, 31)),
    "l_returnflag = 'R'": _received_by(_CURRENT) / 2,
}


def _query(name: str, relations: Mapping[str, str], joins: list[str],
           filters: Mapping[str, list[str]]) -> Query:
    return Query.from_json({
        "name": name, "relations": dict(relations), "joins": joins,
        "filters": [{"relation": a, "predicate": p} for a, ps in filters.items() for p in ps]})


_Q3_JOINS = ["c.c_custkey = o.o_custkey", "l.l_orderkey = o.o_orderkey"]
_Q3_RELATIONS = {"c": "customer", "o": "orders", "l": "lineitem"}
_Q3_DATES = {"o": ["o_orderdate < '1995-03-15'"], "l": ["l_shipdate > '1995-03-15'"]}
_Q5_RELATIONS = {"c": "customer", "o": "orders", "l": "lineitem", "s": "supplier",
                 "n": "nation", "r": "region"}
_Q5_JOINS = ["c.c_custkey = o.o_custkey", "l.l_orderkey = o.o_orderkey",
             "l.l_suppkey = s.s_suppkey", "c.c_nationkey = s.s_nationkey",
             "s.s_nationkey = n.n_nationkey", "n.n_regionkey = r.r_regionkey"]
_Q5_FILTERS = {"r": ["r_name = 'AMERICA'"],
               "o": ["o_orderdate >= '1993-01-01' and o_orderdate < '1994-01-01'"]}

#: The benchmark queries by name.
QUERIES: dict[str, Query] = {
    "Q3": _query("Q3", _Q3_RELATIONS, _Q3_JOINS,
                 {"c": ["c_mktsegment = 'BUILDING'"], **_Q3_DATES}),
    "Q3S": _query("Q3S", _Q3_RELATIONS, _Q3_JOINS,
                  {"c": ["c_mktsegment = 'MACHINERY'"], **_Q3_DATES}),
    "Q5": _query("Q5", _Q5_RELATIONS, _Q5_JOINS, _Q5_FILTERS),
    "Q5S": _query("Q5S", _Q5_RELATIONS, _Q5_JOINS, _Q5_FILTERS),
    "Q10": _query("Q10", {"c": "customer", "o": "orders", "l": "lineitem", "n": "nation"},
                  ["c.c_custkey = o.o_custkey", "l.l_orderkey = o.o_orderkey",
                   "c.c_nationkey = n.n_nationkey"],
                  {"o": ["o_orderdate >= '1993-10-01' and o_orderdate < '1994-01-01'"],
                   "l": ["l_returnflag = 'R'"]}),
    "Q8Join": _query("Q8Join", {"o": "orders", "l": "lineitem", "c": "customer", "p": "part",
                                "ps": "partsupp", "s": "supplier", "n": "nation",
                                "r": "region"},
                     ["o.o_orderkey = l.l_orderkey", "c.c_custkey = o.o_custkey",
                      "p.p_partkey = l.l_partkey", "ps.ps_partkey = p.p_partkey",
                      "s.s_suppkey = ps.ps_suppkey", "r.r_regionkey = n.n_regionkey",
                      "s.s_nationkey = n.n_nationkey"], {}),
    "Q8": _query("Q8", {"p": "part", "s": "supplier", "l": "lineitem", "o": "orders",
                        "c": "customer", "n1": "nation", "n2": "nation", "r": "region"},
                 ["p.p_partkey = l.l_partkey", "s.s_suppkey = l.l_suppkey",
                  "l.l_orderkey = o.o_orderkey", "o.o_custkey = c.c_custkey",
                  "c.c_nationkey = n1.n_nationkey", "n1.n_regionkey = r.r_regionkey",
                  "s.s_nationkey = n2.n_nationkey"],
                 {"r": ["r_name = 'AMERICA'"],
                  "o": ["o_orderdate between '1995-01-01' and '1996-12-31'"],
                  "p": ["p_type = 'ECONOMY ANODIZED STEEL'"]}),
}


def _zipf(values: int, skew: float) -> Any:  # numpy array: the probabilities by rank
    import numpy as np

    weights = np.arange(1, values + 1, dtype=float) ** -skew
    return weights / weights.sum()


def expected_distinct(values: int, draws: float, skew: float) -> float:
    """Distinct values expected among ``draws`` Zipf(``skew``) draws over ``values`` values:
    ``Σ_v 1 − (1 − p_v)^draws``.

    >>> round(expected_distinct(25, 150_000, 0.5), 6)
    25.0
    >>> expected_distinct(100, 100, 0.0) < 100
    True
    """
    import numpy as np

    return float(np.sum(-np.expm1(draws * np.log1p(-_zipf(values, skew)))))


def collision_probability(values: int, skew: float) -> float:
    """``Σ_v p_v²``: the chance two independent Zipf(``skew``) draws are equal — the
    selectivity of an equality join of two such columns (``1/values`` without skew).

    >>> round(collision_probability(25, 0.0) * 25, 9)
    1.0
    >>> round(1 / collision_probability(25, 0.5), 1)
    19.6
    """
    return float((_zipf(values, skew) ** 2).sum())


def tpch_stats(scale_factor: float = 1.0, skew: float | None = None) -> Stats:
    """Statistics of TPC-H at ``scale_factor`` for every query of :data:`QUERIES`.

    ``skew`` (e.g. 0.5, Liu 2016, §4.4) draws the foreign keys ``o_custkey``, ``l_partkey``,
    ``l_suppkey``, ``c_nationkey`` and ``s_nationkey`` from a Zipf distribution over their
    key's values (the most frequent value ranked first in every column). Two statistics move:

    - the ndv of each skewed column becomes the distinct values expected among its rows
      (:func:`expected_distinct`; a small drop: popular values repeat, rare ones go missing);
    - an equality join of two skewed columns over the same key keeps ``Σ p_v²`` of the pairs
      (:func:`collision_probability`) instead of ``1/N``: a lower *effective* ndv ``1/Σ p_v²``
      and so a higher selectivity (Q5's ``c_nationkey = s_nationkey``: 19.6 nations instead of
      25 at skew 0.5).

    A key–foreign-key join keeps ``1/N``: each foreign-key row still matches exactly one key,
    whatever the skew (and ``1/max(ndv)`` of the cost model still reads the key's N).

    >>> round(tpch_stats(skew=0.5).selectivity("c.c_nationkey=s.s_nationkey"), 4)
    0.0511
    >>> tpch_stats(2).rows("orders"), tpch_stats(2).rows("nation")
    (3000000.0, 25.0)
    """
    if not scale_factor > 0:
        raise ConfigError(f"scale factor {scale_factor!r}: must be positive")
    if skew is not None and not 0 <= skew <= 4:
        raise ConfigError(f"skew {skew!r}: expected a Zipf exponent in [0, 4]")

    def scaled(table: str, count: float) -> float:
        return float(count) if table in _FIXED else float(count) * scale_factor

    values: dict[StatKey, float] = {}
    for table in SCHEMA:
        values[("rows", table)] = scaled(table, _ROWS[table])
        values[("width", table)] = row_width(table)
    domains: dict[tuple[str, str], int] = {}
    for (table, column), (ndv, references) in _KEYS.items():
        count = scaled(table, ndv)
        if skew and references is not None:
            domains[(table, column)] = round(count)
            count = expected_distinct(round(count), values[("rows", table)], skew)
        values[("ndv", f"{table}.{column}")] = count
    for query in QUERIES.values():
        for flt in query.filters:
            values[("selectivity", flt.id)] = FILTER_SELECTIVITY[flt.predicate]
        for pred in query.joins:
            sides = [(query.relations[c.split(".")[0]], c.split(".", 1)[1])
                     for c in (pred.left, pred.right)]
            if skew and all(s in domains for s in sides) and len(
                    {_KEYS[s][1] for s in sides}) == 1:
                values[("selectivity", pred.id)] = collision_probability(domains[sides[0]], skew)
    return Stats(values)
