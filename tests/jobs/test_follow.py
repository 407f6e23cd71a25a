"""``aspen maintain --follow``: a long-lived maintainer picks up each ingest as it lands, holds
the lake's lease (a second maintainer is refused with one line), and stops between batches —
asked through the lake (``aspen maintain --stop``; spark runtime, query nodes in host processes)
or by SIGTERM (local runtime) — releasing the lease. The followers run in this process's Spark
application (``jobs/maintain.py`` is the same maintainer under spark-submit: tests/jobs/
test_maintain_spark_reruns.py runs it so)."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from aspen.cli.main import main
from aspen.lake.committed import read_committed
from aspen.lake.deltars import read_table
from aspen.lake.ingest import ingest_files
from aspen.lake.lease import current_holder
from aspen.pipeline import ledger
from aspen.pipeline.verify import verify_lake

pytestmark = [pytest.mark.spark, pytest.mark.slow]

FIRST = [{"op": "insert", "relation": "link", "src": s, "dst": d, "cost": 1.0}
         for s, d in (("a", "b"), ("b", "c"), ("c", "d"))]
SECOND = [{"op": "delete", "relation": "link", "src": "b", "dst": "c"},
          {"op": "insert", "relation": "link", "src": "d", "dst": "a", "cost": 1.0}]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _wait_for_batch(lake, batch_id: int, follower: threading.Thread) -> None:
    deadline = time.monotonic() + 300
    while ledger.last_committed(lake).batch_id < batch_id:
        assert follower.is_alive(), "the follower ended"
        assert time.monotonic() < deadline, f"batch {batch_id} not within 300 s"
        time.sleep(0.2)


def _reachable(lake) -> set[tuple[str, str]]:
    frame = read_committed(lake, "reachable")
    return set(zip(frame["src"], frame["dst"], strict=True))


def test_follower_maintains_each_ingest_and_stops_when_asked(spark, lake, tmp_path: Path,
                                                             capsys) -> None:
    ingest_files(lake, [_write(tmp_path / "first.jsonl", FIRST)])
    codes: list[int] = []
    follower = threading.Thread(target=lambda: codes.append(main(
        ["--lake", lake.lake, "maintain", "--runtime", "spark", "--partitions", "2",
         "--follow", "--poll", "0.2", "--for", "600"])))
    follower.start()
    said = ""
    try:
        _wait_for_batch(lake, 1, follower)
        assert _reachable(lake) == {("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"),
                                    ("b", "d"), ("c", "d")}
        holder = current_holder(lake)
        assert (holder.follower, holder.released, holder.pid) == (True, False, os.getpid())

        said += capsys.readouterr().out
        assert main(["--lake", lake.lake, "maintain"]) == 2  # refused before any work
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "aspen maintain: the lake is being maintained by " \
            "'aspen maintain --runtime spark --follow'" in err
        assert ledger.last_committed(lake).batch_id == 1

        ingest_files(lake, [_write(tmp_path / "second.jsonl", SECOND)])
        _wait_for_batch(lake, 2, follower)
        # b → c gone, d → a new: a → b, c → d → a → b
        assert _reachable(lake) == {("a", "b"), ("c", "d"), ("c", "a"), ("c", "b"),
                                    ("d", "a"), ("d", "b")}
        assert verify_lake(lake).ok
    finally:
        assert main(["--lake", lake.lake, "maintain", "--stop"]) == 0  # returns once stopped
        follower.join(timeout=300)
    said += capsys.readouterr().out
    assert not follower.is_alive() and codes == [0]
    lines = said.splitlines()  # the follower's lines interleave with --stop's
    asked = [i for i, line in enumerate(lines) if re.fullmatch(
        r"asked 'aspen maintain --runtime spark --follow' \(pid \d+ on .*\) to stop after its "
        r"current batch", line)]
    assert len(asked) == 1 and lines.index("stopped") > asked[0]
    assert "batch 1: through ingest batch 1" in said and "batch 2: through ingest batch 2" in said
    assert "follow: 2 batch(es) maintained" in said
    assert current_holder(lake).released
    assert ledger.last_committed(lake).runtime == "spark"


def test_follower_stops_after_its_batch_on_sigterm(spark, lake, tmp_path: Path,
                                                   capsys) -> None:
    ingest_files(lake, [_write(tmp_path / "first.jsonl", FIRST)])

    def terminate_after_first_batch() -> None:
        deadline = time.monotonic() + 300
        while ledger.last_committed(lake).batch_id < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGTERM)  # the follower's handler: stop between batches

    before = signal.getsignal(signal.SIGTERM)
    killer = threading.Thread(target=terminate_after_first_batch)
    killer.start()
    code = main(["--lake", lake.lake, "maintain", "--follow", "--poll", "0.2", "--for", "300"])
    killer.join()
    out = capsys.readouterr().out
    assert code == 0
    assert "batch 1: through ingest batch 1" in out
    assert re.fullmatch(r"follow: 1 batch\(es\) maintained in \d+ poll\(s\)", out.splitlines()[-1])
    assert current_holder(lake).released
    assert signal.getsignal(signal.SIGTERM) is before  # the handler was put back
    assert verify_lake(lake).ok


def test_follower_sweeps_ttls_under_its_own_lease(spark, lake, tmp_path: Path, capsys) -> None:
    """The sweep re-enters the follower's maintainer lease (never a lease of its own, never
    refused), and the deaths it writes are maintained by the follower's next look."""
    from deltalake import DeltaTable

    ttl = [{**FIRST[0], "ttl_s": 1, "event_time": "2026-01-01T00:00:00Z"}, *FIRST[1:]]
    ingest_files(lake, [_write(tmp_path / "ttl.jsonl", ttl)])
    code = main(["--lake", lake.lake, "maintain", "--follow", "--poll", "0.2", "--for", "300",
                 "--max-batches", "1", "--expire-every", "60", "--housekeep-every", "0"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert re.search(r"^expire: batch 2: 1 instance\(s\) expired as of .* \(1 link\)$", out,
                     flags=re.MULTILINE), out
    assert ledger.last_committed(lake).through_ingest_batch == 2  # the sweep's batch maintained
    assert _reachable(lake) == {("b", "c"), ("b", "d"), ("c", "d")}
    registry = read_table(lake, "variables").set_index("var")
    assert registry.loc["v1", "death"] == "expired"
    table = DeltaTable(lake.table_uri("maintainer_lease"))
    commands = {command for v in range(table.version() + 1)  # version 0: the empty table
                for command in DeltaTable(lake.table_uri("maintainer_lease"), version=v)
                .to_pyarrow_table().column("command").to_pylist()}
    assert commands == {"aspen maintain --runtime local --follow"}
    assert current_holder(lake).released
