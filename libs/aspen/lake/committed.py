"""Reading the lake as of its last committed batch: what every reader of maintained tables sees.

A maintained batch writes its view tables first and its ``ledger`` row last; the row records the
Delta version of every table the batch wrote. A maintainer killed between the two leaves tables
ahead of the ledger, until the next batch restores them. Readers — ``show``, ``explain``,
``what-if``, ``verify``, the expectation suites, the dashboard — therefore read every table the
ledger governs at the version the ledger recorded (Delta time travel), never a later one: after
a crash they stay on the last committed batch. Tables the ledger does not govern (the update log,
the base tables, the registry: ingest and apply commit those themselves) are read at their latest
version; ``metrics`` rows of a batch that did not commit are left out.

>>> from aspen.settings import Settings
>>> committed_versions(Settings(lake="/nonexistent/lake"))
{}
>>> reading_version(Settings(lake="/nonexistent/lake"), "reachable") is None
True
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

from aspen.catalog import VIEWS
from aspen.errors import TableMissingError
from aspen.lake.deltars import read_table, table_exists, table_version_or_none
from aspen.lake.view_log import VIEW_CHANGES, read_view_at
from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "GOVERNED_TABLES",
    "LEDGER",
    "committed_batch",
    "committed_versions",
    "read_committed",
    "reading_version",
    "versions_in",
]

#: The table whose rows commit maintained batches.
LEDGER = "ledger"
#: Tables only a maintained batch writes, whose readable version is the one the ledger recorded.
GOVERNED_TABLES: frozenset[str] = frozenset({*VIEWS, VIEW_CHANGES, "node_state", "engine_state"})
#: Tables with a ``batch_id`` column whose rows of an uncommitted batch readers must not see.
_BATCH_KEYED = frozenset({"metrics"})


def _ledger(settings: Settings) -> pd.DataFrame | None:
    if not table_exists(settings, LEDGER):
        return None
    frame = read_table(settings, LEDGER)
    return None if frame.empty else frame.sort_values("batch_id")


def committed_versions(settings: Settings) -> dict[str, int]:
    """Each table's version as the latest ledger row that recorded it (a batch that did not write
    a table leaves its earlier version in force)."""
    return versions_in(_ledger(settings))


def versions_in(frame: pd.DataFrame | None) -> dict[str, int]:
    """:func:`committed_versions` of ledger rows ``frame`` (sorted by batch; None: no ledger).

    >>> import pandas as pd
    >>> versions_in(pd.DataFrame({"table_versions": ['{"a": 1, "b": 2}', None, '{"a": 3}']}))
    {'a': 3, 'b': 2}
    """
    out: dict[str, int] = {}
    if frame is None or "table_versions" not in frame:
        return out
    for versions in frame["table_versions"]:
        if versions is None or (isinstance(versions, float) and math.isnan(versions)):
            continue
        out.update({str(k): int(v) for k, v in json.loads(versions).items()})
    return out


def committed_batch(settings: Settings) -> int:
    """The last committed maintained batch (0 on a lake without one)."""
    frame = _ledger(settings)
    return 0 if frame is None else int(frame["batch_id"].iloc[-1])


def reading_version(settings: Settings, name: str,
                    versions: dict[str, int] | None = None) -> int | None:
    """The version of ``name`` a reader reads: the committed one for a governed table (None when
    no batch has committed it), the latest otherwise (None when the table does not exist)."""
    latest = table_version_or_none(settings, name)
    if name in GOVERNED_TABLES and latest is not None:
        versions = committed_versions(settings) if versions is None else versions
        return versions.get(name)
    return latest


def read_committed(settings: Settings, name: str, columns: list[str] | None = None,
                   versions: dict[str, int] | None = None) -> pd.DataFrame:
    """Table ``name`` as of the last committed batch (raises TableMissingError when there is
    nothing committed to read). ``versions`` reuses a :func:`committed_versions` result. A view
    is its snapshot with the change log applied (:mod:`aspen.lake.view_log`)."""
    if name in VIEWS:
        versions = committed_versions(settings) if versions is None else versions
    version = reading_version(settings, name, versions)
    if version is None:
        if table_exists(settings, name):  # a maintained table no batch has committed
            raise TableMissingError(f"table '{name}' has no committed batch yet "
                                    "(run `aspen maintain`)")
        raise TableMissingError(
            f"table '{name}' does not exist under {settings.lake_uri} "
            "(run `aspen ingest` and `aspen maintain` first)")
    if name in VIEWS:
        assert versions is not None
        frame = read_view_at(settings, name, version, versions.get(VIEW_CHANGES))
        return frame if columns is None else frame[columns]
    frame = read_table(settings, name, columns, version=version)
    if name in _BATCH_KEYED and "batch_id" in frame:
        frame = frame[frame["batch_id"] <= committed_batch(settings)]
    return frame
