"""Maintained view tables against from-scratch evaluation over the live base instances.

The live instances are read from the ``variables`` registry as of the ingest batch the last
committed maintenance covered, so a lake with newer, not yet maintained ingests still verifies
what was published.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aspen.catalog import VIEWS
from aspen.lake.committed import committed_versions, read_committed
from aspen.lake.deltars import read_table
from aspen.pipeline import ledger
from aspen.pipeline.changes import live_facts
from aspen.pipeline.view_tables import row_to_tuple
from aspen.settings import Settings

__all__ = ["VerifyResult", "verify_lake"]


@dataclass
class VerifyResult:
    """Per view: tuples only in the maintained table, tuples only in from-scratch evaluation."""

    batch_id: int
    missing: dict[str, set[tuple]] = field(default_factory=dict)  # in scratch, not maintained
    extra: dict[str, set[tuple]] = field(default_factory=dict)  # maintained, not in scratch
    sizes: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(self.missing.values()) and not any(self.extra.values())

    def lines(self, show: int = 10) -> list[str]:
        out = []
        for view in self.sizes:
            miss, extra = self.missing.get(view, set()), self.extra.get(view, set())
            status = ("ok" if not (miss or extra)
                      else f"MISMATCH ({len(miss)} missing, {len(extra)} extra)")
            out.append(f"{view:<24} {self.sizes[view]:>7} rows  {status}")
            for t in sorted(miss, key=repr)[:show]:
                out.append(f"    missing {t}")
            for t in sorted(extra, key=repr)[:show]:
                out.append(f"    extra   {t}")
        verdict = ("all views equal from-scratch evaluation" if self.ok
                   else "views differ from from-scratch evaluation")
        out.append(f"batch {self.batch_id}: {verdict}")
        return out


def verify_lake(settings: Settings) -> VerifyResult:
    """Compare every published view with :func:`aspen.baselines.scratch.evaluate_all`."""
    from aspen.baselines.scratch import evaluate_all

    entry = ledger.last_committed(settings)
    variables = read_table(settings, "variables")
    facts = live_facts(variables, through=entry.through_ingest_batch)
    expected = evaluate_all(facts)
    result = VerifyResult(entry.batch_id)
    versions = committed_versions(settings)
    for view in VIEWS:
        maintained: set[tuple] = set()
        if view in versions:  # as the last committed batch left it
            maintained = {row_to_tuple(view, r) for r in
                          read_committed(settings, view, versions=versions).to_dict("records")}
        want = set(expected.get(view, set()))
        result.sizes[view] = len(maintained)
        result.missing[view] = want - maintained
        result.extra[view] = maintained - want
    return result
