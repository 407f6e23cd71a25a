"""Run every suite over the lake, record the outcomes, and report.

Tables are read with delta-rs (pandas) and validated with a GX pandas data source in an
ephemeral context: no JVM. A missing table is skipped with a note, except a view table once a
maintained batch is committed (the ledger has rows): then it is a failure; the readings and
stream networks' tables are always optional (a lake need not have readings, nor run the readings
stream or a network). The outcomes replace the rows of the last committed batch in
``expectation_results``.

>>> from aspen.settings import Settings
>>> import tempfile
>>> report = run_expectations(Settings(lake=tempfile.mkdtemp()), write=False)
>>> report.success, report.batch_id, len(report.skipped)
(True, 0, 22)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aspen.quality.inputs import INPUT_SUITES
from aspen.quality.networks import NETWORK_SUITES
from aspen.quality.outcome import SKIPPED_PREFIX, TABLE_EXISTS, TABLE_READABLE, Outcome
from aspen.quality.readings import READING_SUITES
from aspen.quality.report import QualityReport
from aspen.quality.spec import SuiteParams, TableSuite
from aspen.quality.views import VIEW_SUITES
from aspen.settings import Settings

if TYPE_CHECKING:
    import pandas as pd

    from aspen.quality.gx_validate import GxValidator

__all__ = ["ALL_SUITES", "run_expectations", "check_table"]

#: Every suite: inputs, views, the readings and the readings stream's tables, then the stream
#: networks' tables.
ALL_SUITES: tuple[TableSuite, ...] = (*INPUT_SUITES, *VIEW_SUITES, *READING_SUITES,
                                      *NETWORK_SUITES)
_SUITE_RAN = "aspen_suite_ran"


def _error(err: BaseException) -> str:
    first = (str(err).splitlines() or [""])[0]
    return f"error: {type(err).__name__}: {first}"


def check_table(
    suite: TableSuite,
    frame: pd.DataFrame,
    tables: dict[str, pd.DataFrame],
    validator: GxValidator,
    params: SuiteParams,
) -> list[Outcome]:
    """The GX outcomes of ``suite`` on ``frame``, then its cross-table checks against ``tables``."""
    try:
        outcomes = validator.validate(suite, frame, params)
    except Exception as err:  # a suite that cannot run is a failed gate, not a crash
        outcomes = [Outcome(suite.name, suite.table, _SUITE_RAN, False, _error(err))]
    for check in suite.cross_checks:
        try:
            verdict = check.check(frame, tables)
        except Exception as err:
            verdict = (False, _error(err))
        if verdict is None:
            verdict = (True, "not checked: a table it compares with is missing")
        outcomes.append(Outcome(suite.name, suite.table, check.expectation, *verdict))
    return outcomes


def _load(settings: Settings, suites: Sequence[TableSuite]) -> tuple[dict, dict]:
    from aspen.lake.committed import committed_versions, read_committed, reading_version

    frames: dict[str, pd.DataFrame] = {}
    unreadable: dict[str, str] = {}
    versions = committed_versions(settings)
    for suite in suites:  # as of the last committed batch
        if suite.table in frames or reading_version(settings, suite.table, versions) is None:
            continue
        try:
            frames[suite.table] = read_committed(settings, suite.table, versions=versions)
        except Exception as err:  # e.g. a reader feature delta-rs lacks
            unreadable[suite.table] = _error(err)
    return frames, unreadable


def run_expectations(
    settings: Settings,
    suites: Sequence[TableSuite] = ALL_SUITES,
    write: bool = True,
) -> QualityReport:
    """Validate the lake against ``suites``; write the outcomes unless ``write`` is false."""
    from aspen.pipeline import ledger
    from aspen.quality.gx_validate import GxValidator
    from aspen.quality.results import write_results

    batch_id = ledger.last_committed(settings).batch_id
    params = SuiteParams(committed_batch=batch_id)
    frames, unreadable = _load(settings, suites)
    validator = GxValidator()
    report = QualityReport(batch_id)
    for suite in suites:
        if suite.table in unreadable:
            report.outcomes.append(
                Outcome(suite.name, suite.table, TABLE_READABLE, False, unreadable[suite.table])
            )
        elif suite.table not in frames:
            if suite.required_after_maintain and batch_id > 0:
                text = f"missing, although batch {batch_id} is committed in the ledger"
                report.outcomes.append(Outcome(suite.name, suite.table, TABLE_EXISTS, False, text))
            else:
                text = f"{SKIPPED_PREFIX}table '{suite.table}' does not exist yet"
                report.outcomes.append(Outcome(suite.name, suite.table, TABLE_EXISTS, True, text))
        else:
            report.outcomes += check_table(suite, frames[suite.table], frames, validator, params)
    if write:
        write_results(settings, batch_id, report.outcomes, datetime.now(UTC))
    return report
