"""One checked expectation: the row the quality gate records in ``expectation_results``.

>>> Outcome("views.min_cost", "min_cost", "expect_column_values_to_be_between(cost)", False,
...         "1 of 6 unexpected, e.g. [-1.0]").line()
'FAIL  views.min_cost  expect_column_values_to_be_between(cost): 1 of 6 unexpected, e.g. [-1.0]'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Outcome", "SKIPPED_PREFIX", "TABLE_EXISTS", "TABLE_READABLE"]

#: ``observed`` of an outcome that records a skipped table starts with this.
SKIPPED_PREFIX = "skipped: "
#: Pseudo-expectations for the presence and readability of a table (not GX expectations).
TABLE_EXISTS = "aspen_table_exists"
TABLE_READABLE = "aspen_table_readable"
_OBSERVED_MAX = 300


@dataclass(frozen=True)
class Outcome:
    """The result of one expectation (a GX one or an Aspen cross-table check) on one table."""

    suite: str
    table: str
    expectation: str
    success: bool
    observed: str

    def __post_init__(self) -> None:
        if len(self.observed) > _OBSERVED_MAX:
            object.__setattr__(self, "observed", self.observed[: _OBSERVED_MAX - 1] + "…")

    @property
    def skipped(self) -> bool:
        """Whether this outcome only notes that the table was skipped."""
        return self.observed.startswith(SKIPPED_PREFIX)

    def line(self) -> str:
        """One printable line: status, suite, expectation and what was observed."""
        status = "skip" if self.skipped else ("ok  " if self.success else "FAIL")
        return f"{status}  {self.suite}  {self.expectation}: {self.observed}"
