"""The scale ladder: 100 / 1,000 / 10,000 nodes, each step a peer comparison (Aspen's
incremental single-link updates against networkx and DuckDB recomputation, views checked) in its
own process with a cut-off; a step that does not finish is recorded as such, and the larger steps
of its series are then not run (recorded as skipped). Two series: the demo density (2.4 link
tuples per node, group ``ladder``) and the paper's dense one (4.0, group ``ladder-dense``).

>>> [case for case, _task, _kwargs in ladder_tasks((100, 1000), updates=4)]
['100', '1000']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["DEGREES", "LADDER_SIZES", "ladder_tasks"]

LADDER_SIZES = (100, 1_000, 10_000)


#: link tuples per node of the two series: the demo's (the default ladder) and the paper's dense
DEGREES = {"ladder": 2.4, "ladder-dense": 4.0}


def ladder_tasks(sizes: Sequence[int] = LADDER_SIZES, updates: int = 6, degree: float = 2.4,
                 partitions: int = 12) -> list[tuple[str, str, dict[str, Any]]]:
    """(case, task, kwargs) of each step, for :func:`aspen.bench.worker.run_task`."""
    return [(str(n), "peers.compare",
             {"nodes": n, "degree": degree, "partitions": partitions, "updates": updates,
              "peers": ["networkx", "duckdb"]}) for n in sizes]
