"""Named crash points, to test that a batch killed anywhere reruns to the same result.

``ASPEN_CRASH_AT=<point>`` makes :func:`crash_point` raise :class:`InjectedCrash` at that point
(``ASPEN_CRASH_MODE=exit`` kills the process instead, as a lost executor or ``kill -9`` would).
Unset, a crash point costs one environment lookup.

>>> crash_point("never-set")  # nothing happens
"""

from __future__ import annotations

import os

from aspen.errors import InjectedCrash

__all__ = ["crash_point"]


def crash_point(name: str) -> None:
    """Crash here if ``ASPEN_CRASH_AT`` names this point."""
    if os.environ.get("ASPEN_CRASH_AT") != name:
        return
    if os.environ.get("ASPEN_CRASH_MODE") == "exit":
        os._exit(75)
    raise InjectedCrash(f"crash injected at {name!r} (ASPEN_CRASH_AT)")
