"""Set-up for the Python worker a Spark task runs in: the task functions call
:func:`prepare_worker` first.

PySpark 4.1's worker calls ``importlib.invalidate_caches()`` at the start of every task (so that
files added with ``addPyFile`` become importable). On Python 3.10 and 3.11 that makes every
``zipimporter`` re-read its archive's whole directory — ``pyspark.zip``'s ≈1,700 entries, once
for each package directory imported from it — ≈0.3 s per task on the 2-core machine, more than
most query nodes' work in a round (measured: 12 trivial tasks, 2.2 s → 0.55 s). CPython made
that invalidation lazy in 3.12 (gh-103200) and Spark stops calling it on every task after 4.1
(SPARK-54744). Until then a worker keeps the directories it has read: the archives of a Spark
worker do not change while it lives (Spark refuses to overwrite an added file with different
content), and an archive added later gets a new importer, which reads its directory anyway.

>>> prepare_worker()  # outside a Spark task: nothing changes
False
"""

from __future__ import annotations

import sys
import zipimport

__all__ = ["prepare_worker"]

_prepared = False


def _keep_directory(self: zipimport.zipimporter) -> None:
    """``zipimporter.invalidate_caches`` in a prepared worker: the directory read stays."""


def prepare_worker() -> bool:
    """In a Spark task's Python worker on Python < 3.12, stop re-reading zip archives' directories
    at every task; returns whether this call did so (once per worker)."""
    global _prepared
    if _prepared or sys.version_info >= (3, 12):
        return False
    from pyspark import TaskContext

    if TaskContext.get() is None:  # the driver, or a test calling a task function directly
        return False
    zipimport.zipimporter.invalidate_caches = _keep_directory  # type: ignore[method-assign]
    _prepared = True
    return True
