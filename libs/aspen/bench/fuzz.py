"""Fuzzing the update-record grammar: hypothesis strategies over whole update files, and the
properties every file must have, for ``tests/properties/test_fuzz_records.py`` (a small run in
the suite) and ``benchmarks/fuzz_ingest.py`` (the long run). Needs ``hypothesis`` (a ``dev``
extra).

A drawn file (:class:`FuzzFile`) is JSON Lines or CSV, with or without a byte-order mark, with
``\\n`` or ``\\r\\n`` line ends, blank lines, and records of every kind (op × relation) near the
edges of every bound ("Update records", docs/architecture.md). Most lines carry *one* defect —
a missing, unknown or not-allowed field, a value of the wrong type, a number or time just past
its bound, an id too long or with a control character, NaN and infinities, integers too long
for Python, deep nesting, a repeated field name, a cut-off line, bytes that are not UTF-8, a
line over 1 MiB, a CSV row with a cell too many or a quote left open — and know the reason code
validation must give it; lines with several defects (a truncated CSV row) only have to end up
somewhere. :func:`check_validation` checks a file's outcome:

- nothing raises; every physical line is a record, a rejection or a blank line, once;
- each line has the outcome it was drawn with (accepted, or quarantined with its code);
- every code is one of :data:`~aspen.lake.validation.REASON_CODES`, every reason names its line
  and quotes at most a clipped value;
- every accepted record lies inside the bounds and, written back as JSON, validates to itself.

:func:`check_ingest` runs ``ingest_files`` (the library call of ``aspen ingest``) on a few files:
nothing raises, the ``updates`` and ``quarantine`` rows are what validation said, line by line,
and ingesting the same files again adds nothing. Whether accepted records can be maintained is
checked by the caller (the tests' in-process path of ingest → apply → maintain).

>>> fuzz = FuzzFile("jsonl", (FuzzLine(b'{"op": "delete", "relation": "triggered", "id": "s1"}',
...                                     ACCEPTED),
...                            FuzzLine(b'{"op": "delete", "op": "insert"}', "duplicate_field"),
...                            FuzzLine(b"  ", BLANK)))
>>> outcome = check_validation(fuzz)
>>> outcome.accepted, dict(outcome.quarantined), outcome.blank
(1, {'duplicate_field': 1}, 1)
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from aspen.lake.validation import (
    EARLIEST_EVENT_TIME,
    FIELDS,
    LATEST_EVENT_TIME,
    MAX_ID_LENGTH,
    MAX_LINE_BYTES,
    MAX_MAGNITUDE,
    MAX_TTL_SECONDS,
    RAW_KEPT_CHARS,
    REASON_CODES,
    RELATIONS,
    FileValidation,
    UpdateRecord,
    validate_file,
    validate_json_line,
)

if TYPE_CHECKING:  # pragma: no cover
    from aspen.settings import Settings

__all__ = [
    "ACCEPTED", "ANY", "BLANK", "MAX_REASON_CHARS", "FileOutcome", "FuzzFile", "FuzzLine",
    "Raw", "check_ingest", "check_validation", "files", "record_json", "record_lines", "records",
]

#: The outcomes a line can be drawn with, besides a reason code.
ACCEPTED, BLANK, ANY = "accepted", "blank", "any"
#: The longest reason: a reason quotes a clipped value (60 characters), never a whole line.
MAX_REASON_CHARS = 300


@dataclass(frozen=True)
class Raw:
    """A JSON value written as this text (an integer too long for ``json.dumps``, nesting)."""

    text: str


@dataclass(frozen=True)
class FuzzLine:
    """One physical line of a fuzzed file and the outcome it must have: :data:`ACCEPTED`,
    :data:`BLANK`, a reason code, or :data:`ANY` (several defects: anything documented)."""

    data: bytes
    expected: str


@dataclass(frozen=True)
class FuzzFile:
    """A fuzzed update file: its lines (a CSV file's header among them, not checked)."""

    fmt: str
    lines: tuple[FuzzLine, ...]
    bom: bool = False
    line_end: bytes = b"\n"
    final_line_end: bool = True
    header_lines: int = 0  # 1 for CSV: its first line is the header

    def data(self) -> bytes:
        """The file's bytes."""
        body = self.line_end.join(line.data for line in self.lines)
        if self.final_line_end and self.lines:
            body += self.line_end
        return (b"\xef\xbb\xbf" if self.bom else b"") + body

    def expected(self) -> dict[int, str]:
        """Line number → the outcome it must have (the header left out)."""
        return {number: line.expected
                for number, line in enumerate(self.lines, start=1) if number > self.header_lines}


# --- values: each strategy draws (value, code), code None for a valid value ----------------

_ID_CHARS = st.characters(exclude_categories=("Cc", "Cs"))
_ODD_IDS = ["名前", "🙂", "e\u0301", "\u202eabc", "a\u200bb", "\ufeffx", "\uffff", "a b", '"q"',
            "x,y", "{}", "null", "NaN", "-0", "line\u2028sep", "\U0010fffd"]
#: Control characters that are not whitespace (str.strip leaves them, so CSV keeps them too).
_HARD_CONTROLS = ["\x00", "\x01", "\x1b", "\x7f", "\x9f", "\x08"]
_SOFT_CONTROLS = ["\t", "\n", "\r", "\x0b", "\x1c", "\x85"]  # whitespace: kept inside JSON ids
_SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]


def _csv_safe(text: str) -> bool:
    """Whether a CSV cell holds ``text`` as it is: stripping keeps it, it stays on its line."""
    return text == text.strip() and "\n" not in text and "\r" not in text and text != ""


def _not_blank(text: str) -> bool:
    return text.strip() != ""


#: Short ids (one control character goes in), ids just too long.
_SHORT_IDS = st.text(_ID_CHARS, min_size=1, max_size=12).filter(_not_blank)
_LONG_IDS = st.one_of(st.text(_ID_CHARS, min_size=MAX_ID_LENGTH + 1, max_size=MAX_ID_LENGTH + 40),
                      st.sampled_from(["n" * 100_000])).filter(_not_blank)
_WRONG_ID_TYPES = st.one_of(st.integers(), st.floats(), st.booleans(),
                            st.lists(st.integers(), max_size=3),
                            st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@functools.cache
def _valid_ids(in_csv: bool) -> st.SearchStrategy[str]:
    ids = st.one_of(
        st.sampled_from(["a", "b", "c", "s1", "r1", "n1"]),  # keys that meet
        st.text(_ID_CHARS, min_size=1, max_size=12),
        st.text(_ID_CHARS, min_size=MAX_ID_LENGTH - 2, max_size=MAX_ID_LENGTH),
        st.sampled_from(_ODD_IDS),
    ).filter(_not_blank)
    return ids.filter(_csv_safe) if in_csv else ids


@st.composite
def _invalid_ids(draw: st.DrawFn, in_csv: bool) -> tuple[Any, str]:
    kinds = ["long", "control"] if in_csv else ["empty", "long", "control", "type"]
    kind = draw(st.sampled_from(kinds))
    if kind == "empty":
        return draw(st.sampled_from(["", " ", "   ", "\u3000", "\xa0", "\u2003 "])), "empty_string"
    if kind == "long":
        value = draw(_LONG_IDS)
        return ("n" + value + "n" if in_csv else value), "id_too_long"
    if kind == "control":
        base = draw(_SHORT_IDS)
        pool = _HARD_CONTROLS if in_csv else _HARD_CONTROLS + _SOFT_CONTROLS + _SURROGATES
        char = draw(st.sampled_from(pool))
        at = draw(st.integers(0, len(base)))
        value = base[:at] + char + base[at:]
        return ("n" + value + "n" if in_csv else value), "id_bad_character"
    return draw(_WRONG_ID_TYPES), "wrong_type"


_MAX_FLOAT = 1.7976931348623157e308
_ABOVE = math.nextafter(MAX_MAGNITUDE, math.inf)
_ABOVE_TTL = math.nextafter(MAX_TTL_SECONDS, math.inf)


@functools.cache
def _valid_numbers(name: str) -> st.SearchStrategy[float | int]:
    if name == "cost":
        return st.one_of(st.floats(0, MAX_MAGNITUDE), st.integers(0, 10 ** 15),
                         st.sampled_from([0, 0.0, -0.0, 5e-324, MAX_MAGNITUDE, 10 ** 15, 2.5]))
    if name == "ttl_s":
        return st.one_of(st.floats(0, MAX_TTL_SECONDS), st.integers(0, int(MAX_TTL_SECONDS)),
                         st.sampled_from([0, 5e-324, MAX_TTL_SECONDS,
                                          math.nextafter(MAX_TTL_SECONDS, 0)]))
    return st.one_of(st.floats(-MAX_MAGNITUDE, MAX_MAGNITUDE),
                     st.integers(-10 ** 15, 10 ** 15),
                     st.sampled_from([MAX_MAGNITUDE, -MAX_MAGNITUDE, 10 ** 15, -(10 ** 15), -0.0,
                                      5e-324, -5e-324]))


def _number_text(value: float | int, draw: st.DrawFn) -> str:
    """A CSV cell for a number: as Python writes it, in exponent form, or padded."""
    style = draw(st.sampled_from(["repr", "exp", "pad"]))
    if style == "exp" and isinstance(value, float) and math.isfinite(value):
        text = f"{value:.17e}"
    else:
        text = repr(value)
    return f" {text} " if style == "pad" else text


@functools.cache
def _above(name: str) -> st.SearchStrategy[float | int]:
    """Magnitudes just past the bound of field ``name``, up to the largest float and beyond."""
    above, bound = (_ABOVE_TTL, MAX_TTL_SECONDS) if name == "ttl_s" else (_ABOVE, MAX_MAGNITUDE)
    return st.one_of(st.floats(above, _MAX_FLOAT), st.sampled_from([above]),
                     st.integers(int(bound) + 1, 10 ** 300))


_WRONG_NUMBER_TYPES = st.one_of(st.booleans(), st.text(max_size=5),
                                st.lists(st.floats(), max_size=2),
                                st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@st.composite
def _invalid_numbers(draw: st.DrawFn, name: str, in_csv: bool) -> tuple[Any, str]:
    bad = {"cost": "bad_cost", "ttl_s": "bad_ttl"}.get(name, "bad_number")
    out_of_range = "ttl_out_of_range" if name == "ttl_s" else "number_out_of_range"
    bound = MAX_TTL_SECONDS if name == "ttl_s" else MAX_MAGNITUDE
    signed = name in ("x", "y")
    kinds = ["nonfinite", "range", "type"] + ([] if signed else ["negative"])
    if not in_csv:
        kinds += ["huge_int", "too_long"]
    kind = draw(st.sampled_from(kinds))
    sign = draw(st.sampled_from([1, -1])) if signed else 1
    if kind == "nonfinite":
        value: Any = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
        if in_csv:
            return draw(st.sampled_from([repr(value), repr(value).upper(), "Infinity", "-inf",
                                         "1" * 5000])), bad
        return value, bad
    if kind == "negative":
        value = -draw(st.floats(5e-324, bound))
        return (_number_text(value, draw) if in_csv else value), bad
    if kind == "range":
        value = sign * draw(_above(name))
        return (_number_text(value, draw) if in_csv else value), out_of_range
    if kind == "huge_int":  # beyond every float, within Python's digit limit
        return sign * draw(st.integers(10 ** 309, 10 ** 4000)), out_of_range
    if kind == "too_long":  # beyond Python's digit limit: json cannot even read it
        digits = draw(st.integers(4301, 6000))
        return Raw(("-" if sign < 0 else "") + "1" * digits), "number_too_long"
    if in_csv:
        return draw(st.sampled_from(["abc", "2 ms", "0x10", "1,5", "true", "--1", "1e", "½",
                                     "1 000"])), "wrong_type"
    return draw(_WRONG_NUMBER_TYPES), "wrong_type"


_ZONES = [UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12)),
          timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=23, minutes=59)),
          None]
_GARBAGE_TIMES = ["noon", "2026-13-01", "2026-02-30T00:00", "2026-01-01T25:00", "yesterday",
                  "2026/01/01", "1700000000", "2026-01-01T12:00:00 UTC", "T12:00", "2026-001",
                  "12:00", "2026-01-01T12:00:00+24:00", "2026-1-1", "+2026-01-01",
                  "2026-12-31T23:59:60"]
_OUT_OF_RANGE_TIMES = ["1969-12-31T23:59:59.999999Z", "1970-01-01T00:59:59+01:00",
                       "2200-01-01T00:00:00Z", "2200-01-01", "2199-12-31T23:00:00-05:00",
                       "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+01:00", "0001-01-01",
                       "9999-12-31T23:59:59.999999"]
_EDGE_TIMES = ["1970-01-01T00:00:00Z", "1970-01-01T01:00:00+01:00", "2199-12-31T23:59:59.999999Z",
               "2200-01-01T04:59:59+05:00", "20260101T120000Z", "2026-W01-1T00:00",
               "2026-01-01", "2026-01-01T12", "2026-01-01t12:00", "2026-01-01 12:00:00.1234567"]


def _render_time(moment: datetime, zone: timezone | None, draw: st.DrawFn) -> str:
    local = moment.astimezone(zone) if zone is not None else moment.replace(tzinfo=None)
    spec = draw(st.sampled_from(["auto", "seconds", "milliseconds", "microseconds", "minutes"]))
    sep = draw(st.sampled_from(["T", " "]))
    text = local.isoformat(sep=sep, timespec=spec)
    if draw(st.booleans()):
        text = text.replace("+00:00", "Z")
    return text


_INSTANTS = st.one_of(
    st.datetimes(min_value=datetime(1970, 1, 1),
                 max_value=datetime(2199, 12, 31, 23, 59, 59, 999999)),
    st.sampled_from([datetime(1970, 1, 1), datetime(2199, 12, 31, 23, 59, 59, 999999)]))
_OUTSIDE = st.one_of(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(1969, 12, 31)),
                     st.datetimes(min_value=datetime(2200, 1, 2), max_value=datetime(9999, 12, 30)))
_WRONG_TIME_TYPES = st.one_of(st.integers(), st.floats(), st.booleans(),
                              st.lists(st.text(), max_size=2))


@st.composite
def _valid_times(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(_EDGE_TIMES))
    moment = draw(_INSTANTS).replace(tzinfo=UTC)
    return _render_time(moment, draw(st.sampled_from(_ZONES)), draw)


@st.composite
def _invalid_times(draw: st.DrawFn, in_csv: bool) -> tuple[Any, str]:
    kinds = ["garbage", "range", "range_drawn"] + ([] if in_csv else ["type"])
    kind = draw(st.sampled_from(kinds))
    if kind == "garbage":
        return draw(st.sampled_from(_GARBAGE_TIMES + ([] if in_csv else ["", "   "]))), \
            "bad_event_time"
    if kind == "range":
        return draw(st.sampled_from(_OUT_OF_RANGE_TIMES)), "event_time_out_of_range"
    if kind == "range_drawn":
        moment = draw(_OUTSIDE).replace(tzinfo=UTC)
        return _render_time(moment, draw(st.sampled_from(_ZONES)), draw), \
            "event_time_out_of_range"
    return draw(_WRONG_TIME_TYPES), "bad_event_time"


# --- records --------------------------------------------------------------------------------

def _shape(op: str, relation: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Required and optional fields (as validation has them)."""
    keys, others = RELATIONS[relation]
    if op == "insert":
        return keys + others, ("ttl_s", "event_time")
    return keys, ("event_time",)


def _value_of(name: str, in_csv: bool, draw: st.DrawFn) -> Any:
    """A valid value of field ``name`` (a CSV cell's text in CSV)."""
    if name in ("src", "dst", "id", "region"):
        return draw(_valid_ids(in_csv))
    if name in ("cost", "x", "y", "ttl_s"):
        value = draw(_valid_numbers(name))
        return _number_text(value, draw) if in_csv else value
    return draw(_valid_times())


def _bad_value_of(name: str, in_csv: bool, draw: st.DrawFn) -> tuple[Any, str]:
    if name in ("src", "dst", "id", "region"):
        return draw(_invalid_ids(in_csv))
    if name in ("cost", "x", "y", "ttl_s"):
        return draw(_invalid_numbers(name, in_csv))
    return draw(_invalid_times(in_csv))


_UNKNOWN_NAMES = ["ttl", "weight", "Cost", "colour", "\u0000", "🙂", "k" * 500_000, "ttl_S",
                  "event-time", "op2"]
_ANY_VALUES = st.one_of(st.integers(), st.floats(), st.booleans(), st.text(max_size=8),
                        st.lists(st.integers(), max_size=2))
_BAD_OPS = ["INSERT", "Insert", "upsert", "del", "\u0000insert", "x" * 500_000, "inser t"]
_BAD_RELATIONS = ["links", "Link", "sensors", "trigger", "region", "route", "x" * 500_000]


#: Per format (``True``: CSV, whose cells are stripped text): the bad ops and relations,
#: the unknown field names (a CSV header cell over the csv module's limit would spoil the
#: header).
_BAD_OP_VALUES = {
    True: st.sampled_from(_BAD_OPS),
    False: st.one_of(st.sampled_from(_BAD_OPS + ["", " insert", "delete "]),
                     st.sampled_from([1, 0, True, False, [], {}, ["insert"], 1.5])),
}
_BAD_RELATION_VALUES = {
    True: st.sampled_from(_BAD_RELATIONS),
    False: st.one_of(st.sampled_from(_BAD_RELATIONS + ["", "link "]),
                     _ANY_VALUES.filter(lambda v: not (isinstance(v, str) and v in RELATIONS))),
}
_NAMES = st.one_of(st.sampled_from(_UNKNOWN_NAMES), st.text(max_size=6)).filter(
    lambda name: name not in FIELDS)
_UNKNOWN_NAME_VALUES = {
    True: _NAMES.filter(lambda name: _csv_safe(name) and len(name) < csv.field_size_limit()),
    False: _NAMES,
}
_CELL_TEXT = st.text(min_size=1, max_size=5).filter(_csv_safe)


@st.composite
def records(draw: st.DrawFn, in_csv: bool = False) -> tuple[list[tuple[str, Any]], str]:
    """A record as (name, value) pairs (a name may repeat) and the code it must get (``None``
    for a valid one): every op × relation, valid or with one defect. In CSV the values are the
    cells' text (``None``: an empty cell)."""
    op = draw(st.sampled_from(["insert", "insert", "delete"]))
    relation = draw(st.sampled_from(list(RELATIONS)))
    required, optional = _shape(op, relation)
    fields: dict[str, Any] = {"op": op, "relation": relation}
    for name in required:
        fields[name] = _value_of(name, in_csv, draw)
    for name in optional:
        if draw(st.booleans()):
            fields[name] = _value_of(name, in_csv, draw)
    defects = ["none"] * 4 + ["missing", "op", "relation", "unknown", "not_allowed"] + \
        ["value"] * 6 + ([] if in_csv else ["repeat"])
    defect = draw(st.sampled_from(defects))
    code: str = ACCEPTED
    repeat: tuple[str, Any] | None = None
    if defect == "missing":
        name = draw(st.sampled_from(["op", "relation", *required]))
        if draw(st.booleans()):
            del fields[name]
        else:  # null, or an empty (blank) CSV cell: absent as well
            fields[name] = draw(st.sampled_from(["", "  "])) if in_csv else None
        code = "missing_field"
    elif defect == "op":
        fields["op"], code = draw(_BAD_OP_VALUES[in_csv]), "unknown_op"
    elif defect == "relation":
        fields["relation"], code = draw(_BAD_RELATION_VALUES[in_csv]), "unknown_relation"
    elif defect == "unknown":
        name = draw(_UNKNOWN_NAME_VALUES[in_csv])
        value = draw(_CELL_TEXT) if in_csv else draw(_ANY_VALUES)
        fields[name], code = value, "unknown_field"
    elif defect == "not_allowed":
        allowed = {"op", "relation", *required, *optional}
        spare = [name for name in FIELDS if name not in allowed]
        name = draw(st.sampled_from(spare))
        fields[name] = "1" if in_csv else draw(_ANY_VALUES)
        code = "ttl_on_delete" if name == "ttl_s" and op == "delete" else "field_not_allowed"
    elif defect == "value":
        name = draw(st.sampled_from([n for n in fields if n not in ("op", "relation")]))
        fields[name], code = _bad_value_of(name, in_csv, draw)
    elif defect == "repeat":
        name = draw(st.sampled_from(list(fields)))
        repeat = (name, draw(st.one_of(st.just(fields[name]), _ANY_VALUES)))
        code = "duplicate_field"
    pairs = list(fields.items())
    if draw(st.booleans()):
        pairs = draw(st.permutations(pairs))
    if repeat is not None:
        pairs.insert(draw(st.integers(0, len(pairs))), repeat)
    return pairs, code


def _json_value(value: Any, ascii_only: bool) -> str:
    if isinstance(value, Raw):
        return value.text
    return json.dumps(value, ensure_ascii=ascii_only, allow_nan=True)


def record_json(pairs: Iterable[tuple[str, Any]], ascii_only: bool = False) -> str:
    """One JSON object from (name, value) pairs, names repeated as they come.

    >>> record_json([("op", "insert"), ("op", Raw("1" * 3))])
    '{"op": "insert", "op": 111}'
    """
    return "{" + ", ".join(f"{json.dumps(name, ensure_ascii=ascii_only)}: "
                           f"{_json_value(value, ascii_only)}" for name, value in pairs) + "}"


def _encoded(text: str) -> bytes | None:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only its \\u escape can be written
        return None


@st.composite
def _damaged(draw: st.DrawFn, data: bytes, expected: str, in_csv: bool) -> FuzzLine:
    """``data`` as it is, cut short, with bytes that are not UTF-8, or padded past 1 MiB."""
    damage = draw(st.sampled_from(["none"] * 16 + ["truncate"] * 2 + ["bytes"] * 2 + ["long"]))
    if damage == "truncate" and len(data) > 1:
        cut = data[:draw(st.integers(1, len(data) - 1))]
        try:
            text = cut.decode("utf-8")
        except UnicodeDecodeError:
            return FuzzLine(cut, "bad_encoding")
        if not text.strip():
            return FuzzLine(cut, BLANK)
        # in CSV a cut row may still be a record; in JSON the cut may end in an integer
        # too long to read, which the parser meets first
        return FuzzLine(cut, ANY if in_csv or expected == "number_too_long" else "malformed_json")
    if damage == "bytes":
        junk = draw(st.sampled_from([b"\xff", b"\xfe", b"\xc0\x80", b"\xed\xa0\x80", b"\x80",
                                     b"\xe2\x82", b"\xf4\x90\x80\x80", b"\xc3"]))
        at = draw(st.integers(0, len(data)))
        spoilt = data[:at] + junk + data[at:]
        try:
            spoilt.decode("utf-8")
        except UnicodeDecodeError:
            return FuzzLine(spoilt, "bad_encoding")
        return FuzzLine(spoilt, ANY)
    if damage == "long":
        over = draw(st.sampled_from([1, 2, 1000]))
        pad = b" " * (MAX_LINE_BYTES + over - len(data))
        return FuzzLine(data + pad if not in_csv else pad + data, "record_too_long")
    return FuzzLine(data, expected)


_NOT_OBJECTS = ["[1, 2]", '"a string"', "42", "-1e999", "null", "true", "[]",
                '[{"op": "insert"}]', '"{\\"op\\": \\"insert\\"}"']


@st.composite
def _json_line(draw: st.DrawFn) -> FuzzLine:
    kind = draw(st.sampled_from(["record"] * 30 + ["not_object", "deep", "deep_value",
                                                  "malformed", "exact", "blank", "blank"]))
    if kind == "not_object":
        return FuzzLine(draw(st.sampled_from(_NOT_OBJECTS)).encode(), "not_an_object")
    if kind == "deep":
        depth = draw(st.integers(100_000, 200_000))
        return FuzzLine(b"[" * depth + b"]" * depth, "json_too_deep")
    if kind == "deep_value":
        depth = draw(st.integers(100_000, 120_000))
        nested = Raw("[" * depth + "]" * depth)
        line = record_json([("op", "insert"), ("relation", "triggered"), ("id", nested)])
        return FuzzLine(line.encode(), "json_too_deep")
    if kind == "malformed":
        text = draw(st.sampled_from(["garbage", "{", "}", "{op: insert}", "{'op': 'insert'}",
                                     '{"op": "insert",}', '{"op" "insert"}', "[1,]", "nan",
                                     '{"op": "insert"} {"op": "delete"}', "\x00", "{\"a\": 01}"]))
        return FuzzLine(text.encode(), "malformed_json")
    if kind == "blank":
        return FuzzLine(draw(st.sampled_from(["", " ", "\t", "  \t ", "\u3000", "\r"])).encode(),
                        BLANK)
    if kind == "exact":  # exactly MAX_LINE_BYTES is not too long: its unknown field is the defect
        head = '{"op": "insert", "relation": "triggered", "id": "s1", "pad": "'
        over = draw(st.sampled_from([0, 1]))
        line = head + "x" * (MAX_LINE_BYTES + over - len(head) - 2) + '"}'
        return FuzzLine(line.encode(), "record_too_long" if over else "unknown_field")
    pairs, code = draw(records(in_csv=False))
    ascii_only = draw(st.booleans())
    data = _encoded(record_json(pairs, ascii_only)) or record_json(pairs, True).encode()
    return draw(_damaged(data, code, in_csv=False))


def _csv_row(cells: list[str], quote_all: bool) -> bytes:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL,
               lineterminator="").writerow(cells)
    return out.getvalue().encode("utf-8")


@st.composite
def _csv_file_lines(draw: st.DrawFn) -> tuple[FuzzLine, ...]:
    drawn = draw(st.lists(st.one_of(records(in_csv=True), st.sampled_from(["blank", "cells",
                                                                              "open_quote"])),
                          min_size=1, max_size=8))
    columns = list(FIELDS)
    for item in drawn:
        if isinstance(item, tuple):
            columns += [name for name, _ in item[0] if name not in columns]
    columns = list(draw(st.permutations(columns)))
    repeated = draw(st.integers(0, 9)) == 0
    if repeated:
        columns.append(draw(st.sampled_from(columns)))
    quote_all = draw(st.booleans())
    header = FuzzLine(_csv_row(columns, quote_all), ANY)
    lines = [header]
    for item in drawn:
        if item == "blank":
            lines.append(FuzzLine(draw(st.sampled_from([b"", b"  ", b"\t"])), BLANK))
            continue
        if isinstance(item, tuple):
            pairs, code = item
            values = dict(pairs)
        else:  # a row of a valid record, then broken
            values, code = {"op": "insert", "relation": "triggered", "id": "s1"}, ACCEPTED
        cells = ["" if values.get(name) is None else str(values[name]) for name in columns]
        if repeated and item != "cells":
            code = "csv_header"
        data = _csv_row(cells, quote_all)
        if item == "cells":
            extra = draw(st.sampled_from([-1, 1, 3]))
            data = _csv_row(cells[:extra] if extra < 0 else cells + ["x"] * extra, quote_all)
            code = "csv_column_count"
        elif item == "open_quote":
            data = data + b',"open'
            code = "csv_syntax"
        if any(len(cell) > csv.field_size_limit() for cell in cells):
            code = "csv_syntax"  # the csv module reads no cell longer than its limit
        lines.append(draw(_damaged(data, code, in_csv=True)))
    return tuple(lines)


@st.composite
def files(draw: st.DrawFn, max_lines: int = 10) -> FuzzFile:
    """A fuzzed update file: JSON Lines (up to ``max_lines`` lines) or CSV (a header and up to
    eight rows), with its byte-order mark and line ends."""
    fmt = draw(st.sampled_from(["jsonl", "jsonl", "csv"]))
    bom = draw(st.integers(0, 4)) == 0
    line_end = draw(st.sampled_from([b"\n", b"\n", b"\r\n"]))
    final = draw(st.booleans())
    if fmt == "csv":
        lines = draw(_csv_file_lines())
        return FuzzFile("csv", lines, bom, line_end, final or lines[-1].data == b"",
                        header_lines=1)
    lines = tuple(draw(st.lists(_json_line(), min_size=1, max_size=max_lines)))
    # an empty last line with no line end after it is no line at all
    return FuzzFile("jsonl", lines, bom, line_end, final or lines[-1].data == b"")


# --- the properties ------------------------------------------------------------------------

@dataclass
class FileOutcome:
    """What validation made of a fuzzed file."""

    validation: FileValidation
    accepted: int = 0
    blank: int = 0
    quarantined: Counter[str] = field(default_factory=Counter)


def record_lines(records: Iterable[UpdateRecord]) -> list[str]:
    """Accepted records written back as JSON Lines (validation normalized them)."""
    out = []
    for record in records:
        values = {name: value for name, value in record.as_dict().items() if value is not None}
        if record.event_time is not None:
            values["event_time"] = record.event_time.isoformat()
        out.append(json.dumps(values, ensure_ascii=False))
    return out


def _check_record(record: UpdateRecord, line: int) -> None:
    where = f"line {line}: {record}"
    assert record.op in ("insert", "delete") and record.relation in RELATIONS, where
    required, optional = _shape(record.op, record.relation)
    for name in FIELDS[2:]:
        value = getattr(record, name)
        assert (value is not None) == (name in required) or name in optional, (where, name)
    for name in ("src", "dst", "id", "region"):
        value = getattr(record, name)
        if value is not None:
            assert isinstance(value, str) and value.strip() and len(value) <= MAX_ID_LENGTH, where
            assert not any(ch < " " or "\x7f" <= ch <= "\x9f" or "\ud800" <= ch <= "\udfff"
                           for ch in value), where
    for name in ("cost", "x", "y"):
        value = getattr(record, name)
        if value is not None:
            assert isinstance(value, float) and math.isfinite(value), where
            assert abs(value) <= MAX_MAGNITUDE, where
    assert record.cost is None or record.cost >= 0, where
    assert record.ttl_s is None or 0 <= record.ttl_s <= MAX_TTL_SECONDS, where
    if record.event_time is not None:
        assert record.event_time.tzinfo is not None, where
        assert EARLIEST_EVENT_TIME <= record.event_time < LATEST_EVENT_TIME, where
    [again] = record_lines([record])
    assert validate_json_line(again, line=line) == record, (where, "not stable when written back")


def check_validation(fuzz: FuzzFile) -> FileOutcome:
    """Validate ``fuzz`` and check every property of the module docstring; the outcome."""
    result = validate_file(fuzz.data(), fuzz.fmt)
    outcome = FileOutcome(result, accepted=len(result.records), blank=result.blank,
                          quarantined=Counter(r.code for r in result.rejections))
    expected = fuzz.expected()
    got: dict[int, str] = {}
    for line, record in result.records:
        assert line not in got, f"line {line} accepted twice"
        got[line] = ACCEPTED
        _check_record(record, line)
    for rejection in result.rejections:
        assert rejection.line not in got, f"line {rejection.line} has two outcomes"
        got[rejection.line] = rejection.code
        assert rejection.code in REASON_CODES, rejection
        assert rejection.reason.startswith(f"line {rejection.line}: "), rejection.reason[:200]
        assert len(rejection.reason) <= MAX_REASON_CHARS, rejection.reason[:400]
        if rejection.code == "record_too_long":
            assert len(rejection.raw) == RAW_KEPT_CHARS + 1, len(rejection.raw)
    assert set(got) <= set(expected), (sorted(got), sorted(expected))
    assert len(got) + result.blank == len(expected), "a line was lost or counted twice"
    for line, want in expected.items():
        have = got.get(line, BLANK)
        if want == ANY:
            continue
        data = fuzz.lines[line - 1].data
        assert have == want, (f"line {line}: {want} expected, got {have}",
                              data[:300], [r.reason for r in result.rejections
                                           if r.line == line])
    return outcome


def check_ingest(settings: Settings, folder: Path,
                 fuzzed: list[FuzzFile]) -> dict[str, FileOutcome]:
    """Write ``fuzzed`` into ``folder``, ingest them in one call (one batch) into the lake of
    ``settings`` and check what the log and the quarantine hold, line by line; then ingest them
    again: nothing is added. Returns each file's validation outcome, by file name."""
    from aspen.lake.deltars import read_table, table_exists
    from aspen.lake.ingest import ingest_files

    paths, outcomes = [], {}
    for index, fuzz in enumerate(fuzzed):
        path = folder / f"fuzz{index}.{'csv' if fuzz.fmt == 'csv' else 'jsonl'}"
        path.write_bytes(fuzz.data())
        paths.append(path)
        outcomes[path.name] = check_validation(fuzz)
    report = ingest_files(settings, paths, wait=60)
    assert report.batch_id is not None
    updates = read_table(settings, "updates")
    quarantine = (read_table(settings, "quarantine") if table_exists(settings, "quarantine")
                  else None)
    seq = 0
    for file_report in report.files:
        outcome = outcomes[file_report.source]
        result = outcome.validation
        assert file_report.valid == len(result.records), file_report
        assert file_report.quarantined == len(result.rejections), file_report
        assert file_report.blank == result.blank, file_report
        mine = updates[updates["source"] == file_report.source].sort_values("seq")
        assert list(mine["line"]) == [line for line, _ in result.records], file_report.source
        assert list(mine["seq"]) == list(range(seq + 1, seq + 1 + len(result.records)))
        seq += len(result.records)
        for row, (_, record) in zip(mine.to_dict("records"), result.records, strict=True):
            for name in ("op", "relation", "src", "dst", "id", "region"):
                assert row[name] == getattr(record, name) or (
                    row[name] is None and getattr(record, name) is None), (name, row, record)
        held = ([] if quarantine is None else
                quarantine[quarantine["source"] == file_report.source].sort_values("line")
                .to_dict("records"))
        rejected = sorted(result.rejections, key=lambda r: r.line)
        assert [(r["line"], r["code"]) for r in held] == [(r.line, r.code) for r in rejected]
        assert [r["raw"] for r in held] == [r.raw for r in rejected]
    assert len(updates) == seq
    again = ingest_files(settings, paths, wait=60)
    assert again.batch_id is None, "the same files were ingested twice"
    assert len(read_table(settings, "updates")) == len(updates)
    if quarantine is not None:
        assert len(read_table(settings, "quarantine")) == len(quarantine)
    return outcomes
