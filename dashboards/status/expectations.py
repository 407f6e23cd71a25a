"""Whether the expectations hold: the latest batch checked, failures first, what each observed
in words, and the counts the light needs. Pure.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from .words import plural

__all__ = ["EXPECTATION_COLUMNS", "expectation_summary", "ExpectationSummary",
           "latest_expectations", "observed_text"]


def observed_text(value: object) -> str:
    """What an expectation observed, readable: a JSON object as ``key: value`` pairs, a JSON
    list as its items, anything else as it is.

    >>> observed_text('{"unexpected": 0, "element_count": 811}')
    'unexpected: 0, element_count: 811'
    >>> observed_text('[1, "a"]'), observed_text("0 of 811 unexpected"), observed_text(None)
    ('1, a', '0 of 811 unexpected', '')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    parsed: object = value
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped.startswith(("{", "[")):
            return value
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return value
    return _plain(parsed)


def _plain(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{key}: {_plain(item)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_plain(item) for item in value)
    return "null" if value is None else str(value)


#: Columns of :func:`latest_expectations`.
EXPECTATION_COLUMNS = ["batch_id", "suite", "table", "expectation", "success", "observed",
                       "checked_at", "stale"]


def latest_expectations(results: pd.DataFrame | None, committed_batch: int | None
                        ) -> pd.DataFrame:
    """The results of the latest batch checked (every suite runs on each check, so that batch
    has them all; an expectation dropped from the suites since stays out), failures first, with
    ``observed`` readable (:func:`observed_text`) and ``stale`` when that batch is before
    ``committed_batch``: the expectations have not run on the views as they are.

    >>> results = pd.DataFrame({"batch_id": [1, 2, 2], "suite": ["s"] * 3, "table": ["t"] * 3,
    ...     "expectation": ["a", "a", "b"], "success": [False, True, False],
    ...     "observed": ['{"n": 1}', '{"n": 0}', "x"]})
    >>> rows = latest_expectations(results, committed_batch=3)
    >>> rows[["batch_id", "expectation", "success", "observed", "stale"]].values.tolist()
    [[2, 'b', False, 'x', True], [2, 'a', True, 'n: 0', True]]
    """
    if results is None or results.empty or "batch_id" not in results:
        return pd.DataFrame(columns=EXPECTATION_COLUMNS)
    batch = int(results["batch_id"].max())
    latest = results[results["batch_id"] == batch].copy()
    for column in ("suite", "table", "expectation", "observed", "checked_at"):
        if column not in latest:
            latest[column] = None
    latest = latest.assign(
        success=latest["success"].astype(bool),
        observed=[observed_text(v) for v in latest["observed"]],
        stale=committed_batch is not None and batch < committed_batch,
    )
    latest = latest.sort_values(["success", "suite", "table", "expectation"], kind="stable")
    return latest[EXPECTATION_COLUMNS].reset_index(drop=True)


@dataclass(frozen=True)
class ExpectationSummary:
    """How many expectations were checked, how many failed and are stale, and the batch."""

    checked: int
    failed: int
    stale: int
    batch: int | None

    def text(self) -> str:
        """One line for a page.

        >>> ExpectationSummary(10, 1, 0, 3).text()
        '1 of 10 expectations failed (maintained batch 3)'
        >>> ExpectationSummary(4, 0, 4, 1).text()
        'all 4 expectations passed (maintained batch 1)'
        >>> ExpectationSummary(0, 0, 0, None).text()
        'no expectation checked yet'
        """
        if not self.checked:
            return "no expectation checked yet"
        if self.failed:
            return f"{self.failed} of {plural(self.checked, 'expectation')} failed " \
                   f"(maintained batch {self.batch})"
        return f"all {plural(self.checked, 'expectation')} passed (maintained batch {self.batch})"


def expectation_summary(latest: pd.DataFrame) -> ExpectationSummary:
    """Counts of :func:`latest_expectations` rows.

    >>> latest = pd.DataFrame({"batch_id": [2, 3], "success": [False, True],
    ...                        "stale": [True, False]})
    >>> expectation_summary(latest)
    ExpectationSummary(checked=2, failed=1, stale=1, batch=3)
    """
    if latest.empty:
        return ExpectationSummary(0, 0, 0, None)
    return ExpectationSummary(
        len(latest),
        int((~latest["success"].astype(bool)).sum()),
        int(latest["stale"].astype(bool).sum()),
        int(latest["batch_id"].max()),
    )
