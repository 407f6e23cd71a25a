"""Printing rows for the CLI: an aligned table, CSV or JSON.

Text from the lake is printed with its control characters escaped (:func:`printable`) in the
table and CSV formats, so an id cannot move the cursor, clear the screen or forge a line; JSON
escapes them itself.

>>> print_rows(["a", "b"], [("x", 1)], "csv")
a,b
x,1
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from aspen.pipeline.boundary import printable

__all__ = ["FORMATS", "cell_text", "print_rows", "printable"]

FORMATS = ("table", "csv", "json")
def cell_text(value: Any) -> str:
    """A cell as text: paths joined with arrows, floats without noise."""
    if isinstance(value, tuple | list):
        return "→".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def print_rows(columns: Sequence[str], rows: Iterable[Sequence[Any]], fmt: str = "table") -> None:
    """Print ``rows`` under ``columns`` in ``fmt`` (table, csv or json)."""
    rows = list(rows)
    if fmt == "json":
        json.dump([{c: _jsonable(v) for c, v in zip(columns, r, strict=True)} for r in rows],
                  sys.stdout, indent=1)
        print()
    elif fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([printable(cell_text(v)) for v in r] for r in rows)
    else:
        texts = [[printable(cell_text(v)) for v in r] for r in rows]
        widths = [max([len(c)] + [len(t[i]) for t in texts]) for i, c in enumerate(columns)]
        print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
        for t in texts:
            print("  ".join(v.ljust(w) for v, w in zip(t, widths, strict=True)))
        print(f"({len(rows)} rows)")
