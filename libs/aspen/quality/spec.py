"""What a suite is: the expectations on one lake table, as code.

A :class:`TableSuite` names its table, the columns the table must have, how to derive helper
columns (a path's first node, a provenance's length …), the GX expectations over the derived
frame, and Aspen cross-table checks for what GX cannot express (one table against another).
Expectations may depend on the run (e.g. the last committed ledger batch): they are built
from :class:`SuiteParams`. Suites bind to GX's current data context when they are built
(:func:`new_context` creates one).

>>> suite = TableSuite("views", "reachable", ("src", "dst"), lambda params: [])
>>> suite.name, suite.expected_columns
('views.reachable', ('src', 'dst'))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations import ExpectationSuite
    from great_expectations.data_context import AbstractDataContext
    from great_expectations.expectations import Expectation

__all__ = ["CrossCheck", "CrossCheckResult", "SuiteParams", "TableSuite", "new_context"]


def new_context() -> AbstractDataContext:
    """A fresh ephemeral GX data context (nothing on disk) without progress bars.

    It becomes GX's current project, which suites bind to when they are built.
    """
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


@dataclass(frozen=True)
class SuiteParams:
    """What suites may depend on: the last committed ledger batch (0 if none)."""

    committed_batch: int = 0


#: ``(success, observed)``, or ``None`` when a table the check needs is missing (skipped).
CrossCheckResult = tuple[bool, str] | None


@dataclass(frozen=True)
class CrossCheck:
    """A check GX cannot express: ``check(frame, tables)`` with the other tables of the lake.

    ``tables`` maps table names to their (underived) frames; absent tables are absent keys.
    """

    name: str
    columns: tuple[str, ...]
    check: Callable[[pd.DataFrame, Mapping[str, pd.DataFrame]], CrossCheckResult]

    @property
    def expectation(self) -> str:
        """The label recorded in ``expectation_results``."""
        return f"{self.name}({', '.join(self.columns)})"


def _same(frame: pd.DataFrame) -> pd.DataFrame:
    return frame


@dataclass(frozen=True)
class TableSuite:
    """The expectations on one table of the lake."""

    family: str
    table: str
    columns: tuple[str, ...]
    expectations: Callable[[SuiteParams], list[Expectation]]
    derive: Callable[[pd.DataFrame], pd.DataFrame] = _same
    derived_columns: tuple[str, ...] = ()
    cross_checks: tuple[CrossCheck, ...] = ()
    #: A missing table fails (instead of being skipped) once a maintained batch is committed.
    required_after_maintain: bool = False

    @property
    def name(self) -> str:
        """The suite's name, ``family.table``."""
        return f"{self.family}.{self.table}"

    @property
    def expected_columns(self) -> tuple[str, ...]:
        """The columns the stored table must have."""
        return self.columns

    def build(self, params: SuiteParams | None = None) -> ExpectationSuite:
        """The GX ``ExpectationSuite``: the schema expectation, then :attr:`expectations`.

        GX binds a suite to the current data context: create one first
        (:func:`new_context`). Every expectation's ``meta`` carries its
        position (``aspen_order``) so that results can be reported in suite order.
        """
        import great_expectations as gx

        from aspen.quality.expect import schema

        suite = gx.ExpectationSuite(name=self.name)
        wanted = schema((*self.columns, *self.derived_columns))
        wanted += self.expectations(params or SuiteParams())
        for order, expectation in enumerate(wanted):
            expectation.meta = {**(expectation.meta or {}), "aspen_order": order}
            suite.add_expectation(expectation)
        return suite

    def describe(self, params: SuiteParams | None = None) -> list[str]:
        """The labels of every expectation and cross-table check of the suite."""
        from aspen.quality.expect import label

        new_context()
        suite = self.build(params)
        labels = [label(e.expectation_type, e.configuration.kwargs) for e in suite.expectations]
        return labels + [c.expectation for c in self.cross_checks]


