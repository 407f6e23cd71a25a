"""Statistics as explicit relations, and the changes that re-optimization maintains them under.

The optimizer's inputs beside the query are plain data (S.json; docs/optimizer.md):

- ``tables``: per table its ``rows``, its row ``width`` in bytes, and per column its ``ndv``
  (distinct values);
- ``selectivity``: per join predicate (``"c.c_custkey=o.o_custkey"``) or filter
  (``"c: c_mktsegment = 'MACHINERY'"``) the fraction of rows it keeps — observed or estimated;
  a join without one gets ``1 / max(ndv)`` of its two columns, a filter without one
  :data:`DEFAULT_FILTER_SELECTIVITY`;
- ``params``: the cost model's parameters (:data:`aspen.optimizer.cost.DEFAULT_PARAMS`).

A change (one line of C.jsonl) sets some of these values: ``{"rows": {"orders": 3e6}}``,
``{"selectivity": {"c.c_custkey=o.o_custkey": 1e-5}}``, ``{"ndv": {"orders.o_custkey": 9e4}}``,
``{"width": {...}}``, ``{"params": {...}}`` — several keys at once are one batch of changes.
Every value has a :data:`StatKey`, so a change names exactly the statistics it moved.

>>> s = Stats.from_json({"tables": {"orders": {"rows": 1500000, "width": 100,
...                                            "columns": {"o_custkey": {"ndv": 100000}}}}})
>>> s2, moved = s.changed({"rows": {"orders": 3000000}})
>>> s2.rows("orders"), sorted(moved)
(3000000.0, [('rows', 'orders')])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aspen.errors import ConfigError

__all__ = ["DEFAULT_FILTER_SELECTIVITY", "DEFAULT_WIDTH", "MAX_STATISTIC", "StatKey", "Stats",
           "statistic"]

#: A statistic's name: ``(kind, name)`` — kind one of rows, width, ndv, selectivity, params.
StatKey = tuple[str, str]
#: The fraction a filter keeps when the statistics give no selectivity for it.
DEFAULT_FILTER_SELECTIVITY = 0.1
#: Bytes per row of a table without a ``width``.
DEFAULT_WIDTH = 100.0
_KINDS = ("rows", "width", "ndv", "selectivity", "params")


#: The largest statistic (rows, ndv, width, a cost parameter): with at most
#: :data:`aspen.optimizer.limits.MAX_RELATIONS` relations every cost stays finite
#: (docs/decisions/0043-optimizer-input-bounds.md).
MAX_STATISTIC = 1e18


def _kind_name(kind: str, name: str) -> str:
    return f"selectivity {name!r}" if kind == "selectivity" else f"statistic {kind} {name!r}"


def statistic(kind: str, name: str, value: Any) -> float:
    """A statistic's value checked (ConfigError): a JSON number, not a boolean or string, finite,
    in [0, MAX_STATISTIC] — a selectivity in [0, 1].

    >>> statistic("rows", "orders", 1500000)
    1500000.0
    >>> statistic("rows", "orders", "15")
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: statistic rows 'orders': '15' is a string, not a number
    >>> statistic("selectivity", "a.k=b.k", 1.5)
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: selectivity 'a.k=b.k': 1.5 must be at most 1
    """
    what = _kind_name(kind, name)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy's too
        article = {"str": "a string", "bool": "a boolean", "NoneType": "null",
                   "list": "a list", "dict": "an object"}.get(type(value).__name__,
                                                             type(value).__name__)
        raise ConfigError(f"{what}: {shown} is {article}, not a number")
    if not isinstance(value, numbers.Integral) and not math.isfinite(value):
        raise ConfigError(f"{what}: {shown} must be a finite number")
    if value < 0:
        raise ConfigError(f"{what}: {shown} must be ≥ 0")
    top = 1 if kind == "selectivity" else MAX_STATISTIC
    if value > top:
        raise ConfigError(f"{what}: {shown} must be at most {top:g}")
    return float(value)


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"statistics: {what} must be an object, not {type(value).__name__}")
    return value


@dataclass(frozen=True)
class Stats:
    """The statistics one optimization reads. ``values`` maps every :data:`StatKey` to a number;
    use the accessors, which apply the documented defaults."""

    values: Mapping[StatKey, float] = field(default_factory=dict)
    #: Derived numbers (cardinalities) memoized for these values; a change makes a new Stats.
    memo: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Stats:
        """Read S.json (``tables``, ``selectivity``, ``params``; other keys are ignored), every
        value checked by :func:`statistic` (ConfigError, one line).

        >>> Stats.from_json({"tables": ["orders"]})
        Traceback (most recent call last):
        ...
        aspen.errors.ConfigError: statistics: tables must be an object, not list
        """
        values: dict[StatKey, float] = {}
        data = _mapping(data, "S.json")
        for table, info in _mapping(data.get("tables", {}), "tables").items():
            info = _mapping(info, f"table {table!r}")
            for kind in ("rows", "width"):
                if kind in info:
                    values[(kind, table)] = statistic(kind, table, info[kind])
            columns = _mapping(info.get("columns", {}), f"the columns of {table!r}")
            for column, cinfo in columns.items():
                cinfo = _mapping(cinfo, f"column {table}.{column}")
                if "ndv" in cinfo:
                    name = f"{table}.{column}"
                    values[("ndv", name)] = statistic("ndv", name, cinfo["ndv"])
        for kind in ("selectivity", "params"):
            for name, value in _mapping(data.get(kind, {}), kind).items():
                values[(kind, str(name))] = statistic(kind, str(name), value)
        return Stats(values)

    def to_json(self) -> dict[str, Any]:
        """The S.json form."""
        out: dict[str, Any] = {"tables": {}, "selectivity": {}, "params": {}}
        for (kind, name), value in sorted(self.values.items()):
            if kind in ("rows", "width"):
                out["tables"].setdefault(name, {})[kind] = value
            elif kind == "ndv":
                table, column = name.split(".", 1)
                out["tables"].setdefault(table, {}).setdefault("columns", {})[column] = {
                    "ndv": value}
            else:
                out[kind][name] = value
        return out

    def changed(self, change: Mapping[str, Mapping[str, Any]]) -> tuple[Stats, set[StatKey]]:
        """Apply one change (a C.jsonl line): the new statistics and the keys whose value moved.

        >>> Stats().changed({"rows": {"t": 5}})[1]
        {('rows', 't')}
        >>> Stats().changed({"cardinality": {"t": 5}})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        aspen.errors.ConfigError: change: unknown statistic 'cardinality'; known: rows, ...
        """
        values = dict(self.values)
        moved: set[StatKey] = set()
        for kind, entries in change.items():
            if kind not in _KINDS:
                raise ConfigError(f"change: unknown statistic {kind!r}; known: {', '.join(_KINDS)}")
            if not isinstance(entries, Mapping):
                raise ConfigError(f"change: {kind} must map names to numbers")
            for name, value in entries.items():
                key = (kind, str(name))
                number = statistic(kind, str(name), value)
                if values.get(key) != number:
                    values[key] = number
                    moved.add(key)
        return Stats(values), moved

    def rows(self, table: str) -> float:
        """A table's row count (an unknown table: 1,000 rows)."""
        return self.values.get(("rows", table), 1000.0)

    def width(self, table: str) -> float:
        """Bytes per row of a table."""
        return self.values.get(("width", table), DEFAULT_WIDTH)

    def ndv(self, table: str, column: str) -> float:
        """Distinct values of a column; without a statistic, the table's rows (a key)."""
        return self.values.get(("ndv", f"{table}.{column}"), self.rows(table))

    def selectivity(self, name: str) -> float | None:
        """An explicit selectivity, or None."""
        return self.values.get(("selectivity", name))

    def param(self, name: str, default: float) -> float:
        """A cost-model parameter."""
        return self.values.get(("params", name), default)
