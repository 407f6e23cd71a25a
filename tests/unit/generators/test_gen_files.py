"""Writing records (JSON Lines, CSV) and injecting invalid records."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from gen_record_rules import problem

from aspen.errors import ConfigError
from aspen.generators.invalid import INVALID_KINDS, inject_invalid, inject_invalid_labeled
from aspen.generators.records import link_delete, link_insert, sensor_insert, triggered_insert
from aspen.generators.topology import transit_stub
from aspen.generators.workloads import ChurnParams, churn, write_csv, write_jsonl
from aspen.generators.writers import write_records

MIXED = [
    link_insert("a", "b", 2.0, ttl_s=600, event_time="2025-01-01T00:00:00.000Z"),
    link_delete("a", "b"),
    sensor_insert("s7", 10.0, 35.5),
    triggered_insert("s7"),
    {"op": "insert", "relation": "region_seed", "region": "r1", "id": "s7"},
]

EXPECTED_PROBLEM = {
    "malformed_json": "malformed",
    "unknown_op": "op",
    "unknown_relation": "relation",
    "missing_field": "missing",
    "extra_field": "extra",
    "negative_cost": "negative",
    "nonfinite_cost": "nonfinite",
    "empty_id": "empty",
    "wrong_type": "type",
}


def test_jsonl_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "u.jsonl"
    assert write_jsonl(MIXED, path) == 5
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == MIXED
    assert lines[1] == '{"op": "delete", "relation": "link", "src": "a", "dst": "b"}'


def test_csv_uses_the_json_keys_and_empty_cells_for_absent(tmp_path: Path) -> None:
    path = tmp_path / "u.csv"
    assert write_csv(MIXED, path) == 5
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames
        rows = list(reader)
    assert header == [
        "op",
        "relation",
        "src",
        "dst",
        "cost",
        "id",
        "x",
        "y",
        "region",
        "ttl_s",
        "event_time",
    ]
    for row, record in zip(rows, MIXED, strict=True):
        present = {k: v for k, v in row.items() if v != ""}
        assert set(present) == set(record)
        assert present == {k: str(v) for k, v in record.items()}


def test_write_records_picks_the_format_by_extension(tmp_path: Path) -> None:
    write_records(MIXED, tmp_path / "a.csv")
    write_records(MIXED, tmp_path / "nested" / "a.jsonl")
    assert (tmp_path / "a.csv").read_text().startswith("op,relation")
    assert (tmp_path / "nested" / "a.jsonl").read_text().startswith("{")
    with pytest.raises(ConfigError):
        write_records(MIXED, tmp_path / "a.txt")
    with pytest.raises(ConfigError):
        write_csv(["not a dict"], tmp_path / "b.csv")  # type: ignore[list-item]
    with pytest.raises(ConfigError):
        write_jsonl([link_insert("a", "b", float("inf"))], tmp_path / "c.jsonl")


def test_injector_produces_every_kind_and_each_is_invalid() -> None:
    records = churn(transit_stub(seed=1), ChurnParams(events=30), seed=2)
    labeled = inject_invalid_labeled(records, len(INVALID_KINDS), seed=3)
    kinds = Counter(kind for _, kind in labeled if kind is not None)
    assert set(kinds) == set(INVALID_KINDS) and set(kinds.values()) == {1}
    for line, kind in labeled:
        if kind is None:
            assert problem(line) is None
        else:
            assert problem(line) == EXPECTED_PROBLEM[kind], (kind, line)
    valid = [json.loads(line) for line, kind in labeled if kind is None]
    assert valid == records  # the valid records keep their order
    assert [line for line, _ in labeled] == inject_invalid(records, len(INVALID_KINDS), seed=3)
    assert inject_invalid(records, 9, seed=4) != inject_invalid(records, 9, seed=3)


def test_injector_positions_vary_and_work_without_link_templates() -> None:
    labeled = inject_invalid_labeled([triggered_insert(f"s{i}") for i in range(50)], 18, seed=1)
    positions = [i for i, (_, kind) in enumerate(labeled) if kind]
    assert len(positions) == 18 and positions != list(range(18))
    assert Counter(kind for _, kind in labeled if kind) == {k: 2 for k in INVALID_KINDS}
    with pytest.raises(ConfigError):
        inject_invalid([], 1, kinds=["bogus"])
    with pytest.raises(ConfigError):
        inject_invalid([], -1)


def test_invalid_lines_are_written_verbatim(tmp_path: Path) -> None:
    lines = inject_invalid(MIXED, 9, seed=0)
    write_jsonl(lines, tmp_path / "bad.jsonl")
    assert (tmp_path / "bad.jsonl").read_text(encoding="utf-8").splitlines() == lines
    with pytest.raises(ConfigError):
        write_csv(lines, tmp_path / "bad.csv")  # type: ignore[arg-type]


def test_the_lake_validator_accepts_generated_records_and_rejects_injected_ones(
    tmp_path: Path,
) -> None:
    from aspen.errors import InvalidRecordError
    from aspen.generators.sensors import sensor_grid
    from aspen.generators.workloads import sensor_batches
    from aspen.lake import validation

    records = churn(transit_stub(seed=2), ChurnParams(events=100, ttl_fraction=0.5), seed=2)
    records += [r for batch in sensor_batches(sensor_grid(jitter=2.0, seed=2)) for r in batch]
    write_jsonl(records, tmp_path / "all.jsonl")
    write_csv(records, tmp_path / "all.csv")
    for name, fmt in (("all.jsonl", "jsonl"), ("all.csv", "csv")):
        result = validation.validate_file((tmp_path / name).read_bytes(), fmt)
        assert not result.rejections and len(result.records) == len(records)
    for line, kind in inject_invalid_labeled(records[:50], len(INVALID_KINDS), seed=5):
        if kind is not None:
            with pytest.raises(InvalidRecordError):
                validation.validate_json_line(line)
