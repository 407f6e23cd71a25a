"""Provenance size and decoding cost of a lake the pipeline wrote (the stored variable order).

Measured on one lake, in one run: per view the rows with provenance and their bytes (total,
max, median per row); the BDD nodes of those rows decoded in the stored order (reordering off)
and of the same formulas after one sifting pass (``reorder()`` on a manager holding only that
view's formulas) — the gap is what a better order can win; the console's decoding of the whole
lake (:meth:`LakeProvenance.warm`) and of one view; ``what-if`` on one region seed (or sensor)
and on one link, after a fresh decode and with the decode excluded; ``explain`` on the
``active_region`` row with the most provenance and on the farthest ``reachable`` pair.

Nothing is written to the lake. A view without a ``provenance`` column or table is skipped; a
lake without sensors measures no region what-if.

>>> median_int([3, 1, 2])
2
>>> median_int([])
0
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from aspen.catalog import VIEWS
from aspen.lake.committed import read_committed
from aspen.lake.deltars import read_table, table_exists
from aspen.pipeline.lake_provenance import LakeProvenance
from aspen.provenance.bdd import ProvenanceManager
from aspen.provenance.codec import names_order
from aspen.settings import Settings

__all__ = ["lake_description", "median_int", "provenance_size", "view_sizes"]


def median_int(values: list[int]) -> int:
    """The median of ``values`` rounded down to an int (0 for none)."""
    return int(statistics.median(values)) if values else 0


def _dag_size(formula: Any) -> int:
    """Nodes of one formula as the manager holds it (CUDD's ``dag_size``, constants counted)."""
    return int(formula.dag_size)


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = call()
    return time.perf_counter() - started, out


def lake_description(settings: Settings) -> dict[str, int]:
    """Live nodes, sensors and regions of the lake and its committed batch count.

    >>> lake_description(Settings(lake="/nonexistent/lake"))
    {'nodes': 0, 'links': 0, 'sensors': 0, 'regions': 0, 'batches': 0}
    """
    out = {"nodes": 0, "links": 0, "sensors": 0, "regions": 0, "batches": 0}
    if table_exists(settings, "link"):
        links = read_table(settings, "link")
        out["links"] = int(links[["src", "dst"]].drop_duplicates().shape[0])
        out["nodes"] = len(set(links["src"].astype(str)) | set(links["dst"].astype(str)))
    if table_exists(settings, "sensor"):
        out["sensors"] = int(read_table(settings, "sensor")["id"].nunique())
    if table_exists(settings, "region_seed"):
        out["regions"] = int(read_table(settings, "region_seed")["region"].nunique())
    if table_exists(settings, "ledger"):
        out["batches"] = int(read_table(settings, "ledger").shape[0])
    return out


def view_sizes(settings: Settings, view: str, sift: bool = True) -> dict[str, Any] | None:
    """Bytes and BDD nodes of the rows of ``view`` (None: no table, or no row with provenance).

    Rows are decoded into a fresh manager in the stored order with reordering off (as the
    console decodes them); with ``sift`` the manager is then sifted once and counted again.

    >>> view_sizes(Settings(lake="/nonexistent/lake"), "reachable") is None
    True
    """
    if not table_exists(settings, view):
        return None
    frame = read_committed(settings, view)
    if "provenance" not in frame.columns:
        return None
    encodings = [bytes(p) for p in frame["provenance"] if p is not None]
    if not encodings:  # a view whose rows carry no formula (the region aggregates)
        return None
    sizes = [len(data) for data in encodings]
    manager = ProvenanceManager()
    manager.fix_order()
    decode_s, formulas = _timed(lambda: (
        manager.declare_in_order(names_order(encodings)),
        manager.decode_each(encodings))[1])
    stored = [_dag_size(f) for f in formulas]
    out: dict[str, Any] = {
        "rows": len(encodings), "bytes_total": sum(sizes), "bytes_max": max(sizes, default=0),
        "bytes_median": median_int(sizes), "decode_s": decode_s,
        "nodes_stored_sum": sum(stored), "nodes_stored_max": max(stored, default=0),
        "shared_nodes_stored": len(manager.bdd),
    }
    if sift:
        out["sift_s"], _ = _timed(manager.bdd.reorder)  # one sifting pass, then off again
        manager.fix_order()
        sifted = [_dag_size(f) for f in formulas]
        out.update(nodes_sifted_sum=sum(sifted), nodes_sifted_max=max(sifted, default=0),
                   shared_nodes_sifted=len(manager.bdd))
    del formulas
    return out


def _seed_ref(settings: Settings) -> tuple[str, tuple[str, ...]] | None:
    """One live region seed (first in sort order), else one sensor; None without either."""
    for relation, columns in (("region_seed", ["region", "id"]), ("sensor", ["id"])):
        if table_exists(settings, relation):
            frame = read_table(settings, relation)
            if not frame.empty:
                keys = sorted(tuple(str(v) for v in row) for row in frame[columns].values)
                return relation, keys[0]
    return None


def _link_ref(settings: Settings) -> tuple[str, tuple[str, ...]] | None:
    """The live link whose source has the most outgoing links (ties: first in sort order)."""
    if not table_exists(settings, "link"):
        return None
    links = read_table(settings, "link")
    if links.empty:
        return None
    fanout = links["src"].astype(str).value_counts()
    pairs = sorted((-int(fanout[str(s)]), str(s), str(d))
                   for s, d in links[["src", "dst"]].values)
    return "link", (pairs[0][1], pairs[0][2])


def _largest_row(settings: Settings, view: str, columns: int) -> tuple[str, ...] | None:
    """The key of the row of ``view`` with the most provenance bytes."""
    if not table_exists(settings, view):
        return None
    frame = read_committed(settings, view)
    if frame.empty or "prov_bytes" not in frame.columns:
        return None
    row = frame.sort_values("prov_bytes", ascending=False).iloc[0]
    return tuple(str(v) for v in row.iloc[:columns])


def _far_pair(settings: Settings) -> tuple[str, ...] | None:
    """The ``reachable`` pair of most hops (``min_hops``; ties: first in sort order)."""
    if not table_exists(settings, "min_hops"):
        return None
    frame = read_committed(settings, "min_hops")
    if frame.empty:
        return None
    best = sorted((-int(h), str(s), str(d)) for s, d, h in frame[["src", "dst", "hops"]].values)
    return best[0][1], best[0][2]


def _what_if(settings: Settings, warm: LakeProvenance,
             ref: tuple[str, tuple[str, ...]]) -> dict[str, Any]:
    """``aspen what-if`` on ``ref`` as the CLI runs it (fresh decode) and on a warm lake."""
    def fresh() -> dict[str, list[tuple]]:
        lake = LakeProvenance(settings)
        return lake.what_if(lake.live_vars_of(*ref))

    fresh_s, lost = _timed(fresh)
    deleted = warm.live_vars_of(*ref)
    warm_s, _ = _timed(lambda: warm.what_if(deleted))
    return {"ref": ":".join([ref[0], *ref[1]]), "instances": len(deleted),
            "fresh_s": fresh_s, "warm_s": warm_s,
            "lost": {view: len(tuples) for view, tuples in lost.items()}}


def _explain(settings: Settings, view: str, key: tuple[str, ...] | None) -> dict[str, Any] | None:
    """``aspen explain VIEW KEY`` as the CLI runs it (a fresh object decodes the matching rows)."""
    if key is None:
        return None
    seconds, found = _timed(lambda: LakeProvenance(settings).explain(view, key, limit=20))
    return {"view": view, "key": list(key), "seconds": seconds,
            "witnesses": sum(len(e.witnesses) for e in found),
            "critical": sum(len(e.critical) for e in found)}


def provenance_size(lake: str, sift: bool = True, one_view: str = "active_region",
                    say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Every measurement of this module on the lake at ``lake``, as one JSON-ready dict.

    ``say`` hears one line per step (the script prints them as progress). A lake without the
    variable registry cannot be decoded:

    >>> provenance_size("/nonexistent/lake")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    aspen.errors.TableMissingError: table 'variables' does not exist under ...
    """
    settings = Settings(lake=lake)
    out: dict[str, Any] = {"lake": lake_description(settings), "views": {}}
    for view in VIEWS:
        say(f"sizes of {view}")
        sizes = view_sizes(settings, view, sift=sift)
        if sizes is not None:
            out["views"][view] = sizes
    say("decoding the whole lake (LakeProvenance.warm)")
    warm = LakeProvenance(settings)
    out["decode_lake_s"], _ = _timed(warm.warm)
    if one_view in out["views"]:
        say(f"decoding {one_view}")
        out["decode_view"] = {"view": one_view}
        out["decode_view"]["seconds"], _ = _timed(
            lambda: LakeProvenance(settings).formulas(one_view))
    out["what_if"] = {}
    for name, ref in (("seed", _seed_ref(settings)), ("link", _link_ref(settings))):
        if ref is not None:
            say(f"what-if {name}")
            out["what_if"][name] = _what_if(settings, warm, ref)
    out["explain"] = {}
    for name, view, key in (
            ("active_region", "active_region", _largest_row(settings, "active_region", 2)),
            ("reachable", "reachable", _far_pair(settings))):
        if view in out["views"]:
            say(f"explain {name}")
            found = _explain(settings, view, key)
            if found is not None:
                out["explain"][name] = found
    return out


def table_lines(result: dict[str, Any]) -> list[str]:
    """The result as a printed table (one line per view, then the timings).

    >>> table_lines({"lake": {}, "views": {}, "decode_lake_s": 0.5})[-1]
    'decode of the whole lake (warm): 0.50 s'
    """
    lines = [f"{'view':<24}{'rows':>7}{'bytes':>12}{'max/row':>10}{'median':>8}"
             f"{'nodes':>11}{'max':>9}{'sifted':>9}{'max':>7}"]
    for view, s in result["views"].items():
        lines.append(f"{view:<24}{s['rows']:>7}{s['bytes_total']:>12}{s['bytes_max']:>10}"
                     f"{s['bytes_median']:>8}{s['nodes_stored_sum']:>11}"
                     f"{s['nodes_stored_max']:>9}{s.get('nodes_sifted_sum', '-'):>9}"
                     f"{s.get('nodes_sifted_max', '-'):>7}")
    if "decode_view" in result:
        d = result["decode_view"]
        lines.append(f"decode of {d['view']} alone: {d['seconds']:.2f} s")
    for name, w in result.get("what_if", {}).items():
        lines.append(f"what-if {name} {w['ref']}: {w['fresh_s']:.2f} s with a fresh decode, "
                     f"{w['warm_s']:.3f} s decoded; lost {w['lost']}")
    for name, e in result.get("explain", {}).items():
        lines.append(f"explain {name} {' '.join(e['key'])}: {e['seconds']:.2f} s "
                     f"({e['witnesses']} witness sets, {e['critical']} critical)")
    lines.append(f"decode of the whole lake (warm): {result['decode_lake_s']:.2f} s")
    return lines
