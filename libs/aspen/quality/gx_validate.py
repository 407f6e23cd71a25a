"""Validating a pandas frame against a suite with Great Expectations 1.x, in an ephemeral context.

No JVM: the frames come from delta-rs and GX's pandas execution engine does the work.

>>> import pandas as pd
>>> from aspen.quality.expect import not_null
>>> from aspen.quality.spec import TableSuite
>>> suite = TableSuite("demo", "t", ("a",), lambda params: not_null("a"))
>>> [o.line() for o in GxValidator().validate(suite, pd.DataFrame({"a": ["x", None]}))]
['ok    demo.t  expect_table_columns_to_match_set: columns a', \
'FAIL  demo.t  expect_column_values_to_not_be_null(a): 1 of 2 unexpected, e.g. [None]']
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aspen.quality.expect import label
from aspen.quality.outcome import Outcome
from aspen.quality.spec import SuiteParams, TableSuite, new_context

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["GxValidator", "observed_text"]

_EXAMPLES = 3


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, bytes):
        return repr(value[:16]) + ("…" if len(value) > 16 else "")
    if isinstance(value, tuple | list):
        return "(" + ", ".join(_short(v) for v in value) + ")"
    if hasattr(value, "item"):  # numpy scalars
        return _short(value.item())
    return repr(value)


def observed_text(result: Mapping[str, Any], exception: Mapping[str, Any] | None = None) -> str:
    """A short text of what GX observed (an error, the unexpected rows, or the observed value).

    >>> observed_text({"element_count": 4, "unexpected_count": 1, "partial_unexpected_list": [-1]})
    '1 of 4 unexpected, e.g. [-1]'
    >>> observed_text({"observed_value": ["a", "b"], "details": {"mismatched": {"missing": ["c"]}}})
    'missing: c; columns a, b'
    """
    if exception and exception.get("raised_exception"):
        message = str(exception.get("exception_message") or "error").splitlines()[0]
        return f"error: {message}"
    mismatched = (result.get("details") or {}).get("mismatched")
    if isinstance(mismatched, Mapping) and mismatched:
        parts = [f"{k}: {', '.join(map(str, v))}" for k, v in sorted(mismatched.items())]
        observed = result.get("observed_value") or []
        return "; ".join(parts) + f"; columns {', '.join(map(str, observed))}"
    if "unexpected_count" in result:
        count = int(result.get("unexpected_count") or 0)
        total = int(result.get("element_count") or 0)
        text = f"{count} of {total} unexpected"
        examples = list(result.get("partial_unexpected_list") or [])[:_EXAMPLES]
        if count and examples:
            text += f", e.g. [{', '.join(_short(v) for v in examples)}]"
        return text
    if "observed_value" in result:
        value = result["observed_value"]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return "columns " + ", ".join(value)
        return f"observed {_short(value)}"
    return "no observation"


class GxValidator:
    """One ephemeral context with one pandas data source; validates frames against suites."""

    def __init__(self) -> None:
        self.context = new_context()
        self._source = self.context.data_sources.add_pandas(name="aspen")
        self._counter = itertools.count()

    def validate(
        self, suite: TableSuite, frame: pd.DataFrame, params: SuiteParams | None = None
    ) -> list[Outcome]:
        """Validate ``frame`` (derived with ``suite.derive`` first) against ``suite``."""
        asset = self._source.add_dataframe_asset(name=f"{suite.table}_{next(self._counter)}")
        batch = asset.add_batch_definition_whole_dataframe("whole").get_batch(
            batch_parameters={"dataframe": suite.derive(frame)}
        )
        result = batch.validate(suite.build(params), result_format="SUMMARY")
        rows = []
        for item in result.results:
            config = item.expectation_config
            order = int((config.meta or {}).get("aspen_order", 1 << 30))
            text = observed_text(item.result or {}, item.exception_info)
            rows.append((order, Outcome(suite.name, suite.table, label(config.type, config.kwargs),
                                        bool(item.success), text)))
        return [outcome for _, outcome in sorted(rows, key=lambda r: r[0])]
