"""The optimizer methods by name (``aspen optimize --method``): each a factory of an
:class:`~aspen.optimizer.result.Optimizer` over a :class:`~aspen.optimizer.space.SearchSpace`.

============== ==========================================================================
``declarative`` the rule-based optimizer with incremental re-optimization (Liu 2016, ch. 4)
``volcano``     top-down memo and branch-and-bound, re-optimizing from scratch
``systemr``     bottom-up dynamic programming by level, re-optimizing from scratch
``bottom-up``   the incremental System-R-style re-optimizer (Liu 2016, §5.2)
``top-down``    the incremental Volcano-style re-optimizer (Liu 2016, §5.2)
``exhaustive``  every node costed, no pruning: the reference
============== ==========================================================================

The declarative and procedural optimizers are imported only when asked for, so the others work
without them. Keyword options go to the optimizer's constructor (``pruning=...`` for
``declarative``; ``memoize=...``, ``conditional=...`` for ``bottom-up`` / ``top-down``).

>>> from aspen.optimizer.query import Query
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> make_optimizer("volcano", SearchSpace(q)).name
'volcano'
>>> make_optimizer("simplex", SearchSpace(q))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
aspen.errors.ConfigError: unknown optimizer method 'simplex'; known: declarative, volcano, ...
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from aspen.errors import ConfigError
from aspen.optimizer.exhaustive import Exhaustive
from aspen.optimizer.limits import check_size
from aspen.optimizer.result import Optimizer
from aspen.optimizer.space import SearchSpace
from aspen.optimizer.systemr import SystemR
from aspen.optimizer.volcano import Volcano

__all__ = ["METHODS", "OptimizerFactory", "make_optimizer"]

#: ``factory(space, **options)`` → an optimizer.
OptimizerFactory = Callable[..., Optimizer]


class _Lazy:
    """A factory that imports its class on first use; a failed import is a ConfigError."""

    def __init__(self, method: str, module: str, cls: str) -> None:
        self.method, self.module, self.cls = method, module, cls

    def __call__(self, space: SearchSpace, **options: Any) -> Optimizer:
        try:
            factory = getattr(importlib.import_module(self.module), self.cls)
        except (ImportError, AttributeError) as err:
            raise ConfigError(f"method {self.method} is not available ({err})") from None
        return factory(space, **options)

    def __repr__(self) -> str:
        return f"{self.module}.{self.cls}"


#: Every method name → its factory, in the order ``aspen optimize --help`` lists them.
METHODS: dict[str, OptimizerFactory] = {
    "declarative": _Lazy("declarative", "aspen.optimizer.declarative", "DeclarativeOptimizer"),
    "volcano": Volcano,
    "systemr": SystemR,
    "bottom-up": _Lazy("bottom-up", "aspen.optimizer.procedural", "BottomUp"),
    "top-down": _Lazy("top-down", "aspen.optimizer.procedural", "TopDown"),
    "exhaustive": Exhaustive,
}


def make_optimizer(method: str, space: SearchSpace, **options: Any) -> Optimizer:
    """The optimizer ``method`` names, over ``space`` (ConfigError: unknown or not available,
    or a query beyond :mod:`aspen.optimizer.limits`)."""
    factory = METHODS.get(method)
    if factory is None:
        raise ConfigError(f"unknown optimizer method {method!r}; known: {', '.join(METHODS)}")
    check_size(space.query)
    return factory(space, **options)
