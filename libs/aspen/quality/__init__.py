"""Quality gates: Great Expectations 1.x suites over the lake, defined as code.

One module per suite family: :mod:`aspen.quality.inputs` (the ``updates`` log and the base
tables), :mod:`aspen.quality.views` (the nine view tables), :mod:`aspen.quality.readings`
(the sensor readings and the readings stream's rules, windows and drops) and
:mod:`aspen.quality.networks` (the stream networks' definitions, outputs and drops).
:func:`run_expectations` reads every table with delta-rs, validates it with a GX pandas data
source in an ephemeral context, adds Aspen's cross-table checks, writes ``expectation_results``
and returns a :class:`QualityReport`; ``aspen check`` and ``jobs/expectations.py`` print it and
exit 1 when an expectation fails.

>>> [s.name for s in ALL_SUITES][:2]
['inputs.updates', 'inputs.link']
"""

from __future__ import annotations

from aspen.quality.outcome import Outcome
from aspen.quality.report import QualityReport
from aspen.quality.results import RESULTS_TABLE
from aspen.quality.run import ALL_SUITES, run_expectations
from aspen.quality.spec import CrossCheck, SuiteParams, TableSuite

__all__ = [
    "ALL_SUITES",
    "RESULTS_TABLE",
    "CrossCheck",
    "Outcome",
    "QualityReport",
    "SuiteParams",
    "TableSuite",
    "run_expectations",
]
