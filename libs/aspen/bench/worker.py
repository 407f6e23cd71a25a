"""Run one bench task in its own process, with a time cut-off (past it, "did not finish").

:func:`run_task` starts ``python -m aspen.bench.worker TASK KWARGS OUT`` in a new session; the
child runs the task (``module.function`` of :data:`TASKS`) and writes its JSON result to OUT.
On timeout the whole process group (a Spark JVM included) is killed and the record says so,
with what the task measured so far under ``partial`` (see
:func:`aspen.bench.common.write_partial`). A task without Spark is limited to
:data:`MEMORY_LIMIT_GB` of address space (a run that outgrows it ends with MemoryError, recorded
as an error) so that a large step cannot swamp the machine.

>>> rec = run_task("order.variable_order", {"tiny": True, "orders": ["dfs"]}, timeout=60)
>>> rec["status"], sorted(rec["result"]["orders"])
('ok', ['dfs'])
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aspen.bench.common import PARTIAL_ENV, error_note

__all__ = ["MEMORY_LIMIT_GB", "TASKS", "main", "run_task"]

#: Address-space limit of a worker that starts no JVM.
MEMORY_LIMIT_GB = 8

#: The functions a worker may run.
TASKS = ("paper.insertions", "paper.deletions", "paper.regions", "paper.density", "paper.aggsel",
         "order.variable_order", "peers.compare", "spark_runtime.maintain_batches")
#: Tasks that start a JVM (no address-space limit: the JVM reserves far more than it uses).
SPARK_TASKS = ("spark_runtime.maintain_batches",)


#: the worker writes its peak resident set size (MB) next to the result, in ``OUT + RSS_SUFFIX``
RSS_SUFFIX = ".peak_rss_mb"


def run_task(task: str, kwargs: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run ``task(**kwargs)`` in a subprocess; ``{"status": ok|timeout|error, "seconds", ...}``."""
    if task not in TASKS:
        raise ValueError(f"unknown bench task {task!r}")
    with tempfile.TemporaryDirectory(prefix="aspen-bench-") as tmp:
        out = Path(tmp) / "result.json"
        log = Path(tmp) / "stderr.txt"
        partial = Path(tmp) / "partial.json"
        env = dict(os.environ, **{PARTIAL_ENV: str(partial)})
        start = time.perf_counter()
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "aspen.bench.worker", task, json.dumps(kwargs), str(out)],
                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True, env=env)
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return _with_partial(
                    {"task": task, "kwargs": kwargs, "status": "timeout",
                     "seconds": time.perf_counter() - start,
                     "note": f"did not finish within {timeout:.0f} s"}, partial)
        seconds = time.perf_counter() - start
        if code != 0 or not out.exists():
            lines = log.read_text(errors="replace").strip().splitlines()
            return _with_partial(
                {"task": task, "kwargs": kwargs, "status": "error", "seconds": seconds,
                 "note": f"exit code {code}: {error_note(lines)}",
                 "errors": _error_lines(lines)}, partial)
        rss = Path(f"{out}{RSS_SUFFIX}")
        return {"task": task, "kwargs": kwargs, "status": "ok", "seconds": seconds,
                "result": json.loads(out.read_text()),
                "peak_rss_mb": float(rss.read_text()) if rss.exists() else None}


def _with_partial(rec: dict[str, Any], partial: Path) -> dict[str, Any]:
    """``rec`` plus what a task that did not finish measured before (if it wrote anything)."""
    if partial.exists():
        rec["partial"] = json.loads(partial.read_text())
    return rec


def _error_lines(lines: list[str], keep: int = 12) -> list[str]:
    """The last stderr lines of a failed task that name an error (a JVM that died, a Python
    worker that crashed), so that the record says why; the stderr itself is temporary. No
    traceback frames, no absolute paths (:func:`~aspen.bench.common.error_note` of each).

    >>> _error_lines(['  File "/a/b.py", line 3, in f', "ERROR Executor: lost /tmp/x/y.bin"])
    ['ERROR Executor: lost y.bin']
    """
    words = ("ERROR", "Error", "Exception", "Killed", "FATAL", "exited")
    named = [line for line in lines if any(w in line for w in words)
             and not line.strip().startswith("File ")]
    return [error_note([line]) for line in named][-keep:]


def main(argv: list[str] | None = None) -> int:
    """Worker entry: ``TASK KWARGS_JSON OUT_PATH``."""
    task, kwargs, out = (argv if argv is not None else sys.argv[1:])
    module_name, func_name = task.split(".")
    arguments = json.loads(kwargs)
    uses_spark = task in SPARK_TASKS or any(str(p).startswith("spark")
                                            for p in arguments.get("peers", []))
    if not uses_spark:
        import resource

        limit = MEMORY_LIMIT_GB * 2**30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    func = getattr(importlib.import_module(f"aspen.bench.{module_name}"), func_name)
    result = func(**arguments)
    Path(out).write_text(json.dumps(result))
    import resource

    # the Python process's peak resident set (KiB on Linux); a Spark task's JVM is not in it
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(f"{out}{RSS_SUFFIX}").write_text(f"{peak_mb:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
