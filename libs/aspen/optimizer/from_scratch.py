"""The non-incremental optimizers' shared protocol: re-optimization is optimization from scratch.

:class:`FromScratch` implements :class:`~aspen.optimizer.result.Optimizer` for optimizers that
keep no state between calls but the statistics: :meth:`~FromScratch.reoptimize` applies the
change and searches again. Its :class:`Tally` fills the :class:`~aspen.optimizer.result.Counters`
the same way for all of them: a node visited for the first time since the last
:meth:`~FromScratch.optimize` is *created*, a node visited again (later in the same call or in a
later call) is *recomputed*; the subclass counts what its own pruning drops.

>>> tally = Tally(set(), set())
>>> from aspen.optimizer.space import OrNode
>>> tally.or_visit(OrNode(frozenset({"a"}), None))
>>> tally.or_visit(OrNode(frozenset({"a"}), None))
>>> tally.counters.or_created, tally.counters.or_recomputed
(1, 1)
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from aspen.errors import ConfigError
from aspen.optimizer.result import Counters, Result
from aspen.optimizer.space import AndNode, OrNode, SearchSpace
from aspen.optimizer.stats import Stats

__all__ = ["FromScratch", "Tally"]


class Tally:
    """Created / recomputed counts of one call, against the nodes earlier calls visited."""

    def __init__(self, seen_or: set[OrNode], seen_and: set[AndNode]) -> None:
        self.counters = Counters()
        self._seen_or = seen_or
        self._seen_and = seen_and

    def or_visit(self, node: OrNode) -> None:
        """An OR node's best cost is being computed (searched)."""
        if node in self._seen_or:
            self.counters.or_recomputed += 1
        else:
            self._seen_or.add(node)
            self.counters.or_created += 1

    def and_visit(self, alt: AndNode) -> None:
        """An AND node is being costed (its local cost computed)."""
        if alt in self._seen_and:
            self.counters.and_recomputed += 1
        else:
            self._seen_and.add(alt)
            self.counters.and_created += 1


class FromScratch:
    """Base of the optimizers whose :meth:`reoptimize` is a new search under the changed
    statistics; a subclass implements :meth:`_search`."""

    name = "from-scratch"

    def __init__(self, space: SearchSpace) -> None:
        self.space = space
        self.stats: Stats | None = None
        self._seen_or: set[OrNode] = set()
        self._seen_and: set[AndNode] = set()

    def optimize(self, stats: Stats) -> Result:
        """Plan from scratch under ``stats`` (every node visited counts as created)."""
        self._seen_or.clear()
        self._seen_and.clear()
        return self._run(stats)

    def reoptimize(self, change: Mapping[str, Mapping[str, Any]]) -> Result:
        """Apply one batch of changes to the last statistics and plan again from scratch."""
        if self.stats is None:
            raise ConfigError(f"{self.name}: reoptimize before optimize (no statistics yet)")
        stats, _ = self.stats.changed(change)
        return self._run(stats)

    def _run(self, stats: Stats) -> Result:
        tally = Tally(self._seen_or, self._seen_and)
        started = time.perf_counter()
        cost, plan = self._search(stats, tally)
        seconds = time.perf_counter() - started
        self.stats = stats
        return Result(plan, cost, tally.counters, seconds)

    def _search(self, stats: Stats, tally: Tally) -> tuple[float, dict[str, Any]]:
        """The best cost and plan under ``stats``, counting visits in ``tally``."""
        raise NotImplementedError
