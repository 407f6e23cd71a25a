"""`aspen stream --network FILE --local` and `aspen explain network NAME [OUTPUT]`: a network
declared in a file runs over the lake's readings, lists its outputs and explains one down to
its readings; a bad network file gets one line, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aspen.cli.main import main
from aspen.lake.ingest import ingest_files
from aspen.settings import Settings

NETWORK = {"name": "hot_avg", "lateness_s": 0, "streams": {"hot": "value > 50"},
           "query": {"aggregate": {"stream": "hot"}, "window": {"seconds": 10},
                     "functions": ["avg(value)"], "name": "w"}}


@pytest.fixture
def network_file(lake: Settings, tmp_path: Path) -> Path:
    rows = [{"op": "insert", "relation": "reading", "sensor": "s1",
             "ts": f"2026-12-01T10:00:{second:02d}Z", "value": value}
            for second, value in [(1, 60.0), (4, 40.0), (8, 80.0), (12, 90.0), (25, 10.0)]]
    readings = tmp_path / "readings.jsonl"
    readings.write_text("".join(json.dumps(row) + "\n" for row in rows))
    ingest_files(lake, [readings])
    path = tmp_path / "network.json"
    path.write_text(json.dumps(NETWORK))
    return path


def test_a_network_runs_in_process_and_explains_an_output(
        lake: Settings, network_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--lake", lake.lake]
    assert main([*args, "stream", "--network", str(network_file), "--local"]) == 0
    assert "2 output(s)" in capsys.readouterr().out  # [10:00:00, 10) and [10, 20); 20s open
    assert main([*args, "explain", "network", "hot_avg", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    first = min(listed, key=lambda item: item["data"]["start"])
    assert first["data"]["avg_value"] == 70.0
    assert main([*args, "explain", "network", "hot_avg", first["output"],
                 "--format", "json"]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert [r["value"] for r in explained["readings"]["hot"]] == [60.0, 80.0]
    assert main([*args, "explain", "network", "hot_avg", first["output"]]) == 0
    assert "stream hot: 2 reading(s)" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["{not json", json.dumps({**NETWORK, "query": {"stream": "x"}})])
def test_a_bad_network_file_gets_one_line(lake: Settings, network_file: Path, text: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    network_file.write_text(text)
    assert main(["--lake", lake.lake, "stream", "--network", str(network_file), "--local"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
