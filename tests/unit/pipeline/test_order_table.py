"""The Spark driver's variable placement: moved by the registry's changes, kept in its table, and
imposed on the hosts' managers by the round protocol."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.engine.batch import BaseFact, Batch
from aspen.pipeline.order_table import placement_through, read_placement, write_placement
from aspen.provenance.placement import VariablePlacement
from aspen.runtime.rounds import NodeCache, RoundRuntime
from aspen.settings import Settings

NODES = ["a", "b", "c", "d", "e"]


def _registry(events: list[tuple[int, str, str, int | None]]) -> pd.DataFrame:
    """Registry rows: (born batch, src, dst, died batch or None), one link instance each."""
    return pd.DataFrame([
        {"var": f"v{i}", "relation": "link", "values": f'["{s}", "{d}", 1.0]',
         "inserted_batch": born, "deleted_batch": died}
        for i, (born, s, d, died) in enumerate(events)],
        columns=["var", "relation", "values", "inserted_batch", "deleted_batch"])


events = st.lists(
    st.tuples(st.integers(1, 4), st.sampled_from(NODES), st.sampled_from(NODES),
              st.one_of(st.none(), st.integers(1, 5))).filter(lambda e: e[1] != e[2])
    .map(lambda e: (e[0], e[1], e[2], None if e[3] is None or e[3] <= e[0] else e[3])),
    max_size=25)


@settings(max_examples=60, deadline=None)
@given(events)
def test_a_stored_placement_moved_batch_by_batch_holds_the_live_variables(rows: list) -> None:
    registry = _registry(rows)
    stored = None
    for through in range(1, 6):
        after = through - 1
        changed = registry if stored is None else registry[
            (registry["inserted_batch"] > after) | (registry["deleted_batch"] > after)]
        stored = placement_through(changed, after, through, stored, k=20.0)
        live = {f"v{i}" for i, (born, _s, _d, died) in enumerate(rows)
                if born <= through and (died is None or died > through)}
        assert sorted(stored.order) == sorted(live)
    # without a stored placement the driver builds one from the registry: same variables
    rebuilt = placement_through(registry, 4, 5, None, k=20.0)
    assert sorted(rebuilt.order) == sorted(stored.order)


def test_the_placement_table_round_trips(tmp_path) -> None:
    settings = Settings(lake=str(tmp_path / "lake"))
    assert read_placement(settings) is None
    placement = VariablePlacement.build([("v1", "link", ("a", "b", 1.0)),
                                         ("v2", "link", ("b", "c", 1.0))])
    write_placement(settings, placement, 3)
    write_placement(settings, placement, 4)  # one row, replaced
    found = read_placement(settings)
    assert found is not None and found.order == placement.order


def test_round_hosts_hold_the_placed_order() -> None:
    cache = NodeCache()
    rt = RoundRuntime(views=("reachable",), partitions=2, backend="python", cache=cache)
    rt.apply(Batch(inserts=(BaseFact("link", ("a", "b", 1.0), "v1"),
                            BaseFact("link", ("e", "f", 1.0), "v2"),
                            BaseFact("link", ("c", "d", 1.0), "v3"))))
    rt.apply(Batch(inserts=(BaseFact("link", ("b", "c", 1.0), "v4"),)))
    held = [v for v in cache.manager("python").order if v in rt.placement]
    assert held == rt.placement.order == ["v1", "v4", "v2", "v3"]
    assert sorted(rt.view("reachable")) == [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"),
                                            ("b", "d"), ("c", "d"), ("e", "f")]
