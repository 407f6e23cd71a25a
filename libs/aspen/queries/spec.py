"""What running a query needs beside its join graph: per relation its table, the columns it
reads and its filters; the outputs, the grouping and whether rows are distinct.

Filters are SQL over the relation's own columns (``cost > 2``); outputs and groupings are SQL
over the joined rows' flat names (``a__src``, :func:`aspen.queries.names.flat_name`). The spec
is stored with the query (JSON) and drives :mod:`aspen.queries.execute`.

>>> spec = ExecSpec(
...     relations=(RelationSpec("a", "link", ("cost", "src"), ("cost > 2",)),),
...     outputs=(OutputSpec("src", "a__src", False), OutputSpec("n", "COUNT(*)", True)),
...     group_by=("a__src",))
>>> spec.aggregated
True
>>> final_select(spec, "joined")
'SELECT a__src AS src, COUNT(*) AS n FROM joined GROUP BY a__src'
>>> ExecSpec.from_json(spec.to_json()) == spec
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aspen.errors import ConfigError
from aspen.optimizer.query import Query

__all__ = ["DIALECT", "ExecSpec", "OutputSpec", "ParsedQuery", "RelationSpec", "final_select"]

#: The SQL dialect queries are written in and run in (Spark SQL).
DIALECT = "spark"


@dataclass(frozen=True)
class RelationSpec:
    """One relation of the query: its alias, its table, the columns the query reads of it (the
    join, output and grouping columns; sorted) and its filters (SQL on its own columns)."""

    alias: str
    table: str
    columns: tuple[str, ...]
    filters: tuple[str, ...] = ()


@dataclass(frozen=True)
class OutputSpec:
    """One output column: its name, its SQL over flat names, whether it aggregates."""

    name: str
    sql: str
    aggregate: bool


@dataclass(frozen=True)
class ExecSpec:
    """The relations (in FROM order), outputs (in SELECT order), grouping and DISTINCT."""

    relations: tuple[RelationSpec, ...]
    outputs: tuple[OutputSpec, ...]
    group_by: tuple[str, ...] = ()
    distinct: bool = False

    @property
    def aggregated(self) -> bool:
        """Whether the query groups (GROUP BY, or an aggregate over all rows)."""
        return bool(self.group_by) or any(o.aggregate for o in self.outputs)

    def relation(self, alias: str) -> RelationSpec:
        """The relation of ``alias``."""
        for rel in self.relations:
            if rel.alias == alias:
                return rel
        raise ConfigError(f"the query has no relation {alias!r}")

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON data."""
        return {
            "relations": [{"alias": r.alias, "table": r.table, "columns": list(r.columns),
                           "filters": list(r.filters)} for r in self.relations],
            "outputs": [{"name": o.name, "sql": o.sql, "aggregate": o.aggregate}
                        for o in self.outputs],
            "group_by": list(self.group_by),
            "distinct": self.distinct,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> ExecSpec:
        """Read :meth:`to_json`'s form."""
        try:
            return ExecSpec(
                tuple(RelationSpec(str(r["alias"]), str(r["table"]), tuple(r["columns"]),
                                   tuple(r.get("filters", ()))) for r in data["relations"]),
                tuple(OutputSpec(str(o["name"]), str(o["sql"]), bool(o["aggregate"]))
                      for o in data["outputs"]),
                tuple(data.get("group_by", ())), bool(data.get("distinct", False)))
        except (KeyError, TypeError) as err:
            raise ConfigError(f"malformed query spec ({err!r})") from None


@dataclass(frozen=True)
class ParsedQuery:
    """A parsed query: its SQL, its join graph for the optimizer and its execution spec."""

    name: str
    sql: str
    query: Query
    spec: ExecSpec

    @property
    def tables(self) -> tuple[str, ...]:
        """The distinct tables the query reads, sorted."""
        return tuple(sorted(set(self.query.relations.values())))


def final_select(spec: ExecSpec, source: str) -> str:
    """The SELECT that turns the joined rows (the table or view ``source``) into the result."""
    import sqlglot
    from sqlglot import exp

    items = [exp.alias_(sqlglot.parse_one(o.sql, read=DIALECT), o.name) for o in spec.outputs]
    select = exp.select(*items).from_(source)
    if spec.group_by:
        select = select.group_by(*(sqlglot.parse_one(g, read=DIALECT) for g in spec.group_by))
    if spec.distinct:
        select = select.distinct()
    return select.sql(dialect=DIALECT)
