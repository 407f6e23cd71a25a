"""Continuous queries maintained incrementally: the state and merge of Fegaras's incremental
MRQL (seed 004), in process.

A query ``q`` is split as ``a ∘ h``: ``h`` (:mod:`.compile`, expressions by :mod:`.expr`,
aggregates as :mod:`.monoids`) maps the joined rows of a batch's changes to keyed monoid values,
``h(X ⊎ Y) = h(X) ⊗ h(Y)``; the state (:mod:`.state`) is ``h`` of everything so far plus, for a
join, each input's rows keyed by its join columns; a batch's signed input changes
(:mod:`.delta`, read from the lake by :mod:`.lake_delta`) are joined against the state
(:mod:`.join`), aggregated and merged (``⊗``, with negative counts as the diminisher); ``a``
(:mod:`.answer`) turns the changed keys into changed result rows; :mod:`.apply` runs the
steps. A join's changes are joined in the order of the optimizer's plan (:mod:`.order`), and
the statistics that plan is chosen under are kept exact from the rows each batch applies
(:mod:`.livestats`; re-planning: :mod:`aspen.queries.follow`). A nested query compiles into
stages of such plans, each stage's result changes the next one's input (:mod:`.nested`).
The state and the result live in Delta tables (:mod:`.store`, values as :mod:`.codec` text);
:func:`.maintain.maintain_incremental` runs one maintained batch exactly once;
:func:`.scratch.scratch_answer` is the from-scratch oracle (DuckDB). Docs: docs/queries.md,
"Incremental maintenance"; decision 0051.
"""

from __future__ import annotations

__all__: list[str] = []
