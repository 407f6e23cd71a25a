"""SQL scalar expressions (Spark SQL dialect) compiled to plain Python callables over a row.

Stream operators take their selection predicates and projection functions as SQL text; they
run inside Spark's Python workers, so the text is parsed once (with sqlglot) and compiled to
nested closures: no AST walk per row, and the result pickles with cloudpickle. NULL is
``None`` and the semantics are SQL's three-valued ones, as in Spark without ANSI mode
(division by zero gives NULL). Anything outside the supported subset (aggregates, windows,
subqueries, unknown functions) is a :class:`~aspen.errors.ConfigError` at compile time.

>>> f = compile_expression("CASE WHEN x > 2 THEN ROUND(x / 4, 1) ELSE NULL END")
>>> f({"x": 5}), f({"x": 1})
(1.3, None)
>>> compile_predicate("x > 2 AND y IS NULL")({"x": 5, "y": None})
True
>>> sorted(attributes_of("x + `y z`"))
['x', 'y z']
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from aspen.errors import ConfigError, EngineError

__all__ = ["compile_expression", "compile_predicate", "attributes_of"]

Row = Mapping[str, Any]
Fn = Callable[[Row], Any]


def compile_expression(sql: str) -> Callable[[Mapping[str, Any]], Any]:
    """The value of `sql` over a row (a mapping attribute -> value)."""
    fn = _Compiler(sql)(_parse(sql))

    def expression(row: Row) -> Any:
        try:
            return fn(row)
        except TypeError as err:  # e.g. 'a' < 1: Spark would have refused the plan
            raise EngineError(f"cannot evaluate {sql!r} over this row: {err}") from None

    return expression


def compile_predicate(sql: str) -> Callable[[Mapping[str, Any]], bool]:
    """True when `sql` is true over the row; NULL (None) counts as false, as in SQL WHERE."""
    fn = compile_expression(sql)

    def predicate(row: Row) -> bool:
        value = fn(row)
        if value is True:
            return True
        if value is None or value is False:
            return False
        raise EngineError(f"stream predicate {sql!r} gave {value!r}, not a boolean")

    return predicate


def attributes_of(sql: str) -> frozenset[str]:
    """The attribute (column) names `sql` reads."""
    tree = _parse(sql)
    _Compiler(sql)(tree)  # the same errors as compiling it
    return frozenset(column.name for column in tree.find_all(exp.Column))


def _parse(sql: str) -> exp.Expression:
    if not sql.strip():
        raise ConfigError(f"empty stream expression: {sql!r}")
    try:
        return sqlglot.parse_one(sql, read="spark")
    except SqlglotError as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ConfigError(f"cannot parse stream expression {sql!r}: {reason}") from None


class _Compiler:
    """Compiles one node of `sql` by the dispatch table; `sql` is for error messages."""

    def __init__(self, sql: str) -> None:
        self.sql = sql

    def __call__(self, node: exp.Expression) -> Fn:
        entry = _DISPATCH.get(type(node))
        # An argument we do not interpret (t.x's table, IN's subquery, ...) is refused, not
        # silently dropped.
        if entry is None or not _set_args(node) <= entry[1] | _MARKERS:
            raise self.unsupported(node)
        return entry[0](node, self)

    def unsupported(self, node: exp.Expression, why: str = "") -> ConfigError:
        text = node.sql(dialect="spark")
        return ConfigError(f"unsupported in a stream expression: {text}{why} in {self.sql!r}")

    def constant_int(self, node: exp.Expression) -> int:
        """An integer literal argument (ROUND's scale), evaluated now."""
        value = self(node)({}) if node.find(exp.Column) is None else None
        if type(value) is not int:
            raise self.unsupported(node, " (must be an integer constant)")
        return value


_MARKERS = frozenset({"safe", "typed"})  # how sqlglot notes Spark's own semantics


def _set_args(node: exp.Expression) -> set[str]:
    return {k for k, v in node.args.items()
            if v is not None and v is not False and not (isinstance(v, list) and not v)}


# --- leaves ----------------------------------------------------------------------------------

def _column(node: exp.Column, c: _Compiler) -> Fn:
    name, sql = node.name, c.sql

    def column(row: Row) -> Any:
        try:
            return row[name]
        except (LookupError, ValueError):  # ValueError: a pyspark Row lacking the field
            raise EngineError(f"row has no attribute {name!r} (read by {sql!r})") from None

    return column


def _literal(node: exp.Literal, c: _Compiler) -> Fn:
    text = node.this
    value: Any = text if node.is_string else int(text) if text.isdigit() else float(text)
    return lambda row: value


def _boolean(node: exp.Boolean, c: _Compiler) -> Fn:
    value = bool(node.this)
    return lambda row: value


# --- NULL-propagating operators and functions ------------------------------------------------

def _strict(fn: Callable[..., Any], *args: str) -> Callable[[exp.Expression, _Compiler], Fn]:
    """fn over the values of the named arguments; NULL if any is NULL, or on a math error."""

    def compile_(node: exp.Expression, c: _Compiler) -> Fn:
        subs = [c(node.args[a]) for a in args if node.args.get(a) is not None]
        if len(subs) == 2:  # the hot path (arithmetic, comparisons): no list per row
            left, right = subs

            def binary(row: Row) -> Any:
                a, b = left(row), right(row)
                if a is None or b is None:
                    return None
                try:
                    return fn(a, b)
                except (ValueError, OverflowError, ZeroDivisionError):
                    return None

            return binary

        def run(row: Row) -> Any:
            values = [sub(row) for sub in subs]
            if None in values:
                return None
            try:
                return fn(*values)
            except (ValueError, OverflowError, ZeroDivisionError):
                return None

        return run

    return compile_


def _div(a: Any, b: Any) -> Any:
    return None if b == 0 else a / b


def _mod(a: Any, b: Any) -> Any:  # Spark's (Java's) sign: that of the dividend
    if b == 0:
        return None
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _log(base: Any, x: Any) -> Any:  # Spark gives NULL for a base or argument <= 0
    if base <= 0 or x <= 0:
        return None
    return math.log10(x) if base == 10 else math.log(x) / math.log(base)


def _round(x: Any, scale: int = 0) -> Any:
    """Half away from zero on the shortest decimal form of x, as Spark's BigDecimal does."""
    if isinstance(x, float) and not math.isfinite(x):
        return x
    try:
        q = Decimal(repr(x)).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    except InvalidOperation:  # more digits than Decimal keeps: x has none to round
        return x
    return type(x)(q)


def _compile_round(node: exp.Round, c: _Compiler) -> Fn:
    scale = c.constant_int(node.args["decimals"]) if node.args.get("decimals") else 0
    return _strict(lambda x: _round(x, scale), "this")(node, c)


def _text(v: Any) -> str:
    """A value as Spark casts it to STRING (basic: booleans lower case)."""
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _substring(s: Any, pos: int, length: int = 2**31 - 1) -> str:
    """Spark's 1-based SUBSTRING: pos 0 means 1, a negative pos counts from the end."""
    s = _text(s)
    start = pos - 1 if pos > 0 else len(s) + pos if pos < 0 else 0
    end = start + length
    start = max(start, 0)
    return s[start:end] if start < end else ""


def _compile_trim(node: exp.Trim, c: _Compiler) -> Fn:
    strip = {"LEADING": str.lstrip, "TRAILING": str.rstrip}.get(node.args.get("position") or "")
    strip = strip or str.strip
    if node.args.get("expression") is None:
        return _strict(lambda s: strip(_text(s), " "), "this")(node, c)
    return _strict(lambda s, chars: strip(_text(s), _text(chars)), "this", "expression")(node, c)


def _concat(node: exp.Expression, c: _Compiler) -> Fn:
    parts = [c(e) for e in ([node.this] if node.this else []) + node.expressions]
    if isinstance(node, exp.DPipe):
        parts.append(c(node.expression))

    def concat(row: Row) -> Any:
        values = [part(row) for part in parts]
        return None if None in values else "".join(map(_text, values))

    return concat


def _to_int(v: Any) -> int | None:
    if isinstance(v, str):  # Spark accepts '12', ' -3 ' and '1.5' (truncated), not '1e3'
        m = re.fullmatch(r"\s*([+-]?\d+)(\.\d*)?\s*", v)
        return int(m.group(1)) if m else None
    return int(v)


def _to_float(v: Any) -> float | None:
    try:
        return float(v.strip() if isinstance(v, str) else v)
    except ValueError:
        return None


def _to_bool(v: Any) -> bool | None:
    if isinstance(v, str):
        word = v.strip().lower()
        return True if word in _TRUE else False if word in _FALSE else None
    return bool(v)


_TRUE, _FALSE = frozenset({"t", "true", "y", "yes", "1"}), frozenset({"f", "false", "n", "no", "0"})
_T = exp.DataType.Type
_CASTS: dict[Any, Callable[[Any], Any]] = {
    _T.DOUBLE: _to_float, _T.FLOAT: _to_float, _T.INT: _to_int, _T.BIGINT: _to_int,
    _T.SMALLINT: _to_int, _T.TINYINT: _to_int, _T.TEXT: _text, _T.BOOLEAN: _to_bool,
}


def _compile_cast(node: exp.Cast, c: _Compiler) -> Fn:
    to = node.args["to"]
    if to.this not in _CASTS or to.expressions:
        raise c.unsupported(node)
    return _strict(_CASTS[to.this], "this")(node, c)


def _like(node: exp.Like, c: _Compiler) -> Fn:
    negate = bool(node.args.get("negate"))
    pattern = node.expression
    if isinstance(pattern, exp.Literal) and pattern.is_string:  # the usual case: compile once
        regex = _like_regex(pattern.this)
        return _strict(lambda s: (regex.fullmatch(_text(s)) is None) == negate, "this")(node, c)
    return _strict(lambda s, p: (_like_regex(_text(p)).fullmatch(_text(s)) is None) == negate,
                   "this", "expression")(node, c)


@functools.lru_cache(maxsize=256)
def _like_regex(pattern: str) -> re.Pattern[str]:
    """% is any string, _ any one character, backslash escapes the next character."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _least_greatest(pick: Callable[..., Any]) -> Callable[[exp.Expression, _Compiler], Fn]:
    def compile_(node: exp.Expression, c: _Compiler) -> Fn:  # NULLs ignored, as Spark does
        subs = [c(e) for e in [node.this, *node.expressions]]

        def run(row: Row) -> Any:
            values = [v for v in (sub(row) for sub in subs) if v is not None]
            return pick(values) if values else None

        return run

    return compile_


# --- three-valued logic and the operators that are not NULL-strict ---------------------------

def _junction(short: bool) -> Callable[[exp.Expression, _Compiler], Fn]:
    """AND (short = False) or OR (short = True): `short` wins over NULL, NULL over the other."""

    def compile_(node: exp.Expression, c: _Compiler) -> Fn:
        left, right = c(node.this), c(node.expression)

        def junction(row: Row) -> bool | None:
            a = left(row)
            if a is short:
                return short
            b = right(row)
            return short if b is short else None if a is None or b is None else not short

        return junction

    return compile_


def _is_null(node: exp.Is, c: _Compiler) -> Fn:
    if not isinstance(node.expression, exp.Null):  # IS TRUE, IS DISTINCT FROM, ...
        raise c.unsupported(node)
    sub, negate = c(node.this), bool(node.args.get("negate"))
    return lambda row: (sub(row) is None) != negate


def _between(node: exp.Between, c: _Compiler) -> Fn:
    x, low, high = c(node.this), c(node.args["low"]), c(node.args["high"])

    def between(row: Row) -> bool | None:  # x >= low AND x <= high, three-valued
        v, lo, hi = x(row), low(row), high(row)
        ge = None if v is None or lo is None else v >= lo
        le = None if v is None or hi is None else v <= hi
        return False if ge is False or le is False else None if ge is None or le is None else True

    return between


def _in(node: exp.In, c: _Compiler) -> Fn:
    x, items = c(node.this), [c(e) for e in node.expressions]

    def in_(row: Row) -> bool | None:  # NULL unless found, when x or some item is NULL
        v = x(row)
        if v is None:
            return None
        values = [item(row) for item in items]
        return True if v in values else None if None in values else False

    return in_


def _if(node: exp.If, c: _Compiler) -> Fn:
    cond, then = c(node.this), c(node.args["true"])
    other = c(node.args["false"]) if node.args.get("false") else (lambda row: None)
    return lambda row: then(row) if cond(row) is True else other(row)


def _case(node: exp.Case, c: _Compiler) -> Fn:
    whens = [(c(w.this), c(w.args["true"])) for w in node.args["ifs"]]
    default = c(node.args["default"]) if node.args.get("default") else (lambda row: None)
    subject = c(node.this) if node.this is not None else None

    def case(row: Row) -> Any:
        s = subject(row) if subject else True  # CASE x WHEN v: x = v; CASE WHEN c: c = TRUE
        if s is not None:
            for when, then in whens:
                w = when(row)
                if w is not None and (w is True if subject is None else w == s):
                    return then(row)
        return default(row)

    return case


def _coalesce(node: exp.Coalesce, c: _Compiler) -> Fn:
    subs = [c(e) for e in [node.this, *node.expressions]]

    def coalesce(row: Row) -> Any:
        for sub in subs:
            v = sub(row)
            if v is not None:
                return v
        return None

    return coalesce


def _nullif(node: exp.Nullif, c: _Compiler) -> Fn:
    a, b = c(node.this), c(node.expression)

    def nullif(row: Row) -> Any:
        x, y = a(row), b(row)
        return None if x is not None and y is not None and x == y else x

    return nullif


def _paren(node: exp.Paren, c: _Compiler) -> Fn:
    return c(node.this)


_U, _B = frozenset({"this"}), frozenset({"this", "expression"})
_DISPATCH: dict[type, tuple[Callable[[Any, _Compiler], Fn], frozenset[str]]] = {
    exp.Column: (_column, _U),
    exp.Literal: (_literal, frozenset({"this", "is_string"})),
    exp.Boolean: (_boolean, _U),
    exp.Null: (lambda node, c: lambda row: None, frozenset()),
    exp.Paren: (_paren, _U),
    exp.Neg: (_strict(operator.neg, "this"), _U),
    exp.Not: (_strict(operator.not_, "this"), _U),
    exp.And: (_junction(False), _B),
    exp.Or: (_junction(True), _B),
    exp.Is: (_is_null, _B | {"negate"}),
    exp.Between: (_between, frozenset({"this", "low", "high"})),
    exp.In: (_in, frozenset({"this", "expressions"})),
    exp.Like: (_like, _B | {"negate"}),
    exp.Case: (_case, frozenset({"this", "ifs", "default"})),
    exp.If: (_if, frozenset({"this", "true", "false"})),
    exp.Coalesce: (_coalesce, frozenset({"this", "expressions", "is_nvl", "is_null"})),
    exp.Nullif: (_nullif, _B),
    exp.Abs: (_strict(abs, "this"), _U),
    exp.Round: (_compile_round, frozenset({"this", "decimals"})),
    exp.Floor: (_strict(math.floor, "this"), _U),
    exp.Ceil: (_strict(math.ceil, "this"), _U),
    exp.Sqrt: (_strict(math.sqrt, "this"), _U),
    exp.Ln: (_strict(lambda x: math.log(x) if x > 0 else None, "this"), _U),
    exp.Log: (_strict(_log, "this", "expression"), _B),
    exp.Exp: (_strict(math.exp, "this"), _U),
    exp.Pow: (_strict(math.pow, "this", "expression"), _B),
    exp.Sign: (_strict(lambda x: float((x > 0) - (x < 0)) if x == x else x, "this"), _U),
    exp.Least: (_least_greatest(min), frozenset({"this", "expressions", "ignore_nulls"})),
    exp.Greatest: (_least_greatest(max), frozenset({"this", "expressions", "ignore_nulls"})),
    exp.Upper: (_strict(lambda s: _text(s).upper(), "this"), _U),
    exp.Lower: (_strict(lambda s: _text(s).lower(), "this"), _U),
    exp.Length: (_strict(lambda s: len(_text(s)), "this"), _U),
    exp.Substring: (_strict(_substring, "this", "start", "length"),
                    frozenset({"this", "start", "length", "zero_start"})),
    exp.Trim: (_compile_trim, frozenset({"this", "expression", "position"})),
    exp.Concat: (_concat, frozenset({"expressions"})),
    exp.DPipe: (_concat, _B),
    exp.Cast: (_compile_cast, frozenset({"this", "to"})),
    exp.TryCast: (_compile_cast, frozenset({"this", "to"})),
}
# Binary operators, NULL if either side is NULL.
_DISPATCH.update({cls: (_strict(fn, "this", "expression"), _B) for cls, fn in [
    (exp.Add, operator.add), (exp.Sub, operator.sub), (exp.Mul, operator.mul), (exp.Div, _div),
    (exp.Mod, _mod), (exp.EQ, operator.eq), (exp.NEQ, operator.ne), (exp.LT, operator.lt),
    (exp.LTE, operator.le), (exp.GT, operator.gt), (exp.GTE, operator.ge)]})
