"""The provenance modes of a reading stream (a triggering rule or a stream network).

Reduced-Eager (``eager``) keeps the ids of the readings behind every window or output;
Replay-Lazy (``lazy``) only their covering interval, the ids rebuilt by replay on request;
``none`` nothing (the same query without provenance, for comparison).

>>> [KEEP[mode] for mode in MODES]
['ids', 'covering', 'none']
"""

from __future__ import annotations

__all__ = ["KEEP", "MODES"]

#: The provenance modes, as ``--provenance`` names them.
MODES: tuple[str, ...] = ("eager", "lazy", "none")
#: What a window keeps of its readings in each mode (:class:`aspen.streams.windows.KeyWindows`).
KEEP: dict[str, str] = {"eager": "ids", "lazy": "covering", "none": "none"}
