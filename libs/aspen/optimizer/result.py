"""What every optimizer returns, and the interface the CLI and the benchmarks drive.

An optimizer is built on a :class:`~aspen.optimizer.space.SearchSpace`; :meth:`optimize` plans
from scratch under given statistics, :meth:`reoptimize` applies one batch of statistic changes
(a C.jsonl line) — incrementally for the incremental optimizers, from scratch for the
baselines. Both return a :class:`Result`: the best plan (the JSON tree of
:func:`aspen.optimizer.cost.cost_of`), its cost, and how much of the and-or graph the call
touched.

>>> Counters(or_created=3).as_dict()["or_created"]
3
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from aspen.optimizer.stats import Stats

__all__ = ["Counters", "Optimizer", "Result"]


@dataclass
class Counters:
    """Work done by one optimize or reoptimize call, in and-or graph nodes: created (first
    enumerated), pruned (dropped by a pruning technique), recomputed (cost computed again)."""

    or_created: int = 0
    and_created: int = 0
    or_pruned: int = 0
    and_pruned: int = 0
    or_recomputed: int = 0
    and_recomputed: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counters by name."""
        return asdict(self)


@dataclass
class Result:
    """The best plan, its cost, the call's counters and its wall seconds."""

    plan: dict[str, Any]
    cost: float
    counters: Counters = field(default_factory=Counters)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The JSON form ``aspen optimize --format json`` prints."""
        return {"plan": self.plan, "cost": self.cost, "seconds": self.seconds,
                **self.counters.as_dict()}


class Optimizer(Protocol):
    """The interface of every optimizer method (``aspen optimize --method``)."""

    name: str

    def optimize(self, stats: Stats) -> Result:
        """Plan from scratch under ``stats``."""

    def reoptimize(self, change: Mapping[str, Mapping[str, Any]]) -> Result:
        """Apply one batch of statistic changes to the last statistics and plan again."""
