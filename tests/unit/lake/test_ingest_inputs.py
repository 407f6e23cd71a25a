"""Ingest input checks that need no Spark: missing files and unknown suffixes fail in one line."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from aspen.cli.main import main
from aspen.errors import ConfigError
from aspen.lake.ingest import FileReport, IngestReport, check_inputs, guess_format

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
