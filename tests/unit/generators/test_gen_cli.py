"""``aspen generate``: files written, formats, and one-line errors with exit code 2."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from gen_record_rules import problem

from aspen.cli.main import main


def run(argv: list[str]) -> int:
    """Exit code of ``aspen argv``, whether argparse exits or main returns."""
    try:
        return main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_topology_writes_the_default_network(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out, nodes = tmp_path / "links.jsonl", tmp_path / "nodes.csv"
    assert (
        run(["generate", "topology", "--seed", "7", "--out", str(out), "--nodes-out", str(nodes)])
        == 0
    )
    records = read_jsonl(out)
    assert len(records) == 400 and all(problem(r) is None for r in records)
    assert {r["cost"] for r in records} == {50.0, 10.0, 2.0}
    with nodes.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 100 and sum(r["kind"] == "transit" for r in rows) == 4
    assert "400 link inserts" in capsys.readouterr().out
    again = tmp_path / "again.jsonl"
    run(["generate", "topology", "--seed", "7", "--out", str(again)])
    assert again.read_text() == out.read_text()


def test_topology_variants_scale_and_csv(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.csv"
    assert run(["generate", "topology", "--variant", "sparse", "--out", str(sparse)]) == 0
    with sparse.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 200 and set(rows[0]) == {"op", "relation", "src", "dst", "cost"}
    big = tmp_path / "big.jsonl"
    assert (
        run(
            ["generate", "topology", "--min-nodes", "1000", "--costs", "5,1,0.5", "--out", str(big)]
        )
        == 0
    )
    records = read_jsonl(big)
    assert len({r["src"] for r in records}) >= 1000
    assert {r["cost"] for r in records} == {5.0, 1.0, 0.5}


def test_topology_to_stdout(capsys: pytest.CaptureFixture) -> None:
    assert run(["generate", "topology", "--variant", "sparse", "--out", "-"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 200
    assert "200 link inserts" in captured.err


def test_sensors(tmp_path: Path) -> None:
    out = tmp_path / "sensors.jsonl"
    assert run(["generate", "sensors", "--spacing", "20", "--regions", "3", "--out", str(out)]) == 0
    records = read_jsonl(out)
    relations = [r["relation"] for r in records]
    assert relations.count("sensor") == 25 and relations.count("region_seed") == 3
    assert relations.count("triggered") == 3


def test_workloads_to_batch_directories(tmp_path: Path) -> None:
    frac = tmp_path / "frac"
    assert (
        run(
            [
                "generate",
                "workload",
                "fraction",
                "--fractions",
                "0.5,1",
                "--out-dir",
                str(frac),
                "--start",
                "2025-03-01T00:00:00Z",
            ]
        )
        == 0
    )
    files = sorted(frac.iterdir())
    assert [f.name for f in files] == ["batch-0000.jsonl", "batch-0001.jsonl"]
    assert [len(read_jsonl(f)) for f in files] == [200, 200]
    assert read_jsonl(files[1])[0]["event_time"] == "2025-03-01T00:00:01.000Z"
    # a rerun with fewer batches leaves no stale batch behind
    assert (
        run(["generate", "workload", "fraction", "--fractions", "1", "--out-dir", str(frac)]) == 0
    )
    assert [f.name for f in frac.iterdir()] == ["batch-0000.jsonl"]

    delete = tmp_path / "delete"
    assert (
        run(
            [
                "generate",
                "workload",
                "delete-one",
                "--delete-fraction",
                "0.05",
                "--out-dir",
                str(delete),
                "--format",
                "csv",
            ]
        )
        == 0
    )
    assert len(list(delete.glob("batch-*.csv"))) == 1 + 20

    trig = tmp_path / "trig.jsonl"
    assert run(["generate", "workload", "triggers", "--out", str(trig)]) == 0
    assert len(read_jsonl(trig)) == 110 + 48 + 48


def test_churn_with_invalid_records(tmp_path: Path) -> None:
    out = tmp_path / "churn.jsonl"
    assert (
        run(
            [
                "generate",
                "workload",
                "churn",
                "--events",
                "40",
                "--invalid",
                "9",
                "--seed",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 400 + 80 + 9
    assert sum(problem(line) is not None for line in lines) == 9


def test_demo_writes_the_input_set(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "demo"
    assert run(["generate", "demo", "--out", str(out), "--seed", "5"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["ingest_order"] == [
        "topology.jsonl",
        "churn.jsonl",
        "sensors.jsonl",
        "readings.jsonl",
        "sensors_untrigger.jsonl",
    ]
    assert manifest["topology"] == {"nodes": 100, "link_tuples": 240}  # DEMO_AVG_DEGREE 2.4
    for name, count in manifest["lines"].items():
        assert len((out / name).read_text().splitlines()) == count
    churn_lines = (out / "churn.jsonl").read_text().splitlines()
    assert sum(problem(line) is not None for line in churn_lines) == 9
    assert all(problem(r) is None for r in read_jsonl(out / "topology.jsonl"))
    sensors = read_jsonl(out / "sensors.jsonl")
    # 0.3: DEMO_TRIGGER_FRACTION
    assert sum(r["relation"] == "triggered" for r in sensors) == 5 + round(0.3 * 95)
    assert "demo" in capsys.readouterr().out
    # the default rule over the readings triggers exactly the sensors sensors.jsonl triggers
    triggered = {r["id"] for r in sensors if r["relation"] == "triggered"}
    assert _rule_triggers(read_jsonl(out / "readings.jsonl")) == triggered
    # the demo's stream network counts spikes (> 95): only hot sensors have any
    assert _network_groups(out / "network.json", read_jsonl(out / "readings.jsonl")) <= triggered


def _network_groups(path: Path, readings: list[dict]) -> set[str]:
    """The sensors with an output of the network in ``path`` over ``readings``."""
    from aspen.lake.validation import validate_record
    from aspen.streams.algebra import Reading
    from aspen.streams.incremental import NetworkState
    from aspen.streams.networks import load_network

    network = load_network(path.read_text())
    groups: dict[str, list[Reading]] = {}
    for number, raw in enumerate(readings, start=1):
        record = validate_record(raw)
        groups.setdefault(record.sensor, []).append(
            Reading(number, record.sensor, record.ts.timestamp(), record.value))
    found = {sensor for sensor, rows in groups.items()
             if NetworkState(network).step(rows).outputs}
    assert found, "the demo network should have outputs"
    return found


def _rule_triggers(readings: list[dict]) -> set[str]:
    """The sensors the default rule leaves triggered after ``readings`` (in file order)."""
    from aspen.lake.validation import validate_record
    from aspen.streams.rules import SensorState, TriggerRule
    from aspen.streams.windows import Reading

    states: dict[str, SensorState] = {}
    for number, raw in enumerate(readings, start=1):
        record = validate_record(raw)
        micros = round(record.ts.timestamp() * 1_000_000)
        states.setdefault(record.sensor, SensorState()).add(
            TriggerRule(), Reading(number, micros, record.value))
    return {sensor for sensor, state in states.items() if state.triggered}


@pytest.mark.parametrize(
    "argv",
    [
        ["generate"],
        ["generate", "topology"],  # no --out
        ["generate", "topology", "--variant", "medium", "--out", "x.jsonl"],
        ["generate", "topology", "--nodes-per-stub", "0", "--out", "x.jsonl"],
        ["generate", "topology", "--out", "links.txt"],
        ["generate", "topology", "--extra-edge-prob", "2", "--out", "x.jsonl"],
        [
            "generate",
            "topology",
            "--avg-degree",
            "3",
            "--extra-edge-prob",
            "0.1",
            "--out",
            "x.jsonl",
        ],
        ["generate", "topology", "--costs", "1,2", "--out", "x.jsonl"],
        [
            "generate",
            "topology",
            "--min-nodes",
            "500",
            "--transit-domains",
            "2",
            "--out",
            "x.jsonl",
        ],
        ["generate", "sensors", "--spacing", "500", "--out", "s.jsonl"],
        ["generate", "workload", "fraction", "--fractions", "0.5,x", "--out", "x.jsonl"],
        ["generate", "workload", "fraction", "--fractions", "0.5,0.25", "--out", "x.jsonl"],
        ["generate", "workload", "churn", "--ttl-min", "50", "--ttl-max", "10", "--out", "x.jsonl"],
        ["generate", "workload", "churn", "--invalid", "3", "--out", "x.csv"],
        ["generate", "workload", "churn", "--start", "yesterday", "--out", "x.jsonl"],
        ["generate", "workload", "delete-one", "--out", "x.jsonl", "--out-dir", "d"],
        ["generate", "workload", "sideways", "--out", "x.jsonl"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("aspen")
    assert "Traceback" not in err
    assert not list(tmp_path.iterdir()), "nothing is written on a bad argument"
