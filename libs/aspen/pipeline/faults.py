"""Named crash points, to test that a batch killed anywhere reruns to the same result.

``ASPEN_CRASH_AT=<point>`` makes :func:`crash_point` raise :class:`InjectedCrash` at that point
(``ASPEN_CRASH_MODE=exit`` kills the process instead, as a lost executor or ``kill -9`` would).
Unset, a crash point costs one environment lookup.

:func:`task_crash_point` is the same inside a Spark task, but only in the task's first attempt:
Spark retries the task (when the master allows retries, e.g. ``local[2,2]``), and the test sees
what a retried task meets — in particular the nodes its first attempt advanced, still held by
the host process.

>>> crash_point("never-set")  # nothing happens
>>> task_crash_point("never-set")  # nor here
"""

from __future__ import annotations

import os

from aspen.errors import InjectedCrash

__all__ = ["crash_point", "task_crash_point"]


def crash_point(name: str) -> None:
    """Crash here if ``ASPEN_CRASH_AT`` names this point."""
    if os.environ.get("ASPEN_CRASH_AT") != name:
        return
    if os.environ.get("ASPEN_CRASH_MODE") == "exit":
        os._exit(75)
    raise InjectedCrash(f"crash injected at {name!r} (ASPEN_CRASH_AT)")


def task_crash_point(name: str) -> None:
    """Crash here if ``ASPEN_CRASH_AT`` names this point and this is a Spark task's first
    attempt (outside a task: never)."""
    if os.environ.get("ASPEN_CRASH_AT") != name:
        return
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is not None and context.attemptNumber() == 0:
        raise InjectedCrash(f"crash injected at {name!r} in a first task attempt (ASPEN_CRASH_AT)")
