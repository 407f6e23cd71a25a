"""Writing update records: JSON Lines and CSV (docs/architecture.md, "Update records").

JSON Lines: one record per line, keys in the dict's order; a ``str`` item is written as it is
(a raw line, e.g. from :func:`aspen.generators.invalid.inject_invalid`). CSV: a header with the
columns of :data:`~aspen.generators.records.COLUMNS` that any record uses (same names as the
JSON keys), an empty cell where a record has no such key.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "u.csv"
>>> write_csv([{"op": "delete", "relation": "link", "src": "a", "dst": "b"}], path)
1
>>> path.read_text().splitlines()
['op,relation,src,dst', 'delete,link,a,b']
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from pathlib import Path

from aspen.errors import ConfigError
from aspen.generators.records import COLUMNS, Record

__all__ = ["FORMATS", "format_of", "to_json_line", "write_jsonl", "write_csv", "write_records"]

#: Output formats by file extension.
FORMATS: dict[str, str] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


def format_of(path: str | Path) -> str:
    """``"jsonl"`` or ``"csv"`` from the file extension; anything else is a ConfigError.

    >>> format_of("links.csv")
    'csv'
    """
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError(
            f"cannot tell the format of {str(path)!r}: use a .jsonl or .csv file name"
        )
    return FORMATS[suffix]


def to_json_line(record: Record) -> str:
    """One record as a compact JSON line (no newline); non-finite numbers are refused.

    >>> to_json_line({"op": "delete", "relation": "triggered", "id": "s1"})
    '{"op": "delete", "relation": "triggered", "id": "s1"}'
    """
    try:
        return json.dumps(record, allow_nan=False, ensure_ascii=False)
    except ValueError as err:  # NaN or infinity: not a valid update record
        raise ConfigError(f"cannot write a non-finite number as JSON: {record!r}") from err


def _open_for_writing(path: str | Path) -> Path:
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{str(target)!r} is a directory, expected a file name")
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def write_jsonl(records: Iterable[Record | str], path: str | Path) -> int:
    """Write records (dicts, or raw lines as ``str``) as JSON Lines; return the line count.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "u.jsonl"
    >>> write_jsonl([{"op": "insert", "relation": "triggered", "id": "s1"}, "not json"], p)
    2
    """
    target = _open_for_writing(path)
    count = 0
    with target.open("w", encoding="utf-8", newline="\n") as out:
        for item in records:
            line = item if isinstance(item, str) else to_json_line(item)
            if "\n" in line:
                raise ConfigError("a raw JSON Lines record must not contain a newline")
            out.write(line + "\n")
            count += 1
    return count


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"cannot write the non-finite number {value!r} to CSV")
    return str(value)


def write_csv(records: Iterable[Record], path: str | Path) -> int:
    """Write record dicts as CSV (header = the columns in use, canonical order); return rows.

    Raw lines and unknown columns cannot be expressed in this format and raise ConfigError.
    """
    rows = list(records)
    used: set[str] = set()
    for row in rows:
        if isinstance(row, str):
            raise ConfigError("raw (invalid) lines can only be written to JSON Lines, not CSV")
        unknown = set(row) - set(COLUMNS)
        if unknown:
            raise ConfigError(f"CSV has no column for {sorted(unknown)}")
        used.update(row)
    header = [name for name in COLUMNS if name in used]
    target = _open_for_writing(path)
    with target.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow([_cell(row.get(name)) for name in header])
    return len(rows)


def write_records(records: Iterable[Record | str], path: str | Path) -> int:
    """Write with the format the extension names (``.jsonl``, ``.ndjson`` or ``.csv``).

    >>> import tempfile, pathlib
    >>> write_records([], pathlib.Path(tempfile.mkdtemp()) / "empty.jsonl")
    0
    """
    if format_of(path) == "csv":
        return write_csv(records, path)  # type: ignore[arg-type]
    return write_jsonl(records, path)
