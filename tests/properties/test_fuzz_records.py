"""Fuzzed update files (every record kind, the edges of every bound, one defect a line, broken
lines and bytes; :mod:`aspen.bench.fuzz`): validation gives each line the outcome it was drawn
with and loses or doubles none, the records it accepts can be maintained, and ``ingest_files``
writes exactly what validation said. ``benchmarks/fuzz_ingest.py`` runs the same properties for
minutes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_accepted_records_maintain import maintain_in_process

from aspen.bench.fuzz import (
    MAX_REASON_CHARS,
    FuzzFile,
    check_ingest,
    check_validation,
    files,
    record_lines,
)
from aspen.lake.validation import REASON_CODES, validate_file
from aspen.settings import Settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


@settings(max_examples=100, deadline=None, suppress_health_check=_QUIET)
@given(files())
def test_every_line_of_a_fuzzed_file_gets_its_outcome_once(fuzz: FuzzFile) -> None:
    outcome = check_validation(fuzz)
    assert outcome.accepted + sum(outcome.quarantined.values()) + outcome.blank == len(
        fuzz.expected())


@settings(max_examples=5, deadline=None, suppress_health_check=_QUIET)
@given(st.lists(files(max_lines=8), min_size=1, max_size=4))
def test_what_validation_accepts_in_fuzzed_files_maintains(fuzzed: list[FuzzFile]) -> None:
    lines = [line for fuzz in fuzzed
             for line in record_lines(r for _, r in check_validation(fuzz).validation.records)]
    if lines:  # ingest → apply → maintain --runtime local, without a JVM
        views = maintain_in_process(lines)
        assert set(views) >= {"reachable", "active_region"}


@settings(max_examples=5, deadline=None, suppress_health_check=_QUIET)
@given(st.lists(files(max_lines=6), min_size=2, max_size=3))
def test_ingest_writes_what_validation_said_and_nothing_twice(fuzzed: list[FuzzFile]) -> None:
    with tempfile.TemporaryDirectory() as folder:  # delta-rs: no JVM
        root = Path(folder)
        outcomes = check_ingest(Settings(lake=str(root / "lake")), root, fuzzed)
    assert len(outcomes) == len(fuzzed)


def test_the_defects_fuzzing_found_are_quarantined() -> None:
    """A repeated field name, a value quoted in full, a CSV quote left open."""
    repeated = '{"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": -5, ' \
               '"cost": 1}'
    huge = "x" * 500_000
    lines = [
        repeated,
        json.dumps({"op": huge, "relation": "link"}),
        json.dumps({"op": "insert", "relation": huge}),
        json.dumps({"op": "insert", "relation": "triggered", "id": "s1", huge: 1}),
    ]
    result = validate_file("\n".join(lines).encode(), "jsonl")
    assert [r.code for r in result.rejections] == [
        "duplicate_field", "unknown_op", "unknown_relation", "unknown_field"]
    assert "'cost'" in result.rejections[0].reason
    assert all(len(r.reason) <= MAX_REASON_CHARS for r in result.rejections)
    assert all(r.code in REASON_CODES for r in result.rejections)
    # a quoted cell that would go on on the next line is not cut short and accepted
    text = 'op,relation,id\ninsert,triggered,"s2\ninsert,triggered,s3\n'
    result = validate_file(text.encode(), "csv")
    assert [(line, r.id) for line, r in result.records] == [(3, "s3")]
    assert [(r.line, r.code) for r in result.rejections] == [(2, "csv_syntax")]
    header = ",".join(["op", "relation", "id", *(f"c{i}" * 40 for i in range(30))])
    result = validate_file(f"{header}\ninsert,triggered\n".encode(), "csv")
    assert [r.code for r in result.rejections] == ["csv_column_count"]
    assert len(result.rejections[0].reason) <= MAX_REASON_CHARS
