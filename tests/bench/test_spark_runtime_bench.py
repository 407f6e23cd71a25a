"""The Spark runtime's benchmark on the 22-node topology: every
batch's maintained ``reachable`` equals DRed's and both Spark recomputes' (the tuples, not their
number), and a single-link deletion ships at least 10× fewer rows than DRed sends messages (the
performance target, on this fixed input). No timed assertion."""

from __future__ import annotations

import pytest

from aspen.bench.spark_runtime import maintain_batches

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PHASES = ("apply", "read", "rounds", "publish", "write")


def test_every_batch_agrees_with_dred_and_the_recomputes(spark) -> None:
    result = maintain_batches(tiny=True, partitions=2, sizes=(1,), seed=3, spark=spark)
    batches = result["batches"]
    assert [b["kind"] for b in batches] == ["build", "delete", "insert"]
    assert result["nodes"] == 22 and batches[0]["size"] == result["link_tuples"]
    for batch in batches:
        assert batch["view_tuples"] > 0
        assert batch["dred_equal"] and batch["recompute_equal"] and batch["recompute_lake_equal"]
        assert batch["rounds"] >= 1
        assert batch["spark_jobs"] == sum(batch[f"{p}_spark_jobs"] for p in PHASES) > 0
    delete = batches[1]
    assert delete["size"] == 1 and delete["updates_in"] >= 1
    assert 10 * delete["rows_shipped"] <= delete["dred_messages"], delete
    assert spark.range(2).count() == 2  # the shared session is still up
