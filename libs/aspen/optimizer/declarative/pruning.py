"""Which pruning techniques the declarative optimizer applies (Liu 2016, §4.2).

Each technique is a switch, so each one's share of the pruning can be measured and every
combination checked against no pruning at all:

- ``aggregate_selection``: a PlanCost is propagated only if it can beat the current BestCost of
  its OR node (the min pushed into the aggregate's input, §4.2.1);
- ``source_suppression``: a pruned PlanCost deletes the SearchSpace tuple it came from, so the
  alternative stops referencing (and enumerating) its children;
- ``reference_counting``: an OR node no live parent AND node references is pruned with all its
  AND nodes, recursively (§4.2.2); the root is pinned;
- ``bounding``: recursive branch-and-bound, a PlanCost above the Bound of its OR node is pruned
  (rules r1–r4, §4.2.3).

:meth:`Pruning.equivalent_only` is aggregate selection alone: pruning against equivalent plans
only, never an OR node (the Evita Raced style the seed compares against).

>>> Pruning().enabled()
('aggregate_selection', 'source_suppression', 'reference_counting', 'bounding')
>>> Pruning.none().enabled(), Pruning.equivalent_only().enabled()
((), ('aggregate_selection',))
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields

__all__ = ["Pruning"]


@dataclass(frozen=True)
class Pruning:
    """The pruning switches; all on by default."""

    aggregate_selection: bool = True
    source_suppression: bool = True
    reference_counting: bool = True
    bounding: bool = True

    @staticmethod
    def none() -> Pruning:
        """No pruning: every AND node is enumerated and stays live."""
        return Pruning(False, False, False, False)

    @staticmethod
    def equivalent_only() -> Pruning:
        """Aggregate selection alone (prunes PlanCost rows, never SearchSpace or OR nodes)."""
        return Pruning(True, False, False, False)

    def enabled(self) -> tuple[str, ...]:
        """The names of the techniques switched on, in the order above.

        >>> Pruning(bounding=False).enabled()[-1]
        'reference_counting'
        """
        return tuple(f.name for f, on in zip(fields(self), astuple(self), strict=True) if on)
