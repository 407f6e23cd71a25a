"""Derived columns added to a table's frame before validation, so that GX expresses the checks.

GX compares columns of one row, not elements of a list or lengths of bytes; a path's first node,
its number of edges, or a provenance's length become ordinary columns first.

>>> import pandas as pd
>>> frame = pd.DataFrame({"path": [["a", "b", "c"], []], "provenance": [b"xy", None]})
>>> out = add_provenance_length(add_path_columns(frame, "path"))
>>> out[["path_first_node", "path_last_node", "path_edges", "path_repeated_nodes"]].values.tolist()
[['a', 'c', 2.0, 0.0], [None, None, -1.0, 0.0]]
>>> out["path_text"].tolist(), out["provenance_length"].tolist()
(['a→b→c', ''], [2.0, nan])
>>> add_id_steps(pd.DataFrame({"id": [3, 1, 2, 5, 5]}), "id")["id_step"].tolist()
[1.0, nan, 1.0, 2.0, 0.0]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "AGGREGATE_ERRORS",
    "PATH_SUFFIXES",
    "add_aggregate_errors",
    "add_id_steps",
    "add_path_columns",
    "add_provenance_length",
    "path_column_names",
]

_NAN = float("nan")
#: Columns derived from each path column ``p``: ``p_first_node`` … ``p_text``.
PATH_SUFFIXES: tuple[str, ...] = ("first_node", "last_node", "edges", "repeated_nodes", "text")
#: Columns derived from a window's aggregates by :func:`add_aggregate_errors`.
AGGREGATE_ERRORS: tuple[str, ...] = ("avg_below_min", "avg_above_max", "sum_error")


def path_column_names(column: str) -> tuple[str, ...]:
    """The names of the columns derived from path column ``column``."""
    return tuple(f"{column}_{suffix}" for suffix in PATH_SUFFIXES)


def _nodes(value: Any) -> list[str] | None:
    if value is None or (isinstance(value, float) and value != value):  # None or NaN
        return None
    return [str(v) for v in value]


def add_path_columns(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """A copy of ``frame`` with the derived columns of path ``column``.

    A null path gives nulls; an empty path has no first/last node and ``-1`` edges. A missing
    column gives null derived columns (the schema expectation reports the missing column).
    """
    import pandas as pd

    first, last, edges, repeated, text = (f"{column}_{s}" for s in PATH_SUFFIXES)
    out = frame.copy()
    paths = [_nodes(v) for v in frame[column]] if column in frame else [None] * len(frame)
    out[first] = pd.Series([p[0] if p else None for p in paths], index=frame.index, dtype=object)
    out[last] = pd.Series([p[-1] if p else None for p in paths], index=frame.index, dtype=object)
    out[edges] = pd.Series(
        [len(p) - 1 if p is not None else _NAN for p in paths], index=frame.index, dtype="float64"
    )
    out[repeated] = pd.Series(
        [len(p) - len(set(p)) if p is not None else _NAN for p in paths],
        index=frame.index,
        dtype="float64",
    )
    out[text] = pd.Series(
        ["→".join(p) if p is not None else None for p in paths], index=frame.index, dtype=object
    )
    return out


def add_provenance_length(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with ``provenance_length``: the stored bytes' length (null if null)."""
    import pandas as pd

    out = frame.copy()
    values = frame["provenance"] if "provenance" in frame else [None] * len(frame)
    out["provenance_length"] = pd.Series(
        [float(len(v)) if v is not None else _NAN for v in values],
        index=frame.index,
        dtype="float64",
    )
    return out


def _numbers(frame: pd.DataFrame, column: str) -> Any:
    """``column`` as a float array (NaN for nulls and for a missing column)."""
    import numpy as np
    import pandas as pd

    if column not in frame:
        return np.full(len(frame), _NAN)
    return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype="float64", na_value=_NAN)


def add_id_steps(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """A copy of ``frame`` with ``<column>_step``: each id minus the next lower id of the table
    (``1`` throughout for consecutive ids, ``0`` for a repeated id, more across a gap; null for
    the lowest id and for null ids).
    """
    import numpy as np
    import pandas as pd

    values = _numbers(frame, column)
    order = np.argsort(values, kind="stable")  # NaN last
    steps = np.full(len(values), _NAN)
    steps[order[1:]] = np.diff(values[order])
    out = frame.copy()
    out[f"{column}_step"] = pd.Series(steps, index=frame.index, dtype="float64")
    return out


def add_aggregate_errors(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` (a window's ``count``, ``sum``, ``min``, ``max``, ``avg``) with the
    relative errors of its aggregates, ``≤ 0`` (``0`` for ``sum_error``) when consistent:

    - ``avg_below_min`` = (min − avg) / scale and ``avg_above_max`` = (avg − max) / scale, the
      scale being the larger magnitude of min and max (1 when both are 0);
    - ``sum_error`` = abs(sum − avg·count) / the larger magnitude of the two (0 when both are 0).

    A null gives a null.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"count": [2, 3], "sum": [6.0, 0.0], "min": [2.0, -1.0],
    ...                       "max": [4.0, 1.0], "avg": [3.0, 2.0]})
    >>> add_aggregate_errors(frame)[list(AGGREGATE_ERRORS)].values.tolist()
    [[-0.25, -0.25, 0.0], [-3.0, 1.0, 1.0]]
    """
    import numpy as np
    import pandas as pd

    count, total, low, high, avg = (_numbers(frame, c) for c in ("count", "sum", "min", "max",
                                                                  "avg"))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        scale = np.fmax(np.abs(low), np.abs(high))
        scale = np.where(scale == 0, 1.0, scale)
        product = avg * count
        size = np.fmax(np.abs(total), np.abs(product))
        relative = np.abs(total - product) / np.where(size == 0, 1.0, size)
        columns = ((low - avg) / scale, (avg - high) / scale, relative)
    out = frame.copy()
    for name, values in zip(AGGREGATE_ERRORS, columns, strict=True):
        out[name] = pd.Series(values, index=frame.index, dtype="float64")
    return out
