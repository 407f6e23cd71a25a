"""Validation of raw update records (pure Python, no Spark).

One raw record (a JSON line, or a CSV row as a dict of cells) becomes either a normalized
:class:`UpdateRecord` or an :class:`~aspen.errors.InvalidRecordError` whose ``reason`` a person can
act on and whose ``code`` names the kind of problem (for counts and dashboards).

Rules (design.md "Update records"):

- ``op`` is ``insert`` or ``delete``; ``relation`` is one of ``link``, ``sensor``, ``triggered``,
  ``region_seed``; both are required.
- An insert carries the tuple's values, a delete only the tuple's key:
  ``link`` insert ``src, dst, cost`` / delete ``src, dst``; ``sensor`` insert ``id, x, y`` /
  delete ``id``; ``triggered`` insert/delete ``id``; ``region_seed`` insert/delete ``region, id``.
  **A delete carrying non-key values (e.g. a link delete with ``cost``) is rejected**: a delete kills
  every live instance of the key, and a value there would suggest it only kills matching ones.
- Optional on every record: ``event_time`` (ISO 8601; no zone means UTC). Optional on inserts only:
  ``ttl_s`` (finite, ≥ 0 seconds); a delete with a ``ttl_s`` is rejected.
- Ids (``src``, ``dst``, ``id``, ``region``) are non-empty strings; ``cost`` is a finite number ≥ 0;
  ``x``/``y`` are finite numbers. JSON values keep their JSON type (``"id": 5`` and
  ``"cost": "2"`` are rejected); CSV cells are text and are converted. A JSON ``null`` or an empty
  CSV cell counts as absent.
- Unknown fields are rejected (a misspelt ``ttl`` would otherwise be silently ignored).

Files: a UTF-8 byte-order mark at the start is dropped; blank lines are skipped and counted; a
line that is not UTF-8 is rejected; a CSV file's first non-blank line is its header and a row with
a different number of cells is rejected. Quoted CSV cells cannot span lines.

>>> validate_json_line('{"op":"insert","relation":"link","src":"a","dst":"b","cost":2}', line=1).key
('a', 'b')
>>> try:
...     validate_json_line('{"op":"insert","relation":"link","src":"a","dst":"b","cost":-3}', line=7)
... except InvalidRecordError as err:
...     print(err.reason)
line 7: link insert has cost -3.0; cost must be a finite number ≥ 0
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aspen.errors import InvalidRecordError

__all__ = [
    "OPS",
    "RELATIONS",
    "FIELDS",
    "UpdateRecord",
    "Rejection",
    "FileValidation",
    "invalid",
    "validate_record",
    "validate_json_line",
    "validate_csv_row",
    "validate_file",
]

OPS: tuple[str, ...] = ("insert", "delete")

#: Per relation: key fields, then the other value fields an insert carries.
RELATIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "link": (("src", "dst"), ("cost",)),
    "sensor": (("id",), ("x", "y")),
    "triggered": (("id",), ()),
    "region_seed": (("region", "id"), ()),
}

STRING_FIELDS: frozenset[str] = frozenset({"src", "dst", "id", "region"})
NUMBER_FIELDS: frozenset[str] = frozenset({"cost", "x", "y", "ttl_s"})

#: Every field a record may carry, in the column order of the CSV format.
FIELDS: tuple[str, ...] = (
    "op", "relation", "src", "dst", "cost", "id", "x", "y", "region", "ttl_s", "event_time",
)

_ISO_EXAMPLE = "2026-01-01T12:00:00Z"


@dataclass(frozen=True)
class UpdateRecord:
    """A valid, normalized update record (absent fields are ``None``; times are UTC-aware)."""

    op: str
    relation: str
    src: str | None = None
    dst: str | None = None
    cost: float | None = None
    id: str | None = None
    x: float | None = None
    y: float | None = None
    region: str | None = None
    ttl_s: float | None = None
    event_time: datetime | None = None

    @property
    def key(self) -> tuple:
        """The tuple key this record names (what a delete kills)."""
        return tuple(getattr(self, name) for name in RELATIONS[self.relation][0])

    @property
    def values(self) -> tuple:
        """The tuple values (``BaseFact.values`` layout); ``None`` for the non-key parts of a delete."""
        key_fields, other_fields = RELATIONS[self.relation]
        return tuple(getattr(self, name) for name in key_fields + other_fields)

    def as_dict(self) -> dict[str, Any]:
        """The record as a dict with every field of :data:`FIELDS`."""
        return {name: getattr(self, name) for name in FIELDS}


@dataclass(frozen=True)
class Rejection:
    """A record that goes to quarantine."""

    line: int
    raw: str
    reason: str
    code: str


@dataclass
class FileValidation:
    """The outcome of validating one file: valid records, rejections, blank lines skipped."""

    records: list[tuple[int, UpdateRecord]] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    blank: int = 0

    def reason_counts(self) -> dict[str, int]:
        """How many records were rejected per reason code."""
        counts: dict[str, int] = {}
        for rejection in self.rejections:
            counts[rejection.code] = counts.get(rejection.code, 0) + 1
        return counts


def invalid(code: str, reason: str, line: int | None = None) -> InvalidRecordError:
    """An :class:`InvalidRecordError` with ``reason`` prefixed by the line and a ``code`` attribute.

    >>> invalid("bad_cost", "cost is -1", line=3).reason
    'line 3: cost is -1'
    """
    prefix = f"line {line}: " if line is not None else ""
    err = InvalidRecordError(prefix + reason)
    err.code = code  # type: ignore[attr-defined]
    return err


def _shape(relation: str, op: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Required and optional fields of ``relation`` ``op``."""
    key_fields, other_fields = RELATIONS[relation]
    if op == "insert":
        return key_fields + other_fields, ("ttl_s", "event_time")
    return key_fields, ("event_time",)


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"{json.dumps(value)} (a boolean)"
    if isinstance(value, str):
        return f"{value!r} (a string)"
    if isinstance(value, int | float):
        return f"{value!r} (a number)"
    if value is None:
        return "null"
    return f"{json.dumps(value)} (a {'list' if isinstance(value, list) else 'JSON object'})"


def _number(name: str, value: Any, what: str, from_text: bool, line: int | None) -> float:
    rule = {
        "cost": "cost must be a finite number ≥ 0",
        "ttl_s": "ttl_s must be a finite number of seconds ≥ 0",
    }.get(name, f"{name} must be a finite number")
    if from_text:
        try:
            number = float(value)
        except ValueError:
            reason = f"{what} has {name} {value!r} (not a number); {rule}"
            raise invalid("wrong_type", reason, line) from None
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid("wrong_type", f"{what} has {name} {_describe(value)}; {rule}", line)
    else:
        number = float(value)
    code = {"cost": "bad_cost", "ttl_s": "bad_ttl"}.get(name, "bad_number")
    if not math.isfinite(number):
        raise invalid(code, f"{what} has {name} {number!r}; {rule}", line)
    if name in ("cost", "ttl_s") and number < 0:
        raise invalid(code, f"{what} has {name} {number!r}; {rule}", line)
    return number


def _identifier(name: str, value: Any, what: str, line: int | None) -> str:
    rule = f"{name} must be a non-empty string"
    if not isinstance(value, str):
        raise invalid("wrong_type", f"{what} has {name} {_describe(value)}; {rule}", line)
    if not value.strip():
        raise invalid("empty_string", f"{what} has an empty {name}; {rule}", line)
    return value


def _timestamp(value: Any, what: str, line: int | None) -> datetime:
    rule = f"event_time must be an ISO 8601 timestamp such as {_ISO_EXAMPLE}"
    if not isinstance(value, str):
        raise invalid("bad_event_time", f"{what} has event_time {_describe(value)}; {rule}", line)
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise invalid("bad_event_time", f"{what} has event_time {value!r}; {rule}", line) from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def validate_record(
    raw: Mapping[str, Any], *, line: int | None = None, from_text: bool = False
) -> UpdateRecord:
    """Validate one record given as a mapping; ``from_text`` when values are CSV cells (text).

    Raises :class:`InvalidRecordError` (with ``reason`` and ``code``) on any problem.

    >>> validate_record({"op": "delete", "relation": "sensor", "id": "s7"}).key
    ('s7',)
    >>> validate_record({"op": "delete", "relation": "link", "src": "a"}, line=2)
    Traceback (most recent call last):
    ...
    aspen.errors.InvalidRecordError: line 2: link delete is missing dst; a link delete needs src, dst (optional: event_time)
    """
    present = {
        name: value
        for name, value in raw.items()
        if value is not None and not (from_text and isinstance(value, str) and value == "")
    }
    for name in ("op", "relation"):
        if name not in present:
            raise invalid("missing_field", f"missing {name}; every record needs op and relation", line)
    op, relation = present["op"], present["relation"]
    if not isinstance(op, str) or op not in OPS:
        shown = _describe(op) if not isinstance(op, str) else repr(op)
        raise invalid("unknown_op", f"unknown op {shown}; op must be 'insert' or 'delete'", line)
    if not isinstance(relation, str) or relation not in RELATIONS:
        shown = _describe(relation) if not isinstance(relation, str) else repr(relation)
        known = ", ".join(RELATIONS)
        raise invalid(
            "unknown_relation", f"unknown relation {shown}; relation must be one of {known}", line
        )
    what = f"{relation} {op}"
    required, optional = _shape(relation, op)
    needs = f"a {what} needs {', '.join(required)} (optional: {', '.join(optional)})"
    for name in present:
        if name not in FIELDS:
            raise invalid(
                "unknown_field",
                f"{what} has unknown field {name!r}; known fields: {', '.join(FIELDS)}",
                line,
            )
    for name in present:
        if name in ("op", "relation") or name in required or name in optional:
            continue
        if name == "ttl_s" and op == "delete":
            raise invalid(
                "ttl_on_delete", f"{what} has ttl_s; only inserts expire, a delete takes no ttl_s", line
            )
        raise invalid("field_not_allowed", f"{what} does not take {name}; {needs}", line)
    for name in required:
        if name not in present:
            raise invalid("missing_field", f"{what} is missing {name}; {needs}", line)
    values: dict[str, Any] = {"op": op, "relation": relation}
    for name in FIELDS[2:]:
        if name not in present:
            continue
        value = present[name]
        if name in STRING_FIELDS:
            values[name] = _identifier(name, value, what, line)
        elif name in NUMBER_FIELDS:
            values[name] = _number(name, value, what, from_text, line)
        else:
            values[name] = _timestamp(value, what, line)
    return UpdateRecord(**values)


def validate_json_line(text: str, *, line: int | None = None) -> UpdateRecord:
    """Validate one JSON Lines line (one JSON object).

    >>> validate_json_line('[1]', line=4)
    Traceback (most recent call last):
    ...
    aspen.errors.InvalidRecordError: line 4: expected a JSON object, got a list; each line must be one JSON object
    """
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as err:
        raise invalid(
            "malformed_json",
            f"malformed JSON ({err.msg} at column {err.colno}); each line must be one JSON object",
            line,
        ) from None
    if not isinstance(parsed, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(parsed), "a number"
        )
        raise invalid(
            "not_an_object", f"expected a JSON object, got {kind}; each line must be one JSON object",
            line,
        )
    return validate_record(parsed, line=line)


def validate_csv_row(
    cells: list[str], header: list[str], *, line: int | None = None
) -> UpdateRecord:
    """Validate one CSV row against its file's header.

    >>> validate_csv_row(["insert", "sensor", "s1", "1.5", "2"], ["op", "relation", "id", "x", "y"]).x
    1.5
    """
    if len(cells) != len(header):
        raise invalid(
            "csv_column_count",
            f"CSV row has {len(cells)} cells but the header has {len(header)} columns "
            f"({','.join(header)})",
            line,
        )
    if len(set(header)) != len(header):
        dupes = sorted({name for name in header if header.count(name) > 1})
        raise invalid("csv_header", f"the CSV header repeats column(s) {', '.join(dupes)}", line)
    return validate_record(
        {name: cell.strip() for name, cell in zip(header, cells, strict=True)},
        line=line,
        from_text=True,
    )


def _lines(data: bytes) -> Iterator[tuple[int, str | None, bytes]]:
    """(line number, decoded text or None when not UTF-8, raw bytes) for each physical line."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    chunks = data.split(b"\n")
    if chunks and chunks[-1] == b"":
        chunks.pop()
    for number, chunk in enumerate(chunks, start=1):
        chunk = chunk.removesuffix(b"\r")
        try:
            yield number, chunk.decode("utf-8"), chunk
        except UnicodeDecodeError:
            yield number, None, chunk


def validate_file(data: bytes, fmt: str) -> FileValidation:
    """Validate a whole file's bytes; ``fmt`` is ``"jsonl"`` or ``"csv"``.

    >>> out = validate_file(b'{"op":"insert","relation":"triggered","id":"s1"}\\n\\n{"op":1}\\n', "jsonl")
    >>> len(out.records), out.blank, out.reason_counts()
    (1, 1, {'missing_field': 1})
    """
    if fmt not in ("jsonl", "csv"):
        raise ValueError(f"fmt must be 'jsonl' or 'csv', got {fmt!r}")
    result = FileValidation()
    header: list[str] | None = None
    for number, text, chunk in _lines(data):
        if text is None:
            raw = chunk.decode("utf-8", errors="replace")
            result.rejections.append(
                Rejection(number, raw, f"line {number}: not valid UTF-8 text; save the file as UTF-8",
                          "bad_encoding")
            )
            continue
        if not text.strip():
            result.blank += 1
            continue
        try:
            if fmt == "jsonl":
                record = validate_json_line(text, line=number)
            else:
                cells = next(csv.reader([text]))
                if header is None:
                    header = [cell.strip() for cell in cells]
                    continue
                record = validate_csv_row(cells, header, line=number)
        except InvalidRecordError as err:
            code = getattr(err, "code", "invalid")
            result.rejections.append(Rejection(number, text, err.reason, code))
            continue
        except csv.Error as err:
            result.rejections.append(
                Rejection(number, text, f"line {number}: unreadable CSV row ({err})", "csv_syntax")
            )
            continue
        result.records.append((number, record))
    return result
