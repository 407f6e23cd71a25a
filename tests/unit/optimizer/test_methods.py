"""The method registry: its names, its errors, and every available method's agreement with the
exhaustive optimum, from scratch and after changes (methods not yet importable are skipped)."""

from __future__ import annotations

import pytest
from join_graphs import assert_close, graph

from aspen.errors import ConfigError
from aspen.optimizer import methods as registry
from aspen.optimizer.exhaustive import best_plan
from aspen.optimizer.methods import METHODS, make_optimizer
from aspen.optimizer.space import SearchSpace, SpaceOptions
from aspen.optimizer.stats import Stats

STATS = Stats.from_json({
    "tables": {f"t{i}": {"rows": [2e6, 40, 3e4, 900, 7e5][i], "width": 10 + 25 * i}
               for i in range(5)},
    "params": {"broadcast_limit": 1e5}})
CHANGES = [{"rows": {"t1": 4e6}}, {"selectivity": {"r0.k=r1.k": 1e-7}},
           {"params": {"net_byte": 4e-7}, "rows": {"t1": 40}}]


def test_the_method_names() -> None:
    assert list(METHODS) == ["declarative", "volcano", "systemr", "bottom-up", "top-down",
                             "exhaustive"]


def test_unknown_and_unavailable_methods_are_config_errors(monkeypatch) -> None:
    space = SearchSpace(graph("chain", 2))
    with pytest.raises(ConfigError, match="unknown optimizer method 'simplex'"):
        make_optimizer("simplex", space)
    missing = registry._Lazy("dreamt", "aspen.optimizer.no_such_module", "Dreamt")
    monkeypatch.setitem(METHODS, "dreamt", missing)
    with pytest.raises(ConfigError, match="method dreamt is not available"):
        make_optimizer("dreamt", space)


def _optimizer(method: str, space: SearchSpace):
    """Every method is a module of the repository: one that does not import fails the test."""
    return make_optimizer(method, space)


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("shape, left_linear", [("chain", False), ("cycle", False),
                                                ("star", True), ("clique", False)])
def test_every_method_agrees_with_exhaustive(method: str, shape: str, left_linear: bool) -> None:
    n = 4 if shape == "clique" else 5
    query = graph(shape, n, shared=[True, False, True, False, True, False])
    options = SpaceOptions(left_linear=left_linear)
    optimizer = _optimizer(method, SearchSpace(query, options))
    assert optimizer.name
    stats = STATS
    assert_close(optimizer.optimize(stats).cost, best_plan(SearchSpace(query, options), stats)[0])
    for change in CHANGES:
        stats, _ = stats.changed(change)
        result = optimizer.reoptimize(change)
        assert_close(result.cost, best_plan(SearchSpace(query, options), stats)[0], str(change))


@pytest.mark.parametrize("method", ["volcano", "systemr", "exhaustive"])
def test_reoptimize_before_optimize(method: str) -> None:
    with pytest.raises(ConfigError, match="reoptimize before optimize"):
        make_optimizer(method, SearchSpace(graph("chain", 2))).reoptimize({"rows": {"t0": 1}})
