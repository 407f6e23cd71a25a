"""``aspen maintain --follow``: a long-lived maintainer picks up each ingest as it lands, holds
the lake's lease (a second maintainer is refused with one line), and stops between batches —
asked through the lake (``aspen maintain --stop``: a ``spark-submit`` follower in its own Spark
application, local runtime) or by SIGTERM (an ``aspen`` process in this one, spark runtime: query
nodes in host processes) — releasing the lease."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from aspen.cli.main import main
from aspen.lake.deltars import read_table
from aspen.lake.ingest import ingest_files
from aspen.pipeline import ledger
from aspen.pipeline.lease import current_holder
from aspen.pipeline.verify import verify_lake

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.spark, pytest.mark.slow]

FIRST = [{"op": "insert", "relation": "link", "src": s, "dst": d, "cost": 1.0}
         for s, d in (("a", "b"), ("b", "c"), ("c", "d"))]
SECOND = [{"op": "delete", "relation": "link", "src": "b", "dst": "c"},
          {"op": "insert", "relation": "link", "src": "d", "dst": "a", "cost": 1.0}]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _wait_for(condition, seconds: float, follower: subprocess.Popen) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if follower.poll() is not None:
            out, err = follower.communicate()
            pytest.fail(f"the follower exited ({follower.returncode}): {out[-2000:]}{err[-3000:]}")
        if time.monotonic() > deadline:
            follower.kill()
            pytest.fail(f"not within {seconds} s")
        time.sleep(0.5)


def _reachable(lake) -> set[tuple[str, str]]:
    frame = read_table(lake, "reachable")
    return set(zip(frame["src"], frame["dst"], strict=True))


def test_spark_submit_follower_maintains_each_ingest_and_stops_when_asked(spark, lake, tmp_path: Path,
                                                             capsys) -> None:
    ingest_files(spark, lake, [_write(tmp_path / "first.jsonl", FIRST)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYSPARK_PYTHON"] = sys.executable
    env.pop("SPARK_MASTER", None)
    follower = subprocess.Popen(
        [str(VENV_BIN / "spark-submit"), "--master", "local[2]", str(REPO_ROOT / "jobs" /
         "maintain.py"), "--lake", lake.lake, "--runtime", "local", "--partitions", "2",
         "--follow", "--poll", "0.5"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        _wait_for(lambda: ledger.last_committed(lake).batch_id == 1, 300, follower)
        assert _reachable(lake) == {("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"),
                                    ("b", "d"), ("c", "d")}
        holder = current_holder(lake)
        assert (holder.pid != os.getpid(), holder.released) == (True, False)
        assert "--follow" in holder.command

        capsys.readouterr()
        assert main(["--lake", lake.lake, "maintain"]) == 2  # refused before any work
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "aspen maintain: the lake is being maintained by " \
            "'aspen maintain --runtime local --follow'" in err
        assert ledger.last_committed(lake).batch_id == 1

        ingest_files(spark, lake, [_write(tmp_path / "second.jsonl", SECOND)])
        _wait_for(lambda: ledger.last_committed(lake).batch_id == 2, 300, follower)
        # b → c gone, d → a new: a → b, c → d → a → b
        assert _reachable(lake) == {("a", "b"), ("c", "d"), ("c", "a"), ("c", "b"),
                                    ("d", "a"), ("d", "b")}
        assert verify_lake(lake).ok
        capsys.readouterr()
        assert main(["--lake", lake.lake, "maintain", "--stop"]) == 0  # returns once stopped
        said = capsys.readouterr().out.splitlines()
        assert said[0].startswith("asked 'aspen maintain --runtime local --follow' (pid ")
        assert said[1:] == ["stopped"]
        out, err = follower.communicate(timeout=120)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    assert follower.returncode == 0, err[-3000:]
    assert "batch 1: through ingest batch 1" in out and "batch 2: through ingest batch 2" in out
    assert "follow: 2 batch(es) maintained" in out
    assert current_holder(lake).released
    assert ledger.last_committed(lake).runtime == "local"


def test_spark_runtime_follower_stops_after_its_batch_on_sigterm(spark, lake, tmp_path: Path,
                                                        capsys) -> None:
    ingest_files(spark, lake, [_write(tmp_path / "first.jsonl", FIRST)])

    def terminate_after_first_batch() -> None:
        deadline = time.monotonic() + 300
        while ledger.last_committed(lake).batch_id < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGTERM)  # the follower's handler: stop between batches

    before = signal.getsignal(signal.SIGTERM)
    killer = threading.Thread(target=terminate_after_first_batch)
    killer.start()
    code = main(["--lake", lake.lake, "maintain", "--runtime", "spark", "--partitions", "2",
                 "--follow", "--poll", "0.2", "--for", "300"])
    killer.join()
    out = capsys.readouterr().out
    assert code == 0
    assert "batch 1: through ingest batch 1" in out
    assert re.fullmatch(r"follow: 1 batch\(es\) maintained in \d+ poll\(s\)", out.splitlines()[-1])
    assert current_holder(lake).released
    assert signal.getsignal(signal.SIGTERM) is before  # the handler was put back
    assert verify_lake(lake).ok
