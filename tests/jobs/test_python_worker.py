"""The Python worker set-up the task functions run first (aspen.spark.python_worker)."""

from __future__ import annotations

import sys
import zipimport
from collections.abc import Iterator

import pandas as pd
import pytest

from aspen.spark.python_worker import prepare_worker

pytestmark = pytest.mark.spark


def test_a_task_keeps_its_zip_directories_and_the_driver_does_not(spark) -> None:
    # defined here, so that cloudpickle ships it by value (the tests are not importable there)
    def _task(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """Prepare the worker (a worker reused from an earlier test may be prepared already),
        then report what a later task would see and that imports still work."""
        import zipimport as zi

        prepare_worker()
        import aspen.engine.partitioning  # noqa: F401  (imported after the set-up)

        for batch in batches:
            yield pd.DataFrame({
                "n": [len(batch)],
                "kept": [zi.zipimporter.invalidate_caches.__name__ == "_keep_directory"],
                "zipped": [any(p.endswith(".zip") for p in sys.path)],
            })

    rows = spark.range(40).repartition(4).mapInPandas(
        _task, "n long, kept boolean, zipped boolean").collect()
    assert sum(r.n for r in rows) == 40
    assert all(r.kept for r in rows)          # every task ran in a prepared worker
    assert all(r.zipped for r in rows)        # the workers do import pyspark from its zip
    assert prepare_worker() is False          # the driver: no task context, nothing changed
    assert zipimport.zipimporter.invalidate_caches.__name__ == "invalidate_caches"
