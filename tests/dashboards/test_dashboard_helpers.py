"""The dashboard's pure helpers and the ``aspen dashboard`` command (no server is started)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from aspen.cli import dashboard as dashboard_cli
from aspen.cli.main import main

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
sys.path.insert(0, str(DASHBOARDS))
import lakeview  # noqa: E402


def test_links_dot_quotes_and_escapes_ids() -> None:
    dot = lakeview.links_dot([('a "x"', "b\\c", 2.5), ("b\\c", "d", None)], focus='a "x"')
    assert '"a \\"x\\"" -> "b\\\\c" [label="2.5"];' in dot
    assert '"b\\\\c" -> "d";' in dot  # no cost, no label
    assert '"a \\"x\\"" [style=filled, fillcolor=gold];' in dot
    assert dot.startswith("digraph links {") and dot.endswith("}")


def test_live_edges_keeps_the_cheapest_instance_per_link() -> None:
    frame = pd.DataFrame(
        {"src": ["a", "a", "b", 1], "dst": ["b", "b", "a", 2], "cost": [5.0, 2.0, 1.0, 0.0]}
    )
    edges = lakeview.live_edges(frame)
    assert edges.to_dict("records") == [
        {"src": "1", "dst": "2", "cost": 0.0, "instances": 1},
        {"src": "a", "dst": "b", "cost": 2.0, "instances": 2},
        {"src": "b", "dst": "a", "cost": 1.0, "instances": 1},
    ]
    assert lakeview.live_edges(frame.iloc[:0]).empty


def test_resolve_lake_prefers_args_then_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASPEN_LAKE", "/env/lake")
    assert lakeview.resolve_lake(["--lake", "/arg/lake", "--other"]) == "/arg/lake"
    assert lakeview.resolve_lake([]) == "/env/lake"
    monkeypatch.delenv("ASPEN_LAKE")
    assert lakeview.resolve_lake([]) == "./lakehouse"


def test_dashboard_command_binds_to_localhost_and_passes_the_lake(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    launched: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(subprocess, "call", lambda cmd, env: launched.append((cmd, env)) or 0)
    code = main(["--lake", str(tmp_path / "lake"), "dashboard", "--port", "8765"])
    assert code == 0
    ((command, env),) = launched
    # the lake reaches the server both ways: after `--`, and in ASPEN_LAKE for every page
    assert env["ASPEN_LAKE"] == (tmp_path / "lake").resolve().as_uri()
    assert command[:4] == [sys.executable, "-m", "streamlit", "run"]
    assert command[4] == str(DASHBOARDS / "app.py")
    separator = command.index("--")
    pairs = command[5:separator]
    options = dict(zip(pairs[::2], pairs[1::2], strict=True))
    assert options == {
        "--server.address": "127.0.0.1",
        "--server.port": "8765",
        "--server.headless": "true",
        "--browser.gatherUsageStats": "false",
    }
    assert command[separator:] == ["--", "--lake", (tmp_path / "lake").resolve().as_uri()]
    assert "http://127.0.0.1:8765" in capsys.readouterr().out


def test_dashboard_command_rejects_a_bad_port(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dashboard", "--port", "70000"]) == 2
    assert "--port must be between 1 and 65535" in capsys.readouterr().err


def test_dashboard_command_without_the_app_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ASPEN_DASHBOARD_APP", str(tmp_path / "nope.py"))
    assert main(["dashboard"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert dashboard_cli.DEFAULT_PORT == 8501
