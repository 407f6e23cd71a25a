"""AppTest of the Overview's network section on a small literal lake (delta-rs, no Spark).

Routers a, b, c. Ingest batch 1: links a ⇄ b, b ⇄ c (all six ordered pairs reachable). Ingest
batch 2 deletes c → b (a ⇄ b, a → c, b → c: four pairs). Ingest batch 3 deletes b → c too: c is
on no live link, the network splits. Each step is one maintained batch whose ledger row records
the ``reachable`` view's version, so the Overview compares with the batch before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import commit_views, open_page
from streamlit.testing.v1 import AppTest

from aspen.lake.deltars import write_table
from aspen.pipeline.view_tables import view_frame
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings

#: var, src, dst, cost, ingest batch it died in (None: live)
LINKS = [("v1", "a", "b", 2.0), ("v2", "b", "a", 2.0), ("v3", "b", "c", 10.0),
         ("v4", "c", "b", 10.0)]
ALL_PAIRS = [(s, d) for s in "abc" for d in "abc" if s != d]
INGESTED = pd.Timestamp("2026-01-01 10:00", tz="UTC")


def _registry(deaths: dict[str, int]) -> pd.DataFrame:
    return pd.DataFrame({
        "var": [v for v, *_ in LINKS],
        "relation": ["link"] * len(LINKS),
        "key": [json.dumps([s, d]) for _, s, d, _ in LINKS],
        "values": [json.dumps([s, d, c]) for _, s, d, c in LINKS],
        "inserted_batch": [1] * len(LINKS),
        "deleted_batch": pd.array([deaths.get(v) for v, *_ in LINKS], dtype="Int64"),
        "death": pd.array(["deleted" if v in deaths else None for v, *_ in LINKS],
                          dtype="string"),
    })


def _maintain(settings: Settings, batch: int, deaths: dict[str, int],
              pairs: list[tuple[str, str]], costs: dict[tuple[str, str], float]) -> None:
    """Write the registry and the views as of ingest ``batch`` and commit them."""
    write_table(settings, "variables", _registry(deaths))
    write_table(settings, "ingest_files", pd.DataFrame({
        "source": [f"f{b}" for b in range(1, batch + 1)], "batch_id": list(range(1, batch + 1)),
        "ingested_at": [INGESTED + pd.Timedelta(hours=b) for b in range(1, batch + 1)]}))
    manager = ProvenanceManager()
    formula = manager.var("v1")  # the formulas do not matter to the Overview
    write_table(settings, "reachable",
                view_frame("reachable", dict.fromkeys(pairs, formula), manager, batch_id=batch))
    write_table(settings, "min_cost", view_frame(
        "min_cost", {(s, d, c): formula for (s, d), c in costs.items()}, manager,
        batch_id=batch))
    commit_views(settings.lake)


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    settings = Settings(lake=str(tmp_path / "lake"))
    monkeypatch.setenv("ASPEN_LAKE", settings.lake)
    _maintain(settings, 1, {}, ALL_PAIRS, {("a", "b"): 2.0, ("b", "a"): 2.0, ("b", "c"): 10.0,
                                           ("c", "b"): 10.0, ("a", "c"): 12.0, ("c", "a"): 12.0})
    return settings


def _metrics(app: AppTest) -> dict[str, tuple[str, str]]:
    return {m.label: (m.value, m.proto.delta) for m in app.metric}


def _network_banner(app: AppTest) -> str:
    (banner,) = [b.value for kind in ("error", "warning", "success") for b in getattr(app, kind)
                 if "network" in b.value.splitlines()[0] or "reachability" in b.value]
    return banner


def test_a_whole_network_is_green_with_its_counts(lake: Settings) -> None:
    app = open_page()
    assert _network_banner(app) == (
        "**Green: the network is whole** — one network: 6 of 6 pairs reachable (100.0 %); no "
        "earlier batch to compare with.")
    shown = _metrics(app)
    assert shown["Routers up"] == ("3 of 3", "")
    assert shown["Links up"] == ("4", "")
    assert shown["Reachable pairs"] == ("6", "")
    assert shown["Partitions"] == ("one network", "")
    assert shown["Costliest pair"] == ("12 ms", "")
    captions = [c.value for c in app.caption]
    assert any(c.startswith("Least-cost routes, costliest first: `a` → `c` 12 ms · `c` → `a` "
                            "12 ms") for c in captions)
    assert "100.0 % of the 6 ordered pairs of the 3 live routers. As of maintained batch 1 " \
           "(through ingest batch 1)." in captions


def test_fewer_reachable_pairs_turn_it_amber(lake: Settings) -> None:
    _maintain(lake, 2, {"v4": 2}, [("a", "b"), ("b", "a"), ("a", "c"), ("b", "c")],
              {("a", "b"): 2.0, ("b", "a"): 2.0, ("b", "c"): 10.0, ("a", "c"): 12.0})
    app = open_page()
    assert _network_banner(app).splitlines() == [
        "**Amber: reachability dropped**", "",
        "- 2 pairs fewer reachable than after the previous batch"]
    shown = _metrics(app)
    assert shown["Reachable pairs"] == ("4", "-2 since the previous batch")
    assert shown["Links up"] == ("3", "")
    assert shown["Partitions"] == ("one network", "")  # c still hangs on b → c
    assert any(c.startswith("1 down (every instance deleted or expired), newest first: `c` → "
                            "`b` deleted (ingest batch 2, 2026-01-01 12:00:00 UTC)")
               for c in (c.value for c in app.caption))


def test_an_isolated_router_splits_the_network_red(lake: Settings) -> None:
    _maintain(lake, 2, {"v4": 2}, [("a", "b"), ("b", "a"), ("a", "c"), ("b", "c")], {})
    _maintain(lake, 3, {"v4": 2, "v3": 3}, [("a", "b"), ("b", "a")], {})
    app = open_page()
    assert _network_banner(app).splitlines() == [
        "**Red: the network is split**", "",
        "- the network is split in 2 parts: the largest has 2 of 3 routers",
        "- 1 router isolated, on no live link",
        "- 2 pairs fewer reachable than after the previous batch"]
    shown = _metrics(app)
    assert shown["Routers up"] == ("2 of 3", "")
    assert shown["Partitions"] == ("2 parts", "")
    assert shown["Reachable pairs"] == ("2", "-2 since the previous batch")
    captions = [c.value for c in app.caption]
    assert "1 isolated, on no live link: `c` (down since ingest batch 3, 2026-01-01 13:00:00 " \
           "UTC)." in captions
    assert "The largest has 2 routers; the others: 1 router in `c`." in captions
    assert any("Isolated routers: `c`." in m.value for m in app.markdown)
    pages = [link.proto.page for link in app.get("page_link")]
    assert pages[:3] == ["network", "what_if", "why"]  # the evidence, first


def test_a_lake_without_links_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(lake=str(tmp_path / "bare"))
    monkeypatch.setenv("ASPEN_LAKE", settings.lake)
    write_table(settings, "ingest_files", pd.DataFrame({"source": ["f1"], "batch_id": [1]}))
    app = open_page()
    assert [i.value for i in app.info] == [
        "No link has been ingested yet: nothing to say about the network."]
    assert "Routers up" not in _metrics(app)
