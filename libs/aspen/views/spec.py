"""What a view declares: one :class:`View` per view, registered in :mod:`aspen.views.registry`.

A view's name and columns are layer-0 facts (:mod:`aspen.catalog`, which every layer reads);
the rest is here: its key, whether its rows carry a formula, the plan fragment that computes it,
its from-scratch oracle and the views that oracle reads, the cross-table checks of its quality
suite, and the words and hints the what-if and explain answers use.

>>> from aspen.views.registry import REGISTRY
>>> view = REGISTRY["min_cost"]
>>> view.columns, view.key, view.provenance, view.measure
(('src', 'dst', 'cost'), ('src', 'dst'), True, (2, True))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aspen.baselines.oracles import Oracle
from aspen.catalog import VIEW_COLUMNS
from aspen.engine.plan import PlanChoices
from aspen.views.fragment import Fragment

__all__ = ["FragmentBuilder", "View"]

#: ``builder(views, choices)``: the fragment computing ``views`` (the wanted views this builder
#: builds, asked for at once so that views sharing operators share them).
FragmentBuilder = Callable[[set[str], PlanChoices], Fragment]


@dataclass(frozen=True)
class View:
    """One view: what it provides to the plans, the oracle, the quality suites and the readers.

    - ``name``: as in :data:`aspen.catalog.VIEW_COLUMNS` (its columns come from there);
    - ``key``: the columns unique per row (ties of a best value are distinct rows);
    - ``provenance``: its rows carry a formula (a count or a best count carries none);
    - ``fragment``: the builder of its operators, shared by a family of views;
    - ``oracle``, ``needs``: its from-scratch evaluation and the views that reads;
    - ``checks``: the names of its cross-table checks (:mod:`aspen.quality.views`);
    - ``hop_paths``: its path columns that have exactly ``hops`` links;
    - ``measure``: ``(column, is_cost)`` of its best value, for what-if's "after" columns;
    - ``title``: the view in plain words, as a heading of what-if answers.
    """

    name: str
    key: tuple[str, ...]
    provenance: bool
    fragment: FragmentBuilder
    oracle: Oracle
    title: str
    needs: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    hop_paths: tuple[str, ...] = ()
    measure: tuple[int, bool] | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        """The view's attributes, in order (:data:`aspen.catalog.VIEW_COLUMNS`)."""
        return VIEW_COLUMNS[self.name]

    @property
    def output_params(self) -> tuple[tuple[str, bool], ...]:
        """The parameters of its reader in a plan: a view without formulas says so."""
        return () if self.provenance else (("formulas", False),)
