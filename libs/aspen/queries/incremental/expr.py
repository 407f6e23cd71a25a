"""SQL expressions of a query (filters, outputs, groupings, aggregate arguments) as Python
functions over one row, for the incremental path: the same values Spark SQL gives, NULL as
``None`` with SQL's three-valued logic.

Only a subset is evaluated here: columns, literals, arithmetic (``/`` is a double; a zero
divisor fails the query, as Spark's ANSI mode does), comparisons, AND/OR/NOT, IS [NOT] NULL,
IN (a list), BETWEEN, LIKE with a literal pattern, CASE, IF, COALESCE, CAST to numbers, strings
and booleans (a value that does not convert fails the query,
:class:`~aspen.errors.QueryRunError`; TRY_CAST gives NULL), ``||``, CONCAT, ABS, ROUND (half
up), UPPER, LOWER, LENGTH, GREATEST, LEAST. Anything else raises
:class:`NotIncrementalError` naming it, and the query is recomputed instead; so does a
comparison of values of different kinds (a timestamp with a string, which Spark casts).

>>> f = compile_sql("cost * 2 > 3 AND src LIKE 'a%'", lambda name: lambda row: row[name])
>>> f({"cost": 2.0, "src": "ab"}), f({"cost": None, "src": "ab"}), f({"cost": 1, "src": "ab"})
(True, None, False)
>>> compile_sql("datediff(t, u) > 2", lambda name: lambda row: row[name])
Traceback (most recent call last):
...
aspen.queries.incremental.expr.NotIncrementalError: DateDiff is not maintained incrementally
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

from aspen.errors import ConfigError, QueryRunError
from aspen.queries.spec import DIALECT

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["Getter", "Hook", "NotIncrementalError", "compile_node", "compile_sql", "parse"]

#: A compiled expression: one row (whatever the caller's getters read) → its value.
Getter = Callable[[Any], Any]
#: Called on every node before the default rules; a getter takes the node over (aggregates,
#: grouping expressions), None leaves it to them.
Hook = Callable[["exp.Expression"], "Getter | None"]


class NotIncrementalError(ConfigError):
    """The query, or a part of it, cannot be maintained incrementally; the message says why."""


def parse(sql: str) -> exp.Expression:
    """``sql`` (one expression of a spec) parsed in the queries' dialect."""
    import sqlglot

    return sqlglot.parse_one(sql, read=DIALECT)


def compile_sql(sql: str, column: Callable[[str], Getter], hook: Hook | None = None) -> Getter:
    """:func:`compile_node` of the parsed ``sql``."""
    return compile_node(parse(sql), column, hook)


def _nulls(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` that gives NULL when any argument is NULL (SQL's strict functions)."""
    def strict(*args: Any) -> Any:
        return None if any(a is None for a in args) else fn(*args)
    return strict


def _compare(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def compare(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        try:
            return op(a, b)
        except TypeError:
            raise NotIncrementalError(
                f"comparison of a {type(a).__name__} with a {type(b).__name__} (Spark casts; "
                "the incremental path does not)") from None
    return compare


def _divide(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    if b == 0:
        raise QueryRunError("[DIVIDE_BY_ZERO] Division by zero")
    return a / b


def _modulo(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    if b == 0:
        raise QueryRunError("[DIVIDE_BY_ZERO] Division by zero")
    if isinstance(a, int) and isinstance(b, int):
        result = abs(a) % abs(b)  # SQL: the sign of the dividend
        return -result if a < 0 else result
    return math.fmod(a, b)


def _round(value: Any, digits: Any = 0) -> Any:
    if value is None or digits is None:
        return None
    rounded = Decimal(str(value)).quantize(Decimal(1).scaleb(-int(digits)), ROUND_HALF_UP)
    return int(rounded) if isinstance(value, int) else float(rounded)


def _and(values: Sequence[Any]) -> Any:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(values: Sequence[Any]) -> Any:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _like(pattern: str) -> Callable[[Any], Any]:
    """SQL LIKE (``%``, ``_``, backslash escapes) as a regular expression."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    regex = re.compile("".join(out), re.S)
    return lambda v: None if v is None else regex.fullmatch(str(v)) is not None


def _cast(kind: str, strict: bool = True) -> Callable[[Any], Any]:
    """CAST (``strict``: a value that does not convert fails, as in Spark's ANSI mode) or
    TRY_CAST (it becomes NULL) to ``kind``."""
    def failed(v: Any) -> Any:
        if strict:
            raise QueryRunError(f"[CAST_INVALID_INPUT] The value {v!r} cannot be cast to "
                                f"{kind} because it is malformed")
        return None

    def to_int(v: Any) -> Any:
        try:
            return int(float(v)) if isinstance(v, str) else int(v)
        except (TypeError, ValueError, OverflowError):
            return failed(v)

    def to_float(v: Any) -> Any:
        try:
            return float(v)
        except (TypeError, ValueError):
            return failed(v)

    def to_text(v: Any) -> Any:
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)

    def to_bool(v: Any) -> Any:
        if isinstance(v, str):
            found = {"true": True, "false": False}.get(v.strip().lower())
            return failed(v) if found is None else found
        return bool(v)

    table = {"BIGINT": to_int, "INT": to_int, "SMALLINT": to_int, "TINYINT": to_int,
             "DOUBLE": to_float, "FLOAT": to_float, "TEXT": to_text, "VARCHAR": to_text,
             "CHAR": to_text, "BOOLEAN": to_bool}
    if kind not in table:
        raise NotIncrementalError(f"CAST to {kind} is not maintained incrementally")
    fn = table[kind]
    return lambda v: None if v is None else fn(v)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Add": _nulls(operator.add), "Sub": _nulls(operator.sub), "Mul": _nulls(operator.mul),
    "Div": _divide, "Mod": _modulo,
    "EQ": _compare(operator.eq), "NEQ": _compare(operator.ne), "GT": _compare(operator.gt),
    "GTE": _compare(operator.ge), "LT": _compare(operator.lt), "LTE": _compare(operator.le),
    "NullSafeEQ": lambda a, b: a == b, "NullSafeNEQ": lambda a, b: a != b,
    "DPipe": _nulls(lambda a, b: f"{a}{b}"),
}
_UNARY: dict[str, Callable[[Any], Any]] = {
    "Neg": _nulls(operator.neg), "Abs": _nulls(abs),
    "Upper": _nulls(lambda s: str(s).upper()), "Lower": _nulls(lambda s: str(s).lower()),
    "Length": _nulls(lambda s: len(str(s))),
}


def compile_node(node: exp.Expression, column: Callable[[str], Getter],
                 hook: Hook | None = None) -> Getter:
    """A getter computing ``node`` over a row: ``column(name)`` reads a column, ``hook`` may
    take any node over first. Raises :class:`NotIncrementalError` on what it cannot evaluate.

    >>> g = compile_sql("CASE WHEN n IS NULL THEN 'none' ELSE upper(s) || '!' END",
    ...                 lambda name: lambda row: row.get(name))
    >>> g({"n": None}), g({"n": 1, "s": "ab"})
    ('none', 'AB!')
    """
    from sqlglot import exp

    def walk(n: exp.Expression) -> Getter:  # noqa: PLR0911, PLR0912 - one rule per node kind
        if hook is not None:
            taken = hook(n)
            if taken is not None:
                return taken
        kind = type(n).__name__
        if isinstance(n, exp.Column):
            if isinstance(n.this, exp.Star):
                raise NotIncrementalError("* outside COUNT(*) is not maintained incrementally")
            return column(n.name)
        if isinstance(n, exp.Paren):
            return walk(n.this)
        if isinstance(n, exp.Null):
            return lambda _row: None
        if isinstance(n, exp.Boolean):
            value = bool(n.this)
            return lambda _row: value
        if isinstance(n, exp.Literal):
            literal: Any = n.this if n.is_string else _number(n.this)
            return lambda _row: literal
        if kind in _BINARY:
            fn, left, right = _BINARY[kind], walk(n.this), walk(n.expression)
            return lambda row: fn(left(row), right(row))
        if kind in _UNARY:
            fn1, inner = _UNARY[kind], walk(n.this)
            return lambda row: fn1(inner(row))
        if isinstance(n, exp.And | exp.Or):
            parts = [walk(p) for p in n.flatten()]
            combine = _and if isinstance(n, exp.And) else _or
            return lambda row: combine([p(row) for p in parts])
        if isinstance(n, exp.Not):
            inner = walk(n.this)
            return lambda row: (lambda v: None if v is None else not v)(inner(row))
        if isinstance(n, exp.Is) and isinstance(n.expression, exp.Null):
            inner = walk(n.this)
            return lambda row: inner(row) is None
        if isinstance(n, exp.In) and n.expressions and not n.args.get("query"):
            inner, options = walk(n.this), [walk(e) for e in n.expressions]

            def member(row: Any) -> Any:
                value = inner(row)
                if value is None:
                    return None
                values = [o(row) for o in options]
                return _or([_compare(operator.eq)(value, v) for v in values])
            return member
        if isinstance(n, exp.Between):
            inner, low, high = walk(n.this), walk(n.args["low"]), walk(n.args["high"])
            ge, le = _compare(operator.ge), _compare(operator.le)
            return lambda row: _and([ge(inner(row), low(row)), le(inner(row), high(row))])
        if isinstance(n, exp.Like) and isinstance(n.expression, exp.Literal) \
                and n.expression.is_string and not n.args.get("escape"):
            inner, match = walk(n.this), _like(n.expression.this)
            return lambda row: match(inner(row))
        if isinstance(n, exp.Coalesce):
            parts = [walk(p) for p in [n.this, *n.expressions]]
            return lambda row: next((v for v in (p(row) for p in parts) if v is not None), None)
        if isinstance(n, exp.Case):
            if n.this is not None:
                raise NotIncrementalError("CASE x WHEN … is not maintained incrementally: "
                                          "write CASE WHEN x = …")
            ifs = [(walk(i.this), walk(i.args["true"])) for i in n.args.get("ifs") or []]
            default = walk(n.args["default"]) if n.args.get("default") else (lambda _r: None)

            def case(row: Any) -> Any:
                for cond, then in ifs:
                    if cond(row) is True:
                        return then(row)
                return default(row)
            return case
        if isinstance(n, exp.If):
            cond, yes = walk(n.this), walk(n.args["true"])
            no = walk(n.args["false"]) if n.args.get("false") else (lambda _r: None)
            return lambda row: yes(row) if cond(row) is True else no(row)
        if isinstance(n, exp.Cast | exp.TryCast):
            to = n.args.get("to")
            cast, inner = _cast(to.this.name if isinstance(to, exp.DataType) else str(to),
                                # sqlglot reads Spark's CAST as a TryCast, TRY_CAST as a safe one
                                strict=not n.args.get("safe")), walk(n.this)
            return lambda row: cast(inner(row))
        if isinstance(n, exp.Round):
            inner = walk(n.this)
            digits = walk(n.args["decimals"]) if n.args.get("decimals") else (lambda _r: 0)
            return lambda row: _round(inner(row), digits(row))
        if isinstance(n, exp.Concat):
            parts = [walk(p) for p in n.expressions]
            return lambda row: (lambda vs: None if any(v is None for v in vs)
                                else "".join(map(str, vs)))([p(row) for p in parts])
        if isinstance(n, exp.Greatest | exp.Least):
            parts = [walk(p) for p in [n.this, *n.expressions]]
            pick = max if isinstance(n, exp.Greatest) else min
            return lambda row: (lambda vs: pick(vs) if vs else None)(
                [v for v in (p(row) for p in parts) if v is not None])
        raise NotIncrementalError(f"{kind} is not maintained incrementally")

    return walk(node)


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)
