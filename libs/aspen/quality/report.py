"""The report of one quality-gate run.

>>> from aspen.quality.outcome import Outcome
>>> report = QualityReport(2, [Outcome("views.reachable", "reachable", "x(src)", False, "1 of 3")])
>>> report.success, [o.expectation for o in report.failures]
(False, ['x(src)'])
>>> report.lines()[0]
'expectations for batch 2: 1 checked on 1 table(s), 1 failed, 0 table(s) skipped'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aspen.quality.outcome import Outcome

__all__ = ["QualityReport"]


@dataclass
class QualityReport:
    """Every outcome of one run, for the last committed ledger batch ``batch_id``."""

    batch_id: int
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def failures(self) -> list[Outcome]:
        """The expectations that failed (a failure blocks publishing)."""
        return [o for o in self.outcomes if not o.success]

    @property
    def skipped(self) -> list[Outcome]:
        """Notes of tables that were skipped (missing before any maintained batch)."""
        return [o for o in self.outcomes if o.skipped]

    @property
    def success(self) -> bool:
        """Whether every expectation held."""
        return not self.failures

    def lines(self, verbose: bool = False) -> list[str]:
        """A summary line, one line per suite, then every failure (every outcome if ``verbose``)."""
        checked = [o for o in self.outcomes if not o.skipped]
        tables = {o.table for o in checked}
        out = [
            f"expectations for batch {self.batch_id}: {len(checked)} checked on "
            f"{len(tables)} table(s), {len(self.failures)} failed, "
            f"{len(self.skipped)} table(s) skipped"
        ]
        suites: dict[str, list[Outcome]] = {}
        for outcome in self.outcomes:
            suites.setdefault(outcome.suite, []).append(outcome)
        for suite, outcomes in suites.items():
            failed = sum(not o.success for o in outcomes)
            if any(o.skipped for o in outcomes):
                status = outcomes[0].observed
            elif failed:
                status = f"FAILED {failed} of {len(outcomes)}"
            else:
                status = f"ok ({len(outcomes)} expectations)"
            out.append(f"  {suite:<30} {status}")
        shown = self.outcomes if verbose else self.failures
        if shown:
            out.append("failed expectations:" if not verbose else "all expectations:")
            out += [f"  {o.line()}" for o in shown]
        return out
