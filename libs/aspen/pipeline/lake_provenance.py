"""Provenance questions answered from the published view tables, without recomputation.

A view table row carries its formula in the byte codec; this module decodes the rows it needs
into one manager, names variables by the base tuples they stand for (``variables`` registry),
and answers *why* (minimal witnesses, critical base tuples) and *what if* (tuples lost when base
tuples are deleted: restriction of the stored formulas, nothing is written).

>>> parse_base_ref("link:n1:n2")
('link', ('n1', 'n2'))
>>> parse_base_ref("sensor:s7")
('sensor', ('s7',))
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aspen.catalog import VIEW_COLUMNS, VIEWS, check_view
from aspen.errors import ConfigError, UnknownKeyError
from aspen.lake.committed import read_committed
from aspen.lake.deltars import read_table, table_exists
from aspen.pipeline.view_tables import row_to_tuple
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings

__all__ = [
    "BASE_KEYS",
    "Explanation",
    "LakeProvenance",
    "parse_base_ref",
]

#: Key attributes of each base relation, as named on the command line (RELATION:KEY…).
BASE_KEYS: dict[str, tuple[str, ...]] = {
    "link": ("src", "dst"),
    "sensor": ("id",),
    "triggered": ("id",),
    "region_seed": ("region", "id"),
    "node": ("id",),  # every link into or out of a node
}
#: Views whose tuples carry a formula that explanations can use.
PROVENANCE_VIEWS = ("reachable", "cheapest_path", "fewest_hops", "min_cost", "min_hops",
                    "active_region")


def parse_base_ref(text: str) -> tuple[str, tuple[str, ...]]:
    """Parse ``RELATION:KEY…`` (e.g. ``link:n1:n2``) into (relation, key)."""
    relation, _, rest = text.partition(":")
    if relation not in BASE_KEYS:
        raise ConfigError(
            f"cannot read {text!r}: expected RELATION:KEY with RELATION one of "
            f"{', '.join(BASE_KEYS)}"
        )
    key = tuple(rest.split(":")) if rest else ()
    if len(key) != len(BASE_KEYS[relation]) or not all(key):
        wanted = ":".join(k.upper() for k in BASE_KEYS[relation])
        raise ConfigError(f"cannot read {text!r}: expected {relation}:{wanted}")
    return relation, key


@dataclass
class Explanation:
    """Why one view tuple holds."""

    view: str
    tuple: tuple
    witnesses: list[list[str]] = field(default_factory=list)  # base tuples, one list per witness
    critical: list[str] = field(default_factory=list)
    truncated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "tuple": list(self.tuple),
            "witnesses": self.witnesses,
            "critical": self.critical,
            "truncated": self.truncated,
        }


class LakeProvenance:
    """Decoded provenance of the published views of one lake."""

    def __init__(self, settings: Settings, backend: str | None = None) -> None:
        self.settings = settings
        self.manager = ProvenanceManager(backend)
        self._variables = read_table(settings, "variables")
        self._formulas: dict[str, dict[tuple, Any]] = {}
        self._indexes: dict[str, dict[str, set[tuple]]] = {}
        self._frames: dict[str, Any] = {}

    # -- base tuples ---------------------------------------------------------------------------
    def describe(self, var: str) -> str:
        """A base variable as the tuple it stands for, e.g. ``link(n1→n2)``."""
        rows = self._variables[self._variables["var"] == var]
        if rows.empty:
            return var
        row = rows.iloc[0]
        values = json.loads(row["values"]) if isinstance(row["values"], str) else row["values"]
        if isinstance(values, dict):
            values = list(values.values())
        if row["relation"] == "link":
            return f"link({values[0]}→{values[1]})"
        key = values[: len(BASE_KEYS[row["relation"]])]
        return f"{row['relation']}({','.join(str(v) for v in key)})"

    def live_vars_of(self, relation: str, key: tuple[str, ...]) -> set[str]:
        """The live variables of a base tuple named on the command line."""
        live = self._variables[self._variables["deleted_batch"].isna()]
        found: set[str] = set()
        for row in live.to_dict("records"):
            values = json.loads(row["values"]) if isinstance(row["values"], str) else row["values"]
            if isinstance(values, dict):
                values = list(values.values())
            strs = [str(v) for v in values]
            if relation == "node":
                if row["relation"] == "link" and key[0] in strs[:2]:
                    found.add(str(row["var"]))
            elif row["relation"] == relation and tuple(strs[: len(key)]) == key:
                found.add(str(row["var"]))
        if not found:
            raise UnknownKeyError(f"no live {relation} {':'.join(key)} in the lake")
        return found

    # -- views -----------------------------------------------------------------------------------
    def _frame(self, view: str) -> Any:
        if view not in self._frames:
            self._frames[view] = read_committed(self.settings, check_view(view))
        return self._frames[view]

    def _decode_rows(self, view: str, rows: list[dict[str, Any]]) -> dict[tuple, Any]:
        return {
            row_to_tuple(view, row): self.manager.decode(bytes(row["provenance"]))
            for row in rows
            if row.get("provenance") is not None
        }

    def formulas(self, view: str) -> dict[tuple, Any]:
        """Every tuple of ``view`` with its decoded formula."""
        if view not in self._formulas:
            self._formulas[view] = self._decode_rows(view, self._frame(view).to_dict("records"))
        return self._formulas[view]

    def matching(self, view: str, key: tuple[str, ...]) -> dict[tuple, Any]:
        """Tuples of ``view`` whose leading attributes equal ``key``, with their formulas.

        Only the matching rows are decoded (explaining one pair of a large view stays cheap).
        """
        columns = VIEW_COLUMNS[check_view(view)]
        if len(key) > len(columns):
            raise ConfigError(
                f"{view} has {len(columns)} attributes ({', '.join(columns)}); got {len(key)}")
        if view in self._formulas:
            found = {t: f for t, f in self._formulas[view].items()
                     if tuple(str(v) for v in t[: len(key)]) == key}
        else:
            frame = self._frame(view)
            mask = None
            for column, value in zip(columns, key, strict=False):
                hit = frame[column].astype(str) == value
                mask = hit if mask is None else mask & hit
            found = self._decode_rows(view, frame[mask].to_dict("records"))
        if not found:
            raise UnknownKeyError(f"{view} has no tuple {' '.join(key)}")
        return dict(sorted(found.items(), key=lambda item: repr(item[0])))

    def explain(self, view: str, key: tuple[str, ...], limit: int = 20) -> list[Explanation]:
        """Minimal witnesses and critical base tuples of the tuples of ``view`` matching ``key``."""
        from aspen.provenance.explain import minimal_witnesses

        if view not in PROVENANCE_VIEWS:
            raise ConfigError(f"{view} carries no provenance to explain; "
                              f"try one of {', '.join(PROVENANCE_VIEWS)}")
        out = []
        for values, formula in self.matching(view, key).items():
            # witnesses and critical tuples are shown per base *tuple*: the instances (variables)
            # of one renewed link are the same link to an operator
            by_tuple: dict[str, set[str]] = {}
            for var in self.manager.support(formula):
                by_tuple.setdefault(self.describe(var), set()).add(var)
            var_witnesses = minimal_witnesses(self.manager, formula, limit=4 * limit + 1)
            tuple_sets = {frozenset(self.describe(v) for v in w) for w in var_witnesses}
            minimal = sorted(
                (w for w in tuple_sets if not any(o < w for o in tuple_sets)),
                key=lambda w: (len(w), sorted(w)),
            )
            critical = [
                name for name, vars_ in sorted(by_tuple.items())
                if self.manager.is_false(self.manager.restrict_false(formula, vars_))
            ]
            out.append(
                Explanation(
                    view,
                    values,
                    [sorted(w) for w in minimal[:limit]],
                    critical,
                    truncated=len(minimal) > limit or len(var_witnesses) > 4 * limit,
                )
            )
        return out

    def what_if(self, deleted: set[str],
                views: tuple[str, ...] | None = None) -> dict[str, list[tuple]]:
        """Per view, the tuples that would disappear if the ``deleted`` variables died."""
        from aspen.provenance.explain import build_var_index, what_if

        lost: dict[str, list[tuple]] = {}
        for view in views or tuple(v for v in VIEWS if v in PROVENANCE_VIEWS):
            if not table_exists(self.settings, view):
                continue
            formulas = self.formulas(view)
            if view not in self._indexes:  # built once: later questions touch only candidates
                self._indexes[view] = build_var_index(self.manager, formulas)
            gone = what_if(self.manager, formulas, deleted, self._indexes[view])
            lost[view] = sorted(gone, key=repr)
        return lost
