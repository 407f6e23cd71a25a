"""The reader side of the console's query box: one read-only SQL statement over the lake,
checked before it runs, answered in process (DuckDB, never Spark) with a formula per row, and a
row's minimal witnesses and critical base tuples (:mod:`aspen.sqlprov`).

Base tuples are named as :mod:`aspen.sqlprov.tables` names them: ``link:SRC:DST``,
``sensor:ID``, ``triggered:ID``, ``region_seed:REGION:ID``, ``reading:ID``;
:func:`tuple_parts` reads a name back.

>>> check("SELECT src, dst FROM link") is None
True
>>> check("DROP TABLE link")
"expected one read-only SELECT statement, got 'DROP TABLE link'"
>>> tuple_parts("link:a:b"), tuple_parts("sensor:s7"), tuple_parts("v12")
(('link', ('a', 'b')), ('sensor', ('s7',)), None)
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

import pandas as pd

from aspen.errors import AspenError, ConfigError
from aspen.lake.tables import BASE_KEY_COLUMNS
from aspen.settings import Settings
from aspen.sqlprov.answer import SqlAnswer
from aspen.sqlprov.render import to_text
from aspen.sqlprov.run import prepare, run_sql

__all__ = [
    "EXAMPLES",
    "AspenError",
    "ConfigError",
    "Example",
    "RowWhy",
    "SqlAnswer",
    "ask",
    "check",
    "read_tables",
    "row_frame",
    "row_why",
    "tuple_parts",
]

#: The engine the console runs queries on: in process, so the console never starts a JVM.
ENGINE = "duckdb"
#: Key columns per relation of a base tuple's name (``reading`` is a reading's id).
_ARITY = {**{relation: len(key) for relation, key in BASE_KEY_COLUMNS.items()}, "reading": 1}


class Example(NamedTuple):
    """A question offered as a button: its ``title`` in words and its ``sql``."""

    title: str
    sql: str


#: The example questions of the query box.
EXAMPLES: tuple[Example, ...] = (
    Example(
        "Links out of routers that reach 2 or more nodes",
        "SELECT l.src, l.dst, l.cost FROM link l\n"
        "WHERE l.src IN (SELECT r.src FROM reachable r GROUP BY r.src\n"
        "                HAVING COUNT(*) >= 2)\n"
        "ORDER BY l.src, l.dst",
    ),
    Example(
        "Regions with 2 or more triggered sensors",
        "SELECT a.region, COUNT(*) AS triggered FROM active_region a\n"
        "JOIN triggered t ON t.id = a.sensor\n"
        "GROUP BY a.region HAVING COUNT(*) >= 2\n"
        "ORDER BY a.region",
    ),
    Example(
        "Cheapest routes over 5 ms",
        "SELECT src, dst, cost FROM min_cost WHERE cost > 5\n"
        "ORDER BY cost DESC, src, dst",
    ),
)


def _line(err: Exception) -> str:
    """An error's message as one line (its first line)."""
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


def check(sql: str) -> str | None:
    """What is wrong with ``sql`` in one line, or ``None`` when it is one supported read-only
    statement (parsed and instrumented; nothing runs and nothing is read).

    >>> check("")
    'type one SELECT statement'
    """
    if not sql.strip():
        return "type one SELECT statement"
    try:
        prepare(sql)
    except AspenError as err:
        return _line(err)
    return None


def read_tables(sql: str) -> tuple[str, ...]:
    """The lake tables a checked statement reads (what its answer depends on).

    >>> read_tables("SELECT l.src FROM link l JOIN triggered t ON t.id = l.dst")
    ('link', 'triggered')
    """
    return tuple(prepare(sql)[1].tables)


def ask(settings: Settings, sql: str) -> SqlAnswer:
    """The answer to ``sql`` over the lake of ``settings``, each row with its formula (DuckDB
    in process). Raises :class:`AspenError` with one line a person can act on: a statement
    that is not supported, a table not there yet, a query DuckDB refuses.

    Example, on a lake::

        ask(settings, "SELECT src FROM link").rows
        # [('a',), ('b',)]
    """
    problem = check(sql)
    if problem is not None:
        raise ConfigError(problem)
    try:
        return run_sql(settings, sql, provenance=True, engine=ENGINE)
    except AspenError:
        raise
    except (OSError, ValueError, KeyError) as err:  # an unreadable table, say
        raise ConfigError(f"cannot answer the query: {_line(err)}") from None


def row_frame(answer: SqlAnswer) -> pd.DataFrame:
    """The answer's rows as a frame with a ``row`` column first (numbered from 1): paths as
    ``a → b → c``, other values as the query gave them.

    >>> from aspen.sqlprov.run import run_frames
    >>> links = pd.DataFrame({"src": ["a"], "dst": ["b"], "cost": [1.0]})
    >>> row_frame(run_frames({"link": links}, "SELECT src, dst FROM link")).to_dict("records")
    [{'row': 1, 'src': 'a', 'dst': 'b'}]
    """
    names = _unique(answer.columns)
    records = [[number, *(_cell(value) for value in values)]
               for number, values in enumerate(answer.rows, start=1)]
    return pd.DataFrame(records, columns=["row", *names])


def _unique(columns: tuple[str, ...]) -> list[str]:
    """Column names made distinct for a frame: a repeated name gets `` (2)``, `` (3)`` ….

    >>> _unique(("src", "src", "row"))
    ['src', 'src (2)', 'row (2)']
    """
    seen: dict[str, int] = {"row": 1}
    out = []
    for name in columns:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def _cell(value: object) -> object:
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()  # type: ignore[union-attr]
    if isinstance(value, list | tuple):
        return " → ".join(str(v) for v in value)
    return value


class RowWhy(NamedTuple):
    """Why one answer row holds: its ``formula`` in one line (``∧``, ``∨``, ``¬``), its minimal
    ``witnesses`` (sets of base tuple names, smallest first), its ``critical`` tuples (each
    deleted alone removes the row), whether the witnesses were cut at the limit, and whether
    the formula is the exact condition of the row (``notes`` say why not)."""

    formula: str
    witnesses: list[list[str]]
    critical: list[str]
    truncated: bool
    notes: tuple[str, ...]


def row_why(answer: SqlAnswer, index: int, limit: int = 20) -> RowWhy:
    """The provenance of row ``index`` (0-based) of ``answer``: at most ``limit`` witnesses.

    >>> from aspen.sqlprov.run import run_frames
    >>> links = pd.DataFrame({"src": ["a", "b"], "dst": ["b", "c"], "cost": [1.0, 1.0]})
    >>> out = run_frames({"link": links}, "SELECT x.src, y.dst FROM link x JOIN link y "
    ...                  "ON x.dst = y.src")
    >>> row_why(out, 0)
    RowWhy(formula='link:a:b ∧ link:b:c', witnesses=[['link:a:b', 'link:b:c']], \
critical=['link:a:b', 'link:b:c'], truncated=False, notes=())
    """
    found = answer.why(index, limit)
    return RowWhy(to_text(answer.provenance(index)), found.witnesses, found.critical,
                  found.truncated, answer.notes)


def tuple_parts(name: str, links: Collection[tuple[str, str]] = ()
                ) -> tuple[str, tuple[str, ...]] | None:
    """``(relation, key values)`` of a base tuple's name, ``None`` for anything else. A link
    whose ids hold ``:`` is split where ``links`` (known ``(src, dst)`` pairs) has it, else at
    its first ``:``.

    >>> tuple_parts("region_seed:r1:s7"), tuple_parts("reading:42")
    (('region_seed', ('r1', 's7')), ('reading', ('42',)))
    >>> tuple_parts("link:a:b:c"), tuple_parts("link:a:b:c", {("a:b", "c")})
    (('link', ('a', 'b:c')), ('link', ('a:b', 'c')))
    """
    relation, colon, rest = name.partition(":")
    arity = _ARITY.get(relation)
    if not colon or arity is None:
        return None
    if arity == 1:
        return relation, (rest,)
    cuts = [i for i, char in enumerate(rest) if char == ":"]
    if not cuts:
        return None
    known = [(rest[:i], rest[i + 1:]) for i in cuts if (rest[:i], rest[i + 1:]) in links]
    src, dst = known[0] if known else (rest[:cuts[0]], rest[cuts[0] + 1:])
    return relation, (src, dst)
