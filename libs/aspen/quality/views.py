"""The ``views`` suites: the nine maintained view tables (docs/architecture.md, "Views").

Every view table has the view's attributes, then ``provenance`` (the byte-encoded BDD),
``prov_bytes`` (its length) and ``batch_id`` (the ledger batch that wrote it). Rules:

- keys never null and unique (``reachable (src,dst)``, ``min_cost (src,dst)``, a path view's
  ``(src,dst,path)`` …; ties of the AggSel views are distinct rows);
- costs finite and ``≥ 0``; hops ``≥ 1``; region sizes ``≥ 1``;
- a path starts at ``src``, ends at ``dst``, has at least one edge, repeats no node; a
  fewest-hops path has exactly ``hops`` edges;
- stored provenance is never empty and ``prov_bytes`` is its length; non-aggregate views always
  carry provenance (``prov_bytes > 0``); the aggregates (``region_sizes``,
  ``largest_regions``) may carry none;
- no row comes from a batch after the last committed one (``batch_id ≤`` the ledger's);
- cross-table: the path and cost views' pairs are reachable; ``region_sizes`` counts
  ``active_region``; ``largest_regions`` are exactly the regions of the largest size.

>>> [s.table for s in VIEW_SUITES][:3]
['reachable', 'min_cost', 'min_hops']
>>> VIEW_SUITES[3].derived_columns[:3]
('provenance_length', 'path_first_node', 'path_last_node')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING

from aspen.catalog import VIEW_COLUMNS
from aspen.pipeline.view_tables import PATH_COLUMNS
from aspen.quality.derived import add_path_columns, add_provenance_length, path_column_names
from aspen.quality.expect import (
    at_least,
    between,
    finite_non_negative,
    not_null,
    of_dtype,
    pair_equal,
    unique,
)
from aspen.quality.spec import CrossCheck, CrossCheckResult, SuiteParams, TableSuite
from aspen.views.registry import REGISTRY

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations.expectations import Expectation

__all__ = ["AGGREGATE_VIEWS", "CROSS_CHECKS", "VIEW_KEYS", "VIEW_SUITES", "STORED_COLUMNS"]

FAMILY = "views"
#: Columns every view table has after the view's attributes.
STORED_COLUMNS: tuple[str, ...] = ("provenance", "prov_bytes", "batch_id", "node")
#: Views whose rows may have no provenance formula (aggregates over regions).
AGGREGATE_VIEWS = frozenset(name for name, view in REGISTRY.items() if not view.provenance)
#: The unique key of each view; a path column stands for its derived ``<path>_text``.
VIEW_KEYS: dict[str, tuple[str, ...]] = {name: view.key for name, view in REGISTRY.items()}


def _paths(view: str) -> tuple[str, ...]:
    return tuple(c for c in VIEW_COLUMNS[view] if c in PATH_COLUMNS)


def _derive(view: str, frame: pd.DataFrame) -> pd.DataFrame:
    frame = add_provenance_length(frame)
    for column in _paths(view):
        frame = add_path_columns(frame, column)
    return frame


def _path_rules(view: str, column: str) -> list[Expectation]:
    first, last, edges, repeated, _ = path_column_names(column)
    out = not_null(column) + pair_equal(first, "src") + pair_equal(last, "dst")
    out += at_least(edges, 1) + between(repeated, 0, 0)
    if column in REGISTRY[view].hop_paths:
        out += pair_equal(edges, "hops")
    return out


def _rules(view: str, params: SuiteParams) -> list[Expectation]:
    columns = VIEW_COLUMNS[view]
    keys = [f"{c}_text" if c in PATH_COLUMNS else c for c in VIEW_KEYS[view]]
    out = not_null(*(c for c in columns if c not in PATH_COLUMNS)) + unique(*keys)
    if "cost" in columns:
        out += of_dtype("cost", "float64", "float32") + finite_non_negative("cost")
    if "hops" in columns:
        out += of_dtype("hops", "int64", "int32") + at_least("hops", 1)
    if "size" in columns:
        out += of_dtype("size", "int64", "int32") + at_least("size", 1)
    for column in _paths(view):
        out += _path_rules(view, column)
    # provenance: never stored empty, prov_bytes is its length, present unless an aggregate
    out += not_null("prov_bytes", "batch_id") + at_least("provenance_length", 1)
    out += pair_equal("prov_bytes", "provenance_length")
    if view not in AGGREGATE_VIEWS:
        out += not_null("provenance") + at_least("prov_bytes", 1)
    else:
        out += at_least("prov_bytes", 0)
    if params.committed_batch > 0:
        out += between("batch_id", 1, params.committed_batch)
    return out


def _pairs_reachable(frame: pd.DataFrame, tables: Mapping[str, pd.DataFrame]) -> CrossCheckResult:
    """Every ``(src, dst)`` of the view is in ``reachable``."""
    if "reachable" not in tables or not {"src", "dst"} <= set(frame.columns):
        return None
    reachable = tables["reachable"]
    known = set(zip(reachable["src"], reachable["dst"], strict=True))
    bad = sorted({p for p in zip(frame["src"], frame["dst"], strict=True)} - known)
    if bad:
        return False, f"{len(bad)} pair(s) not in reachable, e.g. {bad[:3]}"
    return True, f"{len(frame)} row(s), all pairs reachable"


def _sizes_count_members(
    frame: pd.DataFrame, tables: Mapping[str, pd.DataFrame]
) -> CrossCheckResult:
    """``region_sizes`` holds, for each region of ``active_region``, its number of sensors."""
    if "active_region" not in tables or not {"region", "size"} <= set(frame.columns):
        return None
    counted = tables["active_region"].groupby("region")["sensor"].nunique().to_dict()
    stored = {str(r): int(s) for r, s in zip(frame["region"], frame["size"], strict=True)}
    counted = {str(r): int(n) for r, n in counted.items()}
    bad = sorted(r for r in set(stored) | set(counted) if stored.get(r) != counted.get(r))
    if bad:
        examples = [(r, stored.get(r), counted.get(r)) for r in bad[:3]]
        return False, f"{len(bad)} region(s) differ (region, stored, counted), e.g. {examples}"
    return True, f"{len(stored)} region size(s) match active_region"


def _largest_are_largest(
    frame: pd.DataFrame, tables: Mapping[str, pd.DataFrame]
) -> CrossCheckResult:
    """``largest_regions`` are exactly the regions of ``region_sizes`` with the largest size."""
    if "region_sizes" not in tables or not {"region", "size"} <= set(frame.columns):
        return None
    sizes = tables["region_sizes"]
    best = int(sizes["size"].max()) if not sizes.empty else None
    expected = {(str(r), int(s)) for r, s in zip(sizes["region"], sizes["size"], strict=True)
                if s == best}
    stored = {(str(r), int(s)) for r, s in zip(frame["region"], frame["size"], strict=True)}
    if stored != expected:
        return False, f"stored {sorted(stored)[:3]} but the largest are {sorted(expected)[:3]}"
    return True, f"{len(stored)} largest region(s) of size {best}"


#: Every cross-table check by name; a view names those of its suite (``View.checks``).
CROSS_CHECKS: dict[str, CrossCheck] = {check.name: check for check in (
    CrossCheck("aspen_pairs_in_reachable", ("src", "dst"), _pairs_reachable),
    CrossCheck("aspen_sizes_count_active_region", ("region", "size"), _sizes_count_members),
    CrossCheck("aspen_largest_of_region_sizes", ("region", "size"), _largest_are_largest),
)}


def _suite(view: str) -> TableSuite:
    derived = ("provenance_length",) + tuple(
        name for column in _paths(view) for name in path_column_names(column)
    )
    rules: Callable[[SuiteParams], list[Expectation]] = partial(_rules, view)
    return TableSuite(
        FAMILY,
        view,
        (*VIEW_COLUMNS[view], *STORED_COLUMNS),
        rules,
        derive=partial(_derive, view),
        derived_columns=derived,
        cross_checks=tuple(CROSS_CHECKS[name] for name in REGISTRY[view].checks),
        required_after_maintain=True,
    )


VIEW_SUITES: tuple[TableSuite, ...] = tuple(_suite(view) for view in REGISTRY)
