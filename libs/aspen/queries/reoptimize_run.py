"""Re-optimizing the registered queries as a command runs it (``aspen query reoptimize``,
``jobs/reoptimize.py``): unknown names refused before Spark starts, a line per outcome, and
how many queries could not be re-optimized.

>>> lines = []
>>> reoptimize_queries(Settings(lake="/nonexistent/lake"), emit=lines.append)
0
>>> lines
['no query is registered: nothing to re-optimize']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aspen.errors import AspenError
from aspen.queries.reoptimize import DEFAULT_REOPTIMIZER
from aspen.settings import Settings

__all__ = ["reoptimize_queries"]


def reoptimize_queries(settings: Settings, names: Sequence[str] = (),
                       method: str = DEFAULT_REOPTIMIZER,
                       emit: Callable[[str], None] = print) -> int:
    """Re-optimize ``names`` (default: every registered query) with ``method``, adopting each
    changed plan (:func:`aspen.queries.reoptimize.reoptimize_all`); each outcome's lines go to
    ``emit``. The number of queries that failed (their tables missing, say): the others ran."""
    from aspen.queries.registry import get_query, list_queries
    from aspen.queries.reoptimize import reoptimize_all
    from aspen.spark.session import get_spark

    names = list(names)
    for name in names:  # an unknown name is refused before Spark starts
        get_query(settings, name)
    if not names and not list_queries(settings):
        emit("no query is registered: nothing to re-optimize")
        return 0
    failed = 0
    for name, outcome in reoptimize_all(get_spark("aspen-reoptimize"), settings, names, method):
        if isinstance(outcome, AspenError):
            failed += 1
            emit(f"{name}: not re-optimized: {outcome}")
            continue
        for line in outcome.lines():
            emit(line)
    return failed
