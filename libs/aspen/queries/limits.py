"""What a registered query may be: bounded in size and shape, and built only of allowed
functions and operators — checked at registration and again before every run.

A continuous query runs in Spark on the maintainer's machine after every batch, so its SQL is
held to an ALLOWLIST: the node kinds of one SELECT block (columns, literals, arithmetic,
comparison, boolean logic, IN, BETWEEN, LIKE, IS, CASE, ``||``), casts to plain types, common
string, math and date functions (:data:`ALLOWED_FUNCTIONS`) and the supported aggregates. Any
other function — ``java_method``, ``reflect``, ``try_reflect``, a UDF or any name sqlglot does
not know (an ``Anonymous`` call) — is refused with one line naming it.

Size and shape are bounded before anything recursive looks at the text: at most
:data:`MAX_SQL_BYTES` of SQL, brackets nested at most :data:`MAX_NESTING` deep (counted on the
text, outside strings and comments, *before* sqlglot parses) and at most
:data:`MAX_PREFIX_RUN` prefix operators in a row (on the token stream), then at most
:data:`MAX_EXPRESSION_NODES` parsed nodes, :data:`MAX_EXPRESSION_DEPTH` levels (counted without
recursion) and :data:`MAX_RELATIONS` relations.

>>> check_text("SELECT a.src FROM link a WHERE ((a.cost > 1))")
>>> check_text("SELECT " + "(" * 50 + "1" + ")" * 50 + " AS x FROM link")
Traceback (most recent call last):
...
aspen.errors.ConfigError: brackets nest 50 deep (at most 16)
>>> import sqlglot
>>> check_tree(sqlglot.parse_one("SELECT upper(a.src) AS s FROM link a", read="spark"))
>>> check_tree(sqlglot.parse_one("SELECT java_method('java.lang.System', 'getenv', 'HOME') "
...                              "AS s FROM link a", read="spark"))
Traceback (most recent call last):
...
aspen.errors.ConfigError: function java_method is not allowed in a continuous query (allowed: \
arithmetic, comparisons, CASE, COALESCE, CAST to plain types, common string, math and date \
functions; docs/queries.md)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aspen.errors import ConfigError

try:  # how many relations (tables in FROM and JOIN) a query may join: the optimizer's bound
    from aspen.optimizer.limits import MAX_RELATIONS
except ImportError:  # pragma: no cover - an optimizer without one: searches are exponential
    MAX_RELATIONS = 7

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["AGGREGATES", "ALLOWED_CAST_TYPES", "ALLOWED_FUNCTIONS", "MAX_EXPRESSION_DEPTH",
           "MAX_EXPRESSION_NODES", "MAX_NESTING", "MAX_PREFIX_RUN", "MAX_RELATIONS",
           "MAX_SQL_BYTES", "bracket_depth", "check_allowed", "check_size", "check_text",
           "check_tree", "prefix_run"]

#: The largest SQL text a query may have, in UTF-8 bytes.
MAX_SQL_BYTES = 16 * 1024
#: How deep brackets may nest (counted on the text, before parsing).
MAX_NESTING = 16
#: How many prefix operators (NOT, unary minus or plus, ~) may follow one another.
MAX_PREFIX_RUN = 8
#: How many expression nodes the parsed query may have.
MAX_EXPRESSION_NODES = 2000
#: How deep the parsed expression tree may be (a chain of N ANDs is N deep).
MAX_EXPRESSION_DEPTH = 64

#: The aggregate functions a query may use.
AGGREGATES: tuple[str, ...] = ("COUNT", "SUM", "MIN", "MAX", "AVG")

#: The sqlglot function classes a query may call (besides :data:`AGGREGATES`), by class name:
#: conditionals, casts, math, strings and dates. Everything else is refused.
ALLOWED_FUNCTIONS: frozenset[str] = frozenset({
    # conditionals and casts
    "Case", "If", "Coalesce", "Nullif", "Cast", "TryCast",
    # math
    "Abs", "Round", "Floor", "Ceil", "Sqrt", "Ln", "Log", "Exp", "Pow", "Sign", "Greatest",
    "Least",
    # strings
    "Upper", "Lower", "Length", "Substring", "Trim", "Concat", "ConcatWs", "Replace",
    "StrPosition", "Left", "Right", "Initcap", "Pad",
    # dates and times
    "Year", "Quarter", "Month", "Week", "Day", "DayOfWeek", "DayOfMonth", "DayOfYear", "Hour",
    "Minute", "Second", "WeekOfYear", "DateAdd", "DateSub", "DateDiff", "TsOrDsAdd",
    "TsOrDsToDate", "TsOrDsToTimestamp", "UnixToStr", "StrToUnix", "StrToDate", "StrToTime",
    "TimestampTrunc", "DateTrunc", "LastDay",
    "CurrentDate", "CurrentTimestamp", "UnixToTime", "TimeToUnix", "MonthsBetween",
})

#: The other node kinds a query may contain: the SELECT block's parts, names and literals,
#: and the operators (arithmetic, comparison, boolean, IN, BETWEEN, LIKE, IS, ``||``).
_ALLOWED_NODES: frozenset[str] = frozenset({
    "Select", "From", "Join", "Table", "TableAlias", "Identifier", "Column", "Star", "Alias",
    "Where", "Group", "Distinct", "Literal", "Null", "Boolean", "Paren", "Tuple", "DataType",
    "DataTypeParam", "Var", "Interval", "IntervalSpan",
    "And", "Or", "Not", "Xor", "EQ", "NEQ", "GT", "GTE", "LT", "LTE", "NullSafeEQ",
    "NullSafeNEQ", "Is", "In", "Between", "Like", "ILike", "Add", "Sub", "Mul", "Div",
    "IntDiv", "Mod", "Neg", "BitwiseNot", "DPipe",
})

#: The types a CAST may name (sqlglot's type names).
ALLOWED_CAST_TYPES: frozenset[str] = frozenset({
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "TEXT",
    "VARCHAR", "CHAR", "DATE", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPLTZ", "TIMESTAMPNTZ",
})

_ALLOWED_SUMMARY = ("arithmetic, comparisons, CASE, COALESCE, CAST to plain types, common "
                    "string, math and date functions; docs/queries.md")
_OPEN, _CLOSE = "([{", ")]}"


def bracket_depth(sql: str) -> int:
    """How deep brackets nest in ``sql``, outside quoted strings, quoted names and comments —
    a scan of the text, no parser.

    >>> bracket_depth("SELECT f((1), ')(((') -- ((((\\n FROM t")
    2
    """
    depth = deepest = 0
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"`":  # a quoted string or name: skip to its end (backslash escapes)
            i += 1
            while i < n and sql[i] != c:
                i += 2 if sql[i] == "\\" and c != "`" else 1
        elif c == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end
        elif c == "/" and sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 1
        elif c in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        i += 1
    return deepest


def check_text(sql: str) -> None:
    """Refuse SQL text that is too long or nests brackets too deeply (before parsing it)."""
    size = len(sql.encode("utf-8", "replace"))
    if size > MAX_SQL_BYTES:
        raise ConfigError(f"the SQL has {size:,} bytes (at most {MAX_SQL_BYTES:,}; a continuous "
                          "query is one SELECT block)")
    depth = bracket_depth(sql)
    if depth > MAX_NESTING:
        raise ConfigError(f"brackets nest {depth} deep (at most {MAX_NESTING})")
    run = prefix_run(sql)
    if run > MAX_PREFIX_RUN:
        raise ConfigError(f"{run} prefix operators (NOT, -, +, ~) follow one another (at most "
                          f"{MAX_PREFIX_RUN})")


def prefix_run(sql: str) -> int:
    """The longest run of consecutive prefix-operator tokens (NOT, ``-``, ``+``, ``~``) in
    ``sql``: each nests one level in the parser. Tokenizing does not recurse; text that does
    not tokenize counts 0 (the parser then refuses it).

    >>> prefix_run("SELECT a FROM t WHERE NOT NOT a > - -1"), prefix_run("SELECT 'it''s")
    (2, 0)
    """
    import sqlglot
    from sqlglot.errors import SqlglotError
    from sqlglot.tokens import TokenType

    prefix = {TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE}
    try:
        tokens = sqlglot.Dialect.get_or_raise("spark").tokenize(sql)
    except SqlglotError:
        return 0
    run = longest = 0
    for token in tokens:
        run = run + 1 if token.token_type in prefix else 0
        longest = max(longest, run)
    return longest


def _function_name(node: exp.Func) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return str(node.name)
    return node.sql_name().lower()


def check_size(root: exp.Expression) -> None:
    """Refuse a parsed query with too many expression nodes or nested too deeply. Iterative:
    nothing here recurses on the tree (sqlglot's generator and copies do, so this comes
    first)."""
    count = 0
    stack: list[tuple[exp.Expression, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_EXPRESSION_NODES:
            raise ConfigError(f"the query has more than {MAX_EXPRESSION_NODES:,} expression "
                              "nodes: write it shorter")
        if depth > MAX_EXPRESSION_DEPTH:
            raise ConfigError(f"the query's expressions nest more than {MAX_EXPRESSION_DEPTH} "
                              "deep (a long chain of operators or conditions): write it shorter")
        stack.extend((child, depth + 1) for child in node.iter_expressions())


def check_allowed(root: exp.Expression) -> None:
    """Refuse a parsed query that uses a function or operator outside the allowlist, in one
    line naming it (call :func:`check_size` first)."""
    from sqlglot import exp

    for node in root.walk():
        _check_node(node, exp)


def check_tree(root: exp.Expression) -> None:
    """:func:`check_size`, then :func:`check_allowed`."""
    check_size(root)
    check_allowed(root)


def _check_node(node: exp.Expression, exp) -> None:  # noqa: ANN001 - the sqlglot module
    kind = type(node).__name__
    if kind in _ALLOWED_NODES:  # before Func: sqlglot makes some operators (AND, OR) functions
        return
    if isinstance(node, exp.AggFunc):
        if node.sql_name() not in AGGREGATES:
            raise ConfigError(f"aggregate {node.sql_name()} is not supported (supported: "
                              f"{', '.join(AGGREGATES)})")
        return
    if isinstance(node, exp.Func):
        if kind not in ALLOWED_FUNCTIONS:
            raise ConfigError(f"function {_function_name(node)} is not allowed in a continuous "
                              f"query (allowed: {_ALLOWED_SUMMARY})")
        if isinstance(node, exp.Cast):
            to = node.args.get("to")
            name = to.this.name if isinstance(to, exp.DataType) else str(to)
            if name not in ALLOWED_CAST_TYPES or (isinstance(to, exp.DataType)
                                                  and to.args.get("nested")):
                shown = to.sql(dialect="spark") if isinstance(to, exp.Expression) else name
                raise ConfigError(f"CAST to {shown} is not allowed (plain types only: numbers, "
                                  "strings, booleans, dates, timestamps)")
        return
    shown = " ".join(node.sql(dialect="spark").split())
    shown = shown if len(shown) <= 60 else shown[:59] + "…"
    raise ConfigError(f"{shown!r} ({kind}) is not allowed in a continuous query (allowed: "
                          f"{_ALLOWED_SUMMARY})")
