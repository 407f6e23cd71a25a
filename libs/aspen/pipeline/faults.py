"""The crash point of a Spark task: :func:`task_crash_point` fires only in the task's first
attempt.

Spark retries the task (when the master allows retries, e.g. ``local[2,2]``), and the test sees
what a retried task meets — in particular the nodes its first attempt advanced, still held by
the host process. The other crash points (:func:`aspen.crashpoints.crash_point`, the same
``ASPEN_CRASH_AT``) live below the lake.

>>> task_crash_point("never-set")  # nothing happens
"""

from __future__ import annotations

from aspen.crashpoints import CRASH_AT, crash_requested
from aspen.errors import InjectedCrash

__all__ = ["task_crash_point"]


def task_crash_point(name: str) -> None:
    """Crash here if ``ASPEN_CRASH_AT`` names this point and this is a Spark task's first
    attempt (outside a task: never)."""
    if not crash_requested(name):
        return
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is not None and context.attemptNumber() == 0:
        raise InjectedCrash(f"crash injected at {name!r} in a first task attempt ({CRASH_AT})")
