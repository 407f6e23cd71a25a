"""Every quarantine reason of update-record validation (pure Python, no Spark)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from aspen.errors import InvalidRecordError
from aspen.lake.validation import (
    EARLIEST_EVENT_TIME,
    LATEST_EVENT_TIME,
    MAX_ID_LENGTH,
    MAX_LINE_BYTES,
    MAX_MAGNITUDE,
    MAX_TTL_SECONDS,
    RAW_KEPT_CHARS,
    REASON_CODES,
    UpdateRecord,
    validate_csv_row,
    validate_file,
    validate_json_line,
    validate_record,
)

LINK = {"op": "insert", "relation": "link", "src": "n1", "dst": "n2", "cost": 2.0}


def with_(base: dict, **changes: object) -> str:
    record = {**base, **changes}
    return json.dumps({k: v for k, v in record.items() if v is not ...})


# (raw JSON line, expected code, fragments the reason must contain)
INVALID_JSON_LINES = [
    ('{"op": "insert", "relation": ', "malformed_json", ["line 7:", "malformed JSON"]),
    ("garbage", "malformed_json", ["malformed JSON", "one JSON object"]),
    ("[1, 2]", "not_an_object", ["got a list"]),
    ('"just a string"', "not_an_object", ["got a string"]),
    ("42", "not_an_object", ["got a number"]),
    ("null", "not_an_object", ["got null"]),
    (with_(LINK, op="upsert"), "unknown_op", ["unknown op 'upsert'", "'insert' or 'delete'"]),
    (with_(LINK, op="INSERT"), "unknown_op", ["unknown op 'INSERT'"]),
    (with_(LINK, op=1), "unknown_op", ["unknown op 1 (a number)"]),
    (with_(LINK, relation="links"), "unknown_relation",
     ["unknown relation 'links'", "link, sensor, triggered, region_seed"]),
    (with_(LINK, op=...), "missing_field", ["missing op"]),
    (with_(LINK, relation=...), "missing_field", ["missing relation"]),
    (with_(LINK, cost=...), "missing_field",
     ["link insert is missing cost", "needs src, dst, cost"]),
    (with_(LINK, dst=None), "missing_field", ["link insert is missing dst"]),
    ('{"op": "insert", "relation": "sensor", "id": "s1", "x": 1.0}', "missing_field",
     ["sensor insert is missing y"]),
    ('{"op": "delete", "relation": "region_seed", "id": "s1"}', "missing_field",
     ["region_seed delete is missing region"]),
    (with_(LINK, colour="red"), "unknown_field", ["unknown field 'colour'", "known fields"]),
    (with_(LINK, ttl=5), "unknown_field", ["unknown field 'ttl'"]),
    (with_(LINK, id="s1"), "field_not_allowed", ["link insert does not take id"]),
    ('{"op": "delete", "relation": "link", "src": "a", "dst": "b", "cost": 1}',
     "field_not_allowed", ["link delete does not take cost", "needs src, dst"]),
    ('{"op": "delete", "relation": "sensor", "id": "s1", "x": 1}', "field_not_allowed",
     ["sensor delete does not take x"]),
    ('{"op": "delete", "relation": "link", "src": "a", "dst": "b", "ttl_s": 5}',
     "ttl_on_delete", ["only inserts expire"]),
    (with_(LINK, cost="abc"), "wrong_type", ["cost 'abc' (a string)", "finite number ≥ 0"]),
    (with_(LINK, cost="2"), "wrong_type", ["cost '2' (a string)"]),
    (with_(LINK, cost=True), "wrong_type", ["cost true (a boolean)"]),
    (with_(LINK, cost=[1]), "wrong_type", ["cost [1] (a list)"]),
    ('{"op": "insert", "relation": "sensor", "id": 5, "x": 1, "y": 2}', "wrong_type",
     ["sensor insert has id 5 (a number)", "non-empty string"]),
    ('{"op": "insert", "relation": "sensor", "id": "s", "x": "1", "y": 2}', "wrong_type",
     ["x '1' (a string)", "x must be a finite number"]),
    (with_(LINK, cost=-3), "bad_cost", ["line 7: link insert has cost -3.0",
                                         "cost must be a finite number ≥ 0"]),
    ('{"op":"insert","relation":"link","src":"a","dst":"b","cost":NaN}', "bad_cost",
     ["cost nan"]),
    ('{"op":"insert","relation":"link","src":"a","dst":"b","cost":Infinity}', "bad_cost",
     ["cost inf"]),
    ('{"op":"insert","relation":"link","src":"a","dst":"b","cost":1e999}', "bad_cost",
     ["cost inf"]),
    ('{"op":"insert","relation":"sensor","id":"s","x":-Infinity,"y":0}', "bad_number",
     ["x -inf", "x must be a finite number"]),
    (with_(LINK, src=""), "empty_string", ["link insert has an empty src"]),
    (with_(LINK, dst="   "), "empty_string", ["an empty dst"]),
    ('{"op": "insert", "relation": "region_seed", "region": "", "id": "s1"}', "empty_string",
     ["an empty region"]),
    ('{"op": "delete", "relation": "triggered", "id": ""}', "empty_string", ["an empty id"]),
    (with_(LINK, ttl_s=-1), "bad_ttl", ["ttl_s -1.0", "ttl_s must be a finite number"]),
    ('{"op":"insert","relation":"link","src":"a","dst":"b","cost":1,"ttl_s":NaN}', "bad_ttl",
     ["ttl_s nan"]),
    (with_(LINK, ttl_s="60"), "wrong_type", ["ttl_s '60' (a string)"]),
    (with_(LINK, event_time="yesterday"), "bad_event_time",
     ["event_time 'yesterday'", "ISO 8601"]),
    (with_(LINK, event_time=1700000000), "bad_event_time", ["event_time 1700000000 (a number)"]),
    (with_(LINK, event_time="2026-13-01T00:00:00"), "bad_event_time", ["ISO 8601"]),
    # the bounds of what maintenance can hold
    (with_(LINK, ttl_s=1e10), "ttl_out_of_range", ["ttl_s 10000000000.0", "at most 315576000"]),
    (with_(LINK, ttl_s=MAX_TTL_SECONDS + 1), "ttl_out_of_range", ["ten years"]),
    (with_(LINK, ttl_s=10 ** 400), "ttl_out_of_range", ["an integer of 401 digits"]),
    (with_(LINK, event_time="3000-01-01T00:00:00Z"), "event_time_out_of_range",
     ["'3000-01-01T00:00:00Z'", "from 1970-01-01 up to (not including) 2200-01-01 UTC"]),
    (with_(LINK, event_time="2200-01-01T00:00:00Z"), "event_time_out_of_range", ["2200"]),
    (with_(LINK, event_time="2200-01-01T05:00:00+05:00"), "event_time_out_of_range", ["2200"]),
    (with_(LINK, event_time="1969-12-31T23:59:59.999999Z"), "event_time_out_of_range",
     ["1969"]),
    (with_(LINK, event_time="1970-01-01T00:59:59+01:00"), "event_time_out_of_range", ["1970"]),
    (with_(LINK, event_time="9999-12-31T23:59:59-05:00"), "event_time_out_of_range",
     ["9999-12-31T23:59:59-05:00"]),
    (with_(LINK, event_time="0001-01-01T00:00:00+05:00"), "event_time_out_of_range", ["0001"]),
    (with_(LINK, event_time="9999-12-31T23:59:59"), "event_time_out_of_range", ["9999"]),
    (with_(LINK, src="x" * 257), "id_too_long",
     ["a src of 257 characters", "at most 256 characters"]),
    (with_(LINK, dst="x" * 1_000_000), "id_too_long", ["a dst of 1000000 characters"]),
    (with_(LINK, src="a\nb"), "id_bad_character", ["a control character (U+000A)"]),
    (with_(LINK, src="a\x00"), "id_bad_character", ["(U+0000) at position 1"]),
    (with_(LINK, src="tab\there"), "id_bad_character", ["U+0009"]),
    (with_(LINK, dst="del\x7f"), "id_bad_character", ["U+007F"]),
    (with_(LINK, dst="c1\x85"), "id_bad_character", ["U+0085"]),
    ('{"op":"insert","relation":"link","src":"\\ud800","dst":"b","cost":1}', "id_bad_character",
     ["an unpaired surrogate (U+D800)"]),
    (with_(LINK, cost=1e16), "number_out_of_range", ["cost 1e+16", "|cost| must be at most 1e+15"]),
    (with_(LINK, cost=10 ** 400), "number_out_of_range", ["an integer of 401 digits"]),
    ('{"op":"insert","relation":"sensor","id":"s","x":-1.5e15,"y":0}', "number_out_of_range",
     ["x -1500000000000000.0", "|x| must be at most 1e+15"]),
    ('{"op":"insert","relation":"sensor","id":"s","x":0,"y":' + "9" * 5000 + "}",
     "number_too_long", ["more than 4300 digits"]),
    ("[" * 100_000, "json_too_deep", ["nested too deeply"]),
    ('{"a":' * 100_000 + "1" + "}" * 100_000, "json_too_deep", ["nested too deeply"]),
]


@pytest.mark.parametrize("raw, code, fragments", INVALID_JSON_LINES)
def test_invalid_json_lines_get_an_actionable_reason(raw: str, code: str,
                                                     fragments: list[str]) -> None:
    with pytest.raises(InvalidRecordError) as info:
        validate_json_line(raw, line=7)
    err = info.value
    assert err.code == code and code in REASON_CODES
    assert err.reason.startswith("line 7: ")
    for fragment in fragments:
        assert fragment in err.reason


VALID = [
    (with_(LINK), ("n1", "n2"), ("n1", "n2", 2.0)),
    (with_(LINK, cost=0, ttl_s=0), ("n1", "n2"), ("n1", "n2", 0.0)),
    ('{"op":"delete","relation":"link","src":"a","dst":"b","cost":null}', ("a", "b"),
     ("a", "b", None)),
    ('{"op":"insert","relation":"sensor","id":"s7","x":10,"y":-35.5}', ("s7",),
     ("s7", 10.0, -35.5)),
    ('{"op":"delete","relation":"sensor","id":"s7"}', ("s7",), ("s7", None, None)),
    ('{"op":"insert","relation":"triggered","id":"s7","ttl_s":30}', ("s7",), ("s7",)),
    ('{"op":"delete","relation":"triggered","id":"s7"}', ("s7",), ("s7",)),
    ('{"op":"insert","relation":"region_seed","region":"r1","id":"s7"}', ("r1", "s7"),
     ("r1", "s7")),
    ('{"op":"delete","relation":"region_seed","region":"r1","id":"s7"}', ("r1", "s7"),
     ("r1", "s7")),
]


@pytest.mark.parametrize("raw, key, values", VALID)
def test_valid_records_normalize(raw: str, key: tuple, values: tuple) -> None:
    record = validate_json_line(raw, line=1)
    assert isinstance(record, UpdateRecord)
    assert record.key == key
    assert record.values == values


def test_numbers_become_floats_and_times_utc() -> None:
    record = validate_json_line(
        with_(LINK, cost=3, ttl_s=60, event_time="2026-01-01T13:00:00+01:00"))
    assert record.cost == 3.0 and isinstance(record.cost, float)
    assert record.ttl_s == 60.0
    assert record.event_time == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    naive = validate_json_line(with_(LINK, event_time="2026-01-01T12:00:00"))
    assert naive.event_time == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    zulu = validate_json_line(with_(LINK, event_time="2026-01-01T12:00:00Z"))
    assert zulu.event_time == naive.event_time


def test_reason_without_line_has_no_prefix() -> None:
    with pytest.raises(InvalidRecordError) as info:
        validate_record({"op": "insert"})
    assert info.value.reason == "missing relation; every record needs op and relation"


HEADER = ["op", "relation", "src", "dst", "cost", "id", "x", "y", "region", "ttl_s", "event_time"]


def csv_cells(**values: str) -> list[str]:
    return [values.get(name, "") for name in HEADER]


@pytest.mark.parametrize(
    "cells, code, fragment",
    [
        (["insert", "link", "a"], "csv_column_count", "3 cells but the header has 11 columns"),
        (csv_cells(op="insert", relation="link", src="a", dst="b", cost="abc"), "wrong_type",
         "cost 'abc' (not a number)"),
        (csv_cells(op="insert", relation="link", src="a", dst="b", cost="-1"), "bad_cost",
         "cost -1.0"),
        (csv_cells(op="insert", relation="link", src="a", dst="b", cost="nan"), "bad_cost",
         "cost nan"),
        (csv_cells(op="insert", relation="link", src="a", dst="b"), "missing_field",
         "missing cost"),
        (csv_cells(op="delete", relation="link", src="a", dst="b", ttl_s="5"), "ttl_on_delete",
         "only inserts expire"),
        (csv_cells(op="insert", relation="sensor", id="s", x="1", y="2", event_time="noon"),
         "bad_event_time", "ISO 8601"),
    ],
)
def test_invalid_csv_rows(cells: list[str], code: str, fragment: str) -> None:
    with pytest.raises(InvalidRecordError) as info:
        validate_csv_row(cells, HEADER, line=3)
    assert info.value.code == code
    assert info.value.reason.startswith("line 3: ")
    assert fragment in info.value.reason


def test_csv_cells_are_text_and_ids_stay_strings() -> None:
    record = validate_csv_row(csv_cells(op="insert", relation="sensor", id="5", x=" 1.5", y="2"),
                              HEADER, line=2)
    assert record.id == "5" and record.x == 1.5 and record.y == 2.0


def test_csv_duplicate_header_column() -> None:
    with pytest.raises(InvalidRecordError) as info:
        validate_csv_row(["insert", "triggered", "s1", "s2"], ["op", "relation", "id", "id"],
                         line=2)
    assert info.value.code == "csv_header"


def test_jsonl_file_bom_blank_lines_and_counts() -> None:
    lines = [
        '{"op":"insert","relation":"triggered","id":"s1"}',
        "",
        "   ",
        '{"op":"insert","relation":"link","src":"a","dst":"b","cost":-3}',
        "not json",
        '{"op":"delete","relation":"triggered","id":"s1"}',
    ]
    data = b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n"
    result = validate_file(data, "jsonl")
    assert [line for line, _ in result.records] == [1, 6]  # the BOM did not spoil line 1
    assert result.blank == 2
    assert [(r.line, r.code) for r in result.rejections] == [(4, "bad_cost"), (5, "malformed_json")]
    assert result.rejections[1].raw == "not json"
    assert result.reason_counts() == {"bad_cost": 1, "malformed_json": 1}
    # nothing is dropped silently: every non-blank line is a record or a rejection
    assert len(result.records) + len(result.rejections) + result.blank == len(lines)


def test_non_utf8_line_is_quarantined_not_fatal() -> None:
    data = b'{"op":"insert","relation":"triggered","id":"s1"}\n{"id": "\xff\xfe"}\n'
    result = validate_file(data, "jsonl")
    assert len(result.records) == 1
    assert [(r.line, r.code) for r in result.rejections] == [(2, "bad_encoding")]
    assert "UTF-8" in result.rejections[0].reason


def test_csv_file_header_rows_and_column_count() -> None:
    text = (
        "\ufeffop,relation,src,dst,cost\n"
        "insert,link,a,b,1.5\n"
        "\n"
        "insert,link,a,b\n"
        'delete,link,"c,d",e,\n'
    )
    result = validate_file(text.encode(), "csv")
    assert [(line, r.key) for line, r in result.records] == [(2, ("a", "b")), (5, ("c,d", "e"))]
    assert result.blank == 1
    assert [(r.line, r.code) for r in result.rejections] == [(4, "csv_column_count")]
    assert result.rejections[0].raw == "insert,link,a,b"


def test_csv_unknown_column_with_a_value_is_rejected_empty_is_ignored() -> None:
    text = "op,relation,id,colour\ninsert,triggered,s1,\ninsert,triggered,s2,red\n"
    result = validate_file(text.encode(), "csv")
    assert [r.id for _, r in result.records] == ["s1"]
    assert [r.code for r in result.rejections] == ["unknown_field"]


def test_unknown_format_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        validate_file(b"", "xml")


# --- the bounds, from inside: what is accepted must be what maintenance can hold -------------

@pytest.mark.parametrize("changes", [
    {"ttl_s": MAX_TTL_SECONDS},
    {"ttl_s": 0},
    {"ttl_s": 5e-324},
    {"cost": MAX_MAGNITUDE},
    {"cost": 10 ** 15},
    {"event_time": "1970-01-01T00:00:00Z"},
    {"event_time": "1970-01-01T01:00:00+01:00"},
    {"event_time": "2199-12-31T23:59:59.999999Z"},
    {"event_time": "2200-01-01T04:59:59+05:00"},
    {"event_time": "2199-12-31T18:59:59-05:00", "ttl_s": MAX_TTL_SECONDS},
    {"src": "x" * MAX_ID_LENGTH, "dst": "ünïcödé ✓ 名前 🙂"},
    {"src": " padded "},
])
def test_the_edges_of_the_bounds_are_accepted(changes: dict) -> None:
    record = validate_json_line(with_(LINK, **changes), line=1)
    if "event_time" in changes:
        assert EARLIEST_EVENT_TIME <= record.event_time < LATEST_EVENT_TIME
    if record.ttl_s is not None:
        assert record.ttl_s <= MAX_TTL_SECONDS


def test_sensor_coordinates_at_the_bound_are_accepted() -> None:
    line = json.dumps({"op": "insert", "relation": "sensor", "id": "s", "x": -MAX_MAGNITUDE,
                       "y": MAX_MAGNITUDE})
    assert validate_json_line(line).values == ("s", -MAX_MAGNITUDE, MAX_MAGNITUDE)


@pytest.mark.parametrize("cells, code", [
    (csv_cells(op="insert", relation="link", src="a", dst="b", cost="1" * 5000),
     "number_out_of_range"),  # float() reads it: infinity is not finite
    (csv_cells(op="insert", relation="link", src="a", dst="b", cost="2e15"),
     "number_out_of_range"),
    (csv_cells(op="insert", relation="link", src="a", dst="b", cost="1", ttl_s="1e10"),
     "ttl_out_of_range"),
    (csv_cells(op="insert", relation="link", src="a" * 300, dst="b", cost="1"), "id_too_long"),
    (csv_cells(op="insert", relation="link", src="a\x00", dst="b", cost="1"),
     "id_bad_character"),
    (csv_cells(op="insert", relation="sensor", id="s", x="1", y="2",
               event_time="9999-12-31T23:59:59-05:00"), "event_time_out_of_range"),
])
def test_csv_cells_meet_the_same_bounds(cells: list[str], code: str) -> None:
    with pytest.raises(InvalidRecordError) as info:
        validate_csv_row(cells, HEADER, line=3)
    assert info.value.code in (code, "bad_cost")  # a cost of 5000 digits reads as infinity
    if code != "number_out_of_range":
        assert info.value.code == code


HOSTILE_LINES = {
    "json_too_deep": "[" * 100_000,
    "number_too_long": '{"op":"insert","relation":"link","src":"a","dst":"b","cost":'
                       + "1" * 5000 + "}",
    "event_time_out_of_range": '{"op":"insert","relation":"link","src":"a","dst":"b","cost":1,'
                               '"event_time":"9999-12-31T23:59:59-05:00"}',
    "ttl_out_of_range": '{"op":"insert","relation":"link","src":"a","dst":"b","cost":1,'
                        '"ttl_s":1e10}',
    "id_too_long": '{"op":"insert","relation":"link","src":"' + "n" * 1_000_000
                   + '","dst":"b","cost":1}',
    "record_too_long": '{"op":"insert","relation":"link","src":"' + "n" * (MAX_LINE_BYTES + 1)
                       + '","dst":"b","cost":1}',
    "bad_cost": '{"op":"insert","relation":"link","src":"a","dst":"b","cost":NaN}',
    "id_bad_character": '{"op":"delete","relation":"triggered","id":"\\ud800"}',
}


def test_hostile_lines_are_quarantined_and_the_valid_ones_of_the_file_kept() -> None:
    valid = '{"op":"insert","relation":"triggered","id":"s1"}'
    lines = [valid, *HOSTILE_LINES.values(), valid.replace("s1", "s2")]
    result = validate_file("\n".join(lines).encode(), "jsonl")
    assert [r.id for _, r in result.records] == ["s1", "s2"]
    assert [r.code for r in result.rejections] == list(HOSTILE_LINES)
    assert all(r.code in REASON_CODES for r in result.rejections)
    for rejection in result.rejections:
        assert rejection.reason.startswith(f"line {rejection.line}: ")
        assert len(rejection.reason) < 300  # a reason quotes a clipped value, never a megabyte
    too_long = result.rejections[list(HOSTILE_LINES).index("record_too_long")]
    assert len(too_long.raw) == RAW_KEPT_CHARS + 1 and too_long.raw.endswith("…")
    size = len(HOSTILE_LINES["record_too_long"].encode())
    assert too_long.reason == (f"line 7: {size} bytes long; a line is at most {MAX_LINE_BYTES} "
                               f"bytes (the quarantine keeps its first {RAW_KEPT_CHARS} "
                               "characters)")


def test_an_unexpected_exception_in_one_record_becomes_unreadable_record(monkeypatch) -> None:
    from aspen.lake import validation

    def explode(text: str, *, line: int | None = None):
        if "boom" in text:
            raise OverflowError("a converter overflowed")
        return original(text, line=line)

    original = validation.validate_json_line
    monkeypatch.setattr(validation, "validate_json_line", explode)
    data = b'{"op":"insert","relation":"triggered","id":"boom"}\n' \
           b'{"op":"insert","relation":"triggered","id":"s1"}\n'
    result = validation.validate_file(data, "jsonl")
    assert [r.id for _, r in result.records] == ["s1"]
    [rejection] = result.rejections
    assert rejection.code == "unreadable_record" and rejection.line == 1
    assert rejection.reason == "line 1: could not be read (OverflowError: a converter overflowed)"
