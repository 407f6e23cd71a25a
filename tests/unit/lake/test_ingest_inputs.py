"""Ingest input checks that need no Spark: missing files and unknown suffixes fail in one line."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

from aspen.cli.main import main
from aspen.errors import ConfigError
from aspen.lake import ingest as ingest_module
from aspen.lake.ingest import FileReport, IngestReport, check_inputs, guess_format
from aspen.lake.ingest_read import Spilled

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_formats_by_suffix() -> None:
    assert [guess_format(p) for p in ("a.jsonl", "b.JSON", "c.ndjson", "d.csv")] == [
        "jsonl", "jsonl", "jsonl", "csv"]
    with pytest.raises(ConfigError, match="unsupported file type '.txt'"):
        guess_format("e.txt")


def test_missing_file_is_one_config_error(tmp_path: Path) -> None:
    present = tmp_path / "ok.jsonl"
    present.write_text("")
    with pytest.raises(ConfigError, match="no such update file: .*gone.jsonl"):
        check_inputs([present, tmp_path / "gone.jsonl"])


def test_cli_missing_file_exits_2_with_one_line(tmp_path: Path, capsys) -> None:
    code = main(["--lake", str(tmp_path / "lake"), "ingest", str(tmp_path / "nope.jsonl")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip() == f"aspen ingest: no such update file: {tmp_path / 'nope.jsonl'}"
    assert not (tmp_path / "lake").exists()  # nothing was written


def test_job_missing_file_exits_2(tmp_path: Path, capsys) -> None:
    spec = importlib.util.spec_from_file_location("ingest_job", REPO_ROOT / "jobs" / "ingest.py")
    job = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(job)
    assert job.main(["--lake", str(tmp_path / "lake"), str(tmp_path / "nope.csv")]) == 2
    assert "no such update file" in capsys.readouterr().err


def test_report_lines_say_what_happened() -> None:
    fresh = FileReport("d.jsonl", "d.jsonl", "0" * 64, batch_id=3, valid=5, quarantined=2, blank=1,
                       reasons={"bad_cost": 1, "malformed_json": 1}, seq_start=10, seq_end=14)
    old = FileReport("e.jsonl", "e.jsonl", "1" * 64, already_ingested_in=1)
    lines = IngestReport(3, [fresh, old]).lines()
    assert lines == [
        "d.jsonl: 5 valid, 2 quarantined (bad_cost 1, malformed_json 1), 1 blank line skipped; "
        "seq 10–14 → batch 3",
        "e.jsonl: already ingested (same content) in batch 1; nothing to do",
        "batch 3: 5 record(s) appended to updates, 2 to quarantine",
    ]
    assert IngestReport(None, [old]).lines()[-1] == "nothing new to ingest"


def _input(name: str, content: bytes) -> ingest_module._Input:
    sha256 = hashlib.sha256(content).hexdigest()
    return ingest_module._Input(FileReport(name, name, sha256), "jsonl", Spilled(sha256))


def test_a_renamed_copy_is_ingested_again_with_a_warning() -> None:
    """Identity is (name, content): a copy under another name is new, and its report says whose
    content it repeats, committed before or earlier in the same call."""
    day1, day2 = b'{"op":"insert"}\n', b'{"op":"delete"}\n'
    done = ingest_module._Committed(
        sends={("day1.jsonl", hashlib.sha256(day1).hexdigest()): [(1, None)]},
        last_batch=1, last_file_batch=1)
    inputs = [_input("day1.jsonl", day1), _input("copy-of-day1.jsonl", day1),
              _input("day2.jsonl", day2), _input("day2-again.jsonl", day2)]
    fresh = ingest_module._fresh_inputs(inputs, done, batch_id=2)
    assert [i.report.source for i in fresh] == ["copy-of-day1.jsonl", "day2.jsonl",
                                                "day2-again.jsonl"]
    assert inputs[0].report.already_ingested_in == 1  # same name and content: a no-op
    assert [i.report.same_content_as for i in inputs] == [
        None, ("day1.jsonl", 1), None, ("day2.jsonl", 2)]
    for item in fresh:
        item.report.batch_id = 2
    lines = IngestReport(2, [i.report for i in inputs]).lines()
    assert lines[2] == ("warning: copy-of-day1.jsonl: same content as already-ingested "
                        "day1.jsonl (batch 1); ingested again")
    assert lines[-2] == ("warning: day2-again.jsonl: same content as already-ingested "
                         "day2.jsonl (batch 2); ingested again")
    assert sum(line.startswith("warning:") for line in lines) == 2
