"""Validation of raw update records (pure Python, no Spark).

One raw record (a JSON line, or a CSV row as a dict of cells) becomes either a normalized
:class:`UpdateRecord` or an :class:`~aspen.errors.InvalidRecordError` whose ``reason`` a person can
act on and whose ``code`` names the kind of problem (for counts and dashboards).

Rules ("Update records", docs/architecture.md):

- ``op`` is ``insert`` or ``delete``; ``relation`` is one of ``link``, ``sensor``, ``triggered``,
  ``region_seed``; both are required.
- An insert carries the tuple's values, a delete only the tuple's key:
  ``link`` insert ``src, dst, cost`` / delete ``src, dst``; ``sensor`` insert ``id, x, y`` /
  delete ``id``; ``triggered`` insert/delete ``id``; ``region_seed`` insert/delete ``region, id``.
  **A delete carrying non-key values (e.g. a link delete with ``cost``) is rejected**: a delete
  kills every live instance of the key, and a value there would suggest it only kills matching
  ones.
- Optional on every record: ``event_time`` (ISO 8601; no zone means UTC). Optional on inserts only:
  ``ttl_s`` (finite, ≥ 0 seconds); a delete with a ``ttl_s`` is rejected.
- Ids (``src``, ``dst``, ``id``, ``region``) are non-empty strings; ``cost`` is a finite number
  ≥ 0; ``x``/``y`` are finite numbers. JSON values keep their JSON type (``"id": 5`` and
  ``"cost": "2"`` are rejected); CSV cells are text and are converted. A JSON ``null`` or an empty
  CSV cell counts as absent.
- A sensor reading is ``{"op": "insert", "relation": "reading", "sensor": ID, "ts": ISO 8601,
  "value": NUMBER}``: all four required, nothing else; readings are only inserted
  (``reading_not_insert``); ``ts`` follows ``event_time``'s rules and bounds (``bad_ts``,
  ``ts_out_of_range``), ``value`` is a finite number of magnitude at most 1e15 (``bad_value``,
  ``number_out_of_range``). It becomes a :class:`ReadingRecord` (the ``readings`` table), not an
  update.
- Unknown fields are rejected (a misspelt ``ttl`` would otherwise be silently ignored).
- A JSON object names each field once (``duplicate_field``: ``json`` would keep the last
  value and silently drop the others).

Bounds: what maintenance can hold
---------------------------------
Apply computes ``expires_at = event_time + ttl_s`` in pandas, whose timestamps are nanoseconds
since 1970 (1677-09-21 … 2262-04-11) and whose timedeltas end at about 292 years; the JVM keeps
every id in memory. So a record is accepted only inside these bounds, each with its own code:

- ``event_time`` in [:data:`EARLIEST_EVENT_TIME`, :data:`LATEST_EVENT_TIME`) = [1970-01-01,
  2200-01-01) UTC (``event_time_out_of_range``; also a time whose UTC conversion overflows,
  such as ``9999-12-31T23:59:59-05:00``); no update stream predates the Unix epoch;
- ``ttl_s`` ≤ :data:`MAX_TTL_SECONDS` (ten years; ``ttl_out_of_range``), so the latest expiry,
  2210, stays well inside pandas' range (and ``ttl_s`` 0 stays valid: due at once);
- ``|cost|``, ``|x|``, ``|y|`` ≤ :data:`MAX_MAGNITUDE` = 1e15 (``number_out_of_range``): path
  sums and distances stay far from overflow (a number too large even for a float, too);
- ids at most :data:`MAX_ID_LENGTH` = 256 characters (``id_too_long``) and free of control
  characters (Unicode category Cc: NUL, tab, newline, DEL …) and unpaired surrogates (which no
  UTF-8 table can store) (``id_bad_character``): ids are shown in tables, paths and the CLI;
- a line at most :data:`MAX_LINE_BYTES` = 1 MiB (``record_too_long``; its ``raw`` keeps the
  first :data:`RAW_KEPT_CHARS` characters, the source file keeps the rest);
- JSON nested deeper than Python's parser recurses (``json_too_deep``) and integers longer than
  Python's int limit, 4300 digits (``number_too_long``), are rejected, not fatal.

Nothing in one record can fail a file: any other exception while reading a record quarantines it
as ``unreadable_record`` with the exception's type in the reason.

Files are read as a stream (:func:`validate_stream`, :func:`iter_lines`): memory does not
grow with a file's size, only with its longest line up to :data:`MAX_LINE_BYTES`;
:func:`validate_file` validates bytes already in memory the same way.
A UTF-8 byte-order mark at the start is dropped; blank lines are skipped and counted; a
line that is not UTF-8 is rejected; a CSV file's first non-blank line is its header and a row with
a different number of cells is rejected. Quoted CSV cells cannot span lines: a quoted cell
left open at the end of its line is rejected (``csv_syntax``).

Every reason code, in :data:`REASON_CODES`.

>>> validate_json_line('{"op":"insert","relation":"link","src":"a","dst":"b","cost":2}', line=1).key
('a', 'b')
>>> try:
...     validate_json_line('{"op":"insert","relation":"link","src":"a","dst":"b","cost":-3}',
...                        line=7)
... except InvalidRecordError as err:
...     print(err.reason)
line 7: link insert has cost -3.0; cost must be a finite number ≥ 0
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from aspen.errors import InvalidRecordError

__all__ = [
    "OPS",
    "RELATIONS",
    "FIELDS",
    "REASON_CODES",
    "EARLIEST_EVENT_TIME",
    "LATEST_EVENT_TIME",
    "MAX_TTL_SECONDS",
    "MAX_MAGNITUDE",
    "MAX_ID_LENGTH",
    "MAX_LINE_BYTES",
    "RAW_KEPT_CHARS",
    "UpdateRecord",
    "ReadingRecord",
    "READING_FIELDS",
    "Rejection",
    "FileValidation",
    "invalid",
    "validate_record",
    "validate_json_line",
    "validate_csv_row",
    "validate_file",
    "LineSource",
    "LineValidator",
    "iter_lines",
    "validate_stream",
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

#: The fields of a sensor reading, in the column order of the CSV format.
READING_FIELDS: tuple[str, ...] = ("op", "relation", "sensor", "ts", "value")
#: The relation name of a sensor reading (not a base relation: readings go to ``readings``).
READING = "reading"

_ISO_EXAMPLE = "2026-01-01T12:00:00Z"

#: The accepted ``event_time`` range, [earliest, latest): inside pandas' nanosecond timestamps
#: (1677–2262) with room for :data:`MAX_TTL_SECONDS` after the latest.
EARLIEST_EVENT_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_EVENT_TIME = datetime(2200, 1, 1, tzinfo=UTC)
#: The longest ``ttl_s``: ten years of 365.25 days (pandas' timedeltas end at about 292 years).
MAX_TTL_SECONDS = 10 * 365.25 * 86400.0
#: The largest ``|cost|``, ``|x|``, ``|y|``.
MAX_MAGNITUDE = 1e15
#: The longest id (``src``, ``dst``, ``id``, ``region``), in characters.
MAX_ID_LENGTH = 256
#: The longest line, in bytes (an update record is about a hundred).
MAX_LINE_BYTES = 1 << 20
#: Characters of an over-long line kept as its quarantine ``raw``.
RAW_KEPT_CHARS = 1024
#: Characters of a rejected value quoted in a reason.
_QUOTED_CHARS = 60
#: Control characters (Unicode category Cc) and unpaired surrogates (category Cs).
_BAD_ID_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")

#: Every quarantine reason code and the rule it names.
REASON_CODES: dict[str, str] = {
    "bad_encoding": "the line is not UTF-8 text",
    "record_too_long": f"the line is longer than {MAX_LINE_BYTES} bytes",
    "malformed_json": "the line is not JSON",
    "json_too_deep": "the JSON is nested too deeply to read",
    "number_too_long": f"a JSON integer has more than {sys.get_int_max_str_digits() or 4300} "
                       "digits",
    "not_an_object": "the JSON is not an object",
    "duplicate_field": "the JSON object names a field more than once",
    "csv_syntax": "the CSV row cannot be read",
    "csv_header": "the CSV header repeats a column",
    "csv_column_count": "the CSV row has another number of cells than the header",
    "missing_field": "a required field (op, relation, or one the relation needs) is absent",
    "unknown_op": "op is not insert or delete",
    "unknown_relation": "relation is not link, sensor, triggered, region_seed or reading",
    "unknown_field": "a field Aspen does not know",
    "field_not_allowed": "a known field this op and relation do not take",
    "ttl_on_delete": "a delete with ttl_s",
    "wrong_type": "a value of the wrong JSON type, or a CSV cell that is not a number",
    "empty_string": "an empty id",
    "id_too_long": f"an id longer than {MAX_ID_LENGTH} characters",
    "id_bad_character": "an id with a control character or an unpaired surrogate",
    "bad_cost": "cost not finite or < 0",
    "bad_number": "x or y not finite",
    "number_out_of_range": f"|cost|, |x| or |y| above {MAX_MAGNITUDE:g}",
    "bad_ttl": "ttl_s not finite or < 0",
    "ttl_out_of_range": f"ttl_s above {MAX_TTL_SECONDS:g} s (ten years)",
    "bad_event_time": "event_time not an ISO 8601 timestamp",
    "event_time_out_of_range": "event_time before 1970-01-01 or from 2200-01-01 UTC on",
    "reading_not_insert": "a reading whose op is not insert (readings are only inserted)",
    "bad_ts": "a reading's ts not an ISO 8601 timestamp",
    "ts_out_of_range": "a reading's ts before 1970-01-01 or from 2200-01-01 UTC on",
    "bad_value": "a reading's value not finite",
    "unreadable_record": "any other failure to read the record (the reason names it)",
}


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
        """The tuple values (``BaseFact.values`` layout); ``None`` for the non-key parts of a
        delete."""
        key_fields, other_fields = RELATIONS[self.relation]
        return tuple(getattr(self, name) for name in key_fields + other_fields)

    def as_dict(self) -> dict[str, Any]:
        """The record as a dict with every field of :data:`FIELDS`."""
        return {name: getattr(self, name) for name in FIELDS}


@dataclass(frozen=True)
class ReadingRecord:
    """A valid sensor reading: the sensor's id, its event time (UTC-aware) and its value."""

    sensor: str
    ts: datetime
    value: float
    op: str = "insert"
    relation: str = READING


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
    readings: list[tuple[int, ReadingRecord]] = field(default_factory=list)
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


def _clip(text: str) -> str:
    """``text`` cut to a length a reason can quote.

    >>> _clip("x" * 100)[-20:]
    'xx… (100 characters)'
    """
    if len(text) <= _QUOTED_CHARS:
        return text
    return f"{text[:_QUOTED_CHARS]}… ({len(text)} characters)"


def _quoted(value: str) -> str:
    """``value`` as a reason quotes it: its repr (control characters escaped), clipped."""
    return _clip(repr(value))


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"{json.dumps(value)} (a boolean)"
    if isinstance(value, str):
        return f"{_quoted(value)} (a string)"
    if isinstance(value, int) and abs(value) >= 10 ** _QUOTED_CHARS:
        return f"an integer of {len(str(abs(value)))} digits (a number)"
    if isinstance(value, int | float):
        return f"{value!r} (a number)"
    if value is None:
        return "null"
    kind = "list" if isinstance(value, list) else "JSON object"
    return f"{_clip(json.dumps(value))} (a {kind})"


def _number(name: str, value: Any, what: str, from_text: bool, line: int | None) -> float:
    rule = {
        "cost": "cost must be a finite number ≥ 0",
        "value": "a reading's value must be a finite number",
        "ttl_s": "ttl_s must be a finite number of seconds ≥ 0",
    }.get(name, f"{name} must be a finite number")
    if name == "ttl_s":
        bound, range_code = MAX_TTL_SECONDS, "ttl_out_of_range"
        range_rule = f"ttl_s must be at most {MAX_TTL_SECONDS:.0f} seconds (ten years)"
    else:
        bound, range_code = MAX_MAGNITUDE, "number_out_of_range"
        range_rule = f"|{name}| must be at most {MAX_MAGNITUDE:g}"
    if from_text:
        try:
            number = float(value)
        except ValueError:
            reason = f"{what} has {name} {_quoted(value)} (not a number); {rule}"
            raise invalid("wrong_type", reason, line) from None
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid("wrong_type", f"{what} has {name} {_describe(value)}; {rule}", line)
    else:
        try:
            number = float(value)
        except OverflowError:  # an integer beyond every float
            reason = f"{what} has {name} {_describe(value)}; {range_rule}"
            raise invalid(range_code, reason, line) from None
    code = {"cost": "bad_cost", "ttl_s": "bad_ttl", "value": "bad_value"}.get(name, "bad_number")
    if not math.isfinite(number):
        raise invalid(code, f"{what} has {name} {number!r}; {rule}", line)
    if name in ("cost", "ttl_s") and number < 0:
        raise invalid(code, f"{what} has {name} {number!r}; {rule}", line)
    if abs(number) > bound:
        raise invalid(range_code, f"{what} has {name} {number!r}; {range_rule}", line)
    return number


def _identifier(name: str, value: Any, what: str, line: int | None) -> str:
    rule = f"{name} must be a non-empty string"
    if not isinstance(value, str):
        raise invalid("wrong_type", f"{what} has {name} {_describe(value)}; {rule}", line)
    if not value.strip():
        raise invalid("empty_string", f"{what} has an empty {name}; {rule}", line)
    if len(value) > MAX_ID_LENGTH:
        raise invalid("id_too_long", f"{what} has a {name} of {len(value)} characters; ids are "
                      f"at most {MAX_ID_LENGTH} characters", line)
    bad = _BAD_ID_CHARACTER.search(value)
    if bad is not None:
        char = bad.group()
        kind = "an unpaired surrogate" if "\ud800" <= char <= "\udfff" else "a control character"
        raise invalid("id_bad_character", f"{what} has {name} {_quoted(value)} with {kind} "
                      f"(U+{ord(char):04X}) at position {bad.start()}; ids hold no control "
                      "characters or unpaired surrogates", line)
    return value


def _timestamp(value: Any, what: str, line: int | None, name: str = "event_time") -> datetime:
    bad, out_of_range = ("bad_ts", "ts_out_of_range") if name == "ts" else (
        "bad_event_time", "event_time_out_of_range")
    rule = f"{name} must be an ISO 8601 timestamp such as {_ISO_EXAMPLE}"
    if not isinstance(value, str):
        raise invalid(bad, f"{what} has {name} {_describe(value)}; {rule}", line)
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        reason = f"{what} has {name} {_quoted(value)}; {rule}"
        raise invalid(bad, reason, line) from None
    range_rule = (f"{name} must be from {EARLIEST_EVENT_TIME:%Y-%m-%d} up to (not including) "
                  f"{LATEST_EVENT_TIME:%Y-%m-%d} UTC")
    try:
        moment = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except OverflowError:  # e.g. 9999-12-31T23:59:59-05:00 is in the year 10000 in UTC
        moment = None
    if moment is None or not EARLIEST_EVENT_TIME <= moment < LATEST_EVENT_TIME:
        reason = f"{what} has {name} {_quoted(value)}; {range_rule}"
        raise invalid(out_of_range, reason, line)
    return moment


def _reading(present: Mapping[str, Any], from_text: bool, line: int | None) -> ReadingRecord:
    """A reading's record from its present fields (``relation`` is ``reading``).

    >>> _reading({"op": "insert", "relation": "reading", "sensor": "s7",
    ...           "ts": "2026-12-01T10:00:03Z", "value": 93.1}, False, 1).value
    93.1
    """
    what = "reading"
    needs = "a reading needs op insert, sensor, ts and value"
    if present["op"] != "insert":
        raise invalid("reading_not_insert",
                      f"a reading with op {_quoted(present['op'])}; readings are only inserted",
                      line)
    for name in present:
        if name not in READING_FIELDS:
            code = "field_not_allowed" if name in FIELDS else "unknown_field"
            raise invalid(code, f"{what} does not take {_quoted(name)}; {needs}", line)
    for name in READING_FIELDS[2:]:
        if name not in present:
            raise invalid("missing_field", f"{what} is missing {name}; {needs}", line)
    return ReadingRecord(
        sensor=_identifier("sensor", present["sensor"], what, line),
        ts=_timestamp(present["ts"], what, line, name="ts"),
        value=_number("value", present["value"], what, from_text, line))


def validate_record(
    raw: Mapping[str, Any], *, line: int | None = None, from_text: bool = False
) -> UpdateRecord | ReadingRecord:
    """Validate one record given as a mapping; ``from_text`` when values are CSV cells (text).

    Raises :class:`InvalidRecordError` (with ``reason`` and ``code``) on any problem.

    >>> validate_record({"op": "delete", "relation": "sensor", "id": "s7"}).key
    ('s7',)
    >>> validate_record({"op": "delete", "relation": "link", "src": "a"}, line=2)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aspen.errors.InvalidRecordError: line 2: link delete is missing dst; a link delete needs ...
    """
    present = {
        name: value
        for name, value in raw.items()
        if value is not None and not (from_text and isinstance(value, str) and value == "")
    }
    for name in ("op", "relation"):
        if name not in present:
            reason = f"missing {name}; every record needs op and relation"
            raise invalid("missing_field", reason, line)
    op, relation = present["op"], present["relation"]
    if relation == READING:
        return _reading(present, from_text, line)
    if not isinstance(op, str) or op not in OPS:
        shown = _describe(op) if not isinstance(op, str) else _quoted(op)
        raise invalid("unknown_op", f"unknown op {shown}; op must be 'insert' or 'delete'", line)
    if not isinstance(relation, str) or relation not in RELATIONS:
        shown = _describe(relation) if not isinstance(relation, str) else _quoted(relation)
        known = ", ".join((*RELATIONS, READING))
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
                f"{what} has unknown field {_quoted(name)}; known fields: {', '.join(FIELDS)}",
                line,
            )
    for name in present:
        if name in ("op", "relation") or name in required or name in optional:
            continue
        if name == "ttl_s" and op == "delete":
            reason = f"{what} has ttl_s; only inserts expire, a delete takes no ttl_s"
            raise invalid("ttl_on_delete", reason, line)
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


class _RepeatedNames(dict):
    """A JSON object that named a field more than once (``json`` keeps the last value)."""

    repeated: tuple[str, ...] = ()


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: the object as a dict, marked when a name repeats."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    marked = _RepeatedNames(obj)
    counts = Counter(name for name, _ in pairs)
    marked.repeated = tuple(sorted(name for name, count in counts.items() if count > 1))
    return marked


def validate_json_line(text: str, *, line: int | None = None) -> UpdateRecord | ReadingRecord:
    """Validate one JSON Lines line (one JSON object).

    >>> validate_json_line('[1]', line=4)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aspen.errors.InvalidRecordError: line 4: expected a JSON object, got a list; each line ...
    """
    try:
        parsed = json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError as err:
        raise invalid(
            "malformed_json",
            f"malformed JSON ({err.msg} at column {err.colno}); each line must be one JSON object",
            line,
        ) from None
    except RecursionError:
        raise invalid(
            "json_too_deep",
            "JSON nested too deeply to read; each line must be one flat JSON object", line,
        ) from None
    except ValueError as err:  # Python's limit on the digits of an int literal
        if "digits" not in str(err):
            raise
        raise invalid(
            "number_too_long",
            f"a JSON integer has more than {sys.get_int_max_str_digits()} digits; numbers are "
            f"at most {MAX_MAGNITUDE:g}", line,
        ) from None
    if not isinstance(parsed, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(parsed), "a number"
        )
        reason = f"expected a JSON object, got {kind}; each line must be one JSON object"
        raise invalid("not_an_object", reason, line)
    if isinstance(parsed, _RepeatedNames):  # which value was meant is anyone's guess
        names = _clip(", ".join(_quoted(name) for name in parsed.repeated))
        reason = f"the object names {names} more than once; each field appears at most once"
        raise invalid("duplicate_field", reason, line)
    return validate_record(parsed, line=line)


def validate_csv_row(
    cells: list[str], header: list[str], *, line: int | None = None
) -> UpdateRecord | ReadingRecord:
    """Validate one CSV row against its file's header.

    >>> header = ["op", "relation", "id", "x", "y"]
    >>> validate_csv_row(["insert", "sensor", "s1", "1.5", "2"], header).x
    1.5
    """
    if len(cells) != len(header):
        raise invalid(
            "csv_column_count",
            f"CSV row has {len(cells)} cells but the header has {len(header)} columns "
            f"({_clip(','.join(header))})",
            line,
        )
    if len(set(header)) != len(header):
        dupes = sorted(name for name, count in Counter(header).items() if count > 1)
        raise invalid("csv_header",
                      f"the CSV header repeats column(s) {_clip(', '.join(dupes))}", line)
    return validate_record(
        {name: cell.strip() for name, cell in zip(header, cells, strict=True)},
        line=line,
        from_text=True,
    )


def _csv_cells(text: str) -> list[str]:
    """The cells of one CSV line. A quoted cell still open at the end of the line is a
    :class:`csv.Error`: quoted cells cannot span lines, and read leniently the cell would be
    cut short at the line end and its record accepted.

    >>> _csv_cells('insert,triggered,"s1"')
    ['insert', 'triggered', 's1']
    >>> _csv_cells('insert,triggered,"s1')
    Traceback (most recent call last):
    ...
    _csv.Error: a quoted cell is not closed on its line (quoted cells cannot span lines)
    """
    cells = next(csv.reader([text]))
    try:
        next(csv.reader([text], strict=True))
    except csv.Error as err:
        if "unexpected end of data" in str(err):
            raise csv.Error("a quoted cell is not closed on its line (quoted cells cannot span "
                            "lines)") from None
    return cells


class LineSource(Protocol):
    """What :func:`iter_lines` reads: a binary stream's ``readline`` with a size limit."""

    def readline(self, size: int = -1, /) -> bytes: ...


#: One ``readline`` reads at most this much: the longest line, its ``\r`` and its ``\n``.
_READ_LIMIT = MAX_LINE_BYTES + 2
#: Bytes kept of an over-long line (its quarantine ``raw`` is cut to :data:`RAW_KEPT_CHARS`).
_KEPT_BYTES = 4 * RAW_KEPT_CHARS
_BOM = b"\xef\xbb\xbf"


def iter_lines(stream: LineSource) -> Iterator[tuple[int, bytes, int]]:
    """(line number, bytes, length) of each physical line of ``stream``, holding at most one
    line of :data:`MAX_LINE_BYTES` in memory: a UTF-8 byte-order mark at the start is dropped,
    ``\\n`` ends a line and a ``\\r`` before it is dropped; a last line without ``\\n`` counts.
    ``length`` is the line's length in bytes; a line longer than :data:`MAX_LINE_BYTES` comes as
    its first few KiB only (enough for its quarantine ``raw``), the rest is read and dropped.

    >>> import io
    >>> list(iter_lines(io.BytesIO(b"\\xef\\xbb\\xbfa\\r\\n\\nb")))
    [(1, b'a', 1), (2, b'', 0), (3, b'b', 1)]
    >>> [(n, len(kept), length) for n, kept, length in iter_lines(io.BytesIO(b"x" * (3 << 20)))]
    [(1, 4096, 3145728)]
    """
    number = 0
    first = True
    while True:
        piece = stream.readline(_READ_LIMIT)
        if first:
            first = False
            piece = piece.removeprefix(_BOM) if piece.startswith(_BOM) else piece
            if not piece:
                piece = stream.readline(_READ_LIMIT)
        if not piece:
            return
        number += 1
        kept, total, tail, over = piece, len(piece), piece[-2:], False
        while not tail.endswith(b"\n"):  # a line longer than one read, or the file's end
            more = stream.readline(_READ_LIMIT)
            if not more:
                break
            total += len(more)
            tail = (tail + more)[-2:]
            if not over:
                kept += more
                if len(kept) > _READ_LIMIT:  # over-long: keep its head only
                    kept, over = kept[:_KEPT_BYTES], True
        ended = tail.endswith(b"\n")
        carriage = (tail[:-1] if ended else tail).endswith(b"\r")
        length = total - ended - carriage
        if over:
            yield number, kept, length
        else:
            yield number, kept[:length], length


class LineValidator:
    """Validates the lines of one file in order (a CSV file's first non-blank line is its
    header): each line becomes a record, a reading, a :class:`Rejection`, or ``None`` (a blank
    line, or the CSV header). No line can make it raise.

    >>> check = LineValidator("jsonl")
    >>> check.line(1, b'{"op":"insert","relation":"triggered","id":"s1"}').key
    ('s1',)
    >>> check.line(2, b"  ") is None, check.line(3, b"{").code
    (True, 'malformed_json')
    """

    def __init__(self, fmt: str) -> None:
        if fmt not in ("jsonl", "csv"):
            raise ValueError(f"fmt must be 'jsonl' or 'csv', got {fmt!r}")
        self.fmt = fmt
        self.header: list[str] | None = None
        #: The number of the CSV header's line, once read.
        self.header_line: int | None = None

    def line(self, number: int, chunk: bytes, length: int | None = None
             ) -> UpdateRecord | ReadingRecord | Rejection | None:
        """The outcome of line ``number`` (``chunk`` without its line end; ``length`` its full
        length when ``chunk`` is only the head of an over-long line)."""
        length = len(chunk) if length is None else length
        if length > MAX_LINE_BYTES:
            kept = chunk[:_KEPT_BYTES].decode("utf-8", errors="replace")[:RAW_KEPT_CHARS]
            return Rejection(
                number, kept + "…",
                f"line {number}: {length} bytes long; a line is at most {MAX_LINE_BYTES} "
                f"bytes (the quarantine keeps its first {RAW_KEPT_CHARS} characters)",
                "record_too_long")
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError:
            raw = chunk.decode("utf-8", errors="replace")
            reason = f"line {number}: not valid UTF-8 text; save the file as UTF-8"
            return Rejection(number, raw, reason, "bad_encoding")
        if not text.strip():
            return None
        try:
            if self.fmt == "jsonl":
                return validate_json_line(text, line=number)
            cells = _csv_cells(text)
            if self.header is None:
                self.header = [cell.strip() for cell in cells]
                self.header_line = number
                return None
            return validate_csv_row(cells, self.header, line=number)
        except InvalidRecordError as err:
            return Rejection(number, text, err.reason, getattr(err, "code", "invalid"))
        except csv.Error as err:
            return Rejection(number, text, f"line {number}: unreadable CSV row ({err})",
                             "csv_syntax")
        except Exception as err:  # noqa: BLE001 - one record never fails its file
            return Rejection(
                number, text,
                f"line {number}: could not be read ({type(err).__name__}: {_clip(str(err))})",
                "unreadable_record")


def validate_stream(stream: LineSource, fmt: str
                    ) -> Iterator[tuple[int, UpdateRecord | ReadingRecord | Rejection | None]]:
    """Validate a file read from ``stream`` line by line, in memory independent of its size:
    (line number, outcome) per line, the outcome ``None`` for a blank line (a CSV header yields
    nothing). The same outcomes as :func:`validate_file` on the file's bytes.

    >>> import io
    >>> [type(o).__name__ for _, o in validate_stream(io.BytesIO(b'{"op":1}\\n\\n'), "jsonl")]
    ['Rejection', 'NoneType']
    """
    check = LineValidator(fmt)  # an unknown format fails here, before anything is read

    def outcomes() -> Iterator[tuple[int, UpdateRecord | ReadingRecord | Rejection | None]]:
        for number, chunk, length in iter_lines(stream):
            outcome = check.line(number, chunk, length)
            if outcome is None and check.header_line == number:
                continue
            yield number, outcome

    return outcomes()


def validate_file(data: bytes, fmt: str) -> FileValidation:
    """Validate a whole file's bytes; ``fmt`` is ``"jsonl"`` or ``"csv"``. No record can make
    it raise: whatever goes wrong reading one becomes that record's rejection.

    >>> text = b'{"op":"insert","relation":"triggered","id":"s1"}\\n\\n{"op":1}\\n'
    >>> out = validate_file(text, "jsonl")
    >>> len(out.records), out.blank, out.reason_counts()
    (1, 1, {'missing_field': 1})
    >>> validate_file(b"[" * 100000, "jsonl").reason_counts()
    {'json_too_deep': 1}
    """
    result = FileValidation()
    for number, outcome in validate_stream(io.BytesIO(data), fmt):
        if outcome is None:
            result.blank += 1
        elif isinstance(outcome, Rejection):
            result.rejections.append(outcome)
        elif isinstance(outcome, ReadingRecord):
            result.readings.append((number, outcome))
        else:
            result.records.append((number, outcome))
    return result
