"""Short constructors for the GX expectations the suites use, and their human-readable labels.

Each helper returns Great Expectations 1.x expectation objects (``gx.expectations.*``);
great_expectations is imported only when a suite is built, not when Aspen is imported.

>>> label("expect_column_pair_values_to_be_equal", {"column_A": "src", "column_B": "path_edges"})
'expect_column_pair_values_to_be_equal(src, path_edges)'
>>> label("expect_column_values_to_not_be_null", {"column": "src", "row_condition": "op=='insert'"})
"expect_column_values_to_not_be_null(src) where op=='insert'"
>>> [label(e.expectation_type, e.configuration.kwargs) for e in finite_non_negative("cost")]
['expect_column_values_to_not_be_null(cost)', 'expect_column_values_to_be_between(cost)']
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from great_expectations.expectations import Expectation

__all__ = [
    "FLOAT_MAX",
    "at_least",
    "between",
    "finite",
    "finite_non_negative",
    "in_period",
    "in_set",
    "label",
    "non_blank",
    "not_null",
    "null",
    "of_dtype",
    "pair_above",
    "pair_at_least",
    "pair_equal",
    "schema",
    "unique",
]

#: The largest finite float: ``≤ FLOAT_MAX`` rejects +inf (NaN is null in pandas: not-null
#: rejects it).
FLOAT_MAX = sys.float_info.max


def _gx():
    import great_expectations as gx

    return gx.expectations


def label(expectation_type: str, kwargs: Mapping[str, Any]) -> str:
    """``type(columns)``: the expectation type with the column(s) it is about."""
    if "column_set" in kwargs:
        return expectation_type
    columns: list[str] = []
    for key in ("column", "column_A", "column_B"):
        if kwargs.get(key) is not None:
            columns.append(str(kwargs[key]))
    columns += [str(c) for c in kwargs.get("column_list") or ()]
    text = f"{expectation_type}({', '.join(columns)})"
    condition = kwargs.get("row_condition")
    if isinstance(condition, Mapping):
        condition = condition.get("pass_through_filter") or condition.get("condition")
    return f"{text} where {condition}" if condition else text


def schema(columns: Iterable[str]) -> list[Expectation]:
    """The table has exactly ``columns`` (in any order)."""
    return [_gx().ExpectTableColumnsToMatchSet(column_set=list(columns), exact_match=True)]


def _where(condition: str | None) -> dict[str, str]:
    return {"row_condition": condition, "condition_parser": "pandas"} if condition else {}


def not_null(*columns: str, where: str | None = None) -> list[Expectation]:
    """No null (or NaN) in each of ``columns`` (in the rows matching the pandas query ``where``)."""
    return [_gx().ExpectColumnValuesToNotBeNull(column=c, **_where(where)) for c in columns]


def null(*columns: str, where: str | None = None) -> list[Expectation]:
    """Only nulls in each of ``columns`` (in the rows matching the pandas query ``where``)."""
    return [_gx().ExpectColumnValuesToBeNull(column=c, **_where(where)) for c in columns]


def non_blank(*columns: str) -> list[Expectation]:
    """Non-null values of each of ``columns`` hold a character other than white space."""
    return [_gx().ExpectColumnValuesToMatchRegex(column=c, regex=r"\S") for c in columns]


def unique(*columns: str) -> list[Expectation]:
    """No two rows share the key ``columns`` (one column or a compound key)."""
    if len(columns) == 1:
        return [_gx().ExpectColumnValuesToBeUnique(column=columns[0])]
    return [_gx().ExpectCompoundColumnsToBeUnique(column_list=list(columns))]


def between(
    column: str, low: float | None, high: float | None, where: str | None = None
) -> list[Expectation]:
    """Non-null values of ``column`` lie in ``[low, high]`` (``None``: unbounded), in the rows
    matching the pandas query ``where``."""
    return [
        _gx().ExpectColumnValuesToBeBetween(
            column=column, min_value=low, max_value=high, **_where(where)
        )
    ]


def in_period(column: str, start: datetime, end: datetime) -> list[Expectation]:
    """Non-null timestamps of ``column`` lie in ``[start, end)``."""
    return [
        _gx().ExpectColumnValuesToBeBetween(
            column=column, min_value=start, max_value=end, strict_max=True
        )
    ]


def at_least(column: str, low: float) -> list[Expectation]:
    """Non-null values of ``column`` are ``≥ low``."""
    return between(column, low, None)


def finite(column: str) -> list[Expectation]:
    """Non-null values of ``column`` are finite (nulls allowed: optional numbers)."""
    return between(column, -FLOAT_MAX, FLOAT_MAX)


def finite_non_negative(column: str) -> list[Expectation]:
    """``column`` is never null and always a finite number ``≥ 0`` (a cost)."""
    return not_null(column) + between(column, 0, FLOAT_MAX)


def in_set(column: str, values: Iterable[Any]) -> list[Expectation]:
    """Non-null values of ``column`` are among ``values``."""
    return [_gx().ExpectColumnValuesToBeInSet(column=column, value_set=list(values))]


def of_dtype(column: str, *dtypes: str) -> list[Expectation]:
    """The pandas dtype of ``column`` is one of ``dtypes`` (e.g. ``int64``)."""
    return [_gx().ExpectColumnValuesToBeInTypeList(column=column, type_list=list(dtypes))]


def pair_at_least(column_a: str, column_b: str) -> list[Expectation]:
    """``column_a >= column_b`` in every row where both are present."""
    return _pair_greater(column_a, column_b, or_equal=True)


def pair_above(column_a: str, column_b: str) -> list[Expectation]:
    """``column_a > column_b`` in every row where both are present."""
    return _pair_greater(column_a, column_b, or_equal=False)


def _pair_greater(column_a: str, column_b: str, or_equal: bool) -> list[Expectation]:
    return [_gx().ExpectColumnPairValuesAToBeGreaterThanB(
        column_A=column_a, column_B=column_b, or_equal=or_equal,
        ignore_row_if="either_value_is_missing")]


def pair_equal(column_a: str, column_b: str) -> list[Expectation]:
    """``column_a == column_b`` in every row where both are present."""
    return [
        _gx().ExpectColumnPairValuesToBeEqual(
            column_A=column_a, column_B=column_b, ignore_row_if="either_value_is_missing"
        )
    ]
