"""Named crash points, to test that work killed anywhere reruns to the same result.

``ASPEN_CRASH_AT=<point>`` makes :func:`crash_point` raise :class:`~aspen.errors.InjectedCrash`
at that point (``ASPEN_CRASH_MODE=exit`` kills the process instead, with :data:`CRASH_EXIT`, as a
lost executor or ``kill -9`` would). Unset, a crash point costs one environment lookup. Every
layer may name its own points: this module sits below them all.

>>> crash_point("never-set")  # nothing happens
>>> crash_requested("never-set")
False
"""

from __future__ import annotations

import os

from aspen.errors import InjectedCrash

__all__ = ["CRASH_AT", "CRASH_EXIT", "CRASH_MODE", "crash_point", "crash_requested"]

#: The environment variable that names the crash point to fire.
CRASH_AT = "ASPEN_CRASH_AT"
#: The environment variable that, set to ``exit``, makes a crash point end the process.
CRASH_MODE = "ASPEN_CRASH_MODE"
#: The exit code of a process that died at a crash point (``ASPEN_CRASH_MODE=exit``).
CRASH_EXIT = 75


def crash_requested(name: str) -> bool:
    """Whether ``ASPEN_CRASH_AT`` names point ``name``."""
    return os.environ.get(CRASH_AT) == name


def crash_point(name: str) -> None:
    """Crash here if ``ASPEN_CRASH_AT`` names this point."""
    if not crash_requested(name):
        return
    if os.environ.get(CRASH_MODE) == "exit":
        os._exit(CRASH_EXIT)
    raise InjectedCrash(f"crash injected at {name!r} ({CRASH_AT})")
