"""``spark-submit jobs/ingest.py`` runs as a real spark-submit application (its own JVM)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_spark_submit_ingest_job(tmp_path: Path) -> None:
    updates = tmp_path / "batch.jsonl"
    updates.write_text(
        '{"op":"insert","relation":"link","src":"a","dst":"b","cost":2.0}\n'
        '{"op":"insert","relation":"link","src":"a","dst":"b","cost":"x"}\n'
    )
    lake = tmp_path / "lake"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"  # spark-submit finds pyspark
    env["PYSPARK_PYTHON"] = sys.executable
    env.pop("SPARK_MASTER", None)
    result = subprocess.run(
        [str(VENV_BIN / "spark-submit"), "--master", "local[1]", str(REPO_ROOT / "jobs" / "ingest.py"),
         "--lake", str(lake), str(updates)],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "batch.jsonl: 1 valid, 1 quarantined (wrong_type 1)" in result.stdout
    assert "batch 1: 1 record(s) appended to updates, 1 to quarantine" in result.stdout

    from deltalake import DeltaTable

    logged = DeltaTable(str(lake / "updates")).to_pandas()
    assert logged[["batch_id", "seq", "src", "dst", "cost"]].values.tolist() == [[1, 1, "a", "b", 2.0]]
    quarantined = DeltaTable(str(lake / "quarantine")).to_pandas()
    assert quarantined["line"].tolist() == [2]
