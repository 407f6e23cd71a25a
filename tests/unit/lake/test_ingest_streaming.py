"""Streamed ingest: files read line by line (never whole) give the rows the whole-file reading
gave — records, quarantine rows, seq numbers, reading ids — and only regular files are read:
a symbolic link, a fifo, a directory, a file that vanished or changed while read is refused in
one line, with nothing written."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aspen.cli.main import main
from aspen.errors import ConfigError, InvalidRecordError
from aspen.lake import ingest as ingest_module
from aspen.lake import ingest_read, tables
from aspen.lake.deltars import read_table, table_exists
from aspen.lake.ingest import ingest_files
from aspen.lake.ingest_read import open_update_file, text_for_arrow
from aspen.lake.validation import (
    MAX_LINE_BYTES,
    RAW_KEPT_CHARS,
    FileValidation,
    ReadingRecord,
    Rejection,
    _csv_cells,
    iter_lines,
    validate_csv_row,
    validate_file,
    validate_json_line,
)
from aspen.settings import Settings

# --- the whole-file reading ingest used before, kept as the oracle ------------------------------


def _whole_lines(data: bytes):
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


def _whole_file(data: bytes, fmt: str) -> FileValidation:
    result = FileValidation()
    header = None
    for number, text, chunk in _whole_lines(data):
        if len(chunk) > MAX_LINE_BYTES:
            kept = chunk[:4 * RAW_KEPT_CHARS].decode("utf-8", errors="replace")[:RAW_KEPT_CHARS]
            result.rejections.append(Rejection(
                number, kept + "…",
                f"line {number}: {len(chunk)} bytes long; a line is at most {MAX_LINE_BYTES} "
                f"bytes (the quarantine keeps its first {RAW_KEPT_CHARS} characters)",
                "record_too_long"))
            continue
        if text is None:
            raw = chunk.decode("utf-8", errors="replace")
            result.rejections.append(Rejection(
                number, raw, f"line {number}: not valid UTF-8 text; save the file as UTF-8",
                "bad_encoding"))
            continue
        if not text.strip():
            result.blank += 1
            continue
        try:
            if fmt == "jsonl":
                record = validate_json_line(text, line=number)
            else:
                cells = _csv_cells(text)
                if header is None:
                    header = [cell.strip() for cell in cells]
                    continue
                record = validate_csv_row(cells, header, line=number)
        except InvalidRecordError as err:
            result.rejections.append(Rejection(number, text, err.reason, err.code))
            continue
        except csv.Error as err:
            result.rejections.append(Rejection(
                number, text, f"line {number}: unreadable CSV row ({err})", "csv_syntax"))
            continue
        if isinstance(record, ReadingRecord):
            result.readings.append((number, record))
        else:
            result.records.append((number, record))
    return result


# --- random files --------------------------------------------------------------------------------

LONG = b'{"op": "insert", "relation": "triggered", "id": "' + b"x" * MAX_LINE_BYTES + b'"}'
LINES = {
    "link": b'{"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 2.5}',
    "cut": b'{"op": "delete", "relation": "link", "src": "a", "dst": "b"}',
    "sensor": b'{"op": "insert", "relation": "sensor", "id": "s\xc3\xa9", "x": 1, "y": 2, '
              b'"event_time": "2026-01-01T00:00:00Z"}',
    "reading": b'{"op": "insert", "relation": "reading", "sensor": "s1", '
               b'"ts": "2026-12-01T10:00:03Z", "value": 93.1}',
    "bad_cost": b'{"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": -1}',
    "malformed": b'{"op": "insert", ',
    "not_utf8": b'{"op": "\xff\xfe"}',
    "blank": b"",
    "spaces": b"   \t",
    "edge": b'"' + b"y" * (MAX_LINE_BYTES - 2) + b'"',  # exactly the longest line: not an object
    "long": LONG,
}
FILES = st.tuples(
    st.booleans(),  # a byte-order mark
    st.lists(st.tuples(st.sampled_from(sorted(LINES)), st.sampled_from([b"\n", b"\r\n"])),
             max_size=10),
    st.booleans(),  # no newline after the last line
)


def _bytes(shape: tuple[bool, list[tuple[str, bytes]], bool]) -> bytes:
    bom, lines, cut_last = shape
    data = b"".join(LINES[kind] + end for kind, end in lines)
    if cut_last and lines:
        data = data[:-len(lines[-1][1])]
    return (b"\xef\xbb\xbf" if bom else b"") + data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FILES)
def test_streamed_validation_equals_the_whole_file_reading(shape) -> None:
    data = _bytes(shape)
    assert validate_file(data, "jsonl") == _whole_file(data, "jsonl")
    whole = [(n, len(chunk)) for n, _, chunk in _whole_lines(data)]
    assert [(n, length) for n, _, length in iter_lines(io.BytesIO(data))] == whole


def _expected_rows(data: bytes, fmt: str, source: str):
    """The updates, quarantine and readings rows the whole-file ingest appended for one file
    as batch 1 of a fresh lake."""
    whole = _whole_file(data, fmt)
    updates = [(1, seq, source, line, r.op, r.relation, r.src, r.dst, r.cost, r.id, r.x, r.y,
                r.region, r.ttl_s, r.event_time)
               for seq, (line, r) in enumerate(whole.records, start=1)]
    quarantine = [(1, source, q.line, text_for_arrow(q.raw), text_for_arrow(q.reason), q.code)
                  for q in whole.rejections]
    readings = [(rid, 1, source, line, r.sensor, r.ts, r.value)
                for rid, (line, r) in enumerate(whole.readings, start=1)]
    return updates, quarantine, readings, whole.blank


def _rows(lake: Settings, name: str, columns: list[str], order: list[str]) -> list[tuple]:
    from deltalake import DeltaTable

    if not table_exists(lake, name):
        return []
    table = DeltaTable(lake.table_uri(name)).to_pyarrow_table(columns=columns)
    rows = [tuple(row[c] for c in columns) for row in table.to_pylist()]
    return sorted(rows, key=lambda row: tuple(row[columns.index(c)] for c in order))


UPDATE_COLUMNS = [c for c in tables.arrow_schema_of(tables.UPDATES).names if c != "ingested_at"]
QUARANTINE_COLUMNS = [c for c in tables.arrow_schema_of(tables.QUARANTINE).names
                      if c != "ingested_at"]
READING_COLUMNS = [c for c in tables.arrow_schema_of(tables.READINGS).names if c != "ingested_at"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FILES)
def test_streamed_ingest_appends_what_the_whole_file_ingest_appended(shape) -> None:
    data = _bytes(shape)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "day.jsonl"
        path.write_bytes(data)
        lake = Settings(lake=str(Path(folder) / "lake"))
        report = ingest_files(lake, [path])
        updates, quarantine, readings, blank = _expected_rows(data, "jsonl", "day.jsonl")
        assert report.batch_id == 1
        (file_report,) = report.files
        assert (file_report.valid, file_report.quarantined, file_report.readings,
                file_report.blank) == (len(updates), len(quarantine), len(readings), blank)
        assert _rows(lake, tables.UPDATES, UPDATE_COLUMNS, ["seq"]) == updates
        assert _rows(lake, tables.QUARANTINE, QUARANTINE_COLUMNS, ["line"]) == quarantine
        assert _rows(lake, tables.READINGS, READING_COLUMNS, ["id"]) == readings


def test_a_csv_file_and_two_files_number_on_across_files(lake: Settings, tmp_path: Path) -> None:
    text = ("\ufeffop,relation,src,dst,cost\r\n\r\ninsert,link,a,b,1\r\ninsert,link,a\r\n"
            "delete,link,a,b\r\ninsert,link,c,d,-2")
    first = tmp_path / "a.csv"
    first.write_bytes(text.encode())
    second = tmp_path / "b.jsonl"
    second.write_bytes(LINES["link"] + b"\n" + LINES["reading"] + b"\n" + LINES["reading"])
    report = ingest_files(lake, [first, second])
    a_updates, a_quarantine, _, a_blank = _expected_rows(text.encode(), "csv", "a.csv")
    b_updates, _, b_readings, _ = _expected_rows(second.read_bytes(), "jsonl", "b.jsonl")
    b_updates = [(1, seq + len(a_updates), *rest) for _, seq, *rest in b_updates]
    assert _rows(lake, tables.UPDATES, UPDATE_COLUMNS, ["seq"]) == a_updates + b_updates
    assert _rows(lake, tables.QUARANTINE, QUARANTINE_COLUMNS, ["line"]) == a_quarantine
    assert _rows(lake, tables.READINGS, READING_COLUMNS, ["id"]) == b_readings
    assert [(f.seq_start, f.seq_end, f.blank) for f in report.files] == [
        (1, len(a_updates), a_blank), (len(a_updates) + 1, len(a_updates) + len(b_updates), 0)]
    assert (len(a_updates), len(a_quarantine), len(b_readings)) == (1, 3, 2)


# --- only regular files -----------------------------------------------------------------------


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_only_regular_files_are_read(tmp_path: Path, capsys, kind: str) -> None:
    target = tmp_path / "real.jsonl"
    target.write_bytes(LINES["link"] + b"\n")
    path = tmp_path / "odd.jsonl"
    if kind == "symlink":
        path.symlink_to(target)
        words = "is a symbolic link"
    elif kind == "fifo":
        os.mkfifo(path)
        words = "is a fifo"
    else:
        path.mkdir()
        words = "is a directory"
    lake = tmp_path / "lake"
    assert main(["--lake", str(lake), "ingest", str(path)]) == 2
    line = _one_line(capsys)
    assert f"{path} {words}; ingest reads only regular files" in line
    assert not lake.exists()  # nothing written
    with pytest.raises(ConfigError, match=words):  # the open itself refuses it too
        os.close(open_update_file(path))


def test_a_file_that_vanished_before_it_was_read_is_one_line(tmp_path: Path, capsys,
                                                             monkeypatch) -> None:
    path = tmp_path / "gone.jsonl"
    path.write_bytes(LINES["link"] + b"\n")
    real_check = ingest_module.check_inputs

    checks = []

    def check_then_vanish(paths):
        real_check(paths)
        checks.append(paths)
        if len(checks) == 2:  # the library's own check (the CLI checks first)
            path.unlink()  # moved away between the check and the read

    monkeypatch.setattr(ingest_module, "check_inputs", check_then_vanish)
    assert main(["--lake", str(tmp_path / "lake"), "ingest", str(path)]) == 2
    assert _one_line(capsys) == (f"aspen ingest: {path} vanished before it was read "
                                 "(no such file)")
    assert not (tmp_path / "lake").exists()


def test_a_file_that_changed_while_read_fails_and_nothing_is_committed(
        lake: Settings, tmp_path: Path, monkeypatch) -> None:
    steady = tmp_path / "a.jsonl"
    steady.write_bytes(LINES["link"] + b"\n")
    growing = tmp_path / "b.jsonl"
    growing.write_bytes(LINES["cut"] + b"\n")
    real_spill = ingest_read._spill

    def spill_while_written(source, fmt, spill):
        out = real_spill(source, fmt, spill)
        if spill.name.endswith("1"):  # the second file: someone appends while it is read
            with growing.open("ab") as handle:
                handle.write(LINES["link"] + b"\n")
        return out

    monkeypatch.setattr(ingest_read, "_spill", spill_while_written)
    with pytest.raises(ConfigError, match="b.jsonl changed while it was read"):
        ingest_files(lake, [steady, growing])
    assert not table_exists(lake, tables.INGEST_FILES)
    assert not table_exists(lake, tables.UPDATES)
    monkeypatch.setattr(ingest_read, "_spill", real_spill)
    assert ingest_files(lake, [steady, growing]).valid == 3


def test_a_file_name_that_is_not_utf8_is_stored_with_a_question_mark(tmp_path: Path) -> None:
    """A file name that is not UTF-8 is stored with ``?`` (Arrow holds UTF-8 only)."""
    lake = Settings(lake=str(tmp_path / "lake"))
    path = tmp_path / os.fsdecode(b"odd\xff.jsonl")
    path.write_bytes(LINES["link"] + b"\n")
    report = ingest_files(lake, [path])
    assert report.files[0].source == "odd?.jsonl"
    assert json.loads(json.dumps(read_table(lake, tables.INGEST_FILES)["source"].tolist())) == [
        "odd?.jsonl"]
