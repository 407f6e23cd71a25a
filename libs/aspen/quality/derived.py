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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PATH_SUFFIXES", "add_path_columns", "add_provenance_length", "path_column_names"]

_NAN = float("nan")
#: Columns derived from each path column ``p``: ``p_first_node`` … ``p_text``.
PATH_SUFFIXES: tuple[str, ...] = ("first_node", "last_node", "edges", "repeated_nodes", "text")


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
